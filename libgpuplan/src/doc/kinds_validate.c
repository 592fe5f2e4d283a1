/*
 * kinds_validate.c: field description of validate documents
 * (job/cmd_validate.c builds them).
 */
#include "doc/kinds_int.h"


#define GROUP(p)                                                                               \
  {"by." p, A, "", "scored rows grouped by " p},                                                \
  {"by." p "[].key", S, "", "the group"},                                                       \
  {"by." p "[].rows", I, "rows", "scored rows in the group"},                                   \
  {"by." p "[].median_abs_error", R, "1", "median |predicted / measured - 1|"},                 \
  {"by." p "[].median_error", R, "1", "median signed error (bias: > 0 predicts too fast)"},     \
  {"by." p "[].worst_error", R, "1", "the largest |error|, signed"},                            \
  {"by." p "[].worst_id", S, "", "its row"}

static const gpuplan_result_field validate_fields[] = {
  {"schema", S, "", "gpuplan.validate/1"},
  {"file", S, "", "the CSV validated"},
  {"constants", S, "", "constant overrides applied (constants option), or null"},
  {"rows_total", I, "rows", "training_throughput rows read"},
  {"rows_scored", I, "rows", "rows predicted and compared"},
  {"rows_skipped", I, "rows", "rows without the data the model needs (reason per row)"},
  {"rows_model_error", I, "rows", "rows the model cannot reproduce as run (e.g. do not fit in memory as modelled): "
                                  "reported, not scored"},
  {"median_abs_error", R, "1", "median |predicted / measured - 1| over scored rows"},
  {"p90_abs_error", R, "1", "90th percentile of |error|"},
  {"worst_error", R, "1", "the largest |error|, signed"},
  {"worst_id", S, "", "its row"},
  {"mean_error", R, "1", "mean signed error"},
  {"median_error", R, "1", "median signed error"},
  {"by", O, "", "breakdowns of the scored rows"},
  GROUP("framework"),
  GROUP("gpu"),
  GROUP("family"),
  GROUP("dp_width"),
  GROUP("framework_gpu"),
  {"rows", A, "", "every row, as modelled"},
  {"rows[].id", S, "", "the row's id"},
  {"rows[].status", S, "", "scored, skipped or model error"},
  {"rows[].reason", S, "", "why skipped or not scored"},
  {"rows[].source", S, "", "the row's source_short"},
  {"rows[].model", S, "", "the model as the source names it"},
  {"rows[].framework", S, "", "framework profile used (megatron, nemo, deepspeed, composer, ...)"},
  {"rows[].gpu", S, "", "the catalog GPU id the row's gpu_type resolved to"},
  {"rows[].gpu_type", S, "", "the source's GPU text"},
  {"rows[].gpus", I, "GPUs", "GPUs of the run"},
  {"rows[].nodes", I, "nodes", "nodes modelled"},
  {"rows[].gpus_per_node", I, "GPUs", "GPUs per node modelled"},
  {"rows[].intra", S, "", "fabric inside a node"},
  {"rows[].inter", S, "", "fabric between nodes"},
  {"rows[].nics_per_node", R, "NICs", "scale-out NICs per node modelled"},
  {"rows[].layout", S, "", "tp.pp.cp.dp"},
  {"rows[].tp", I, "GPUs", "tensor-parallel degree"},
  {"rows[].pp", I, "stages", "pipeline-parallel degree"},
  {"rows[].cp", I, "GPUs", "context-parallel degree"},
  {"rows[].dp", I, "replicas", "data-parallel degree"},
  {"rows[].vpp", I, "chunks", "model chunks per stage"},
  {"rows[].micro_batch", I, "sequences", "micro-batch"},
  {"rows[].microbatches", I, "micro-batches", "micro-batches per step per pipeline"},
  {"rows[].dp_mode", S, "", "data-parallel sharding modelled"},
  {"rows[].recompute", S, "", "recompute modelled"},
  {"rows[].precision", S, "", "precision modelled"},
  {"rows[].sequence_parallel", B, "", "sequence parallelism"},
  {"rows[].flash_attention", B, "", "fused (flash) attention"},
  {"rows[].family", S, "", "layout family: the parallel dimensions > 1 and the data-parallel kind"},
  {"rows[].dp_width", S, "", "data-parallel width bucket (1, 2-8, 9-64, 65-512, 513+)"},
  {"rows[].measured_tokens_per_s", R, "tokens/s", "measured throughput"},
  {"rows[].measured_from", S, "", "the column it came from"},
  {"rows[].predicted_tokens_per_s", R, "tokens/s", "predicted throughput"},
  {"rows[].error", R, "1", "predicted / measured - 1 (scored rows)"},
  {"rows[].unscored_error", R, "1", "the same for a model-error row (not in the statistics)"},
  {"rows[].predicted_step_s", R, "s", "predicted step time"},
  {"rows[].predicted_mfu", R, "1", "predicted MFU"},
  {"rows[].exposed_comm_s", R, "s", "predicted exposed communication per step"},
  {"rows[].bytes_per_nic", R, "B", "largest per-NIC volume of a collective kind per step"},
  {"rows[].memory_bytes", I, "B", "modelled worst-rank memory"},
  {"rows[].capacity_bytes", I, "B", "device memory"},
  {"rows[].fits", B, "", "memory_bytes <= capacity_bytes"},
  {"rows[].assumptions", S, "", "what the model had to assume (the source does not say), or null"},
};
static const gpuplan__kind_desc validate_kind = {"validate", 1, "rows", N(validate_fields)};

const gpuplan__kind_desc *const gpuplan__kinds_validate[] = {&validate_kind, NULL};

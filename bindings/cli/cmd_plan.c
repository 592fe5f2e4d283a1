/* cmd_plan.c: gpuplan plan MODEL --gpu SKU ...: what fits, what eats the
 * memory, what to change. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char plan_usage[] =
    "usage: gpuplan plan MODEL --gpu SKU [--gpus N | --node VM [--nodes K]]\n"
    "                    [--train | --infer] [options] [--per-rank] [--json]\n"
    "\n"
    "Per-GPU memory by component for training or serving MODEL, against the\n"
    "GPU's capacity; when it does not fit, the fix ladder: smaller micro-batch\n"
    "-> activation checkpointing -> ZeRO-2/3 -> bf16 mixed precision -> more\n"
    "GPUs -> a bigger GPU, each rung quantified.\n"
    "\n"
    "MODEL is a catalog model (gpuplan catalog models) or a size such as 7B:\n"
    "a decoder with Llama-2-7B's shape scaled to exactly that many parameters.\n"
    "\n"
    "hardware:\n"
    "  --gpu SKU            GPU from the catalog (gpuplan catalog gpus)\n"
    "  --gpus N             number of GPUs (default tp*pp*dp*cp, else 1)\n"
    "  --node VM            a catalog node/VM: its GPU, count and visible memory\n"
    "  --nodes K            number of such nodes (default 1)\n"
    "training (defaults in brackets):\n"
    "  --micro-batch B      sequences per micro-batch [1]\n"
    "  --seq S              sequence length [the model's]\n"
    "  --grad-accum M       micro-batches per step [pp]\n"
    "  --precision P        bf16-mixed, fp16-mixed, fp32, bf16, fp8 [bf16-mixed]\n"
    "  --optimizer O        adamw, sgd, momentum, adam8bit, adafactor [adamw]\n"
    "  --grad-bytes N       bytes per gradient (2 or 4) [the convention's]\n"
    "  --convention C       deepspeed (16-bit grads, ZeRO paper), megatron (fp32\n"
    "                       main grads), fsdp, hf [deepspeed]\n"
    "  --recompute R        none, selective, full [none]\n"
    "  --no-flash           explicit attention (keeps the s^2 score matrix)\n"
    "  --no-dropout         no dropout masks\n"
    "  --offload-optimizer  master weights and optimizer states in host memory\n"
    "  --offload-params     ZeRO-3 parameter shards in host memory\n"
    "layout:\n"
    "  --tp N --pp N --dp N --cp N --ep N   parallel degrees [1]\n"
    "  --sp                 sequence parallelism (with tp > 1)\n"
    "  --zero 0|1|2|3       DeepSpeed ZeRO stage [0 = DDP]\n"
    "  --fsdp MODE          full, grad-op, hybrid (with --shard-group N)\n"
    "  --schedule S         1f1b, gpipe, interleaved (with --vpp N) [1f1b]\n"
    "  --first-stage-layers N / --last-stage-layers N   uneven pipeline split\n"
    "  --prefetch N         ZeRO-3/FSDP layers gathered ahead [1]\n"
    "inference (--infer):\n"
    "  --weights DTYPE      bf16, fp16, fp8, int8, int4 [bf16]\n"
    "  --kv DTYPE           KV-cache dtype [bf16]\n"
    "  --context N          tokens per sequence [the model's maximum]\n"
    "  --batch N            concurrent sequences [1]\n"
    "  --paged [--block N]  paged KV cache, N tokens a block [16]\n"
    "  --group N            int4/int8 quantisation group [128]\n"
    "fixed costs (MiB; default: catalog / estimate):\n"
    "  --cuda-context MIB  --nccl MIB  --workspace MIB\n"
    "output:\n"
    "  --per-rank           every pipeline stage, not only the worst\n"
    "  --max-gpus N         GPUs the ladder may use [max(8, gpus)]\n"
    "  --json               one JSON document\n";

/* Parse a positive integer option value. */
static int num(cli *c, const char *opt, const char *v, int64_t *out) {
  char *end;
  double d;
  errno = 0;
  d = strtod(v, &end);
  if (end == v || *end || errno || !(d >= 0) || d > 9.2e18 || d != floor(d))
    return cli_fail(c, EXIT_USAGE, "plan: %s '%s' is not a non-negative integer", opt, v);
  *out = (int64_t)d;
  return 0;
}

static int enum_opt(cli *c, const char *what, const char *v, int *out) {
  int r = gpuplan_enum_parse(c->ctx, what, v);
  if (r < 0) return cli_fail(c, EXIT_USAGE, "plan: %s", gpuplan_errmsg(c->ctx));
  *out = r;
  return 0;
}

/* "7B", "1.5b", "350M": a generic decoder of that size. */
static double gib(uint64_t b) { return (double)b / 1073741824.0; }
static double gb(uint64_t b) { return (double)b / 1e9; }

static void header(cli *c, const gpuplan_model *m, const char *mname, const gpuplan_gpu *g,
                   int64_t gpus, const gpuplan_memory_options *o, double params) {
  (void)c;
  printf("%s (%.3gB params) %s on %lld x %s (%.1f GiB each)\n", mname, params / 1e9,
         o->workload == GPUPLAN_TRAIN ? "training" : "inference", (long long)gpus, g->name,
         gib(g->memory_bytes));
  if (o->workload == GPUPLAN_TRAIN) {
    printf("  precision %s, optimizer %s, convention %s, grads %s\n",
           gpuplan_precision_name(o->precision), gpuplan_optimizer_name(o->optimizer),
           gpuplan_convention_name(o->convention),
           o->grad_bytes ? (o->grad_bytes == 4 ? "fp32" : "16-bit") : "per convention");
    printf("  micro-batch %lld, seq %lld, grad-accum %lld, recompute %s, attention %s%s\n",
           (long long)o->micro_batch, (long long)(o->seq_len ? o->seq_len : m->seq_len),
           (long long)(o->microbatches ? o->microbatches : o->pp),
           gpuplan_recompute_name(o->recompute), o->flash_attention ? "flash" : "explicit",
           o->dropout ? "" : ", no dropout");
    printf("  layout tp %lld, pp %lld (%s), dp %lld (%s), cp %lld, ep %lld%s\n",
           (long long)o->tp, (long long)o->pp, gpuplan_schedule_name(o->schedule),
           (long long)o->dp, gpuplan_dp_mode_name(o->dp_mode), (long long)o->cp,
           (long long)o->ep, o->sequence_parallel ? ", sequence parallel" : "");
  } else {
    printf("  weights %s, KV cache %s (%s), context %lld, batch %lld, tp %lld\n",
           gpuplan_dtype_name(o->weight_dtype), gpuplan_dtype_name(o->kv_dtype),
           o->paged ? "paged" : "contiguous",
           (long long)(o->context_len ? o->context_len
                                      : (isfinite(m->max_seq_len) ? (int64_t)m->max_seq_len : m->seq_len)),
           (long long)o->batch, (long long)o->tp);
  }
}

static void print_stage(const gpuplan_memory *r, const gpuplan_gpu *g, int worst) {
  table *t = table_new(4);
  int i;
  printf("\n%s: stage %lld of the pipeline, %lld layers, %.3g micro-batches in flight, %.3gB params on this rank\n",
         worst ? "worst rank" : "rank", (long long)r->stage, (long long)r->layers,
         r->microbatches_in_flight, r->params_rank / 1e9);
  table_cell(t, "COMPONENT"); table_cell(t, "GB"); table_cell(t, "GiB"); table_cell(t, "FORMULA");
  for (i = 0; i < GPUPLAN_MEM_COUNT; i++) {
    if (!r->item[i].bytes) continue;
    table_cell(t, "%s", r->item[i].name);
    table_cell(t, "%.2f", gb(r->item[i].bytes));
    table_cell(t, "%.2f", gib(r->item[i].bytes));
    table_cell(t, "%s", r->item[i].formula);
  }
  table_cell(t, "total"); table_cell(t, "%.2f", gb(r->total)); table_cell(t, "%.2f", gib(r->total));
  table_cell(t, "of %.2f GiB (%s)", gib(r->capacity), g->name);
  table_align(t, 1, 'r');
  table_align(t, 2, 'r');
  table_print(t, stdout);
  table_free(t);
  if (r->fits)
    printf("FITS: %.2f GiB headroom (%.0f%% of the GPU used)\n", gib((uint64_t)r->headroom),
           100.0 * (double)r->total / (double)r->capacity);
  else
    printf("DOES NOT FIT: short by %.2f GiB\n", gib((uint64_t)(-r->headroom)));
  if (r->host_bytes) printf("host memory (offloaded): %.2f GiB\n", gib(r->host_bytes));
  if (r->kv_bytes_per_token)
    printf("KV cache: %llu bytes per token per GPU; %.2f GiB reserved but unused; at most %lld "
           "concurrent sequences fit\n",
           (unsigned long long)r->kv_bytes_per_token, gib(r->kv_waste_bytes),
           (long long)r->max_sequences);
}

static void json_stage(const gpuplan_memory *r, int indent) {
  int i, first = 1;
  printf("{\"stage\": %lld, \"layers\": %lld, \"microbatches_in_flight\": ", (long long)r->stage,
         (long long)r->layers);
  json_num(stdout, r->microbatches_in_flight);
  printf(", \"params_rank\": ");
  json_num(stdout, r->params_rank);
  printf(",\n%*s\"components\": [", indent + 2, "");
  for (i = 0; i < GPUPLAN_MEM_COUNT; i++) {
    if (!r->item[i].bytes) continue;
    printf("%s\n%*s{\"name\": ", first ? "" : ",", indent + 4, "");
    json_str(stdout, r->item[i].name);
    printf(", \"bytes\": %llu, \"formula\": ", (unsigned long long)r->item[i].bytes);
    json_str(stdout, r->item[i].formula);
    printf("}");
    first = 0;
  }
  printf("],\n%*s\"total_bytes\": %llu, \"capacity_bytes\": %llu, \"fits\": %s, "
         "\"headroom_bytes\": %lld, \"host_bytes\": %llu",
         indent + 2, "", (unsigned long long)r->total, (unsigned long long)r->capacity,
         r->fits ? "true" : "false", (long long)r->headroom, (unsigned long long)r->host_bytes);
  if (r->kv_bytes_per_token)
    printf(", \"kv_bytes_per_token\": %llu, \"kv_waste_bytes\": %llu, \"max_sequences\": %lld",
           (unsigned long long)r->kv_bytes_per_token, (unsigned long long)r->kv_waste_bytes,
           (long long)r->max_sequences);
  printf("}");
}

static const char simulate_usage[] =
    "usage: gpuplan simulate MODEL --gpu SKU [plan options] [--steps N]\n"
    "                        [--alloc-conf STRING] [--keep-grads] [--json]\n"
    "\n"
    "Run training steps of the worst rank through gpuplan's model of PyTorch's\n"
    "caching allocator on a mock GPU (the SKU's memory minus the CUDA context,\n"
    "NCCL buffers and cuBLAS workspace): parameters at setup, gradients in the\n"
    "first backward, optimizer states at the first step, activations per layer.\n"
    "Reports peak allocated and reserved, fragmentation, the first OOM (step,\n"
    "operation, PyTorch's message) and the comparison with `gpuplan plan`.\n"
    "\n"
    "  --steps N          training steps [2]\n"
    "  --alloc-conf S     PYTORCH_CUDA_ALLOC_CONF, e.g. expandable_segments:True\n"
    "  --keep-grads       zero_grad(set_to_none=False): gradients persist\n"
    "  --other-procs MIB  memory other processes hold on the GPU\n"
    "  --on cuda[:N]      run the same steps again with real allocations on CUDA\n"
    "                     device N (driver loaded at run time): predicted vs actual\n"
    "  --snapshot FILE    write the run as a torch memory snapshot pickle\n"
    "                     (open it at pytorch.org/memory_viz, or gpuplan replay)\n"
    "All options of `gpuplan plan` apply (see gpuplan plan --help).\n";

static void print_sim(const gpuplan_sim_result *r, const gpuplan_sim_options *so, int json) {
  if (json) {
    printf("{\n  \"steps\": %lld,\n  \"alloc_conf\": ", (long long)r->steps_done);
    json_str(stdout, so->alloc_conf);
    printf(",\n  \"set_to_none\": %s,\n  \"ops\": %llu,\n  \"capacity_bytes\": %llu,\n"
           "  \"peak_allocated_bytes\": %llu,\n  \"peak_reserved_bytes\": %llu,\n"
           "  \"allocated_at_peak_reserved_bytes\": %llu,\n  \"largest_free_at_peak_bytes\": %llu,\n"
           "  \"total_free_at_peak_bytes\": %llu,\n  \"fragmentation\": ",
           so->set_to_none ? "true" : "false", (unsigned long long)r->ops,
           (unsigned long long)r->capacity, (unsigned long long)r->peak_allocated,
           (unsigned long long)r->peak_reserved, (unsigned long long)r->allocated_at_peak_reserved,
           (unsigned long long)r->largest_free_at_peak, (unsigned long long)r->total_free_at_peak);
    json_num(stdout, r->fragmentation);
    printf(",\n  \"analytic_bytes\": %llu,\n  \"vs_analytic\": ", (unsigned long long)r->analytic_bytes);
    json_num(stdout, r->vs_analytic);
    printf(",\n  \"num_alloc_retries\": %lld,\n  \"num_ooms\": %lld,\n  \"oom\": %s",
           (long long)r->num_alloc_retries, (long long)r->num_ooms, r->oom ? "true" : "false");
    if (r->oom) {
      printf(",\n  \"oom_step\": %lld,\n  \"oom_op\": ", (long long)r->oom_step);
      json_str(stdout, r->oom_op);
      printf(",\n  \"oom_message\": ");
      json_str(stdout, r->oom_message);
    }
    printf("\n}\n");
    return;
  }
  printf("\nsimulated on the caching-allocator model (alloc conf '%s', %s), %.2f GiB for PyTorch:\n",
         so->alloc_conf ? so->alloc_conf : "", so->set_to_none ? "zero_grad(set_to_none=True)" : "gradients kept",
         (double)r->capacity / 1073741824.0);
  printf("  steps completed      %lld (%llu allocations and frees)\n", (long long)r->steps_done,
         (unsigned long long)r->ops);
  printf("  peak allocated       %8.2f GiB  (analytic model: %.2f GiB, %+.1f%%)\n",
         (double)r->peak_allocated / 1073741824.0, (double)r->analytic_bytes / 1073741824.0,
         100 * r->vs_analytic);
  printf("  peak reserved        %8.2f GiB\n", (double)r->peak_reserved / 1073741824.0);
  printf("  fragmentation        %8.3f  (1 - peak allocated / peak reserved)\n", r->fragmentation);
  printf("  at peak reserved     %.2f GiB cached free, largest free block %.2f GiB\n",
         (double)r->total_free_at_peak / 1073741824.0, (double)r->largest_free_at_peak / 1073741824.0);
  printf("  cudaMalloc retries   %lld\n", (long long)r->num_alloc_retries);
  if (r->oom) printf("OUT OF MEMORY in %s:\n%s\n", r->oom_op, r->oom_message);
}

static int plan_main(cli *c, int argc, char **argv, int simulate);

/* Explicit fabrics and NICs override what the node or the SKU implies. */
static int cluster_overrides(cli *c, gpuplan_cluster *cl, const char *intra, const char *inter,
                             double nics, double nic_gbps) {
  const gpuplan_fabric *f;
  int rc;
  if (intra) {
    if ((rc = gpuplan_catalog_fabric(c->cat, intra, &f))) return cli_lib_fail(c, rc);
    if (strcmp(f->scope, "intra") != 0)
      return cli_fail(c, EXIT_USAGE, "--intra: %s is a fabric between nodes (scope %s)", f->id, f->scope);
    cl->intra_bw_bytes_s = f->bw_bytes_s;
    cl->intra_latency_s = f->latency_s;
    cl->intra_name = strcmp(f->kind, "pcie") == 0 ? "pcie" : f->id;
  }
  if (inter || nics > 0 || nic_gbps > 0) {
    double per_nic = cl->inter_bw_bytes_s / (double)cl->gpus_per_node;
    double n = nics > 0 ? nics : (double)cl->gpus_per_node;
    if (inter) {
      if ((rc = gpuplan_catalog_fabric(c->cat, inter, &f))) return cli_lib_fail(c, rc);
      if (strcmp(f->scope, "inter") != 0)
        return cli_fail(c, EXIT_USAGE, "--inter: %s is a fabric inside a node (scope %s)", f->id, f->scope);
      per_nic = f->bw_bytes_s;
      cl->inter_latency_s = f->latency_s;
      cl->inter_name = f->id;
    }
    if (nic_gbps > 0) per_nic = nic_gbps * 1e9 / 8;
    cl->inter_bw_bytes_s = n * per_nic;
  }
  return 0;
}

/* A real device, watched: the lowest free memory the driver reported while
 * the step program ran (the driver-level peak). */
typedef struct watched {
  const gpuplan_device_ops *inner;
  gpuplan_device_ops ops;
  uint64_t min_free, total;
} watched;

static void watch_sample(watched *w) {
  uint64_t f = 0, t = 0;
  w->inner->mem_info(w->inner->payload, &f, &t);
  if (f < w->min_free) w->min_free = f;
  w->total = t;
}
static int watch_malloc(void *p, uint64_t size, uint64_t *addr) {
  watched *w = (watched *)p;
  int rc = w->inner->malloc(w->inner->payload, size, addr);
  watch_sample(w);
  return rc;
}
static void watch_free(void *p, uint64_t addr, uint64_t size) {
  watched *w = (watched *)p;
  w->inner->free(w->inner->payload, addr, size);
}
static void watch_info(void *p, uint64_t *free_out, uint64_t *total_out) {
  watched *w = (watched *)p;
  w->inner->mem_info(w->inner->payload, free_out, total_out);
}

/* simulate --on cuda:N: the same steps with real allocations on the card;
 * predicted (the mock run) vs actual (the allocator on the card, and the
 * driver's own count of used memory). */
static int run_on_device(cli *c, const gpuplan_model *m, const gpuplan_gpu *g, const gpuplan_memory_options *o,
                         const gpuplan_sim_options *so_in, const gpuplan_sim_result *pred, int dev, int json) {
  gpuplan_backend *b = NULL;
  const gpuplan_device_ops *real;
  gpuplan_device_info info;
  gpuplan_sim_options so = *so_in;
  gpuplan_sim_result act;
  watched w;
  uint64_t free0, total0;
  int rc;
  if (so.alloc_conf && strstr(so.alloc_conf, "expandable_segments:True"))
    return cli_fail(c, EXIT_RUNTIME, "simulate --on: expandable segments need the driver's virtual memory API, "
                                     "which the CUDA backend does not use yet; run without them");
  if ((rc = gpuplan_backend_open_cuda(c->ctx, NULL, &b))) return cli_fail(c, EXIT_RUNTIME, "simulate --on: %s", gpuplan_errmsg(c->ctx));
  if ((rc = gpuplan_backend_device_info(b, dev, c->cat, &info)) ||
      (rc = gpuplan_backend_device_memory(b, dev, &real))) {
    rc = cli_fail(c, EXIT_RUNTIME, "simulate --on: %s", gpuplan_errmsg(c->ctx));
    gpuplan_backend_free(b);
    return rc;
  }
  memset(&w, 0, sizeof w);
  w.inner = real;
  w.ops.malloc = watch_malloc;
  w.ops.free = watch_free;
  w.ops.mem_info = watch_info;
  w.ops.payload = &w;
  real->mem_info(real->payload, &free0, &total0);
  w.min_free = free0;
  so.device = &w.ops;
  so.snapshot_path = NULL;
  rc = gpuplan_simulate(c->ctx, m, g, o, &so, &act);
  gpuplan_backend_free(b); /* frees every allocation left on the card */
  if (rc) return cli_fail(c, EXIT_RUNTIME, "simulate --on: %s", gpuplan_errmsg(c->ctx));
  if (json) {
    printf("{\"device\": ");
    json_str(stdout, info.name);
    printf(", \"predicted_peak_reserved_bytes\": %llu, \"actual_peak_reserved_bytes\": %llu, "
           "\"driver_peak_used_bytes\": %llu, \"predicted_oom\": %s, \"actual_oom\": %s}\n",
           (unsigned long long)pred->peak_reserved, (unsigned long long)act.peak_reserved,
           (unsigned long long)(free0 - w.min_free), pred->oom ? "true" : "false", act.oom ? "true" : "false");
    return EXIT_OK;
  }
  printf("\non %s (device %d, %.0f MiB, %.0f MiB free before the run):\n", info.name, dev,
         (double)total0 / 1048576.0, (double)free0 / 1048576.0);
  printf("  peak reserved   predicted %9.0f MiB   on the card %9.0f MiB (%+.1f%%)\n",
         (double)pred->peak_reserved / 1048576.0, (double)act.peak_reserved / 1048576.0,
         pred->peak_reserved ? 100.0 * ((double)act.peak_reserved / (double)pred->peak_reserved - 1) : 0.0);
  printf("  driver-level    %9.0f MiB more in use at the peak (cuMemGetInfo)\n",
         (double)(free0 - w.min_free) / 1048576.0);
  printf("  out of memory   predicted %s, on the card %s%s%s\n", pred->oom ? "yes" : "no", act.oom ? "yes" : "no",
         act.oom ? " in " : "", act.oom ? act.oom_op : "");
  return EXIT_OK;
}

int cmd_plan(cli *c, int argc, char **argv) { return plan_main(c, argc, argv, 0); }
int cmd_simulate(cli *c, int argc, char **argv) { return plan_main(c, argc, argv, 1); }
int cmd_perf(cli *c, int argc, char **argv) { return plan_main(c, argc, argv, 2); }
int cmd_search(cli *c, int argc, char **argv) { return plan_main(c, argc, argv, 3); }

static const char search_usage[] =
    "usage: gpuplan search MODEL (--gpu SKU --gpus N [--per-node G] | --node VM --nodes K)\n"
    "                      --global-batch B [--top N] [--objective time|cost] [--tokens D] [--json]\n"
    "\n"
    "Enumerate the layouts of MODEL on the cluster (tp, pp, cp, dp, ZeRO-1 or\n"
    "ZeRO-3, micro-batch, recompute, interleaving), drop those that do not fit\n"
    "in memory, rank the rest by step time (or cost per token) and print the\n"
    "best N with what makes each fast or slow.  Precision, optimizer and\n"
    "sequence length come from the plan options.\n"
    "\n"
    "       gpuplan search MODEL --across --tokens D --days T --global-batch B\n"
    "                      [--max-nodes N] [--json]\n"
    "\n"
    "Across every priced GPU node/VM in the catalog and 1, 2, 4, ... N nodes:\n"
    "the best layout of each, the time to train on D tokens, and the cost; the\n"
    "cheapest way that finishes within T days first.\n";

typedef struct progress_state {
  double start;
  int shown;
} progress_state;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A progress bar on stderr, only on a terminal and after the first second. */
static int progress_bar(void *payload, uint64_t done, uint64_t total) {
  progress_state *ps = payload;
  double el = now_s() - ps->start;
  if (el < 1.0 || !isatty(2)) return 0;
  {
    int w = 40, k = total ? (int)((double)done / (double)total * w) : 0, i;
    if (k > w) k = w;
    fputs("\rsearching [", stderr);
    for (i = 0; i < w; i++) fputc(i < k ? '#' : ' ', stderr);
    fprintf(stderr, "] %llu layouts, %.1f s", (unsigned long long)done, el);
    ps->shown = 1;
  }
  return 0;
}

static const char perf_usage[] =
    "usage: gpuplan perf MODEL (--gpu SKU --gpus N [--per-node G] | --node VM --nodes K)\n"
    "                    [plan options] [--global-batch B] [--tokens D] [--json]\n"
    "\n"
    "Step time and its breakdown (compute, pipeline bubble, exposed tensor-,\n"
    "context-, pipeline- and data-parallel communication, optimizer), tokens/s,\n"
    "MFU and HFU, bytes per step on NVLink, PCIe and the network, and cost per\n"
    "hour, per step, per million tokens and to train on D tokens.  With --gpu,\n"
    "nodes are DGX/HGX-style: G GPUs (8) on NVLink, one InfiniBand NIC each.\n"
    "\n"
    "  --global-batch B   sequences per optimizer step [dp x micro-batch x grad-accum]\n"
    "  --tokens D         training tokens (e.g. 300e9) for time and cost to train\n"
    "  --per-node G       GPUs per node with --gpu [8]\n"
    "  --intra FABRIC     inside a node: nvlink4, nvswitch3, pcie4, ... (gpuplan catalog fabrics)\n"
    "  --inter FABRIC     between nodes: ib-ndr, roce-400, eth-100, ...\n"
    "  --nics N           scale-out NICs per node [one per GPU]\n"
    "  --nic-gbps X       per NIC, Gb/s [the fabric's]\n"
    "All options of `gpuplan plan` apply (see gpuplan plan --help).\n";

static void print_perf(const gpuplan_perf *pf, const gpuplan_cluster *cl, double tokens, int json) {
  double b2g = 1e-9;
  if (json) {
    printf("{\n  \"gpus\": %lld,\n  \"global_batch\": %lld,\n  \"step_s\": ", (long long)pf->gpus,
           (long long)pf->global_batch);
    json_num(stdout, pf->step_s);
    printf(",\n  \"breakdown_s\": {\"compute\": ");
    json_num(stdout, pf->compute_s);
    printf(", \"bubble\": "); json_num(stdout, pf->bubble_s);
    printf(", \"tp_comm\": "); json_num(stdout, pf->tp_comm_s);
    printf(", \"cp_comm\": "); json_num(stdout, pf->cp_comm_s);
    printf(", \"pp_comm\": "); json_num(stdout, pf->pp_comm_s);
    printf(", \"dp_comm\": "); json_num(stdout, pf->dp_comm_s);
    printf(", \"optimizer\": "); json_num(stdout, pf->optimizer_s);
    printf("},\n  \"tokens_per_s\": "); json_num(stdout, pf->tokens_per_s);
    printf(",\n  \"mfu\": "); json_num(stdout, pf->mfu);
    printf(",\n  \"hfu\": "); json_num(stdout, pf->hfu);
    printf(",\n  \"model_flops_per_token\": "); json_num(stdout, pf->model_flops_per_token);
    printf(",\n  \"bytes_per_step_per_gpu\": {\"nvlink\": "); json_num(stdout, pf->bytes_nvlink_per_gpu);
    printf(", \"pcie\": "); json_num(stdout, pf->bytes_pcie_per_gpu);
    printf(", \"network\": "); json_num(stdout, pf->bytes_network_per_gpu);
    printf("},\n  \"cost_per_hour\": "); json_num(stdout, pf->cost_per_hour);
    printf(",\n  \"cost_per_mtok\": "); json_num(stdout, pf->cost_per_mtok);
    printf(",\n  \"train_tokens\": "); json_num(stdout, tokens);
    printf(",\n  \"train_seconds\": "); json_num(stdout, pf->train_seconds);
    printf(",\n  \"train_cost\": "); json_num(stdout, pf->train_cost);
    printf("\n}\n");
    return;
  }
  if (cl->gpu)
    printf("\ncluster: %lld node(s) x %lld %s; inside a node %s %.0f GB/s each way per GPU; between nodes %s %.1f GB/s per node\n",
           (long long)cl->nodes, (long long)cl->gpus_per_node, cl->gpu->name,
           cl->intra_name ? cl->intra_name : "-", cl->intra_bw_bytes_s * b2g,
           cl->inter_name ? cl->inter_name : "-", cl->inter_bw_bytes_s * b2g);
  else
    printf("\ncluster: %lld CPU-only node(s), one data-parallel rank each; between nodes %s %.1f GB/s per node\n",
           (long long)cl->nodes, cl->inter_name ? cl->inter_name : "-", cl->inter_bw_bytes_s * b2g);
  printf("step (global batch %lld sequences)   %10.3f s\n", (long long)pf->global_batch, pf->step_s);
  printf("  compute (GEMM, attention, elementwise, recompute) %8.3f s\n", pf->compute_s);
  printf("  pipeline bubble                                   %8.3f s\n", pf->bubble_s);
  printf("  tensor-parallel collectives (exposed)             %8.3f s\n", pf->tp_comm_s);
  printf("  context-parallel exchange (exposed)               %8.3f s\n", pf->cp_comm_s);
  printf("  pipeline send/recv                                %8.3f s\n", pf->pp_comm_s);
  printf("  data-parallel / ZeRO / FSDP traffic (exposed)     %8.3f s\n", pf->dp_comm_s);
  printf("  optimizer step                                    %8.3f s\n", pf->optimizer_s);
  printf("throughput   %.0f tokens/s (%.0f per %s)\n", pf->tokens_per_s, pf->tokens_per_s / (double)pf->gpus,
         cl->gpu ? "GPU" : "node");
  printf("MFU %.1f%%, HFU %.1f%% of %.2f TFLOP/s per %s (%.2f TFLOP/s of model FLOPs per %s)\n",
         100 * pf->mfu, 100 * pf->hfu, pf->peak_flops / 1e12, cl->gpu ? "GPU" : "node",
         pf->model_flops_per_s_per_gpu / 1e12, cl->gpu ? "GPU" : "node");
  printf("bytes per step per GPU: NVLink %.2f GB, PCIe %.2f GB, network %.2f GB (cluster total %.1f GB on the network)\n",
         pf->bytes_nvlink_per_gpu * b2g, pf->bytes_pcie_per_gpu * b2g, pf->bytes_network_per_gpu * b2g,
         pf->bytes_network_per_gpu * (double)pf->gpus * b2g);
  if (isfinite(pf->cost_per_hour))
    printf("cost %.2f per hour, %.4f per step, %.3f per million tokens\n", pf->cost_per_hour,
           pf->cost_per_step, pf->cost_per_mtok);
  else
    printf("cost: no price in the catalog for this hardware (use --node with a priced VM)\n");
  if (tokens > 0) {
    double sec = pf->train_seconds;
    printf("to train on %.3g tokens: %.1f hours (%.1f days)", tokens, sec / 3600, sec / 86400);
    if (isfinite(pf->train_cost)) printf(", %.0f", pf->train_cost);
    printf("\n");
  }
}

typedef struct across_row {
  const gpuplan_node *node;
  int64_t nodes;
  gpuplan_candidate best;
  double seconds, cost;
} across_row;

static int cmp_across(const void *x, const void *y) {
  const across_row *a = x, *b = y;
  return a->cost < b->cost ? -1 : a->cost > b->cost;
}

/* The cheapest node type and count to train on `tokens` within `days`. */
static int search_across(cli *c, const char *model_name, gpuplan_memory_options *o, int64_t G,
                         double tokens, double days, int64_t max_nodes, int json) {
  const gpuplan_model *m;
  double size = 0;
  gpuplan_model inline_model;
  across_row rows[512];
  size_t nrows = 0, i, nn = 0;
  int rc;
  if ((rc = cli_catalog(c))) return rc;
  if (!(tokens > 0) || !(days > 0) || G < 1)
    return cli_fail(c, EXIT_USAGE, "search --across: needs --tokens D, --days T and --global-batch B");
  if (gpuplan_parse_size(model_name, &size)) {
    if ((rc = gpuplan_catalog_model(c->cat, "llama-2-7b", &m))) return cli_lib_fail(c, rc);
    inline_model = *m;
    m = &inline_model;
    o->params_override = size;
  } else if ((rc = gpuplan_catalog_model(c->cat, model_name, &m))) {
    return cli_lib_fail(c, rc);
  }
  nn = gpuplan_catalog_count(c->cat, GPUPLAN_KIND_NODE);
  for (i = 0; i < nn; i++) {
    const gpuplan_node *n = gpuplan_catalog_at(c->cat, GPUPLAN_KIND_NODE, i);
    int64_t k;
    if (!n->gpu_id || !isfinite(n->price_per_hour) || n->gpu_fraction < 1) continue;
    for (k = 1; k <= max_nodes && nrows < sizeof rows / sizeof rows[0]; k *= 2) {
      gpuplan_cluster cl;
      gpuplan_candidate best;
      size_t nb = 0;
      if (gpuplan_cluster_from_node(c->ctx, c->cat, n, k, &cl)) continue;
      if (gpuplan_search(c->ctx, m, &cl, o, G, GPUPLAN_OBJ_TIME, &best, 1, &nb, NULL, NULL, NULL) || !nb)
        continue;
      rows[nrows].node = n;
      rows[nrows].nodes = k;
      rows[nrows].best = best;
      rows[nrows].seconds = tokens / best.perf.tokens_per_s;
      rows[nrows].cost = rows[nrows].seconds / 3600 * best.perf.cost_per_hour;
      nrows++;
    }
  }
  qsort(rows, nrows, sizeof *rows, cmp_across);
  if (json) {
    printf("{\n  \"tokens\": ");
    json_num(stdout, tokens);
    printf(",\n  \"days\": ");
    json_num(stdout, days);
    printf(",\n  \"options\": [");
    for (i = 0; i < nrows; i++) {
      printf("%s\n    {\"node\": ", i ? "," : "");
      json_str(stdout, rows[i].node->name);
      printf(", \"nodes\": %lld, \"days\": ", (long long)rows[i].nodes);
      json_num(stdout, rows[i].seconds / 86400);
      printf(", \"cost\": ");
      json_num(stdout, rows[i].cost);
      printf(", \"meets_deadline\": %s, \"tp\": %lld, \"pp\": %lld, \"dp\": %lld}",
             rows[i].seconds <= days * 86400 ? "true" : "false", (long long)rows[i].best.options.tp,
             (long long)rows[i].best.options.pp, (long long)rows[i].best.options.dp);
    }
    printf("\n  ]\n}\n");
    return EXIT_OK;
  }
  printf("%s (%.3gB params) on %.3g tokens within %g days, global batch %lld: %zu priced configurations\n\n",
         size > 0 ? model_name : m->id, gpuplan_model_params(m) / 1e9, tokens, days, (long long)G, nrows);
  printf("%-28s %5s %5s  %-22s %9s %12s  %s\n", "NODE", "NODES", "GPUS", "BEST LAYOUT", "DAYS", "COST", "");
  {
    int shown = 0, winner = 0;
    for (i = 0; i < nrows; i++) {
      int ok = rows[i].seconds <= days * 86400;
      char lay[64];
      snprintf(lay, sizeof lay, "tp%lld pp%lld dp%lld %s", (long long)rows[i].best.options.tp,
               (long long)rows[i].best.options.pp, (long long)rows[i].best.options.dp,
               gpuplan_recompute_name(rows[i].best.options.recompute));
      printf("%-28s %5lld %5lld  %-22s %9.1f %12.0f  %s\n", rows[i].node->name, (long long)rows[i].nodes,
             (long long)(rows[i].nodes * rows[i].node->gpu_count), lay, rows[i].seconds / 86400,
             rows[i].cost, ok ? (winner++ ? "meets the deadline" : "CHEAPEST WITHIN THE DEADLINE") : "too slow");
      if (++shown >= 20) break;
    }
    if (!winner) printf("\nnothing finishes within %g days up to %lld nodes of each type; raise --max-nodes\n", days,
                        (long long)max_nodes);
  }
  printf("\nprices: the catalog's (price_region, price_date); compute cost only, storage and egress excluded\n");
  return EXIT_OK;
}

static int plan_main(cli *c, int argc, char **argv, int simulate) {
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_sim_options so = GPUPLAN_SIM_OPTIONS_INIT;
  uint64_t other_procs = 0;
  int on_device = -1;
  const char *model_name = NULL, *gpu_name = NULL, *node_name = NULL;
  int64_t gpus = 0, nodes = 1, max_gpus = 0, v, global_batch = 0, per_node = 8, top = 5;
  gpuplan_objective objective = GPUPLAN_OBJ_TIME;
  int across = 0;
  const char *intra_name = NULL, *inter_name = NULL;
  double nics = 0, nic_gbps = 0;
  double days = 0;
  int64_t max_nodes = 64;
  double train_tokens = 0;
  const gpuplan_node *node = NULL;
  int json = 0, per_rank = 0, dp_given = 0, i, rc, e;
  double size = 0;
  const gpuplan_model *m = NULL;
  const gpuplan_gpu *g = NULL;
  gpuplan_job job;
  gpuplan_memory worst;
  gpuplan_fix fixes[12];
  size_t nfix = 0, k;

#define NEED_VALUE() \
  if (i + 1 >= argc) return cli_fail(c, EXIT_USAGE, "plan: %s needs a value", a)
#define INT_OPT(flag, field)                       \
  else if (strcmp(a, flag) == 0) {                 \
    NEED_VALUE();                                  \
    if ((rc = num(c, a, argv[++i], &v))) return rc; \
    field = v;                                     \
  }
#define ENUM_OPT(flag, what, field)                      \
  else if (strcmp(a, flag) == 0) {                       \
    NEED_VALUE();                                        \
    if ((rc = enum_opt(c, what, argv[++i], &e))) return rc; \
    field = e;                                           \
  }
#define MIB_OPT(flag, field)                       \
  else if (strcmp(a, flag) == 0) {                 \
    NEED_VALUE();                                  \
    if ((rc = num(c, a, argv[++i], &v))) return rc; \
    if (v > (INT64_MAX >> 20)) return cli_fail(c, EXIT_USAGE, "plan: %s is too large", a); \
    field = v << 20;                               \
  }

  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      if (simulate == 1) fputs(simulate_usage, stdout);
      if (simulate == 2) fputs(perf_usage, stdout);
      if (simulate == 3) fputs(search_usage, stdout);
      fputs(plan_usage, stdout);
      return EXIT_OK;
    } else if (strcmp(a, "--json") == 0) json = 1;
    else if (simulate == 3 && strcmp(a, "--top") == 0) {
      NEED_VALUE();
      if ((rc = num(c, a, argv[++i], &v))) return rc;
      top = v < 1 ? 1 : v > 100 ? 100 : v;
    } else if (simulate == 3 && strcmp(a, "--across") == 0) {
      across = 1;
    } else if (simulate == 3 && (strcmp(a, "--days") == 0 || strcmp(a, "--max-nodes") == 0)) {
      char *end;
      double x;
      NEED_VALUE();
      x = strtod(argv[++i], &end);
      if (*end || !(x > 0) || x > 1e6) return cli_fail(c, EXIT_USAGE, "search: %s '%s' is not a positive number", a, argv[i]);
      if (a[2] == 'd') days = x;
      else max_nodes = (int64_t)x;
    } else if (simulate == 3 && strcmp(a, "--objective") == 0) {
      NEED_VALUE();
      a = argv[++i];
      if (strcmp(a, "time") == 0) objective = GPUPLAN_OBJ_TIME;
      else if (strcmp(a, "cost") == 0) objective = GPUPLAN_OBJ_COST;
      else return cli_fail(c, EXIT_USAGE, "search: --objective '%s' is not time or cost", a);
    }
    else if (simulate >= 2 && strcmp(a, "--global-batch") == 0) {
      NEED_VALUE();
      if ((rc = num(c, a, argv[++i], &v))) return rc;
      global_batch = v;
    } else if (simulate >= 2 && (strcmp(a, "--intra") == 0 || strcmp(a, "--inter") == 0)) {
      NEED_VALUE();
      if (a[5] == 'r') intra_name = argv[++i];
      else inter_name = argv[++i];
    } else if (simulate >= 2 && (strcmp(a, "--nics") == 0 || strcmp(a, "--nic-gbps") == 0)) {
      char *end;
      double x;
      NEED_VALUE();
      x = strtod(argv[++i], &end);
      if (*end || !(x > 0) || x > 1e6) return cli_fail(c, EXIT_USAGE, "%s '%s' is not a positive number", a, argv[i]);
      if (a[5] == 's') nics = x;
      else nic_gbps = x;
    } else if (simulate >= 2 && strcmp(a, "--per-node") == 0) {
      NEED_VALUE();
      if ((rc = num(c, a, argv[++i], &v))) return rc;
      per_node = v;
    } else if (simulate >= 2 && strcmp(a, "--tokens") == 0) {
      char *end;
      NEED_VALUE();
      train_tokens = strtod(argv[++i], &end);
      if (*end || !(train_tokens > 0) || train_tokens > 1e18)
        return cli_fail(c, EXIT_USAGE, "perf: --tokens '%s' is not a token count", argv[i]);
    }
    else if (simulate == 1 && strcmp(a, "--keep-grads") == 0) so.set_to_none = 0;
    else if (simulate == 1 && strcmp(a, "--alloc-conf") == 0) { NEED_VALUE(); so.alloc_conf = argv[++i]; }
    else if (simulate == 1 && strcmp(a, "--snapshot") == 0) { NEED_VALUE(); so.snapshot_path = argv[++i]; }
    else if (simulate == 1 && strcmp(a, "--on") == 0) {
      const char *dv;
      char *end;
      NEED_VALUE();
      dv = argv[++i];
      if (strncmp(dv, "cuda", 4) != 0 || (dv[4] && dv[4] != ':'))
        return cli_fail(c, EXIT_USAGE, "simulate: --on '%s' is not cuda or cuda:N", dv);
      on_device = dv[4] ? (int)strtol(dv + 5, &end, 10) : 0;
      if (dv[4] && (*end || on_device < 0 || on_device > 1024))
        return cli_fail(c, EXIT_USAGE, "simulate: --on '%s': N is not a device index", dv);
    }
    else if (simulate == 1 && strcmp(a, "--other-procs") == 0) {
      NEED_VALUE();
      if ((rc = num(c, a, argv[++i], &v))) return rc;
      if (v > (INT64_MAX >> 20)) return cli_fail(c, EXIT_USAGE, "simulate: --other-procs is too large");
      other_procs = (uint64_t)v << 20;
    }
    else if (simulate == 1 && strcmp(a, "--steps") == 0) {
      NEED_VALUE();
      if ((rc = num(c, a, argv[++i], &v))) return rc;
      so.steps = v;
    }
    else if (strcmp(a, "--per-rank") == 0) per_rank = 1;
    else if (strcmp(a, "--train") == 0) o.workload = GPUPLAN_TRAIN;
    else if (strcmp(a, "--infer") == 0) o.workload = GPUPLAN_INFER;
    else if (strcmp(a, "--sp") == 0) o.sequence_parallel = 1;
    else if (strcmp(a, "--no-flash") == 0) o.flash_attention = 0;
    else if (strcmp(a, "--no-dropout") == 0) o.dropout = 0;
    else if (strcmp(a, "--offload-optimizer") == 0) o.offload_optimizer = 1;
    else if (strcmp(a, "--offload-params") == 0) o.offload_params = 1;
    else if (strcmp(a, "--paged") == 0) o.paged = 1;
    else if (strcmp(a, "--gpu") == 0) { NEED_VALUE(); gpu_name = argv[++i]; }
    else if (strcmp(a, "--node") == 0) { NEED_VALUE(); node_name = argv[++i]; }
    else if (strcmp(a, "--dp") == 0) {
      NEED_VALUE();
      if ((rc = num(c, a, argv[++i], &v))) return rc;
      o.dp = v;
      dp_given = 1;
    } else if (strcmp(a, "--zero") == 0) {
      NEED_VALUE();
      if ((rc = num(c, a, argv[++i], &v))) return rc;
      if (v > 3) return cli_fail(c, EXIT_USAGE, "plan: --zero must be 0, 1, 2 or 3");
      o.dp_mode = (gpuplan_dp_mode)v;
    } else if (strcmp(a, "--fsdp") == 0) {
      NEED_VALUE();
      a = argv[++i];
      if (strcmp(a, "full") == 0) o.dp_mode = GPUPLAN_DP_FSDP_FULL;
      else if (strcmp(a, "grad-op") == 0) o.dp_mode = GPUPLAN_DP_FSDP_GRAD_OP;
      else if (strcmp(a, "hybrid") == 0) o.dp_mode = GPUPLAN_DP_FSDP_HYBRID;
      else return cli_fail(c, EXIT_USAGE, "plan: --fsdp '%s' is not one of full, grad-op, hybrid", a);
      if (o.convention == GPUPLAN_CONV_DEEPSPEED) o.convention = GPUPLAN_CONV_FSDP;
    }
    INT_OPT("--gpus", gpus)
    INT_OPT("--nodes", nodes)
    INT_OPT("--max-gpus", max_gpus)
    INT_OPT("--tp", o.tp)
    INT_OPT("--pp", o.pp)
    INT_OPT("--cp", o.cp)
    INT_OPT("--ep", o.ep)
    INT_OPT("--vpp", o.vpp)
    INT_OPT("--shard-group", o.shard_group)
    INT_OPT("--first-stage-layers", o.first_stage_layers)
    INT_OPT("--last-stage-layers", o.last_stage_layers)
    INT_OPT("--micro-batch", o.micro_batch)
    INT_OPT("--seq", o.seq_len)
    INT_OPT("--grad-accum", o.microbatches)
    INT_OPT("--prefetch", o.prefetch)
    INT_OPT("--context", o.context_len)
    INT_OPT("--batch", o.batch)
    INT_OPT("--block", o.block_tokens)
    INT_OPT("--group", o.group_size)
    ENUM_OPT("--precision", "precision", o.precision)
    ENUM_OPT("--optimizer", "optimizer", o.optimizer)
    ENUM_OPT("--recompute", "recompute", o.recompute)
    ENUM_OPT("--schedule", "schedule", o.schedule)
    ENUM_OPT("--convention", "convention", o.convention)
    ENUM_OPT("--weights", "dtype", o.weight_dtype)
    ENUM_OPT("--kv", "dtype", o.kv_dtype)
    MIB_OPT("--cuda-context", o.context_bytes)
    MIB_OPT("--nccl", o.nccl_bytes)
    MIB_OPT("--workspace", o.workspace_bytes)
    else if (strcmp(a, "--grad-bytes") == 0) {
      NEED_VALUE();
      if ((rc = num(c, a, argv[++i], &v))) return rc;
      o.grad_bytes = (int)(v > 8 ? 8 : v);
    } else if (a[0] == '-' && a[1]) {
      return cli_fail(c, EXIT_USAGE, "plan: unknown option '%s' (see gpuplan plan --help)", a);
    } else if (!model_name) {
      model_name = a;
    } else {
      return cli_fail(c, EXIT_USAGE, "plan: unexpected argument '%s'", a);
    }
  }
  if (!model_name) return cli_fail(c, EXIT_USAGE, "plan: needs a MODEL (see gpuplan plan --help)");
  if (across) return search_across(c, model_name, &o, global_batch, train_tokens, days, max_nodes, json);
  if (!gpu_name && !node_name) return cli_fail(c, EXIT_USAGE, "plan: needs --gpu SKU or --node VM");
  if (gpu_name && node_name) return cli_fail(c, EXIT_USAGE, "plan: give --gpu or --node, not both");
  if ((rc = cli_catalog(c))) return rc;

  if (node_name && simulate == 2) {
    const gpuplan_node *n;
    if ((rc = gpuplan_catalog_node(c->cat, node_name, &n))) return cli_lib_fail(c, rc);
    if (!n->gpu_id) {
      /* A CPU-only VM: one device per node, the memory model is moot. */
      gpuplan_cluster cl;
      gpuplan_perf pf;
      if (gpuplan_parse_size(model_name, &size)) {
        if ((rc = gpuplan_catalog_model(c->cat, "llama-2-7b", &m))) return cli_lib_fail(c, rc);
        o.params_override = size;
      } else if ((rc = gpuplan_catalog_model(c->cat, model_name, &m))) {
        return cli_lib_fail(c, rc);
      }
      if ((rc = gpuplan_cluster_from_node(c->ctx, c->cat, n, nodes, &cl))) return cli_lib_fail(c, rc);
      o.dp = nodes;
      o.precision = GPUPLAN_PREC_FP32;
      rc = gpuplan_perf_eval(c->ctx, m, &cl, &o, global_batch, train_tokens, NULL, &pf);
      if (rc) return cli_fail(c, EXIT_RUNTIME, "perf: %s", gpuplan_errmsg(c->ctx));
      if (!json)
        printf("%s (%.3gB params) training on %lld x %s (CPU only: %lld vCPUs, %.2f TFLOP/s FP32 peak each)\n",
               size > 0 ? model_name : m->id, gpuplan_model_params(m) / 1e9, (long long)nodes, n->name,
               (long long)n->vcpus, n->cpu_fp32_flops / 1e12);
      print_perf(&pf, &cl, train_tokens, json);
      return EXIT_OK;
    }
  }

  /* The job: model or size, GPU or node (vGPU memory), gpus = dp*tp*pp*cp,
   * as the bindings resolve it. */
  job.options = o;
  rc = gpuplan_job_resolve(c->ctx, c->cat, model_name, gpu_name, node_name, gpus, nodes, per_node, dp_given, &job);
  if (rc == GPUPLAN_EINVAL) return cli_fail(c, EXIT_RUNTIME, "plan: %s", gpuplan_errmsg(c->ctx));
  if (rc) return cli_lib_fail(c, rc);
  o = job.options;
  m = job.model;
  g = job.gpu; /* may point into job: job lives to the end of this function */
  node = job.node;
  gpus = job.gpus;
  if (!gpuplan_parse_size(model_name, &size)) size = 0; /* a size ("7B") is printed as given */
  if (!max_gpus) max_gpus = gpus > 8 ? gpus : 8;

  if (simulate == 3) {
    gpuplan_cluster cl;
    gpuplan_candidate best[100];
    gpuplan_search_stats st;
    progress_state ps;
    size_t n = 0, k2;
    double t0;
    if (global_batch < 1) return cli_fail(c, EXIT_USAGE, "search: needs --global-batch B");
    if (node) rc = gpuplan_cluster_from_node(c->ctx, c->cat, node, nodes, &cl);
    else rc = gpuplan_cluster_default(c->ctx, c->cat, g, gpus, per_node, &cl);
    if (rc) return cli_fail(c, EXIT_RUNTIME, "search: %s", gpuplan_errmsg(c->ctx));
    if (node && node->gpu_memory_bytes) cl.gpu = g;
    if ((rc = cluster_overrides(c, &cl, intra_name, inter_name, nics, nic_gbps))) return rc;
    ps.start = t0 = now_s();
    ps.shown = 0;
    rc = gpuplan_search(c->ctx, m, &cl, &o, global_batch, objective, best, (size_t)top, &n, &st,
                        progress_bar, &ps);
    if (ps.shown) fputs("\n", stderr);
    if (rc) return cli_fail(c, EXIT_RUNTIME, "search: %s", gpuplan_errmsg(c->ctx));
    if (json) {
      printf("{\n  \"evaluated\": %llu,\n  \"too_big\": %llu,\n  \"invalid\": %llu,\n  \"seconds\": ",
             (unsigned long long)st.evaluated, (unsigned long long)st.too_big, (unsigned long long)st.invalid);
      json_num(stdout, now_s() - t0);
      printf(",\n  \"best\": [");
      for (k2 = 0; k2 < n; k2++) {
        const gpuplan_memory_options *q = &best[k2].options;
        printf("%s\n    {\"tp\": %lld, \"pp\": %lld, \"cp\": %lld, \"dp\": %lld, \"vpp\": %lld, "
               "\"micro_batch\": %lld, \"recompute\": \"%s\", \"dp_mode\": \"%s\", \"step_s\": ",
               k2 ? "," : "", (long long)q->tp, (long long)q->pp, (long long)q->cp, (long long)q->dp,
               (long long)q->vpp, (long long)q->micro_batch, gpuplan_recompute_name(q->recompute),
               gpuplan_dp_mode_name(q->dp_mode));
        json_num(stdout, best[k2].perf.step_s);
        printf(", \"tokens_per_s\": ");
        json_num(stdout, best[k2].perf.tokens_per_s);
        printf(", \"mfu\": ");
        json_num(stdout, best[k2].perf.mfu);
        printf(", \"memory_bytes\": %llu, \"cost_per_mtok\": ", (unsigned long long)best[k2].memory_bytes);
        json_num(stdout, best[k2].perf.cost_per_mtok);
        printf(", \"why\": ");
        json_str(stdout, best[k2].why);
        printf("}");
      }
      printf("\n  ]\n}\n");
      return EXIT_OK;
    }
    printf("%s (%.3gB params) on %lld x %s, global batch %lld x %lld tokens: %llu layouts evaluated in %.3f s, "
           "%llu do not fit, %llu invalid\n",
           size > 0 ? model_name : m->id, gpuplan_model_params(m) / 1e9, (long long)(cl.gpus_per_node * cl.nodes),
           g->name, (long long)global_batch, (long long)(o.seq_len ? o.seq_len : m->seq_len),
           (unsigned long long)st.evaluated, now_s() - t0, (unsigned long long)st.too_big,
           (unsigned long long)st.invalid);
    if (!n) {
      printf("no layout fits: try more GPUs, a bigger GPU, or a smaller global batch\n");
      return EXIT_OK;
    }
    for (k2 = 0; k2 < n; k2++) {
      const gpuplan_candidate *b = &best[k2];
      const gpuplan_memory_options *q = &b->options;
      printf("\n%zu. tp %lld, pp %lld%s, cp %lld, dp %lld (%s), micro-batch %lld, recompute %s\n", k2 + 1,
             (long long)q->tp, (long long)q->pp, q->vpp > 1 ? " interleaved" : "", (long long)q->cp,
             (long long)q->dp, gpuplan_dp_mode_name(q->dp_mode), (long long)q->micro_batch,
             gpuplan_recompute_name(q->recompute));
      printf("   step %.3f s, %.0f tokens/s, MFU %.1f%%", b->perf.step_s, b->perf.tokens_per_s, 100 * b->perf.mfu);
      if (isfinite(b->perf.cost_per_mtok)) printf(", %.3f per M tokens", b->perf.cost_per_mtok);
      if (train_tokens > 0) printf(", %.1f days for %.3g tokens", train_tokens / b->perf.tokens_per_s / 86400, train_tokens);
      printf("\n   why: %s", b->why);
      if (k2 > 0) printf("; %.1f%% slower than #1", 100 * (b->perf.step_s / best[0].perf.step_s - 1));
      printf("\n");
    }
    return EXIT_OK;
  }

  rc = gpuplan_memory_eval(c->ctx, m, g, &o, GPUPLAN_STAGE_WORST, &worst);
  if (rc) return cli_fail(c, EXIT_RUNTIME, "plan: %s", gpuplan_errmsg(c->ctx));
  if (simulate == 2) {
    gpuplan_cluster cl;
    gpuplan_perf pf;
    if (node) rc = gpuplan_cluster_from_node(c->ctx, c->cat, node, nodes, &cl);
    else rc = gpuplan_cluster_default(c->ctx, c->cat, g, gpus, per_node, &cl);
    if (rc) return cli_fail(c, EXIT_RUNTIME, "perf: %s", gpuplan_errmsg(c->ctx));
    if (node && node->gpu_memory_bytes) cl.gpu = g; /* the vGPU slice */
    if ((rc = cluster_overrides(c, &cl, intra_name, inter_name, nics, nic_gbps))) return rc;
    rc = gpuplan_perf_eval(c->ctx, m, &cl, &o, global_batch, train_tokens, NULL, &pf);
    if (rc) return cli_fail(c, EXIT_RUNTIME, "perf: %s", gpuplan_errmsg(c->ctx));
    if (!json) {
      header(c, m, size > 0 ? model_name : m->id, g, gpus, &o, worst.params_total);
      printf("memory: worst rank %.2f GiB of %.2f GiB: %s\n", (double)worst.total / 1073741824.0,
             (double)worst.capacity / 1073741824.0, worst.fits ? "fits" : "DOES NOT FIT (see gpuplan plan)");
    }
    print_perf(&pf, &cl, train_tokens, json);
    return EXIT_OK;
  }
  if (simulate) {
    gpuplan_sim_result sr;
    uint64_t resident = worst.item[GPUPLAN_MEM_CONTEXT].bytes + worst.item[GPUPLAN_MEM_NCCL].bytes +
                        worst.item[GPUPLAN_MEM_WORKSPACE].bytes;
    /* The mock GPU: the SKU's memory; resident outside PyTorch's allocator
     * are the CUDA context, NCCL buffers and cuBLAS workspace. */
    rc = gpuplan_sim_simulate(c->ctx, m, g, &o, &so, other_procs, &sr);
    if (rc) return cli_fail(c, EXIT_RUNTIME, "simulate: %s", gpuplan_errmsg(c->ctx));
    if (!json) header(c, m, size > 0 ? model_name : m->id, g, gpus, &o, worst.params_total);
    print_sim(&sr, &so, json);
    if (!json)
      printf("nvidia-smi at the peak would show %.0fMiB / %.0fMiB used (PyTorch reserved %.0f + CUDA "
             "context, NCCL, cuBLAS %.0f + other processes %.0f)\n",
             (double)(sr.peak_reserved + resident + other_procs) / 1048576.0,
             (double)g->memory_bytes / 1048576.0, (double)sr.peak_reserved / 1048576.0,
             (double)resident / 1048576.0, (double)other_procs / 1048576.0);
    if (so.snapshot_path && !json) printf("snapshot written to %s\n", so.snapshot_path);
    if (on_device >= 0) return run_on_device(c, m, g, &o, &so, &sr, on_device, json);
    return EXIT_OK;
  }
  if (!worst.fits) {
    rc = gpuplan_memory_ladder(c->ctx, c->cat, m, g, &o, max_gpus, fixes,
                               sizeof fixes / sizeof fixes[0], &nfix);
    if (rc) return cli_fail(c, EXIT_RUNTIME, "plan: %s", gpuplan_errmsg(c->ctx));
  }

  if (json) {
    printf("{\n  \"model\": ");
    json_str(stdout, size > 0 ? model_name : m->id);
    printf(",\n  \"params\": ");
    json_num(stdout, worst.params_total);
    printf(",\n  \"gpu\": ");
    json_str(stdout, g->id);
    printf(",\n  \"gpus\": %lld,\n  \"workload\": \"%s\",\n", (long long)gpus,
           o.workload == GPUPLAN_TRAIN ? "train" : "infer");
    printf("  \"options\": {\"precision\": \"%s\", \"optimizer\": \"%s\", \"convention\": \"%s\", "
           "\"recompute\": \"%s\", \"micro_batch\": %lld, \"seq_len\": %lld, \"tp\": %lld, "
           "\"pp\": %lld, \"dp\": %lld, \"cp\": %lld, \"ep\": %lld, \"dp_mode\": \"%s\", "
           "\"schedule\": \"%s\", \"flash_attention\": %s},\n",
           gpuplan_precision_name(o.precision), gpuplan_optimizer_name(o.optimizer),
           gpuplan_convention_name(o.convention), gpuplan_recompute_name(o.recompute),
           (long long)o.micro_batch, (long long)(o.seq_len ? o.seq_len : m->seq_len),
           (long long)o.tp, (long long)o.pp, (long long)o.dp, (long long)o.cp, (long long)o.ep,
           gpuplan_dp_mode_name(o.dp_mode), gpuplan_schedule_name(o.schedule),
           o.flash_attention ? "true" : "false");
    printf("  \"worst\": ");
    json_stage(&worst, 2);
    if (per_rank) {
      int64_t s;
      printf(",\n  \"stages\": [");
      for (s = 0; s < o.pp; s++) {
        gpuplan_memory r;
        gpuplan_memory_eval(c->ctx, m, g, &o, s, &r);
        printf("%s\n    ", s ? "," : "");
        json_stage(&r, 4);
      }
      printf("]");
    }
    printf(",\n  \"ladder\": [");
    for (k = 0; k < nfix; k++) {
      printf("%s\n    {\"step\": %zu, \"change\": ", k ? "," : "", k + 1);
      json_str(stdout, fixes[k].what);
      printf(", \"gpu\": ");
      json_str(stdout, fixes[k].gpu->id);
      printf(", \"gpus\": %lld, \"total_bytes\": %llu, \"capacity_bytes\": %llu, \"fits\": %s}",
             (long long)fixes[k].gpus, (unsigned long long)fixes[k].total,
             (unsigned long long)fixes[k].capacity, fixes[k].fits ? "true" : "false");
    }
    printf("%s]\n}\n", nfix ? "\n  " : "");
    return EXIT_OK;
  }

  header(c, m, size > 0 ? model_name : m->id, g, gpus, &o, worst.params_total);
  if (per_rank && o.pp > 1) {
    int64_t s;
    for (s = 0; s < o.pp; s++) {
      gpuplan_memory r;
      gpuplan_memory_eval(c->ctx, m, g, &o, s, &r);
      print_stage(&r, g, 0);
    }
    printf("\nworst rank is stage %lld: %.2f GiB\n", (long long)worst.stage, gib(worst.total));
  } else {
    print_stage(&worst, g, 1);
  }
  if (nfix) {
    printf("\nfix ladder (each step keeps the ones above it):\n");
    for (k = 0; k < nfix; k++)
      printf("  %zu. %-60s %8.2f GiB of %.2f  %s\n", k + 1, fixes[k].what, gib(fixes[k].total),
             gib(fixes[k].capacity), fixes[k].fits ? "FITS" : "does not fit");
    if (!fixes[nfix - 1].fits)
      printf("  nothing on the ladder fits within %lld GPUs; try --max-gpus, tensor/pipeline "
             "parallelism (--tp, --pp) or offload (--offload-optimizer)\n", (long long)max_gpus);
  } else if (!worst.fits) {
    printf("\nno rung of the fix ladder applies to this case\n");
  }
  return EXIT_OK;
}

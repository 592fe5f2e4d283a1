/*
 * perf.c: the performance model (gpuplan/perf.h).
 *
 * One GPU's step, built from what it runs (docs/performance.md has every
 * formula and the source of every constant):
 *
 *   step = M x T_stage + bubble + exposed(tp, cp, ep, pp, dp collectives)
 *          + optimizer + stragglers + fixed overhead
 *
 * T_stage is one micro-batch through the slowest pipeline stage: its
 * layers' GEMMs (each at the roofline of its own shape), attention (the
 * fused kernel's rate for the SKU and framework, or explicit GEMMs plus the
 * softmax traffic), memory-bound work at HBM bandwidth, and the logits on
 * the last stage.  Every collective is timed with NCCL's own latency and
 * bandwidth model (src/graph/tuning.cc at b6475625) on the fabric its group
 * crosses; a group spanning nodes owns only its ranks' NICs (rail-optimised,
 * one per GPU).  A collective hides behind the compute of its phase up to
 * the overlap efficiency: exposed = max((1 - eta) X, X - eta C).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/perf_int.h"
#include "plan/plan_int.h"

/* --- framework profiles ------------------------------------------------------ */

static const char *const fw_names[GPUPLAN_FW_COUNT] = {"megatron", "nemo",       "deepspeed", "fsdp",
                                                       "fsdp2",    "composer",   "torchtitan", "maxtext"};

const char *gpuplan_framework_name(gpuplan_framework fw) {
  return (unsigned)fw < GPUPLAN_FW_COUNT ? fw_names[fw] : "?";
}

static int name_is(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    int x = tolower((unsigned char)*a), y = tolower((unsigned char)*b);
    if (x == '_') x = '-';
    if (y == '_') y = '-';
    if (x != y) return 0;
  }
  return *a == *b;
}

int gpuplan_framework_parse(const char *name, gpuplan_framework *out) {
  static const struct {
    const char *alias;
    gpuplan_framework fw;
  } aliases[] = {{"megatron-lm", GPUPLAN_FW_MEGATRON}, {"megatron-core", GPUPLAN_FW_MEGATRON},
                 {"mcore", GPUPLAN_FW_MEGATRON},       {"megatron-deepspeed", GPUPLAN_FW_DEEPSPEED},
                 {"llm-foundry", GPUPLAN_FW_COMPOSER}, {"jax", GPUPLAN_FW_MAXTEXT}};
  size_t i;
  if (!name || !out) return GPUPLAN_ENOTFOUND;
  for (i = 0; i < GPUPLAN_FW_COUNT; i++)
    if (name_is(name, fw_names[i])) {
      *out = (gpuplan_framework)i;
      return GPUPLAN_OK;
    }
  for (i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (name_is(name, aliases[i].alias)) {
      *out = aliases[i].fw;
      return GPUPLAN_OK;
    }
  return GPUPLAN_ENOTFOUND;
}

/*
 * The constants.  Hardware rates are the same for every framework; what a
 * framework changes is which kernels it runs and what it overlaps.
 * Sources (docs/performance.md, section "Constants"):
 *  - gemm_eff_*: sustained share of the catalog's measured matmul ceiling
 *    (stas00 MAMF rows R0381-R0393); fitted by tools/calibrate.py on the
 *    training rows of data/reference/training_runs_calibration.csv (the
 *    Ampere value also bounds the llm-foundry A100 rows at 77% HFU: the
 *    GEMMs must run at >= 0.9 of the ceiling there).
 *  - gemm_roofline: the additive roofline t = F/R + bytes/HBM gives
 *    efficiency I/(I + B); the factor is fitted.
 *  - attn_*: FlashAttention-2 forward+backward (Dao 2023, arXiv 2307.08691,
 *    Fig. 4/6: A100 up to ~203 TFLOP/s causal d=128 = 0.65 of 312; H100
 *    ~335 = 0.34 of 989); FlashAttention-3 (Shah et al. 2024, arXiv
 *    2407.08608: forward 740 TFLOP/s = 75%, backward 1.5-1.75x FA2) and
 *    cuDNN 9 fused attention on Hopper ~0.55 of 989 forward+backward; the
 *    half-rate sequence length and the d = 64 factor read off the same
 *    figures (at 512 tokens about half the long-sequence rate).
 *  - softmax_bytes: explicit attention's scale/mask/softmax/dropout passes
 *    over the b a s^2 scores (Megatron fused softmax: read+write bf16 fwd,
 *    dropout mask and output; backward twice that): 20 bytes.
 *  - elementwise: the per-op HBM traffic of a transformer layer counted in
 *    perf.c (norms, residuals, activation, dropout, rotary), times the
 *    framework's scale (fused Megatron/TE kernels, XLA, torch.compile < 1).
 *  - coll_eff 0.80: measured NCCL all-reduce bus bandwidth over the link
 *    (R0394 234.89 / 300 GB/s = 0.78, R0395 367.61 / 450 = 0.82).
 *  - overlap_eff, tp_overlap, dp_bw_eff, straggler, step_overhead_s:
 *    fitted on the calibration rows of each framework (and on Narayanan et
 *    al. 2021 Table 2 for DeepSpeed ZeRO-3, tests/data/perf/).
 */
static const gpuplan_perf_constants hw_defaults = {
  GPUPLAN_PERF_CONSTANTS_VERSION, GPUPLAN_FW_MEGATRON,
  /* gemm_eff ampere, hopper (fitted); blackwell: no calibration row, Hopper's
   * share assumed; other (Volta, Turing, Ada): no row, an estimate */
  0.87, 0.895, 0.895, 0.60,
  0.625,                  /* gemm_roofline (fitted) */
  268,                    /* gemm_dim_half, at A100's balance (fitted) */
  1.0,                    /* gemm_scale (the framework's) */
  0.85,                   /* fp8_gemm_eff (the framework's) */
  0.65, 0.34, 0.55, 0.55, /* attention: FA2 Ampere, FA2 Hopper, FA3/cuDNN Hopper, Blackwell (published) */
  400,                    /* attn_seq_half (FA2 paper's curves) */
  0.85,                   /* attn_d64 (FA2 paper's curves) */
  1.0,                    /* attn_scale (the framework's) */
  20,                     /* softmax_bytes (counted) */
  1.0,                    /* elementwise_scale (the framework's) */
  0.85,                   /* hbm_eff: STREAM-like kernels reach ~85-90% of HBM peak */
  3.0,                    /* fp8_cast_bytes (counted: read 2 + write 1) */
  0.0,                    /* launch_s */
  0.80,                   /* coll_eff (measured: R0394, R0395) */
  0.85,                   /* overlap_eff (the framework's) */
  0.0,                    /* tp_overlap (the framework's) */
  1.0,                    /* dp_bw_eff (the framework's) */
  0.02,                   /* straggler (fitted; ~4% at 8 GPUs, ~7% at 1,024) */
  0.0,                    /* step_overhead_s */
  -1, 1,                  /* grad_reduce_per_microbatch (rule), dp_overlap */
  {0},
};

/* What each framework runs (kernels, fusion, overlaps). */
typedef struct fw_profile {
  int hopper_fa3;            /* fused attention at FA3/cuDNN rates on Hopper */
  double gemm_scale;         /* its GEMMs against the sustained share */
  double attn_scale;         /* its attention kernel against the published FA rates */
  double elementwise_scale;  /* fused kernels < 1 */
  double fp8_gemm_eff;
  double fp8_cast_bytes;
  double launch_s;
  double overlap_eff;
  double tp_overlap;
  double dp_bw_eff;
  double step_overhead_s;
} fw_profile;

/* Fitted values come from tools/calibrate.py on
 * data/reference/training_runs_calibration.csv and
 * tests/data/perf/narayanan2021_table2.csv (the rows of that framework);
 * "no rows" marks values for frameworks without published rows in the
 * repository, taken from the nearest fitted stack (docs/performance.md). */
static const fw_profile profiles[GPUPLAN_FW_COUNT] = {
  /* megatron (fitted on Narayanan 2021 Table 1 and 2: fused bias-GeLU,
   * dropout-add, LayerNorm and softmax kernels; TE/cuDNN attention on
   * Hopper; TP overlap off unless --tp-comm-overlap, the tp_overlap option) */
  {1, 1.01, 1.0, 0.55, 0.85, 2.0, 0.0, 0.90, 0.0, 1.0, 0.0},
  /* nemo (fitted on the DGX Cloud NeMo rows: Megatron-Core + Transformer
   * Engine, tp_comm_overlap in its recipes, fused LayerNorm + FP8 cast) */
  {1, 1.006, 1.0, 0.55, 0.925, 2.0, 0.0, 0.90, 0.24, 1.0, 0.0},
  /* deepspeed (fitted on Narayanan 2021 Table 2, ZeRO-3 at 384-2,240 GPUs:
   * its parameter traffic reaches a tenth of the bus bandwidth) */
  {0, 0.85, 1.0, 0.80, 0.80, 3.0, 0.0, 0.975, 0.0, 0.106, 0.0},
  /* fsdp (no rows: composer's FSDP1 values, SDPA at the FA2 rates) */
  {0, 1.0, 1.0, 0.61, 0.85, 3.0, 0.0, 0.25, 0.0, 1.0, 0.0},
  /* fsdp2 (no rows: as fsdp) */
  {0, 1.0, 1.0, 0.61, 0.85, 3.0, 0.0, 0.25, 0.0, 1.0, 0.0},
  /* composer / llm-foundry (fitted on the MPT rows: FSDP1 eager, its
   * ALiBi flash attention at ~0.55 of FA2's published rates, TE linear
   * layers for amp_fp8, little overlap of FSDP's collectives) */
  {0, 1.0, 0.55, 0.61, 0.85, 3.0, 0.0, 0.25, 0.0, 1.0, 0.0},
  /* torchtitan (no rows: FSDP2 + torch.compile fuses the elementwise work;
   * SDPA picks cuDNN attention on Hopper) */
  {1, 1.0, 1.0, 0.40, 0.85, 2.0, 0.0, 0.50, 0.0, 1.0, 0.0},
  /* maxtext (no rows: XLA fusion, collective matmul overlaps TP) */
  {1, 1.0, 1.0, 0.40, 0.85, 2.0, 0.0, 0.85, 0.24, 1.0, 0.0},
};

void gpuplan_perf_constants_framework(gpuplan_framework fw, gpuplan_perf_constants *out) {
  const fw_profile *p;
  if (!out) return;
  if ((unsigned)fw >= GPUPLAN_FW_COUNT) fw = GPUPLAN_FW_MEGATRON;
  p = &profiles[fw];
  *out = hw_defaults;
  out->framework = fw;
  out->gemm_scale = p->gemm_scale;
  out->attn_scale = p->attn_scale;
  out->elementwise_scale = p->elementwise_scale;
  out->fp8_gemm_eff = p->fp8_gemm_eff;
  out->fp8_cast_bytes = p->fp8_cast_bytes;
  out->launch_s = p->launch_s;
  out->overlap_eff = p->overlap_eff;
  out->tp_overlap = p->tp_overlap;
  out->dp_bw_eff = p->dp_bw_eff;
  out->step_overhead_s = p->step_overhead_s;
  if (!p->hopper_fa3) out->attn_fa3_hopper = out->attn_fa2_hopper;
}

void gpuplan_perf_constants_default(gpuplan_perf_constants *out) {
  gpuplan_perf_constants_framework(GPUPLAN_FW_MEGATRON, out);
}

/* The constants by name, for calibration (validate's constants option). */
static const struct {
  const char *name;
  size_t off;
} knames[] = {
#define K(f) {#f, offsetof(gpuplan_perf_constants, f)}
  K(gemm_eff_ampere), K(gemm_eff_hopper), K(gemm_eff_blackwell), K(gemm_eff_other), K(gemm_roofline), K(gemm_dim_half), K(gemm_scale),
  K(fp8_gemm_eff), K(attn_fa2_ampere), K(attn_fa2_hopper), K(attn_fa3_hopper), K(attn_blackwell),
  K(attn_seq_half), K(attn_d64), K(attn_scale), K(softmax_bytes), K(elementwise_scale), K(hbm_eff), K(fp8_cast_bytes),
  K(launch_s), K(coll_eff), K(overlap_eff), K(tp_overlap), K(dp_bw_eff), K(straggler),
  K(step_overhead_s),
#undef K
};

int gpuplan_perf_constant_set(gpuplan_perf_constants *k, const char *name, double value) {
  size_t i;
  if (!k || !name) return GPUPLAN_ENOTFOUND;
  for (i = 0; i < sizeof knames / sizeof knames[0]; i++)
    if (strcmp(knames[i].name, name) == 0) {
      *(double *)((char *)k + knames[i].off) = value;
      return GPUPLAN_OK;
    }
  if (strcmp(name, "dp_overlap") == 0) {
    k->dp_overlap = value != 0;
    return GPUPLAN_OK;
  }
  if (strcmp(name, "grad_reduce_per_microbatch") == 0) {
    k->grad_reduce_per_microbatch = value < 0 ? -1 : value != 0;
    return GPUPLAN_OK;
  }
  return GPUPLAN_ENOTFOUND;
}

const char *gpuplan_perf_constant_at(const gpuplan_perf_constants *k, size_t n, double *value) {
  if (!k || n >= sizeof knames / sizeof knames[0]) return NULL;
  if (value) *value = *(const double *)((const char *)k + knames[n].off);
  return knames[n].name;
}

/* --- clusters ------------------------------------------------------------------- */

static int fabric_of(gpuplan_catalog *cat, const char *id, const gpuplan_fabric **out) {
  *out = NULL;
  if (!id) return GPUPLAN_OK;
  return gpuplan_catalog_fabric(cat, id, out);
}

/* The catalog's PCIe row for a GPU's generation (PM-8: rates from the catalog only). */
static int pcie_of(gpuplan_catalog *cat, const gpuplan_gpu *g, const gpuplan_fabric **out) {
  char id[16];
  int gen = g && isfinite(g->pcie_gen) ? (int)g->pcie_gen : 4;
  if (gen < 3) gen = 3;
  if (gen > 5) gen = 5;
  snprintf(id, sizeof id, "pcie%d", gen);
  return gpuplan_catalog_fabric(cat, id, out);
}

int gpuplan_cluster_from_node(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_node *n,
                              int64_t nodes, gpuplan_cluster *out) {
  const gpuplan_fabric *intra = NULL, *inter = NULL;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!cat || !n || !out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "cluster: NULL argument");
  if (nodes < 1 || nodes > 1000000)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "nodes: must be 1..1000000 (got %lld)", (long long)nodes);
  memset(out, 0, sizeof *out);
  GPUPLAN_TRY(fabric_of(cat, n->intra_fabric_id, &intra));
  GPUPLAN_TRY(fabric_of(cat, n->inter_fabric_id, &inter));
  if (n->gpu_id) GPUPLAN_TRY(gpuplan_catalog_gpu(cat, n->gpu_id, &out->gpu));
  out->gpus_per_node = n->gpu_id && n->gpu_count > 0 ? n->gpu_count : 1;
  out->nodes = nodes;
  if (!intra && out->gpu) GPUPLAN_TRY(pcie_of(cat, out->gpu, &intra));
  if (intra) {
    out->intra_bw_bytes_s = intra->bw_bytes_s;
    out->intra_latency_s = intra->latency_s;
    out->intra_name = strcmp(intra->kind, "pcie") == 0 ? "pcie" : intra->id;
  } else {
    /* a CPU-only node: one "device", nothing inside the node to cross */
    out->intra_bw_bytes_s = 0;
    out->intra_latency_s = 0;
    out->intra_name = "none";
  }
  if (inter) {
    double nics = isfinite(n->nic_count) ? n->nic_count : 1;
    double bw = isfinite(n->nic_bw_bytes_s) ? n->nic_bw_bytes_s : inter->bw_bytes_s;
    out->inter_bw_bytes_s = nics * bw;
    out->inter_latency_s = inter->latency_s;
    out->inter_name = inter->id;
  } else {
    /* No scale-out network: the catalog's slowest Ethernet row stands for
     * the node's management link. */
    const gpuplan_fabric *eth = NULL;
    GPUPLAN_TRY(gpuplan_catalog_fabric(cat, "eth-25", &eth));
    out->inter_bw_bytes_s = eth->bw_bytes_s;
    out->inter_latency_s = eth->latency_s;
    out->inter_name = eth->id;
  }
  out->cpu_flops = n->cpu_fp32_flops;
  out->price_per_hour = n->price_per_hour;
  if (out->gpu) {
    const gpuplan_fabric *host = NULL;
    GPUPLAN_TRY(pcie_of(cat, out->gpu, &host));
    out->host_bw_bytes_s = host->bw_bytes_s;
  }
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

int gpuplan_cluster_default(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_gpu *g,
                            int64_t gpus, int64_t per_node, gpuplan_cluster *out) {
  const gpuplan_fabric *ib = NULL, *f = NULL;
  int newer;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!cat || !g || !out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "cluster: NULL argument");
  if (per_node < 1) per_node = 8;
  if (gpus < 1) return gpuplan__error(ctx, GPUPLAN_EINVAL, "gpus: must be at least 1 (got %lld)", (long long)gpus);
  if (gpus < per_node) per_node = gpus;
  if (gpus % per_node)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "gpus: %lld is not a multiple of the %lld GPUs per node",
                          (long long)gpus, (long long)per_node);
  memset(out, 0, sizeof *out);
  out->gpu = g;
  out->gpus_per_node = per_node;
  out->nodes = gpus / per_node;
  newer = g->compute_capability && strcmp(g->compute_capability, "9.0") >= 0;
  /* PCIe cards link only in bridged pairs: an all-to-all NVLink fabric
   * exists on SXM boards alone.  The fabric's row gives the latency; the
   * GPU's own NVLink figure (bidirectional, halved) the bandwidth. */
  if (isfinite(g->nvlink_bw_bytes_s) && g->nvlink_bw_bytes_s > 0 && per_node > 1 &&
      !(g->form_factor && strstr(g->form_factor, "PCIe") && per_node > 2)) {
    char id[16];
    int gen = isfinite(g->nvlink_gen) ? (int)g->nvlink_gen : 0;
    snprintf(id, sizeof id, gen >= 3 && gen <= 4 ? "nvswitch%d" : "nvlink%d", gen);
    if (gen < 2 || gpuplan_catalog_fabric(cat, id, &f) != GPUPLAN_OK) f = NULL;
    out->intra_bw_bytes_s = g->nvlink_bw_bytes_s / 2;
    out->intra_latency_s = f ? f->latency_s : 0.6e-6;
    out->intra_name = f ? f->id : "nvlink";
  } else {
    GPUPLAN_TRY(pcie_of(cat, g, &f));
    out->intra_bw_bytes_s = f->bw_bytes_s;
    out->intra_latency_s = f->latency_s;
    out->intra_name = "pcie";
  }
  GPUPLAN_TRY(pcie_of(cat, g, &f));
  out->host_bw_bytes_s = f->bw_bytes_s;
  GPUPLAN_TRY(gpuplan_catalog_fabric(cat, newer ? "ib-ndr" : "ib-hdr", &ib));
  out->inter_bw_bytes_s = (double)per_node * ib->bw_bytes_s; /* one NIC per GPU */
  out->inter_latency_s = ib->latency_s;
  out->inter_name = ib->id;
  out->price_per_hour = NAN;
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

/* --- collectives: NCCL's tuning model ---------------------------------------------- */

/*
 * NCCL src/graph/tuning.cc (github.com/NVIDIA/nccl, commit b6475625):
 * baseLat and hwLat in microseconds per algorithm and protocol
 * {LL, LL128, Simple}.  The catalog's fabric latency is NCCL's LL figure
 * for that hardware (0.6 us NVLink, 1.0 us PCIe, 2.7 us network), so the
 * other protocols scale from it: a fabric with a slower catalog latency is
 * slower in every protocol.
 */
enum { P_LL = 0, P_LL128 = 1, P_SIMPLE = 2 };
static const double base_ring[3] = {6.6, 14.0, 8.4}, base_tree[3] = {6.8, 14.0, 0};
static const double nvl_ring[3] = {0.6, 1.9, 3.4}, nvl_tree[3] = {0.6, 1.25, 28};
static const double pci_ring[3] = {1.0, 2.5, 5.7}, pci_tree[3] = {1.0, 1.9, 28};
static const double net_ring[3] = {2.7, 4.0, 14.0}, net_tree[3] = {5.0, 8.5, 28};
static const double nvls_intra = 23, nvls_inter = 18; /* NVLS Simple */
static const char *const proto_names[3] = {"LL", "LL128", "Simple"};
/* NVLS all-reduce measured at 482.26 GB/s busbw on 8 x H200 over 450 GB/s
 * NVLink 4 (calibration row R0396): in-switch reduction beats the wire. */
#define NVLS_BUS_EFF (482.26 / 450.0)
/* NCCL's per-channel caps (tuning.cc llMaxBws / perChMax*Bws, Hopper row)
 * with 16 channels: GB/s. */
#define LL_MAX_BW_1NODE 87.7e9
#define LL_MAX_BW_NET 20.4e9

typedef struct coll_res {
  double t, lat, bus;        /* seconds, latency part, bus bandwidth used */
  int algo, proto;           /* 0 ring, 1 tree, 2 nvls, 3 hierarchical, 4 p2p */
  double bytes_intra, bytes_inter, bytes_per_nic;
} coll_res;

static const char *const algo_names[5] = {"ring", "tree", "nvls", "hierarchical", "p2p"};

typedef struct fabric_view {
  double intra_bw, intra_lat, nic_bw, inter_lat, per_node;
  int pcie, nvls;
} fabric_view;

static void view_of(const gpuplan_cluster *c, fabric_view *v) {
  v->per_node = (double)c->gpus_per_node;
  v->intra_bw = c->intra_bw_bytes_s > 0 ? c->intra_bw_bytes_s : c->inter_bw_bytes_s;
  v->intra_lat = c->intra_latency_s > 0 ? c->intra_latency_s : 0.6e-6;
  v->nic_bw = c->inter_bw_bytes_s / v->per_node; /* a GPU's share of the node's NICs */
  v->inter_lat = c->inter_latency_s > 0 ? c->inter_latency_s : 2.7e-6;
  v->pcie = !c->intra_name || strcmp(c->intra_name, "pcie") == 0 || strcmp(c->intra_name, "none") == 0;
  /* NVLS: NVLink SHARP in NVSwitch from the 3rd-generation switch (H100) on */
  v->nvls = c->intra_name && (strcmp(c->intra_name, "nvswitch4") == 0 || strcmp(c->intra_name, "nvl72") == 0 ||
                              strcmp(c->intra_name, "nvlink5") == 0);
}

/*
 * One collective of `bytes` (per GPU buffer) over n ranks with kk of them
 * per node.  bw_eff scales the bus bandwidth (ZeRO-3 profiles).  op:
 * GPUPLAN_ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, ALL_TO_ALL, SEND_RECV.
 * algo: RING/TREE/HIERARCHICAL force one; AUTO picks NCCL's fastest.
 */
static void coll_time(const fabric_view *v, const gpuplan_perf_constants *k, int op, int algo, double bytes,
                      double n, double kk, double bw_eff, coll_res *r) {
  double nodes, factor, bus_base, lat_scale_intra, lat_scale_inter;
  const double *hw_ring, *hw_tree;
  int p;
  memset(r, 0, sizeof *r);
  r->t = 0;
  if (n <= 1 || bytes <= 0) return;
  if (kk > n) kk = n;
  if (kk < 1) kk = 1;
  nodes = ceil(n / kk);
  factor = op == GPUPLAN_ALL_REDUCE ? 2 * (n - 1) / n : op == GPUPLAN_SEND_RECV ? 1 : (n - 1) / n;
  /* A ring over nodes runs one channel per NIC the group owns: kk NICs'
   * worth per node, capped by the node fabric every byte also crosses. */
  bus_base = nodes > 1 ? fmin(v->intra_bw, kk * v->nic_bw) : v->intra_bw;
  bus_base *= k->coll_eff * bw_eff;
  hw_ring = v->pcie ? pci_ring : nvl_ring;
  hw_tree = v->pcie ? pci_tree : nvl_tree;
  lat_scale_intra = v->intra_lat / (v->pcie ? 1.0e-6 : 0.6e-6);
  lat_scale_inter = v->inter_lat / 2.7e-6;
  r->t = INFINITY;

  if (op == GPUPLAN_SEND_RECV) {
    double bw = (nodes > 1 ? v->nic_bw : v->intra_bw) * k->coll_eff * bw_eff;
    r->lat = nodes > 1 ? v->inter_lat : v->intra_lat;
    r->t = bytes / bw + r->lat;
    r->algo = 4;
    r->proto = P_SIMPLE;
    r->bus = bw;
    if (nodes > 1) r->bytes_inter = r->bytes_per_nic = bytes;
    else r->bytes_intra = bytes;
    return;
  }
  if (op == GPUPLAN_ALL_TO_ALL) {
    /* Each GPU sends (n-1)/n of its buffer; the share for other nodes goes
     * through its own NIC, the rest over the node fabric. */
    double remote = nodes > 1 ? (n - kk) / n : 0, local = (kk - 1) / n;
    double ti = bytes * local / (v->intra_bw * k->coll_eff * bw_eff);
    double te = remote > 0 ? bytes * remote / (v->nic_bw * k->coll_eff * bw_eff) : 0;
    r->lat = (nodes > 1 ? v->inter_lat * net_ring[P_SIMPLE] / 2.7 : v->intra_lat * hw_ring[P_SIMPLE] / 0.6) + 
             base_ring[P_SIMPLE] * 1e-6;
    r->t = fmax(ti, te) + r->lat;
    r->algo = 4;
    r->proto = P_SIMPLE;
    r->bus = bytes * factor / fmax(r->t - r->lat, 1e-30);
    r->bytes_intra = bytes * local;
    r->bytes_inter = r->bytes_per_nic = bytes * remote;
    return;
  }
  if (algo == GPUPLAN_ALGO_HIERARCHICAL && nodes > 1) {
    /* reduce-scatter inside the node, the op across nodes on 1/kk of the
     * data per GPU (each on its own NIC), all-gather inside the node */
    double mult = op == GPUPLAN_ALL_REDUCE ? 2 : 1, in_f = (kk - 1) / kk;
    double t_in = mult * in_f * bytes / (v->intra_bw * k->coll_eff * bw_eff);
    double t_out = mult * (nodes - 1) / nodes * (bytes / kk) / (v->nic_bw * k->coll_eff * bw_eff);
    r->lat = (base_ring[P_SIMPLE] + 2 * (kk - 1) * hw_ring[P_SIMPLE] * lat_scale_intra +
              2 * (nodes - 1) * net_ring[P_SIMPLE] * lat_scale_inter) * 1e-6;
    r->t = t_in + t_out + r->lat;
    r->algo = 3;
    r->proto = P_SIMPLE;
    r->bus = bytes * factor / fmax(t_in + t_out, 1e-30);
    r->bytes_intra = mult * in_f * bytes;
    r->bytes_inter = r->bytes_per_nic = mult * (nodes - 1) / nodes * bytes / kk;
    return;
  }
  /* Ring, every protocol (tuning.cc: busBw refinements, then lat + size/bw). */
  if (algo == GPUPLAN_ALGO_RING || algo == GPUPLAN_ALGO_AUTO) {
    double nsteps = op == GPUPLAN_ALL_REDUCE ? 2 * (n - 1) : n - 1;
    double ninter = op == GPUPLAN_ALL_REDUCE ? (nodes > 1 ? 2 * nodes : 0) : nodes - 1;
    for (p = 0; p < 3; p++) {
      double bus = bus_base, intra = hw_ring[p] * lat_scale_intra, inter = net_ring[p] * lat_scale_inter, lat, t;
      if (p == P_LL) bus = fmin(nodes > 1 ? LL_MAX_BW_NET : LL_MAX_BW_1NODE,
                                bus * (nodes > 1 || op == GPUPLAN_ALL_REDUCE ? 0.25 : 1.0 / 3));
      if (p == P_LL128) {
        if (v->pcie) continue; /* LL128 needs NVLink (tuning.cc pEnable) */
        bus *= kk < 2 ? 0.7 : 0.92;
      }
      if (nodes > 1 && p == P_LL) intra *= 1.8;
      if (nodes > 1) intra = fmax(intra, p == P_SIMPLE ? 3.0 : 1.0); /* net overhead (Intel host: 1 us, x3 Simple) */
      lat = (base_ring[p] + (nsteps - ninter) * intra + ninter * inter) * 1e-6;
      t = lat + factor * bytes / bus;
      if (t < r->t) {
        r->t = t;
        r->lat = lat;
        r->algo = 0;
        r->proto = p;
        r->bus = bus;
      }
    }
  }
  /* Double binary tree: all-reduce only. */
  if (op == GPUPLAN_ALL_REDUCE && (algo == GPUPLAN_ALGO_TREE || (algo == GPUPLAN_ALGO_AUTO && nodes > 1))) {
    for (p = 0; p < 3; p++) {
      double bus = bus_base * 0.92, intra = hw_tree[p] * lat_scale_intra, inter = net_tree[p] * lat_scale_inter,
             lat, t;
      if (p == P_LL) bus = fmin(bus / 3.8, nodes > 1 ? LL_MAX_BW_NET : LL_MAX_BW_1NODE);
      if (p == P_LL128) bus *= nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
      if (nodes > 1 && p == P_LL) intra *= 1.8;
      lat = (base_tree[p] + 2 * ((kk - 1) * intra + ceil(log2(nodes > 1 ? nodes : 1)) * inter)) * 1e-6;
      t = lat + 2 * bytes / bus; /* algbw = busBw / 2 */
      if (t < r->t) {
        r->t = t;
        r->lat = lat;
        r->algo = 1;
        r->proto = p;
        r->bus = bus;
      }
    }
  }
  /* NVLS inside an NVSwitch node (Simple only). */
  if (algo == GPUPLAN_ALGO_AUTO && v->nvls && nodes == 1 && op != GPUPLAN_ALL_TO_ALL) {
    double bus = v->intra_bw * NVLS_BUS_EFF * bw_eff, lat = nvls_intra * lat_scale_intra * 1e-6, t;
    t = lat + factor * bytes / bus;
    if (t < r->t) {
      r->t = t;
      r->lat = lat;
      r->algo = 2;
      r->proto = P_SIMPLE;
      r->bus = bus;
    }
  }
  (void)nvls_inter;
  /* What crosses which link, per GPU. */
  if (nodes > 1) {
    r->bytes_per_nic = factor * bytes / kk;
    r->bytes_inter = r->bytes_per_nic;
    r->bytes_intra = factor * bytes - r->bytes_inter;
  } else {
    r->bytes_intra = factor * bytes;
  }
}

int gpuplan_collective_time(gpuplan_ctx *ctx, const gpuplan_cluster *c, gpuplan_collective op,
                            gpuplan_coll_algo algo, double bytes, int64_t n64,
                            const gpuplan_perf_constants *kk, gpuplan_coll_time *out) {
  gpuplan_perf_constants kdef;
  const gpuplan_perf_constants *k = kk;
  fabric_view v;
  coll_res r;
  double n = (double)n64, factor;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!c || !out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "collective: NULL argument");
  if (n64 < 1 || n64 > c->gpus_per_node * c->nodes)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "n: %lld GPUs; the cluster has %lld",
                          (long long)n64, (long long)(c->gpus_per_node * c->nodes));
  if (!(bytes >= 0) || bytes > 1e15)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "bytes: must be 0..1e15");
  if ((unsigned)op > GPUPLAN_SEND_RECV || (unsigned)algo > GPUPLAN_ALGO_AUTO)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "collective: unknown operation or algorithm");
  if (!k) {
    gpuplan_perf_constants_default(&kdef);
    k = &kdef;
  }
  memset(out, 0, sizeof *out);
  view_of(c, &v);
  coll_time(&v, k, (int)op, (int)algo, bytes, n, fmin(n, v.per_node), 1.0, &r);
  factor = op == GPUPLAN_ALL_REDUCE ? 2 * (n - 1) / n : op == GPUPLAN_SEND_RECV ? 1 : (n - 1) / n;
  out->seconds = r.t;
  out->latency_s = r.lat;
  out->algo = n > 1 ? algo_names[r.algo] : "none";
  out->proto = proto_names[r.proto];
  out->bytes_intra = r.bytes_intra;
  out->bytes_inter = r.bytes_inter;
  out->bytes_per_nic = r.bytes_per_nic;
  out->algbw_bytes_s = r.t > 0 ? bytes / r.t : 0;
  out->busbw_bytes_s = out->algbw_bytes_s * factor;
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

/* --- the model ---------------------------------------------------------------------- */

/* exposed = max((1 - eta) X, X - eta C): a collective hides behind the
 * compute of its phase, never more than eta of it, and never for free. */
static double exposed_of(double x, double c, double eta) {
  if (x <= 0) return 0;
  if (eta <= 0) return x;
  return fmax((1 - eta) * x, x - eta * c);
}

/* GEMM of M x K by K x N at the roofline of its own intensity. */
typedef struct gemm_ctx {
  double R;      /* FLOP/s ceiling (catalog matmul) */
  double eff;    /* sustained share */
  double B;      /* machine balance, FLOP per byte */
  double elt;    /* bytes per element */
  double beta;
  double dhalf;  /* tile/wave half size of the narrower of N and K */
} gemm_ctx;

static double gemm_t(const gemm_ctx *g, double M, double N, double K, double *flops) {
  double F, I, e;
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  F = 2 * M * N * K;
  I = F / (g->elt * (M * K + K * N + M * N));
  e = g->eff * I / (I + g->beta * g->B);
  if (g->dhalf > 0) e *= fmin(N, K) / (fmin(N, K) + g->dhalf);
  if (flops) *flops += F;
  return F / (g->R * e);
}

typedef struct comm_acc {
  gpuplan_perf *out;
  fabric_view v;
  const gpuplan_perf_constants *k;
} comm_acc;

/* Record count collectives of one kind (exposed as if alone: all of it);
 * returns the record's index, or -1 when there is nothing to move. */
static int add_comm(comm_acc *a, const char *name, int op, const char *phase, double n, double kk,
                    double count, double bytes, double bw_eff) {
  gpuplan_perf *o = a->out;
  gpuplan_perf_comm *c;
  coll_res r;
  if (n <= 1 || count <= 0 || bytes <= 0 || o->n_comm >= GPUPLAN_PERF_COMM_MAX) return -1;
  coll_time(&a->v, a->k, op, GPUPLAN_ALGO_AUTO, bytes, n, kk, bw_eff, &r);
  c = &o->comm[o->n_comm];
  c->name = name;
  c->op = op == GPUPLAN_ALL_REDUCE ? "all-reduce" : op == GPUPLAN_ALL_GATHER ? "all-gather"
        : op == GPUPLAN_REDUCE_SCATTER ? "reduce-scatter" : op == GPUPLAN_ALL_TO_ALL ? "all-to-all" : "send/recv";
  c->algo = algo_names[r.algo];
  c->proto = proto_names[r.proto];
  c->phase = phase;
  c->ranks = (int64_t)n;
  c->ranks_per_node = (int64_t)fmin(kk, n);
  /* NICs of a node the group's ranks own (their share of the node's) */
  c->nics_per_node = ceil(n / fmin(kk, n)) > 1 ? fmin(kk, n) : 0;
  c->count = count;
  c->message_bytes = bytes;
  c->bytes_per_gpu = (r.bytes_intra + r.bytes_inter) * count;
  c->bytes_per_nic = r.bytes_per_nic * count;
  c->seconds = r.t * count;
  c->latency_s = r.lat * count;
  c->exposed_s = c->seconds;
  c->hidden_s = 0;
  if (a->v.pcie) o->bytes_pcie_per_gpu += r.bytes_intra * count;
  else o->bytes_nvlink_per_gpu += r.bytes_intra * count;
  o->bytes_network_per_gpu += r.bytes_inter * count;
  if (c->bytes_per_nic > o->bytes_per_nic) o->bytes_per_nic = c->bytes_per_nic;
  o->comm_s += c->seconds;
  return (int)o->n_comm++;
}

/* Collectives idx[0..n) share one phase of compute C: together they hide
 * behind it up to eta (exposed = max((1 - eta) X, X - eta C)), except that
 * the first of them waits for nothing to overlap (one collective's time
 * at least).  Splits the exposed time over them by their seconds; returns
 * it. */
static double charge(comm_acc *a, const int *idx, int n, double C, double eta) {
  double X = 0, one = 0, e;
  int i;
  for (i = 0; i < n; i++)
    if (idx[i] >= 0) {
      const gpuplan_perf_comm *c = &a->out->comm[idx[i]];
      X += c->seconds;
      if (c->seconds / c->count > one) one = c->seconds / c->count;
    }
  if (X <= 0) return 0;
  e = exposed_of(X, C, eta);
  if (eta > 0) e = fmax(e, fmin(X, one));
  for (i = 0; i < n; i++)
    if (idx[i] >= 0) {
      gpuplan_perf_comm *c = &a->out->comm[idx[i]];
      c->exposed_s = e * c->seconds / X;
      c->hidden_s = c->seconds - c->exposed_s;
    }
  a->out->exposed_comm_s += e;
  return e;
}

/* Layers on stage i of p: the first and last as given (uneven split), the
 * others sharing the rest evenly, the remainder on the earliest of them. */
static double stage_layers(const gpuplan_memory_options *o, int64_t L, int64_t i) {
  int64_t p = o->pp, f = o->first_stage_layers, l = o->last_stage_layers, nmid, rest, j;
  if (p <= 1) return (double)L;
  if (p == 2 && (f || l)) {
    if (!f) f = L - l;
    if (!l) l = L - f;
  }
  if (i == 0 && f) return (double)f;
  if (i == p - 1 && l) return (double)l;
  nmid = p - (f ? 1 : 0) - (l ? 1 : 0);
  rest = L - f - l;
  j = i - (f ? 1 : 0);
  if (nmid <= 0) return 0;
  return (double)(rest / nmid + (j < rest % nmid ? 1 : 0));
}

int gpuplan__perf_eval(gpuplan_ctx *ctx, const gpuplan_model *m, const gpuplan_cluster *c,
                       const gpuplan_memory_options *o, int64_t global_batch, double train_tokens,
                       const gpuplan_perf_constants *k, double params_rank, gpuplan_perf *out) {
  gpuplan_gpu cpu_gpu;
  const gpuplan_gpu *g = c->gpu;
  double h, a, kv, d, f, V, L, s, b, t, p, cp, dp, v, ep, E, topk, glu, M, gpus;
  double R, R16, peak, peak16, hbm, B, gemm_share, attn_rate;
  double qkv_n, fc1_n, tok, tok_e;
  double gemm_fwd_tok, attn_fwd_tok, logit_fwd_tok, model_tok, hw_tok;
  double t_layer_fwd, t_layer_bwd, t_gemm_layer_fwd, t_attn_layer, t_elem_layer, t_logits, gemm_flops = 0;
  double t_stage_max = 0, t_stage_sum = 0, layers_max = 0, t_gemm_step, t_attn_step, t_elem_step;
  double rec_full, rec_sel, causal, Lstack, mlp_w, nkind[3];
  gpuplan__layer_mix mix;
  int fp8, zero3, i;
  comm_acc acc;
  gemm_ctx gc;
  int64_t G;

  h = (double)m->hidden;
  a = (double)m->heads;
  kv = (double)m->kv_heads;
  d = (double)m->head_dim;
  f = (double)m->ffn_hidden;
  V = (double)m->vocab;
  L = (double)m->layers;
  s = (double)(o->seq_len ? o->seq_len : m->seq_len);
  b = (double)o->micro_batch;
  t = (double)o->tp;
  p = (double)o->pp;
  cp = (double)o->cp;
  dp = (double)o->dp;
  v = o->vpp > 1 ? (double)o->vpp : 1;
  ep = o->ep > 1 ? (double)o->ep : 1;
  E = m->experts > 1 ? (double)m->experts : 1;
  topk = m->experts > 1 ? (double)m->top_k : 1;
  glu = m->ffn_type && (strcmp(m->ffn_type, "swiglu") == 0 || strcmp(m->ffn_type, "geglu") == 0) ? 3 : 2;
  M = (double)(o->microbatches ? o->microbatches : o->pp);
  gpus = (double)(c->gpus_per_node * c->nodes);
  if (global_batch > 0) M = (double)global_batch / (dp * b);
  G = (int64_t)(M * dp * b);
  rec_full = o->recompute == GPUPLAN_RECOMPUTE_FULL;
  rec_sel = o->recompute == GPUPLAN_RECOMPUTE_SELECTIVE;
  fp8 = o->precision == GPUPLAN_PREC_FP8;
  zero3 = o->dp_mode == GPUPLAN_DP_ZERO3 || o->dp_mode == GPUPLAN_DP_FSDP_FULL || o->dp_mode == GPUPLAN_DP_FSDP_HYBRID;

  if (!g) {
    /* A CPU node as one device: its vector peak; DDR bandwidth unknown in
     * the catalog (an estimate: 8 channels of DDR4-3200 shared by the VM's
     * share of the socket). */
    memset(&cpu_gpu, 0, sizeof cpu_gpu);
    cpu_gpu.id = "cpu";
    cpu_gpu.name = "CPU";
    cpu_gpu.mem_bw_bytes_s = 50e9;
    cpu_gpu.fp32_flops = c->cpu_flops;
    cpu_gpu.bf16_flops = cpu_gpu.fp16_flops = cpu_gpu.tf32_flops = NAN;
    cpu_gpu.matmul_bf16_flops = cpu_gpu.matmul_fp8_flops = NAN;
    g = &cpu_gpu;
  }

  /* Rates: the measured matmul ceiling where the catalog has it, else 80%
   * of the dense peak (the MAMF rows: 77-87% of peak). */
  peak16 = isfinite(g->bf16_flops) ? g->bf16_flops : g->fp16_flops;
  if (!isfinite(peak16)) peak16 = g->fp32_flops;
  if (o->precision == GPUPLAN_PREC_FP32 || !c->gpu) {
    peak = isfinite(g->tf32_flops) ? g->tf32_flops : g->fp32_flops;
    R = c->gpu ? 0.8 * peak : 0.5 * peak; /* CPU: FP32 GEMMs at half the vector peak */
    R16 = R;
    peak16 = peak;
  } else if (fp8 && isfinite(g->fp8_flops)) {
    peak = g->fp8_flops;
    R = (isfinite(g->matmul_fp8_flops) ? g->matmul_fp8_flops : 0.75 * peak) * k->fp8_gemm_eff;
    R16 = isfinite(g->matmul_bf16_flops) ? g->matmul_bf16_flops : 0.8 * peak16;
  } else {
    fp8 = 0;
    peak = peak16;
    R = isfinite(g->matmul_bf16_flops) ? g->matmul_bf16_flops : 0.8 * peak;
    R16 = R;
  }
  if (!(R > 0) || !(peak > 0))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "gpu %s: no FLOP/s figure for this precision", g->id);
  hbm = g->mem_bw_bytes_s;
  {
    const char *cc = c->gpu ? g->compute_capability : NULL;
    int major = cc ? (int)strtol(cc, NULL, 10) : 0;
    gemm_share = !c->gpu ? 1.0 : major == 8 ? k->gemm_eff_ampere : major == 9 ? k->gemm_eff_hopper
               : major >= 10 ? k->gemm_eff_blackwell : k->gemm_eff_other;
    /* Fused attention rate (forward + backward, share of the 16-bit peak). */
    attn_rate = major == 8 ? k->attn_fa2_ampere : major == 9 ? k->attn_fa3_hopper
              : major >= 10 ? k->attn_blackwell : 0.5 * k->attn_fa2_ampere;
  }
  gc.R = R;
  gc.eff = gemm_share * k->gemm_scale;
  gc.B = R / hbm;
  /* the tile/wave term scales with the machine balance (A100's 133 FLOP/B as the unit) */
  gc.dhalf = c->gpu ? k->gemm_dim_half * (gc.B / 133.0) : 0;
  gc.elt = fp8 ? 1 : o->precision == GPUPLAN_PREC_FP32 ? 4 : 2;
  gc.beta = k->gemm_roofline;
  B = R16 / hbm;
  (void)B;

  /* FLOPs per token (forward), whole model: the MFU basis.  The GEMMs come
   * from the shape's list (memory.c: expert width, shared experts, dense
   * layers among MoE ones, MLA's projections, an encoder-decoder's cross
   * attention), the same list the GEMM times below use. */
  qkv_n = (a + 2 * kv) * d;       /* the fp8 casts' widths below */
  fc1_n = f * (glu == 3 ? 2 : 1);
  gpuplan__layer_mix_of(m, o, &mix);
  nkind[GPUPLAN__LAYER_DENSE] = mix.dense;
  nkind[GPUPLAN__LAYER_MOE] = mix.moe;
  nkind[GPUPLAN__LAYER_DECODER] = mix.decoder;
  Lstack = mix.dense + mix.moe + mix.decoder;
  if (!(Lstack > 0)) Lstack = L;
  causal = mix.causal ? 0.5 : 1.0;
  gemm_fwd_tok = 0;
  mlp_w = 0;
  for (i = 0; i < 3; i++) {
    int j;
    for (j = 0; j < mix.ngemm[i]; j++)
      gemm_fwd_tok += nkind[i] * 2 * mix.gemm[i][j].n * mix.gemm[i][j].k * mix.gemm[i][j].count * (mix.gemm[i][j].routed ? topk : 1);
    mlp_w += nkind[i] * mix.mlp_width[i];
  }
  mlp_w /= Lstack; /* the MLP width a token passes per layer, on average */
  /* scores (QK^T) and AV: self-attention (causal: half), and a decoder's cross attention (full) */
  attn_fwd_tok = (Lstack * causal + mix.decoder) * 2 * a * (mix.qk_dim + mix.v_dim) * s;
  logit_fwd_tok = 2 * h * V;
  model_tok = 3 * (gemm_fwd_tok + attn_fwd_tok + logit_fwd_tok);
  hw_tok = model_tok;
  if (rec_full) hw_tok += gemm_fwd_tok + attn_fwd_tok;
  else if (rec_sel) hw_tok += attn_fwd_tok;

  /* One micro-batch, one layer, one GPU: tokens of its sequence shard. */
  tok = b * s / cp;
  tok_e = tok * topk * ep / E; /* tokens per local expert (MoE) */
  {
    double fw = 0, flops_layer = 0, ew, ew_bytes, sp_div = o->sequence_parallel && t > 1 ? t : 1;
    /* the average layer of the stack: each kind's GEMMs weighted by its count */
    for (i = 0; i < 3; i++) {
      double fk = 0, flk = 0;
      int j;
      if (!(nkind[i] > 0)) continue;
      for (j = 0; j < mix.ngemm[i]; j++) {
        const gpuplan__gemm *gm = &mix.gemm[i][j];
        double N = gm->split == GPUPLAN__SPLIT_N ? gm->n / t : gm->n;
        double K = gm->split == GPUPLAN__SPLIT_K ? gm->k / t : gm->k;
        if (gm->routed) fk += (E / ep) * gemm_t(&gc, tok_e, N, K, &flk);
        else fk += gm->count * gemm_t(&gc, tok, N, K, NULL), flk += gm->count * 2 * tok * N * K;
      }
      fw += nkind[i] / Lstack * fk;
      flops_layer += nkind[i] / Lstack * flk;
    }
    t_gemm_layer_fwd = fw;
    gemm_flops = flops_layer;
    /* Attention.  Fused (FlashAttention): causal work is half of the
     * scores; backward does 2.5x the forward's FLOPs; the published rates
     * count exactly that (FA2 paper, section 4).  Explicit attention: the
     * full s x s scores as batched GEMMs, plus softmax traffic. */
    {
      double heads_gpu = a / t, s_loc = s / cp, af;
      if (o->flash_attention && c->gpu) {
        double rate = attn_rate * k->attn_scale * peak16 * s_loc / (s_loc + k->attn_seq_half) * (d <= 64 ? k->attn_d64 : 1.0);
        /* forward FLOPs: the average layer's self-attention, and cross attention's share */
        af = 2 * b * s_loc * s * heads_gpu * (mix.qk_dim + mix.v_dim) * (causal + mix.decoder / Lstack);
        t_attn_layer = af * (3.5 + (rec_full || rec_sel ? 1.0 : 0.0)) / rate;
      } else {
        double score_elems = b * heads_gpu * s_loc * s, tg;
        gemm_ctx ga = gc;
        ga.R = R16;
        ga.elt = 2;
        ga.dhalf = 0; /* batched per-head GEMMs: the roofline in their intensity (~head_dim) bounds them */
        af = 2 * b * s_loc * s * heads_gpu * (mix.qk_dim + mix.v_dim); /* full scores */
        tg = b * heads_gpu * (gemm_t(&ga, s_loc, s, mix.qk_dim, NULL) + gemm_t(&ga, s_loc, mix.v_dim, s, NULL)) *
             (1 + mix.decoder / Lstack);
        t_attn_layer = tg * (3 + (rec_full || rec_sel ? 1.0 : 0.0)) +
                       score_elems * k->softmax_bytes * (1 + (rec_full || rec_sel ? 0.4 : 0.0)) /
                           (hbm * k->hbm_eff);
        if (!c->gpu) t_attn_layer = af * 3 / R;
      }
    }
    /* Memory-bound work, eager per-op HBM traffic per token (bytes):
     * 2 norms (fwd read+write 4h each, bwd ~6h each) = 20h; 2 residual adds
     * (fwd 6h, bwd 6h each) = 24h; activation over the MLP width: GeLU fwd
     * 4f + bwd 6f, SwiGLU fwd 6f + bwd 10f; dropout (mask 1B + output,
     * fwd 5h, bwd 5h, twice) = 20h; rotary on q and k (fwd 4, bwd 4 bytes
     * per element).  Sequence parallelism shards the h-sized parts by t. */
    ew_bytes = (20 * h + 24 * h + (o->dropout ? 20 * h : 0)) / sp_div +
               (glu == 3 ? 16 : 10) * mlp_w / t +
               (m->position && strcmp(m->position, "rope") == 0 ? 8 * (a + kv) * d / t : 0);
    ew = tok * ew_bytes * k->elementwise_scale;
    if (rec_full) ew *= 1.4;
    if (fp8) {
      /* casts of every GEMM input (fwd) and gradient (bwd) to FP8 */
      double in = 2 * h / sp_div + a * d / t + mlp_w / t, gr = qkv_n / t + 2 * h / sp_div + fc1_n / t;
      ew += tok * (in * (rec_full ? 2 : 1) + gr) * k->fp8_cast_bytes;
    }
    t_elem_layer = ew / (hbm * k->hbm_eff);
    /* forward share: GEMMs 1/3, attention 1/3.5, elementwise 40% */
    {
      double attn_f = o->flash_attention ? 1.0 / (3.5 + (rec_full || rec_sel)) : 1.0 / (3 + (rec_full || rec_sel));
      double gemm_total = t_gemm_layer_fwd * (3 + rec_full);
      double layer_total = gemm_total + t_attn_layer + t_elem_layer;
      t_layer_fwd = t_gemm_layer_fwd + t_attn_layer * attn_f + t_elem_layer * (rec_full ? 0.4 / 1.4 : 0.4);
      t_layer_bwd = layer_total - t_layer_fwd;
      /* host work per layer per micro-batch that the GPU waits for
       * (eager frameworks: Python, module hooks, FSDP unit bookkeeping) */
      if (k->launch_s > 0) t_layer_bwd += k->launch_s * (1 + rec_full * 0.4);
    }
  }
  /* Logits (last stage): h x V/t GEMM, fwd + bwd. */
  t_logits = 3 * gemm_t(&gc, tok, V / t, h, NULL);

  /* Stages: the slowest sets the pace (logits on the last). */
  for (i = 0; i < (int)p; i++) {
    double li = mix.decoder > 0 ? Lstack : stage_layers(o, m->layers, i); /* encoder-decoder: pp = 1 */
    double ts = li * (t_layer_fwd + t_layer_bwd) + (i == (int)p - 1 ? t_logits : 0);
    t_stage_sum += ts;
    if (ts > t_stage_max) {
      t_stage_max = ts;
      layers_max = li;
    }
  }
  memset(out, 0, sizeof *out);
  out->framework = k->framework;
  out->microbatches = (int64_t)M;
  out->tokens_per_microbatch = (int64_t)tok;
  out->compute_s = M * t_stage_max;
  t_gemm_step = M * (layers_max * t_gemm_layer_fwd * (3 + rec_full));
  t_attn_step = M * layers_max * t_attn_layer;
  t_elem_step = M * layers_max * t_elem_layer;
  out->gemm_s = t_gemm_step;
  out->attention_s = t_attn_step;
  out->elementwise_s = out->compute_s - t_gemm_step - t_attn_step;
  out->gemm_eff = t_gemm_step > 0 ? M * layers_max * gemm_flops * (3 + rec_full) / t_gemm_step / peak : 0;
  out->attn_flops_s = t_attn_step > 0 ? M * layers_max * 2 * b * (s / cp) * s * (a / t) * (mix.qk_dim + mix.v_dim) * (causal + mix.decoder / Lstack) * 3.5 / t_attn_step : 0;
  (void)t_elem_step;
  /* 1F1B bubble: (p - 1) / v stage-times of one micro-batch. */
  out->bubble_s = p > 1 ? (p - 1) / v * (t_stage_sum / p) : 0;

  acc.out = out;
  acc.k = k;
  view_of(c, &acc.v);
  out->nic_bw_bytes_s = acc.v.nic_bw;

  /* --- tensor parallel: per layer per micro-batch 2 all-reduces forward, 2
   * backward (+2 recompute); with SP each is an all-gather + reduce-scatter
   * of the same bytes.  Overlap (TP comm overlap, collective matmul) hides
   * them behind the layer's GEMMs, up to tp_overlap. */
  if (t > 1) {
    double act = tok * h * 2, n_ar = (4 + 2 * rec_full) * layers_max * M, kk = fmin(t, acc.v.per_node);
    double gemm_c = M * layers_max * t_gemm_layer_fwd * (3 + rec_full);
    int ix[2];
    if (o->sequence_parallel) {
      ix[0] = add_comm(&acc, "tp_allgather", GPUPLAN_ALL_GATHER, "gemm", t, kk, n_ar, act, 1.0);
      ix[1] = add_comm(&acc, "tp_reduce_scatter", GPUPLAN_REDUCE_SCATTER, "gemm", t, kk, n_ar, act, 1.0);
    } else {
      ix[0] = add_comm(&acc, "tp_allreduce", GPUPLAN_ALL_REDUCE, "gemm", t, kk, n_ar, act, 1.0);
      ix[1] = -1;
    }
    out->tp_comm_s = charge(&acc, ix, 2, gemm_c, k->tp_overlap);
  }
  /* --- context parallel: ring attention, KV chunks around the cp ring:
   * (cp - 1) sends forward, twice that backward (K, V and their grads),
   * overlapped with the attention of the same step. */
  if (cp > 1) {
    double kvb = b * (s / cp) * 2 * kv * d * 2 / t;
    int ix = add_comm(&acc, "cp_ring", GPUPLAN_SEND_RECV, "attention", 2, t * cp <= acc.v.per_node ? 2 : 1,
                      3 * (cp - 1) * layers_max * M, kvb, 1.0);
    out->cp_comm_s = charge(&acc, &ix, 1, t_attn_step, k->overlap_eff);
  }
  /* --- expert parallel: dispatch and combine all-to-alls, forward and
   * backward; nothing to overlap them with (the experts wait for them). */
  if (E > 1 && ep > 1) {
    int ix = add_comm(&acc, "ep_alltoall", GPUPLAN_ALL_TO_ALL, "none", ep, fmax(1, fmin(ep, acc.v.per_node / t)),
                      4 * layers_max * M, tok * topk * h * 2, 1.0);
    out->cp_comm_s += charge(&acc, &ix, 1, 0, 0);
  }
  /* --- pipeline: activations (and their grads) at every stage boundary,
   * split over the tp ranks (scatter/gather, or SP); v chunks each.  The
   * warm-up and cool-down chains (2 (p - 1) hops) are on the critical
   * path; steady-state sends overlap the other direction's compute. */
  if (p > 1) {
    int in = t * cp * dp * p <= acc.v.per_node;
    int ix = add_comm(&acc, "pp_sendrecv", GPUPLAN_SEND_RECV, "steady state", 2, in ? 2 : 1, 2 * M * v,
                      tok * h * 2 / t, 1.0);
    double x = charge(&acc, &ix, 1, out->compute_s, k->overlap_eff);
    if (ix >= 0) {
      gpuplan_perf_comm *pc = &out->comm[ix];
      double chain = fmin(pc->hidden_s, 2 * (p - 1) * pc->seconds / pc->count);
      pc->exposed_s += chain;
      pc->hidden_s -= chain;
      out->exposed_comm_s += chain;
      x += chain;
    }
    out->pp_comm_s = x;
  }
  /* --- data parallel (and cp: gradients are reduced over dp x cp ranks). */
  {
    double n = dp * cp, kk = fmax(1, fmin(n, acc.v.per_node / t));
    double P = params_rank;
    double gb = o->grad_bytes ? o->grad_bytes : (o->convention == GPUPLAN_CONV_MEGATRON ? 4 : 2);
    double pb = o->precision == GPUPLAN_PREC_FP32 ? 4 : 2;
    double fwd_c = layers_max * t_layer_fwd, bwd_c = layers_max * t_layer_bwd; /* one micro-batch */
    /* The engine that moves the sharded data: a framework without its own
     * ZeRO-2/3 or FSDP runs another's (Megatron + ZeRO-2/3 is
     * Megatron-DeepSpeed; FSDP under Megatron, NeMo or DeepSpeed is
     * PyTorch's), so that engine's measured overlap and bandwidth apply. */
    gpuplan_perf_constants eng_k;
    const gpuplan_perf_constants *eng = k;
    int fsdp_mode = o->dp_mode >= GPUPLAN_DP_FSDP_FULL, zero23 = o->dp_mode == GPUPLAN_DP_ZERO2 ||
                                                                 o->dp_mode == GPUPLAN_DP_ZERO3;
    gpuplan_framework efw = k->framework;
    if (zero23 && (efw == GPUPLAN_FW_MEGATRON || efw == GPUPLAN_FW_NEMO)) efw = GPUPLAN_FW_DEEPSPEED;
    if (fsdp_mode && (efw == GPUPLAN_FW_MEGATRON || efw == GPUPLAN_FW_NEMO || efw == GPUPLAN_FW_DEEPSPEED))
      efw = GPUPLAN_FW_FSDP;
    if (efw != k->framework) {
      gpuplan_perf_constants_framework(efw, &eng_k);
      eng = &eng_k;
    }
    double eta = k->dp_overlap ? eng->overlap_eff : 0;
    int per_mb = k->grad_reduce_per_microbatch >= 0 ? k->grad_reduce_per_microbatch
               : o->dp_mode >= GPUPLAN_DP_ZERO2;
    /* buckets: Megatron-Core 40M elements (DistributedDataParallelConfig
     * bucket_size default), DeepSpeed reduce_bucket_size 5e8 elements,
     * PyTorch DDP bucket_cap_mb 25 */
    double bucket = o->bucket_bytes > 0 ? (double)o->bucket_bytes
                  : k->framework == GPUPLAN_FW_MEGATRON || k->framework == GPUPLAN_FW_NEMO ? 40e6 * gb
                  : k->framework == GPUPLAN_FW_DEEPSPEED ? 5e8 * gb : 25.0 * 1048576;
    double x = 0, lyr = layers_max > 0 ? layers_max : 1;
    int ix[3] = {-1, -1, -1};
    if (o->precision == GPUPLAN_PREC_FP32) gb = 4;
    if (n > 1 && P > 0) {
      if (zero3) {
        /* ZeRO-3 / FSDP FULL_SHARD: every micro-batch gathers each layer's
         * parameters for forward and again for backward, and
         * reduce-scatters its gradients (DeepSpeed refuses no_sync at
         * stage 2/3; FSDP's no_sync needs unsharded gradients).  HYBRID:
         * the same inside the shard group, plus an all-reduce of the
         * shard's gradients across the groups. */
        double sg = n, gk = kk, rep = 1, bw = eng->dp_bw_eff;
        if (o->dp_mode == GPUPLAN_DP_FSDP_HYBRID) {
          sg = o->shard_group > 0 ? (double)o->shard_group : fmin(n, acc.v.per_node / t);
          if (sg > n) sg = n;
          if (sg < 1) sg = 1;
          gk = fmin(sg, kk);
          rep = n / sg;
        }
        ix[0] = add_comm(&acc, "zero3_gather_fwd", GPUPLAN_ALL_GATHER, "forward", sg, gk, lyr * M, P * pb / lyr, bw);
        x += charge(&acc, ix, 1, M * fwd_c, eta);
        ix[0] = add_comm(&acc, "zero3_gather_bwd", GPUPLAN_ALL_GATHER, "backward", sg, gk, lyr * M, P * pb / lyr, bw);
        ix[1] = add_comm(&acc, "zero3_reduce_scatter", GPUPLAN_REDUCE_SCATTER, "backward", sg, gk, lyr * M,
                         P * gb / lyr, bw);
        if (rep > 1)
          ix[2] = add_comm(&acc, "hsdp_allreduce", GPUPLAN_ALL_REDUCE, "backward", rep, fmax(1, kk / gk), lyr * M,
                           P * gb / lyr / sg, bw);
        x += charge(&acc, ix, 3, M * bwd_c, eta);
      } else if (o->dp_mode == GPUPLAN_DP_FSDP_GRAD_OP) {
        /* SHARD_GRAD_OP: gathered once per micro-batch for forward and kept
         * for backward; gradients reduce-scattered every micro-batch. */
        ix[0] = add_comm(&acc, "fsdp_gather_fwd", GPUPLAN_ALL_GATHER, "forward", n, kk, lyr * M, P * pb / lyr,
                         eng->dp_bw_eff);
        x += charge(&acc, ix, 1, M * fwd_c, eta);
        ix[0] = add_comm(&acc, "fsdp_reduce_scatter", GPUPLAN_REDUCE_SCATTER, "backward", n, kk, lyr * M,
                         P * gb / lyr, eng->dp_bw_eff);
        x += charge(&acc, ix, 1, M * bwd_c, eta);
      } else if (o->dp_mode == GPUPLAN_DP_DDP) {
        /* all-reduce in buckets, during the last micro-batch's backward */
        double cnt = ceil(P * gb / bucket), mult = per_mb ? M : 1;
        ix[0] = add_comm(&acc, "dp_allreduce", GPUPLAN_ALL_REDUCE, "backward", n, kk, cnt * mult, P * gb / cnt, 1.0);
        x += charge(&acc, ix, 1, mult * bwd_c, eta);
      } else {
        /* ZeRO-1 (distributed optimizer) / ZeRO-2: gradients reduce-scattered
         * in buckets (per step, or every micro-batch for ZeRO-2), then the
         * updated parameters all-gathered, behind the next step's first
         * forward where the framework overlaps it (NeMo
         * overlap_param_gather), else exposed. */
        double cnt = ceil(P * gb / bucket), mult = per_mb ? M : 1, pc = ceil(P * pb / bucket);
        /* the engine's measured share of the bandwidth applies to its
         * sharded-gradient traffic (ZeRO-2); ZeRO-1's once-per-step buckets
         * run at NCCL's */
        double zbw = o->dp_mode == GPUPLAN_DP_ZERO2 ? eng->dp_bw_eff : 1.0;
        ix[0] = add_comm(&acc, "dp_reduce_scatter", GPUPLAN_REDUCE_SCATTER, "backward", n, kk, cnt * mult,
                         P * gb / cnt, zbw);
        x += charge(&acc, ix, 1, mult * bwd_c, eta);
        ix[0] = add_comm(&acc, "dp_param_gather", GPUPLAN_ALL_GATHER, "forward", n, kk, pc, P * pb / pc, zbw);
        x += charge(&acc, ix, 1, fwd_c,
                    k->framework == GPUPLAN_FW_NEMO || k->framework == GPUPLAN_FW_MAXTEXT ? eta : 0);
      }
    }
    /* ZeRO-Infinity: the parameter shards live in host memory and cross
     * PCIe for every micro-batch's forward and backward gathers, behind
     * the compute up to the overlap efficiency. */
    if (o->offload_params && zero3 && c->gpu && n > 0 && P > 0) {
      double pcie = c->host_bw_bytes_s > 0 ? c->host_bw_bytes_s : acc.v.intra_bw;
      double bytes = 2 * M * P / n * pb, t_h = bytes / (pcie * 0.88);
      x += exposed_of(t_h, M * (fwd_c + bwd_c), eta);
      out->bytes_pcie_per_gpu += bytes;
    }
    out->dp_comm_s = x;
    /* Optimizer: read and write master, states, grads, params once
     * (~32 bytes per parameter of the shard) at HBM bandwidth. */
    {
      double shard = o->dp_mode == GPUPLAN_DP_DDP ? 1 : n;
      out->optimizer_s = P / shard * 32 / (hbm * k->hbm_eff);
      if (o->offload_optimizer && c->gpu) {
        /* ZeRO-Offload: gradients down and parameters up over PCIe each
         * step; CPU Adam ~1 ns per parameter per core-group (DeepSpeed
         * CPU-Adam, Ren et al. 2021) shared by the node's GPUs. */
        const double cpu_adam_s_per_param = 1e-9;
        double pcie = c->host_bw_bytes_s > 0 ? c->host_bw_bytes_s : acc.v.intra_bw, bytes = P / shard * (gb + pb);
        /* 0.88: the measured host-device copy on an H200 node, 55.43 of 63 GB/s (R0399) */
        out->optimizer_s = bytes / (pcie * 0.88) + P / shard * cpu_adam_s_per_param * acc.v.per_node / 8;
        out->bytes_pcie_per_gpu += bytes;
      }
    }
  }
  /* Stragglers: every step synchronises all ranks; the slowest of n i.i.d.
   * ranks is ~sigma sqrt(2 ln n) above the mean (Gumbel limit). */
  out->straggler_s = gpus > 1 ? k->straggler * sqrt(2 * log(gpus)) * out->compute_s : 0;
  out->overhead_s = k->step_overhead_s;

  out->step_s = out->compute_s + out->bubble_s + out->tp_comm_s + out->cp_comm_s + out->pp_comm_s +
                out->dp_comm_s + out->optimizer_s + out->straggler_s + out->overhead_s;
  out->global_batch = G;
  out->gpus = (int64_t)gpus;
  out->tokens_per_s = (double)G * s / out->step_s;
  out->model_flops_per_token = model_tok;
  out->hardware_flops_per_token = hw_tok;
  out->model_flops_per_s_per_gpu = out->tokens_per_s * model_tok / gpus;
  out->peak_flops = peak;
  out->mfu = out->model_flops_per_s_per_gpu / peak;
  out->hfu = out->tokens_per_s * hw_tok / gpus / peak;
  out->cost_per_hour = (double)c->nodes * c->price_per_hour;
  out->cost_per_step = out->cost_per_hour * out->step_s / 3600;
  out->cost_per_mtok = out->cost_per_hour / (out->tokens_per_s * 3600) * 1e6;
  out->train_seconds = train_tokens > 0 ? train_tokens / out->tokens_per_s : 0;
  out->train_cost = out->cost_per_hour * out->train_seconds / 3600;
  (void)zero3;
  if (!(out->step_s > 0) || !isfinite(out->step_s))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "perf: the configuration gives no finite step time");
  return GPUPLAN_OK;
}

int gpuplan_perf_eval(gpuplan_ctx *ctx, const gpuplan_model *m, const gpuplan_cluster *c,
                      const gpuplan_memory_options *options, int64_t global_batch,
                      double train_tokens, const gpuplan_perf_constants *kk, gpuplan_perf *out) {
  gpuplan_memory_options defaults = GPUPLAN_MEMORY_OPTIONS_INIT;
  const gpuplan_memory_options *o = options ? options : &defaults;
  gpuplan_perf_constants kdef;
  const gpuplan_perf_constants *k = kk;
  gpuplan_memory mem;
  gpuplan_gpu cpu_gpu;
  const gpuplan_gpu *g;
  double gpus;

  if (!ctx) return GPUPLAN_EMISUSE;
  if (!m || !c || !out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "perf: NULL argument");
  if (!k) {
    gpuplan_perf_constants_default(&kdef);
    k = &kdef;
  }
  if (k->version < 1 || k->version > GPUPLAN_PERF_CONSTANTS_VERSION)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "perf constants: version %u (this library reads 1..%d)",
                          k->version, GPUPLAN_PERF_CONSTANTS_VERSION);
  if (c->gpus_per_node < 1 || c->nodes < 1)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "cluster: gpus_per_node and nodes must be >= 1");
  if (o->workload != GPUPLAN_TRAIN)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "perf: only training is modelled (workload is inference)");
  gpus = (double)(c->gpus_per_node * c->nodes);
  if ((double)(o->tp * o->pp * o->dp * o->cp) != gpus)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "gpus: the cluster has %.0f, but tp*pp*dp*cp = %lld*%lld*%lld*%lld = %lld",
                          gpus, (long long)o->tp, (long long)o->pp, (long long)o->dp,
                          (long long)o->cp, (long long)(o->tp * o->pp * o->dp * o->cp));
  if (global_batch > 0 && global_batch % (o->dp * o->micro_batch))
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "global batch: %lld is not a multiple of dp x micro_batch (%lld)",
                          (long long)global_batch, (long long)(o->dp * o->micro_batch));
  g = c->gpu;
  if (!g) {
    if (!(c->cpu_flops > 0))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "cluster: a CPU-only node needs cpu_fp32_flops");
    memset(&cpu_gpu, 0, sizeof cpu_gpu);
    cpu_gpu.id = "cpu";
    cpu_gpu.name = "CPU";
    cpu_gpu.memory_bytes = 1ull << 40;
    cpu_gpu.mem_bw_bytes_s = 50e9;
    cpu_gpu.fp32_flops = c->cpu_flops;
    cpu_gpu.bf16_flops = cpu_gpu.fp16_flops = cpu_gpu.tf32_flops = NAN;
    cpu_gpu.matmul_bf16_flops = cpu_gpu.matmul_fp8_flops = NAN;
    g = &cpu_gpu;
  }
  GPUPLAN_TRY(gpuplan_memory_eval(ctx, m, g, o, GPUPLAN_STAGE_WORST, &mem));
  GPUPLAN_TRY(gpuplan__perf_eval(ctx, m, c, o, global_batch, train_tokens, k, mem.params_rank, out));
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

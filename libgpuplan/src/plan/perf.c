/*
 * perf.c: the performance model (gpuplan/perf.h).
 */
#include <math.h>
#include <string.h>

#include "common/internal.h"

void gpuplan_perf_constants_default(gpuplan_perf_constants *k) {
  /* Fitted on the training_throughput rows of
   * ../shared/reference/training_runs_calibration.csv by tools/calibrate.py
   * (docs/performance.md); NCCL ring efficiency from its collective rows
   * (234.89 GB/s on 300 GB/s NVLink 3, 367.61 on 450 NVLink 4: 0.78-0.82). */
  k->gemm_eff_max = 0.75625;
  k->gemm_half_dim = 256;
  k->attn_eff = 0.25;
  k->elementwise_bytes = 45;
  k->coll_eff = 0.80;
  k->dp_overlap = 0.80;
  k->attn_balance = 175;
}

static int fabric_of(gpuplan_catalog *cat, const char *id, const gpuplan_fabric **out) {
  *out = NULL;
  if (!id) return GPUPLAN_OK;
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
  if (intra) {
    out->intra_bw_bytes_s = intra->bw_bytes_s;
    out->intra_latency_s = intra->latency_s;
    out->intra_name = intra->id;
  } else {
    out->intra_bw_bytes_s = out->gpu && isfinite(out->gpu->pcie_gen)
                                ? (out->gpu->pcie_gen >= 5 ? 63e9 : out->gpu->pcie_gen >= 4 ? 31.5e9 : 15.75e9)
                                : 31.5e9;
    out->intra_latency_s = 2e-6;
    out->intra_name = "pcie";
  }
  if (inter) {
    double nics = isfinite(n->nic_count) ? n->nic_count : 1;
    double bw = isfinite(n->nic_bw_bytes_s) ? n->nic_bw_bytes_s : inter->bw_bytes_s;
    out->inter_bw_bytes_s = nics * bw;
    out->inter_latency_s = inter->latency_s;
    out->inter_name = inter->id;
  } else {
    out->inter_bw_bytes_s = 1.25e9; /* 10 GbE if nothing is known */
    out->inter_latency_s = 50e-6;
    out->inter_name = "ethernet";
  }
  out->cpu_flops = n->cpu_fp32_flops;
  out->price_per_hour = n->price_per_hour;
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

int gpuplan_cluster_default(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_gpu *g,
                            int64_t gpus, int64_t per_node, gpuplan_cluster *out) {
  const gpuplan_fabric *ib = NULL;
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
   * exists on SXM boards alone. */
  if (isfinite(g->nvlink_bw_bytes_s) && g->nvlink_bw_bytes_s > 0 && per_node > 1 &&
      !(g->form_factor && strstr(g->form_factor, "PCIe") && per_node > 2)) {
    out->intra_bw_bytes_s = g->nvlink_bw_bytes_s / 2; /* the catalog's figure is bidirectional */
    out->intra_latency_s = 0.6e-6;
    out->intra_name = "nvlink";
  } else {
    out->intra_bw_bytes_s = isfinite(g->pcie_gen) && g->pcie_gen >= 5 ? 63e9 : 31.5e9;
    out->intra_latency_s = 1e-6;
    out->intra_name = "pcie";
  }
  GPUPLAN_TRY(gpuplan_catalog_fabric(cat, newer ? "ib-ndr" : "ib-hdr", &ib));
  out->inter_bw_bytes_s = (double)per_node * ib->bw_bytes_s; /* one NIC per GPU */
  out->inter_latency_s = ib->latency_s;
  out->inter_name = ib->id;
  out->price_per_hour = NAN;
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

/* Efficiency of a GEMM whose smaller dimension (of N, K) is x, on a GPU of
 * machine balance B = matmul FLOP/s / HBM bytes/s: the faster the tensor
 * cores relative to memory, the bigger a GEMM must be to keep them busy. */
static double gemm_eff(const gpuplan_perf_constants *k, double x, double B) {
  double x0 = k->gemm_half_dim * B / 100;
  return k->gemm_eff_max * x / (x + x0);
}

/* Ring all-reduce (2(n-1)/n) or all-gather / reduce-scatter ((n-1)/n) time. */
static double ring(double bytes, double n, double factor, double bw, double lat,
                   const gpuplan_perf_constants *k) {
  if (n <= 1 || bytes <= 0) return 0;
  return factor * (n - 1) / n * bytes / (bw * k->coll_eff) + factor * (n - 1) * lat;
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
  double h, a, kv, d, f, V, L, s, b, t, p, cp, dp, mb, v, glu, topk, E;
  double R, R16, peak, hbm, gpus, B, attn_eff;
  double qkv_n, fc1_n, gemm_fwd_tok, attn_fwd_tok, logit_fwd_tok, fwd_tok, model_tok, hw_tok;
  double tok_gpu_step, layers_gpu, gemm_t, attn_t, elem_t, compute, bubble;
  double per_node, intra_bw, inter_bw_gpu, lat_intra, lat_inter;
  int64_t G;

  if (!ctx) return GPUPLAN_EMISUSE;
  if (!m || !c || !out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "perf: NULL argument");
  if (!k) {
    gpuplan_perf_constants_default(&kdef);
    k = &kdef;
  }
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
  g = c->gpu;
  if (!g) {
    /* A CPU node as one device: its vector peak, DDR bandwidth unknown in
     * the catalog (an estimate: 8 channels of DDR4-3200 shared by the VM's
     * share of the socket), memory = a large figure so that fit checks pass. */
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
  GPUPLAN_TRY(gpuplan_memory_eval(ctx, m, g, o, 0, &mem));

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
  v = (double)o->vpp;
  E = (double)m->experts;
  topk = m->experts > 1 ? (double)m->top_k : 1;
  glu = m->ffn_type && (strcmp(m->ffn_type, "swiglu") == 0 || strcmp(m->ffn_type, "geglu") == 0) ? 3 : 2;
  mb = (double)(o->microbatches ? o->microbatches : o->pp);
  if (global_batch > 0) {
    if (global_batch % (o->dp * o->micro_batch))
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "global batch: %lld is not a multiple of dp x micro_batch (%lld)",
                            (long long)global_batch, (long long)(o->dp * o->micro_batch));
    mb = (double)global_batch / (dp * b);
  }
  G = (int64_t)(mb * dp * b);
  (void)E;

  /* Rates. */
  if (o->precision == GPUPLAN_PREC_FP32) {
    peak = isfinite(g->tf32_flops) ? g->tf32_flops : g->fp32_flops;
    R = peak;
  } else if (o->precision == GPUPLAN_PREC_FP8 && isfinite(g->fp8_flops)) {
    peak = g->fp8_flops;
    R = isfinite(g->matmul_fp8_flops) ? g->matmul_fp8_flops : 0.75 * peak;
  } else {
    peak = isfinite(g->bf16_flops) ? g->bf16_flops : g->fp16_flops;
    if (!isfinite(peak)) peak = g->fp32_flops;
    R = isfinite(g->matmul_bf16_flops) ? g->matmul_bf16_flops : 0.8 * peak;
  }
  if (!c->gpu) R = peak; /* CPU: GEMM libraries reach most of the vector peak; efficiency below */
  /* FP8 (Transformer Engine) speeds up the linear layers only: attention
   * and elementwise work stay in 16-bit. */
  R16 = R;
  if (o->precision == GPUPLAN_PREC_FP8)
    R16 = isfinite(g->matmul_bf16_flops) ? g->matmul_bf16_flops : 0.8 * g->bf16_flops;
  if (!(R > 0))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "gpu %s: no FLOP/s figure for this precision", g->id);
  hbm = g->mem_bw_bytes_s;
  B = R16 / hbm; /* machine balance, FLOP per byte */
  attn_eff = k->attn_eff * k->attn_balance / (k->attn_balance + B) * 2;

  /* FLOPs per token (forward), whole model. */
  qkv_n = (a + 2 * kv) * d;
  fc1_n = f * (glu == 3 ? 2 : 1);
  gemm_fwd_tok = L * (2 * h * qkv_n + 2 * a * d * h + topk * (2 * h * fc1_n + 2 * f * h));
  attn_fwd_tok = L * 2 * a * d * s; /* QK^T and AV, causal: half of 4 a d s */
  logit_fwd_tok = 2 * h * V;
  fwd_tok = gemm_fwd_tok + attn_fwd_tok + logit_fwd_tok;
  model_tok = 3 * fwd_tok;
  hw_tok = model_tok;
  if (o->recompute == GPUPLAN_RECOMPUTE_FULL) hw_tok += gemm_fwd_tok + attn_fwd_tok;
  else if (o->recompute == GPUPLAN_RECOMPUTE_SELECTIVE) hw_tok += attn_fwd_tok;

  /* Time of one GPU: its share of the tokens (dp, cp) and of the layers (pp),
   * each GEMM split by tp and run at its own efficiency. */
  tok_gpu_step = (double)G * s / (dp * cp);
  layers_gpu = L / p;
  {
    double mult = 3 + (o->recompute == GPUPLAN_RECOMPUTE_FULL ? 1 : 0);
    double per_layer = 0;
    per_layer += 2 * h * qkv_n / (R * gemm_eff(k, fmin(h, qkv_n / t), B));
    per_layer += 2 * a * d * h / (R * gemm_eff(k, fmin(a * d / t, h), B));
    per_layer += topk * 2 * h * fc1_n / (R * gemm_eff(k, fmin(h, fc1_n / t), B));
    per_layer += topk * 2 * f * h / (R * gemm_eff(k, fmin(f / t, h), B));
    gemm_t = tok_gpu_step * layers_gpu * per_layer * mult / t;
    /* logits on the last stage: counted on every stage's share for balance */
    gemm_t += tok_gpu_step * 3 * logit_fwd_tok / (R * gemm_eff(k, fmin(h, V / t), B)) / (t * p);
    attn_t = tok_gpu_step * layers_gpu * 2 * a * d * s / t *
             (3 + (o->recompute != GPUPLAN_RECOMPUTE_NONE ? 1 : 0)) / (R16 * attn_eff);
    elem_t = tok_gpu_step * layers_gpu * h * k->elementwise_bytes *
             (o->recompute == GPUPLAN_RECOMPUTE_FULL ? 4.0 / 3 : 1) /
             (o->sequence_parallel ? t : 1) / hbm;
    if (!c->gpu) {
      /* FP32 GEMMs on CPU cores: a fixed 50% of the vector peak. */
      gemm_t = gemm_t * gemm_eff(k, 1e9, B) / 0.5;
      attn_t = attn_t * attn_eff / 0.5;
    }
  }
  compute = gemm_t + attn_t + elem_t;
  bubble = p > 1 ? compute * (p - 1) / (mb * v) : 0;

  /* Fabrics for each group (Megatron order: tp innermost, then cp, dp, pp). */
  per_node = (double)c->gpus_per_node;
  intra_bw = c->intra_bw_bytes_s;
  lat_intra = c->intra_latency_s;
  /* Point to point, a GPU has its own NIC's share; a ring collective
   * spanning nodes runs one ring per NIC through NVLink inside each node, so
   * its bus bandwidth is the node's NICs together (NCCL multi-node busbw),
   * capped by NVLink. */
  inter_bw_gpu = c->inter_bw_bytes_s / per_node;
  lat_inter = c->inter_latency_s;

  memset(out, 0, sizeof *out);
  {
    double act = b * (s / cp) * h * 2; /* one micro-batch's hidden states */
    double n_coll = 4 + (o->recompute == GPUPLAN_RECOMPUTE_FULL ? 2 : 0); /* all-reduces per layer per micro-batch */
    int tp_in = t <= per_node;
    double bw = tp_in ? intra_bw : fmin(c->inter_bw_bytes_s, intra_bw), lat = tp_in ? lat_intra : lat_inter;
    double per_mb = n_coll * layers_gpu * ring(act, t, 2, bw, lat, k);
    out->tp_comm_s = per_mb * mb;
    if (t > 1) {
      double bytes = n_coll * layers_gpu * mb * 2 * (t - 1) / t * act;
      if (tp_in) out->bytes_nvlink_per_gpu += bytes;
      else out->bytes_network_per_gpu += bytes;
    }
  }
  if (cp > 1) {
    double kvbytes = b * (s / cp) * 2 * kv * d * 2 / t;
    int in = t * cp <= per_node;
    double bw = in ? intra_bw : fmin(c->inter_bw_bytes_s, intra_bw);
    double comm = 3 * layers_gpu * mb * (cp - 1) * kvbytes / (bw * k->coll_eff);
    out->cp_comm_s = fmax(0, comm - attn_t);
    if (in) out->bytes_nvlink_per_gpu += 3 * layers_gpu * mb * (cp - 1) * kvbytes;
    else out->bytes_network_per_gpu += 3 * layers_gpu * mb * (cp - 1) * kvbytes;
  }
  if (p > 1) {
    double act = b * (s / cp) * h * 2 / (o->sequence_parallel ? t : 1);
    int in = t * cp * dp * p <= per_node;
    double bw = in ? intra_bw : inter_bw_gpu, lat = in ? lat_intra : lat_inter;
    out->pp_comm_s = 2 * (mb * v + p - 1) * (act / bw + lat) / (mb > 0 ? mb : 1) * 2;
    if (in) out->bytes_nvlink_per_gpu += 2 * mb * v * act;
    else out->bytes_network_per_gpu += 2 * mb * v * act;
  }
  {
    double gb = o->grad_bytes ? o->grad_bytes : (o->convention == GPUPLAN_CONV_MEGATRON ? 4 : 2);
    double P = mem.params_rank;
    double n = dp * cp; /* gradients are reduced over dp and cp */
    int zero3 = o->dp_mode == GPUPLAN_DP_ZERO3 || o->dp_mode == GPUPLAN_DP_FSDP_FULL ||
                o->dp_mode == GPUPLAN_DP_FSDP_HYBRID;
    int spans = t * cp * dp > per_node;
    double bw = spans ? fmin(c->inter_bw_bytes_s, intra_bw) : intra_bw, lat = spans ? lat_inter : lat_intra;
    double vol, comm, hide;
    if (o->precision == GPUPLAN_PREC_FP32) gb = 4;
    vol = zero3 ? (2 * 2 * P + gb * P) : 2 * gb * P; /* factor of (n-1)/n applied by ring() */
    comm = ring(vol, n, 1, bw, lat, k);
    hide = k->dp_overlap * (zero3 ? compute : compute * 2.0 / 3);
    out->dp_comm_s = fmax(0, comm - hide);
    if (n > 1) {
      double bytes = (n - 1) / n * vol;
      if (spans) {
        /* One ring per NIC: a GPU's NIC carries its ring's node-crossing
         * hop, a 1/(group GPUs per node) share; NVLink carries the rest. */
        double in_node = fmin(per_node, n);
        out->bytes_network_per_gpu += bytes / in_node;
        out->bytes_nvlink_per_gpu += bytes - bytes / in_node;
      } else {
        out->bytes_nvlink_per_gpu += bytes;
      }
    }
    /* Optimizer: read and write master, states, grads, params once. */
    {
      double shard = o->dp_mode == GPUPLAN_DP_DDP ? 1 : n;
      out->optimizer_s = P / shard * 16 * 2 / hbm;
    }
  }
  if (c->intra_name && strcmp(c->intra_name, "pcie") == 0) {
    out->bytes_pcie_per_gpu = out->bytes_nvlink_per_gpu;
    out->bytes_nvlink_per_gpu = 0;
  }

  out->compute_s = compute;
  out->bubble_s = bubble;
  out->step_s = compute + bubble + out->tp_comm_s + out->cp_comm_s + out->pp_comm_s +
                out->dp_comm_s + out->optimizer_s;
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
  if (!(out->step_s > 0) || !isfinite(out->step_s))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "perf: the configuration gives no finite step time");
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

int gpuplan_collective_time(gpuplan_ctx *ctx, const gpuplan_cluster *c, gpuplan_collective op,
                            gpuplan_coll_algo algo, double bytes, int64_t n64,
                            const gpuplan_perf_constants *kk, gpuplan_coll_time *out) {
  gpuplan_perf_constants kdef;
  const gpuplan_perf_constants *k = kk;
  double n = (double)n64, per, nodes, eff, bw_in, bw_ring, lat_in, lat_out, factor, t = 0;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!c || !out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "collective: NULL argument");
  if (n64 < 1 || n64 > c->gpus_per_node * c->nodes)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "n: %lld GPUs; the cluster has %lld",
                          (long long)n64, (long long)(c->gpus_per_node * c->nodes));
  if (!(bytes >= 0) || bytes > 1e15)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "bytes: must be 0..1e15");
  if ((unsigned)op > GPUPLAN_SEND_RECV || (unsigned)algo > GPUPLAN_ALGO_HIERARCHICAL)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "collective: unknown operation or algorithm");
  if (!k) {
    gpuplan_perf_constants_default(&kdef);
    k = &kdef;
  }
  memset(out, 0, sizeof *out);
  per = (double)c->gpus_per_node;
  nodes = n <= per ? 1 : ceil(n / per);
  eff = k->coll_eff;
  bw_in = c->intra_bw_bytes_s;
  lat_in = c->intra_latency_s;
  lat_out = c->inter_latency_s;
  /* A flat ring spanning nodes: one ring per NIC, so the node's NICs
   * together, capped by NVLink (see gpuplan_perf_eval). */
  bw_ring = nodes > 1 ? fmin(c->inter_bw_bytes_s, bw_in) : bw_in;
  switch (op) {
  case GPUPLAN_ALL_REDUCE: factor = 2 * (n - 1) / n; break;
  case GPUPLAN_REDUCE_SCATTER:
  case GPUPLAN_ALL_GATHER:
  case GPUPLAN_ALL_TO_ALL: factor = (n - 1) / n; break;
  default: factor = 1; break;
  }
  if (n <= 1) {
    out->seconds = 0;
    return GPUPLAN_OK;
  }
  if (op == GPUPLAN_SEND_RECV) {
    double bw = nodes > 1 ? c->inter_bw_bytes_s / per : bw_in;
    t = bytes / (bw * eff) + (nodes > 1 ? lat_out : lat_in);
    if (nodes > 1) out->bytes_inter = bytes;
    else out->bytes_intra = bytes;
  } else if (op == GPUPLAN_ALL_TO_ALL) {
    /* Every GPU sends (n-1)/n of its buffer; the share for other nodes goes
     * through the GPU's own NIC. */
    double remote = nodes > 1 ? (n - per) / n : 0, local = factor - remote;
    t = fmax(bytes * local / (bw_in * eff), remote > 0 ? bytes * remote / (c->inter_bw_bytes_s / per * eff) : 0) +
        (nodes > 1 ? lat_out : lat_in) * log2(n);
    out->bytes_intra = bytes * local;
    out->bytes_inter = bytes * remote;
  } else if (algo == GPUPLAN_ALGO_HIERARCHICAL && nodes > 1) {
    /* reduce-scatter inside the node, the op across nodes on 1/per of the
     * data per GPU (each on its own NIC), all-gather inside the node */
    double share = bytes / per, in_factor = (per - 1) / per;
    double inter_bw = c->inter_bw_bytes_s / per;
    double t_in = (op == GPUPLAN_ALL_REDUCE ? 2 : 1) * in_factor * bytes / (bw_in * eff);
    double t_out = (op == GPUPLAN_ALL_REDUCE ? 2 : 1) * (nodes - 1) / nodes * share / (inter_bw * eff);
    t = t_in + t_out + 2 * (per - 1) * lat_in + 2 * (nodes - 1) * lat_out;
    out->bytes_intra = (op == GPUPLAN_ALL_REDUCE ? 2 : 1) * in_factor * bytes;
    out->bytes_inter = (op == GPUPLAN_ALL_REDUCE ? 2 : 1) * (nodes - 1) / nodes * share;
  } else {
    double steps = algo == GPUPLAN_ALGO_TREE ? 2 * ceil(log2(n)) : (op == GPUPLAN_ALL_REDUCE ? 2 : 1) * (n - 1);
    double lat = nodes > 1 ? lat_out : lat_in;
    t = factor * bytes / (bw_ring * eff) + steps * lat;
    out->bytes_intra = nodes > 1 ? factor * bytes * (1 - 1 / fmin(per, n)) : factor * bytes;
    out->bytes_inter = nodes > 1 ? factor * bytes / fmin(per, n) : 0;
  }
  out->seconds = t;
  out->algbw_bytes_s = t > 0 ? bytes / t : 0;
  out->busbw_bytes_s = out->algbw_bytes_s * (op == GPUPLAN_SEND_RECV ? 1 : factor);
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

/*
 * serve_perf.c: the serving model's speed (plan/serve_int.h).
 *
 * One engine iteration advances every running sequence by one token and
 * carries the prefill tokens admitted with it (continuous batching; with
 * chunked prefill their number is capped).  Its time is the DRAM traffic
 * (the weights once, plus each sequence's KV cache) and the tensor-core
 * work (2 FLOP per parameter per token, attention quadratic in the prompt)
 * combined by a p-norm (1: no overlap, infinity: perfect overlap), plus the
 * tensor-parallel all-reduces of every layer (two per layer, on the TP
 * group's fabric: NVLink/NVSwitch or PCIe, from the catalog's fabric rows)
 * and fixed costs (the scheduler, each layer's launches, each sequence's
 * sampling).  Pipeline stages each run their share of the layers; a token
 * step is pp stage-iterations of micro-batches of running/pp sequences.
 *
 * Loads: offline (every request queued at once: as many running as the KV
 * cache and max_num_seqs admit), a static batch, closed-loop concurrency,
 * and Poisson arrivals: the running count is the fixed point of Little's
 * law; TTFT is the prefill of the prompt plus the wait for the current
 * iteration plus an M/G/1 queue on the prefill work (Kingman's
 * approximation, exponential tail) at p50/p90/p99; ITL is a mixture of
 * iterations with and without a prefill chunk.
 *
 * Constants: fitted by `gpuplan serve --validate` on
 * data/reference/serving_runs_calibration.csv (docs/serving.md lists each
 * with the rows that set it); the hardware figures come from the catalog.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/serve_int.h"

#define GiB 1073741824.0

/* --- constants ----------------------------------------------------------------- */

void gpuplan__serve_k_default(gpuplan__serve_k *k) {
  /* fitted by `gpuplan serve --validate` on the 486 rows of
   * data/reference/serving_runs_calibration.csv (docs/serving.md) */
  memset(k, 0, sizeof *k);
  k->hbm_eff = 0.87;
  k->gemm_eff = 0.60;
  k->attn_eff = 0.26;
  k->fp8_rel = 1.0;
  k->fp4_rel = 0.63;
  k->w4_rel = 0.80;
  k->moe_rel = 1.0;
  k->overlap_p = 1.40;
  k->gemm_half_tokens = 6.4;
  k->seq_s = 11.3e-6;
  k->layer_graph_s = 16.9e-6;
  k->layer_eager_s = 45e-6;
  k->iter_s[GPUPLAN__ENG_VLLM] = 2.0e-3;
  k->iter_s[GPUPLAN__ENG_SGLANG] = 2.7e-3;
  k->iter_s[GPUPLAN__ENG_TRTLLM] = 0.43e-3;
  k->iter_s[GPUPLAN__ENG_TGI] = 0.36e-3;
  k->ttft_s = 1.65e-3;
  k->ar_fixed_s = 26e-6;
  k->pcie_hop_s = 27.5e-6;
  k->nvlink_eff = 0.55;
  k->pcie_eff = 0.52;
  k->trt_kv_eff = 0.74;
  k->cpu_bw_per_vcpu = 2.5e9;
  k->cpu_eff = 0.30;
  k->pp_eff = 1.0;
}

static const struct {
  const char *name;
  size_t off;
} knames[] = {
#define K(f) {#f, offsetof(gpuplan__serve_k, f)}
  K(hbm_eff), K(gemm_eff), K(attn_eff), K(fp8_rel), K(fp4_rel), K(w4_rel), K(moe_rel), K(overlap_p),
  K(gemm_half_tokens),
  K(seq_s), K(layer_graph_s), K(layer_eager_s), K(ttft_s), K(ar_fixed_s), K(pcie_hop_s), K(nvlink_eff),
  K(pcie_eff), K(trt_kv_eff), K(cpu_bw_per_vcpu), K(cpu_eff), K(pp_eff),
#undef K
  {"iter_s.vllm", offsetof(gpuplan__serve_k, iter_s) + GPUPLAN__ENG_VLLM * sizeof(double)},
  {"iter_s.sglang", offsetof(gpuplan__serve_k, iter_s) + GPUPLAN__ENG_SGLANG * sizeof(double)},
  {"iter_s.trtllm", offsetof(gpuplan__serve_k, iter_s) + GPUPLAN__ENG_TRTLLM * sizeof(double)},
  {"iter_s.tgi", offsetof(gpuplan__serve_k, iter_s) + GPUPLAN__ENG_TGI * sizeof(double)},
};

int gpuplan__serve_k_apply(gpuplan_ctx *ctx, gpuplan__serve_k *k, const char *spec) {
  const char *p = spec;
  while (p && *p) {
    char name[64], *end;
    const char *eq = strchr(p, '='), *comma;
    size_t n, i;
    double v;
    if (!eq) return gpuplan__error(ctx, GPUPLAN_EINVAL, "constants: '%s' is not name=value", p);
    n = (size_t)(eq - p);
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, p, n);
    name[n] = 0;
    v = strtod(eq + 1, &end);
    if (end == eq + 1 || !isfinite(v) || v < 0 || (*end && *end != ','))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "constants: %s: '%s' is not a non-negative number", name, eq + 1);
    for (i = 0; i < sizeof knames / sizeof knames[0]; i++)
      if (strcmp(knames[i].name, name) == 0) break;
    if (i == sizeof knames / sizeof knames[0]) {
      char all[1024] = "";
      size_t j, len;
      for (j = 0; j < sizeof knames / sizeof knames[0]; j++) {
        len = strlen(all);
        snprintf(all + len, sizeof all - len, "%s%s", j ? ", " : "", knames[j].name);
      }
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "constants: unknown constant '%s' (known: %s)", name, all);
    }
    *(double *)((char *)k + knames[i].off) = v;
    comma = end;
    p = *comma == ',' ? comma + 1 : comma;
  }
  if (!(k->overlap_p >= 1)) return gpuplan__error(ctx, GPUPLAN_EINVAL, "constants: overlap_p must be at least 1");
  return GPUPLAN_OK;
}

/* --- hardware -------------------------------------------------------------------- */

/* The total torch.cuda.mem_get_info() reports (what vLLM calls
 * total_gpu_memory): as an engine logged it where a log shows it, else the
 * NVML total (the catalog notes' figures: Modal's measurements,
 * https://thundergolfer.com/blog/nvidia-gpu-memory-capacity; GDDR6 parts
 * lose ~6% to ECC) less 1% (H100: 79.22 GiB of NVML's 79.65; A10: 22.18 of
 * 22.49), else 99.0% of the device memory. */
static const struct {
  const char *gpu;
  double gib;      /* logged total, GiB (0: none) */
  double nvml_mib; /* NVML total, MiB (0: none) */
  const char *source;
} visible_table[] = {
  {"h100-sxm5-80gb", 79.22, 81559, "vLLM log: total_gpu_memory 79.22GiB (vllm-project/vllm PR #10511)"},
  {"a10", 22.18, 23028, "PyTorch OOM message: total capacity of 22.18 GiB (OpenBMB/MiniCPM-V issue #640)"},
  {"a10g", 22.18, 23028, "as A10 (same 24 GB GDDR6 board memory): 22.18 GiB (OpenBMB/MiniCPM-V issue #640)"},
  {"rtx-3090", 23.58, 24576, "vLLM log: total_gpu_memory 23.58GiB (vllm-project/vllm issue #10517)"},
  {"a100-sxm4-40gb", 0, 40960, NULL},
  {"a100-sxm4-80gb", 0, 81920, NULL},
  {"a100-pcie-80gb", 0, 81920, NULL},
  {"h200-sxm-141gb", 0, 143771, NULL},
  {"t4", 0, 15360, NULL},
  {"l4", 0, 23034, NULL},
  {"l40s", 0, 46068, NULL},
  {"rtx-4090", 0, 24564, NULL},
};

/* Tensor-core figures the catalog leaves empty, with their sources. */
static const struct {
  const char *gpu;
  double f16, i8;
  const char *source;
} flops_table[] = {
  {"a10g", 70e12, 140e12,
   "A10G dense FP16/BF16 tensor 70 TFLOP/s, INT8 140 TOPS "
   "(https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/)"},
};

static int version_major(const char *cc) { return cc ? atoi(cc) : 0; }
static int version_minor(const char *cc) {
  const char *dot = cc ? strchr(cc, '.') : NULL;
  return dot ? atoi(dot + 1) : 0;
}

static void fabric_of(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_gpu *g, const gpuplan_node *node,
                      gpuplan__shw *o) {
  const gpuplan_fabric *f = NULL;
  char id[32];
  int pcie = !g->form_factor || strstr(g->form_factor, "PCIe") != NULL;
  int linked = isfinite(g->nvlink_bw_bytes_s) && g->nvlink_bw_bytes_s > 0 && !pcie;
  if (node && node->intra_fabric_id) gpuplan_catalog_fabric(cat, node->intra_fabric_id, &f);
  if (!f && linked) {
    snprintf(id, sizeof id, "nvswitch%d", isfinite(g->nvlink_gen) ? (int)g->nvlink_gen : 4);
    if (gpuplan_catalog_fabric(cat, id, &f) != GPUPLAN_OK) {
      snprintf(id, sizeof id, "nvlink%d", isfinite(g->nvlink_gen) ? (int)g->nvlink_gen : 4);
      if (gpuplan_catalog_fabric(cat, id, &f) != GPUPLAN_OK) f = NULL;
    }
  }
  if (!f) {
    snprintf(id, sizeof id, "pcie%d", isfinite(g->pcie_gen) ? (int)g->pcie_gen : 4);
    if (gpuplan_catalog_fabric(cat, id, &f) != GPUPLAN_OK) f = NULL;
  }
  gpuplan__clear(ctx); /* a fabric not in the catalog is not an error */
  if (f) {
    o->link_bw = f->bw_bytes_s;
    o->link_lat = isfinite(f->latency_s) ? f->latency_s : 1e-6;
    o->link_name = f->id;
    o->link_nvlink = strcmp(f->kind, "pcie") != 0;
  } else {
    o->link_bw = linked ? g->nvlink_bw_bytes_s / 2 : 31.5e9;
    o->link_lat = 1e-6;
    o->link_name = linked ? "nvlink" : "pcie";
    o->link_nvlink = linked;
  }
}

int gpuplan__shw_gpu(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_gpu *g, const gpuplan_node *node,
                     gpuplan__shw *o) {
  size_t i, n;
  memset(o, 0, sizeof *o);
  if (!g) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "serve: no GPU");
  o->gpu = g;
  o->node = node;
  o->device_bytes = (double)g->memory_bytes;
  if (node && node->gpu_memory_bytes) o->device_bytes = (double)node->gpu_memory_bytes;
  o->visible_bytes = 0.990 * o->device_bytes;
  o->visible_source = "estimate: 99.0% of the device memory, as on H100 (79.22 of 80 GiB)";
  for (i = 0; i < sizeof visible_table / sizeof visible_table[0]; i++)
    if (strcmp(visible_table[i].gpu, g->id) == 0 && !(node && node->gpu_memory_bytes)) {
      if (visible_table[i].gib > 0) {
        o->visible_bytes = visible_table[i].gib * GiB;
        o->visible_source = visible_table[i].source;
      } else {
        o->visible_bytes = 0.99 * visible_table[i].nvml_mib * 1048576.0;
        o->visible_source = "estimate: the NVML total (catalog note) less 1%";
      }
    }
  o->bw = g->mem_bw_bytes_s;
  o->f16 = isfinite(g->bf16_flops) ? g->bf16_flops : isfinite(g->fp16_flops) ? g->fp16_flops : 0;
  o->f8 = isfinite(g->fp8_flops) ? g->fp8_flops : 0;
  o->i8 = isfinite(g->int8_ops) ? g->int8_ops : 0;
  o->f4 = isfinite(g->fp4_flops) ? g->fp4_flops : 0;
  o->flops_source = "catalog";
  for (i = 0; i < sizeof flops_table / sizeof flops_table[0]; i++)
    if (strcmp(flops_table[i].gpu, g->id) == 0) {
      if (o->f16 <= 0) o->f16 = flops_table[i].f16;
      if (o->i8 <= 0) o->i8 = flops_table[i].i8;
      o->flops_source = flops_table[i].source;
    }
  if (o->f16 <= 0 && isfinite(g->fp32_flops)) {
    o->f16 = g->fp32_flops;
    o->flops_source = "no 16-bit tensor figure in the catalog: its FP32 rate";
  }
  if (node && node->gpu_fraction > 0 && node->gpu_fraction < 1) {
    /* a time-sliced vGPU: its share of everything */
    o->bw *= node->gpu_fraction;
    o->f16 *= node->gpu_fraction;
    o->f8 *= node->gpu_fraction;
    o->i8 *= node->gpu_fraction;
    o->f4 *= node->gpu_fraction;
  }
  o->cc_major = version_major(g->compute_capability);
  o->cc_minor = version_minor(g->compute_capability);
  fabric_of(ctx, cat, g, node, o);
  o->gpus_per_node = node ? (int)node->gpu_count : 8;
  o->price_per_gpu_hour = NAN;
  o->price_node_hour = NAN;
  if (node && isfinite(node->price_per_hour) && node->gpu_count > 0) {
    o->price_node_hour = node->price_per_hour;
    o->price_per_gpu_hour = node->price_per_hour / (double)node->gpu_count;
    o->price_node = node->name;
    o->currency = node->currency;
  } else if (!node) {
    /* the cheapest priced node of whole GPUs of this SKU */
    n = gpuplan_catalog_count(cat, GPUPLAN_KIND_NODE);
    for (i = 0; i < n; i++) {
      const gpuplan_node *c = gpuplan_catalog_at(cat, GPUPLAN_KIND_NODE, i);
      double per;
      if (!c->gpu_id || strcmp(c->gpu_id, g->id) != 0 || c->gpu_fraction < 1 || c->gpu_count < 1 ||
          !isfinite(c->price_per_hour))
        continue;
      per = c->price_per_hour / (double)c->gpu_count;
      if (!isfinite(o->price_per_gpu_hour) || per < o->price_per_gpu_hour) {
        o->price_per_gpu_hour = per;
        o->price_node_hour = c->price_per_hour;
        o->price_node = c->name;
        o->currency = c->currency;
        o->gpus_per_node = (int)c->gpu_count;
      }
    }
  }
  return GPUPLAN_OK;
}

int gpuplan__shw_cpu(gpuplan_ctx *ctx, const gpuplan_node *node, const gpuplan__serve_k *k, gpuplan__shw *o) {
  memset(o, 0, sizeof *o);
  if (!node) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "serve: no node");
  o->node = node;
  o->vcpus = node->vcpus;
  o->ram_bytes = node->ram_bytes;
  o->device_bytes = node->ram_bytes;
  o->visible_bytes = node->ram_bytes;
  o->visible_source = "the node's RAM";
  o->cpu_flops = isfinite(node->cpu_fp32_flops) ? node->cpu_fp32_flops : NAN;
  o->cpu_bw = (double)node->vcpus * k->cpu_bw_per_vcpu;
  o->bw = o->cpu_bw;
  o->f16 = o->cpu_flops;
  o->flops_source = "the node's vector FP32 peak (catalog cpu_fp32_flops)";
  o->link_name = "none";
  o->gpus_per_node = 1;
  o->price_per_gpu_hour = node->price_per_hour;
  o->price_node_hour = node->price_per_hour;
  o->price_node = node->name;
  o->currency = node->currency;
  if (!isfinite(o->cpu_flops) || !(o->ram_bytes > 0))
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "node: %s has no CPU FP32 peak or RAM size in the catalog; CPU serving needs both",
                          node->name);
  return GPUPLAN_OK;
}

/* --- one iteration ------------------------------------------------------------------ */

/* The GEMM rate of the weight scheme on this hardware: tensor cores of the
 * scheme's type where the SKU has them (FP8 from sm_89, FP4 from sm_100,
 * INT8 from sm_75), else 16-bit math on dequantised weights. */
static double gemm_flops(const gpuplan__scfg *c) {
  const gpuplan__shw *hw = c->hw;
  const gpuplan__serve_k *k = c->k;
  double f16 = hw->f16;
  if (!hw->gpu) return hw->cpu_flops * k->cpu_eff / k->gemm_eff;
  switch (c->w) {
  case GPUPLAN__W_FP32: return f16 / 2;
  case GPUPLAN__W_FP8: return hw->f8 > 0 ? hw->f8 * k->fp8_rel : f16;
  case GPUPLAN__W_INT8: return hw->i8 > 0 ? hw->i8 * k->fp8_rel : f16;
  case GPUPLAN__W_AWQ:
  case GPUPLAN__W_GPTQ: return f16 * k->w4_rel;
  case GPUPLAN__W_NVFP4:
    if (hw->f4 > 0) return hw->f4 * k->fp4_rel;
    return hw->f8 > 0 ? hw->f8 * k->fp8_rel : f16 * k->w4_rel;
  default: return f16;
  }
}

static double pnorm(double a, double b, double p) {
  double m = fmax(a, b);
  if (m <= 0) return 0;
  if (p > 50) return m;
  return m * pow(pow(a / m, p) + pow(b / m, p), 1 / p);
}

/* One all-reduce of `bytes` per GPU over the TP group. */
static double allreduce(const gpuplan__scfg *c, double bytes) {
  const gpuplan__shw *hw = c->hw;
  const gpuplan__serve_k *k = c->k;
  double t = (double)c->tp, ring = 2 * (t - 1) / t;
  if (c->tp <= 1 || !hw->gpu) return 0;
  if (hw->link_nvlink)
    return k->ar_fixed_s + 2 * (t - 1) * hw->link_lat + ring * bytes / (hw->link_bw * k->nvlink_eff);
  return 2 * (t - 1) * k->pcie_hop_s + ring * bytes / (hw->link_bw * k->pcie_eff);
}

/* One pipeline stage's share of an iteration. */
static void stage(const gpuplan__scfg *c, double ndec, double ctx, double npre, double plen, gpuplan__siter *o) {
  const gpuplan__smodel *m = c->m;
  const gpuplan__shw *hw = c->hw;
  const gpuplan__serve_k *k = c->k;
  double tp = (double)c->tp, pp = (double)c->pp, Ls = m->L / pp;
  double W = gpuplan__weights_per_gpu(c), T = ndec + npre, F, eff, f16 = hw->f16, bw;
  double lin, t_mem, t_gemm, t_attn, t_lm, t_comm = 0, t_over, seqs_pre;
  memset(o, 0, sizeof *o);
  if (m->E > 1 && T > 0) {
    /* experts this rank reads: those any of the iteration's tokens route to */
    double touched = 1 - pow(1 - m->k / m->E, T);
    W -= gpuplan__expert_bytes_per_gpu(c) * (1 - touched);
  }
  bw = hw->bw * (hw->gpu ? k->hbm_eff : 1.0);
  o->weights_s = W / bw;
  o->kv_s = ndec * ctx * gpuplan__kv_per_token(c) / bw;
  t_mem = o->weights_s + o->kv_s;
  F = gemm_flops(c);
  eff = k->gemm_eff * T / (T + k->gemm_half_tokens);
  /* each token's top-k experts, spread over the ep (or tp) ranks; routed
   * experts run as grouped GEMMs */
  lin = Ls * (m->attn_p / tp + (m->E > 1 ? 0 : m->mlp_p / tp));
  t_gemm = T > 0 && F > 0 ? 2 * lin * T / (F * eff) : 0;
  if (m->E > 1 && T > 0 && F > 0)
    t_gemm += 2 * Ls * m->k * m->mlp_p / (c->ep > 1 ? (double)c->ep : tp) * T / (F * eff * k->moe_rel);
  /* attention: QK^T and PV, 2 x 2 FLOP per head dim per pair; causal
   * prefill sees plen/2 positions on average, an encoder all of them */
  t_attn = 0;
  if (npre > 0 && f16 > 0) {
    double pairs = m->encoder ? plen : plen / 2;
    t_attn = 4 * Ls * (m->a / tp) * m->d * pairs * npre / (f16 * (hw->gpu ? k->attn_eff : k->cpu_eff));
  }
  /* the output layer for each sequence that emits a token */
  seqs_pre = plen > 0 ? npre / plen : 0;
  t_lm = 0;
  if (!m->encoder && f16 > 0)
    t_lm = 2 * m->emb_p / tp * (ndec + seqs_pre) / pp / (f16 * (hw->gpu ? k->gemm_eff : k->cpu_eff));
  o->compute_s = t_gemm + t_lm;
  o->attn_s = t_attn;
  o->compute_bound = t_gemm + t_attn + t_lm > t_mem;
  o->seconds = pnorm(t_mem, t_gemm + t_attn + t_lm, k->overlap_p);
  if (c->tp > 1) t_comm = 2 * Ls * allreduce(c, T * m->h * 2);
  if (c->pp > 1) t_comm += (hw->link_nvlink ? k->ar_fixed_s : k->pcie_hop_s) + T * m->h * 2 / hw->link_bw;
  o->comm_s = t_comm;
  t_over = k->iter_s[c->engine] / pp + Ls * (c->eager ? k->layer_eager_s : k->layer_graph_s) + k->seq_s * ndec;
  if (!hw->gpu) t_over = 1e-3 / pp + k->seq_s * ndec;
  o->overhead_s = t_over;
  o->seconds += t_comm + t_over;
}

void gpuplan__serve_iter(const gpuplan__scfg *c, double ndec, double ctx, double npre, double plen,
                         gpuplan__siter *out) {
  double pp = (double)c->pp;
  stage(c, ndec / pp, ctx, npre / pp, plen, out);
  if (c->pp > 1) {
    double f = pp / c->k->pp_eff;
    out->seconds *= f;
    out->weights_s *= f;
    out->kv_s *= f;
    out->compute_s *= f;
    out->attn_s *= f;
    out->comm_s *= f;
    out->overhead_s *= f;
  }
}

/* --- loads ----------------------------------------------------------------------- */

static const double zq[GPUPLAN__QN] = {0.0, 1.2816, 2.3263}; /* normal quantiles */
static const double qv[GPUPLAN__QN] = {0.50, 0.90, 0.99};

typedef struct loadctx {
  const gpuplan__scfg *c;
  double in, in_eff, out, ctx; /* prompt, its part prefilled (prefix cache), output, mean decode context */
  double budget;               /* prefill tokens an iteration may carry (chunked prefill) */
  int separate;                /* prefills run in their own iterations (no chunked prefill) */
} loadctx;

static double it_s(const loadctx *l, double ndec, double npre, double plen, gpuplan__siter *o) {
  gpuplan__siter tmp;
  gpuplan__serve_iter(l->c, ndec, l->ctx, npre, plen, o ? o : &tmp);
  return o ? o->seconds : tmp.seconds;
}

/* A prefill of n tokens alone (prompt length plen). */
static double prefill_alone(const loadctx *l, double n, double plen) {
  if (n <= 0) return 0;
  if (!l->separate && l->budget > 0 && n > l->budget) {
    double chunks = ceil(n / l->budget);
    return chunks * it_s(l, 0, n / chunks, plen, NULL);
  }
  return it_s(l, 0, n, plen, NULL);
}

/* An iteration of r running sequences in steady state at arrival rate lam:
 * the prefill tokens that arrive during it ride along (continuous batching),
 * capped by the chunked-prefill budget; or (separate) prefills preempt. */
static double steady_iter(const loadctx *l, double r, double lam, gpuplan__siter *o) {
  double t = it_s(l, r, 0, 0, o), npre;
  int i;
  if (l->separate) {
    double rho = lam * prefill_alone(l, l->in_eff, l->in);
    if (o) o->seconds = t;
    return rho < 0.999 ? t / (1 - rho) : INFINITY;
  }
  for (i = 0; i < 30 && l->in_eff > 0; i++) {
    double tn;
    npre = lam * t * l->in_eff;
    if (l->budget > 0 && npre > fmax(l->budget - r, 1)) npre = fmax(l->budget - r, 1);
    tn = it_s(l, r, npre, l->in, o);
    if (fabs(tn - t) <= 1e-7 * tn) {
      t = tn;
      break;
    }
    t = tn;
  }
  return t;
}

/* Sequences the KV cache and max_num_seqs admit at once. */
static double batch_cap(const gpuplan__scfg *c, const gpuplan__smem *mem, double in, double out) {
  double block = (double)(c->block > 0 ? c->block : 16), per, shared = 0, n;
  if (c->m->encoder) return (double)(mem->max_seqs > 0 ? mem->max_seqs : 256);
  if (!c->paged) per = (double)mem->max_len;
  else {
    double unique = in * (1 - c->prefix_hit) + out;
    per = ceil(unique / block) * block;
    if (c->prefix_hit > 0) shared = ceil(in * c->prefix_hit / block) * block;
  }
  n = floor((mem->kv_tokens - shared) / per);
  /* TensorRT-LLM's scheduler (GUARANTEED_NO_EVICT) keeps less of its pool in
   * use than the pool holds: fitted on trtllm-bench's max-load rows */
  if (c->engine == GPUPLAN__ENG_TRTLLM) n = floor(n * c->k->trt_kv_eff);
  if (mem->max_seqs > 0 && n > (double)mem->max_seqs) n = (double)mem->max_seqs;
  return n;
}

/* Exponential quantile of a mean length, capped at the longest request. */
static double len_q(double mean, int exp_lengths, int qi, double cap) {
  double v = exp_lengths ? -log(1 - qv[qi]) * mean : mean;
  if (v < 1) v = 1;
  return v > cap ? cap : v;
}

/* Prefill tokens an iteration with r running sequences may carry. */
static double avail(const loadctx *l, double r) {
  return l->budget > 0 ? fmax(l->budget - r, 1) : INFINITY;
}

/* Wall time to prefill n tokens of a prompt of plen while r sequences decode:
 * one iteration per chunk (or, without chunked prefill, the prefill alone). */
static double prefill_wall(const loadctx *l, double r, double n, double plen) {
  double chunks;
  if (n <= 0) return 0;
  if (l->separate) return prefill_alone(l, n, plen);
  chunks = ceil(n / avail(l, r));
  return chunks * it_s(l, r, n / chunks, plen, NULL);
}

/* The GPU time the prefill adds to the decoding of r sequences. */
static double prefill_extra(const loadctx *l, double r, double n, double plen, double t_plain) {
  double chunks;
  if (n <= 0) return 0;
  if (l->separate) return prefill_alone(l, n, plen);
  chunks = ceil(n / avail(l, r));
  return chunks * fmax(it_s(l, r, n / chunks, plen, NULL) - t_plain, 0);
}

int gpuplan__serve_eval(gpuplan_ctx *ctx, const gpuplan__scfg *c, const gpuplan__smem *mem,
                        const gpuplan__sload *ld, gpuplan__sresult *o) {
  loadctx l;
  double cap, t_plain, t_with, t_off, steps = (double)(c->sched_steps > 1 ? c->sched_steps : 1), lam, r;
  double s_marg, rho, cs2 = ld->exp_lengths ? 1.0 : 0.0, capacity, r_off;
  int qi, encoder = c->m->encoder;
  gpuplan__siter dec;
  memset(o, 0, sizeof *o);
  for (qi = 0; qi < GPUPLAN__QN; qi++) o->ttft[qi] = o->itl[qi] = o->tpot[qi] = o->e2e[qi] = NAN;
  o->ttft_mean = o->tpot_mean = o->e2e_mean = NAN;
  if (!(ld->in >= 1) || (!encoder && !(ld->out >= 1)))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "input_len, output_len: need at least one token each");
  if (!encoder && ld->in + ld->out > (double)mem->max_len)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "input_len + output_len: %.0f tokens exceed max_model_len (context_len) %lld",
                          ld->in + ld->out, (long long)mem->max_len);
  l.c = c;
  l.in = ld->in;
  l.in_eff = ld->in * (1 - c->prefix_hit);
  l.out = encoder ? 0 : ld->out;
  l.ctx = ld->in + l.out / 2;
  l.separate = !mem->chunked && !encoder;
  l.budget = mem->chunked ? (double)mem->max_batched : 0;
  cap = batch_cap(c, mem, ld->in, l.out);
  if (ld->kind == GPUPLAN__LOAD_BATCH && !encoder) {
    /* a static batch: the engine sizes its KV buffers for the batch (TensorRT-LLM's
     * gptSessionBenchmark, HF generate), from the memory the weights leave */
    double room = mem->visible - mem->item[GPUPLAN__SM_WEIGHTS] - mem->item[GPUPLAN__SM_ACT] -
                  mem->item[GPUPLAN__SM_NONTORCH];
    double per = (c->paged ? ld->in + l.out : (double)mem->max_len) * gpuplan__kv_per_token(c);
    cap = per > 0 ? floor(room / per) : 0;
  }
  o->batch_cap = cap;
  if (!(cap >= 1)) {
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "the KV cache (%.0f tokens) holds no request of %.0f + %.0f tokens: give fewer tokens, "
                          "more memory (gpu_memory_utilization, a bigger GPU, tp) or a smaller KV type",
                          mem->kv_tokens, ld->in, l.out);
  }
  o->prefill_s = prefill_alone(&l, l.in_eff, l.in);
  o->prefill_tok_s = o->prefill_s > 0 ? l.in_eff / o->prefill_s : NAN;

  if (encoder) {
    /* an encoder: each request is one forward of its sequence; batches of up to cap */
    double b = ld->kind == GPUPLAN__LOAD_RATE ? 1 : fmin(cap, ld->concurrency > 0 ? ld->concurrency : cap);
    double t = it_s(&l, 0, b * l.in_eff, l.in, &dec);
    capacity = cap / it_s(&l, 0, cap * l.in_eff, l.in, NULL);
    o->decode = dec;
    o->capacity_req_s = capacity;
    if (ld->kind == GPUPLAN__LOAD_RATE) {
      double s = t;
      lam = ld->rate;
      rho = lam * s;
      if (rho >= 0.95) {
        o->saturated = 1;
        o->req_s = capacity;
      } else {
        double wq = rho / (1 - rho) * s * (1 + cs2) / 2;
        for (qi = 0; qi < GPUPLAN__QN; qi++) {
          double sq = it_s(&l, 0, len_q(l.in_eff, ld->exp_lengths, qi, (double)mem->max_len), l.in, NULL);
          double w = rho > 1 - qv[qi] ? wq / rho * log(rho / (1 - qv[qi])) : 0;
          o->ttft[qi] = o->e2e[qi] = c->k->ttft_s + sq + w;
        }
        o->ttft_mean = o->e2e_mean = c->k->ttft_s + s + wq;
        o->req_s = lam;
      }
    } else {
      o->req_s = b / t;
      for (qi = 0; qi < GPUPLAN__QN; qi++) o->ttft[qi] = o->e2e[qi] = c->k->ttft_s + t;
      o->ttft_mean = o->e2e_mean = c->k->ttft_s + t;
    }
    o->running = b;
    o->in_tok_s = o->req_s * l.in;
    o->prefill_share = 1;
    return GPUPLAN_OK;
  }

  /* the most this replica sustains: every request queued (offline).  In
   * steady state each iteration admits running/out requests, whose prompts
   * ride along in chunks; when the chunk budget cannot carry them, fewer
   * sequences decode (prefill-bound) */
  r_off = cap;
  if (l.separate) {
    t_plain = it_s(&l, cap, 0, 0, NULL);
    t_off = (l.out * t_plain + cap * o->prefill_s) / l.out;
  } else {
    double need = cap * l.in_eff / l.out;
    if (need > avail(&l, cap)) {
      /* r x in/out = budget - r */
      r_off = fmin(cap, l.budget * l.out / (l.in_eff + l.out));
      if (r_off < 1) r_off = 1;
      need = r_off * l.in_eff / l.out;
    }
    t_off = it_s(&l, r_off, need, l.in, NULL);
  }
  capacity = r_off / (l.out * t_off);
  o->capacity_req_s = capacity;

  switch (ld->kind) {
  case GPUPLAN__LOAD_OFFLINE:
    o->running = r_off;
    o->req_s = capacity;
    if (l.separate) it_s(&l, cap, 0, 0, &o->decode);
    else it_s(&l, r_off, r_off * l.in_eff / l.out, l.in, &o->decode);
    o->tpot_mean = t_off;
    o->prefill_share = l.separate ? cap * o->prefill_s / (l.out * t_plain + cap * o->prefill_s)
                                  : fmax(0, 1 - it_s(&l, r_off, 0, 0, NULL) / t_off);
    break;
  case GPUPLAN__LOAD_BATCH: {
    double b = fmin(ld->concurrency, cap), tp, td;
    if (ld->concurrency > cap)
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "batch: %.0f sequences of %.0f + %.0f tokens do not fit the KV cache (%.0f at most)",
                            ld->concurrency, ld->in, l.out, cap);
    tp = it_s(&l, 0, b * l.in_eff, l.in, NULL);
    td = it_s(&l, b, 0, 0, &o->decode);
    o->running = b;
    o->req_s = b / (tp + (l.out - 1) * td);
    for (qi = 0; qi < GPUPLAN__QN; qi++) {
      o->ttft[qi] = c->k->ttft_s + tp;
      o->itl[qi] = o->tpot[qi] = td;
      o->e2e[qi] = o->ttft[qi] + (l.out - 1) * td;
    }
    o->ttft_mean = o->ttft[0];
    o->tpot_mean = td;
    o->e2e_mean = o->e2e[0];
    o->prefill_share = tp / (tp + (l.out - 1) * td);
    break;
  }
  case GPUPLAN__LOAD_CONCURRENCY:
  case GPUPLAN__LOAD_RATE: {
    int i, closed = ld->kind == GPUPLAN__LOAD_CONCURRENCY;
    double C = ld->concurrency, qwait = 0, wq_mean = 0, p_iter, mu, t;
    if (closed) {
      /* C clients: the arrival rate is C / (latency of a request) */
      r = fmin(C, cap);
      lam = r / (l.out * it_s(&l, r, 0, 0, NULL));
      for (i = 0; i < 60; i++) {
        double e2e, ln;
        if (l.separate) {
          /* prefills preempt decoding: each request sees every client's prefill once */
          e2e = c->k->ttft_s + C * o->prefill_s + l.out * it_s(&l, r, 0, 0, NULL);
        } else {
          t = steady_iter(&l, r, lam * (C - 1) / C, NULL); /* the other clients' prefills ride along */
          if (!isfinite(t)) break;
          e2e = c->k->ttft_s + prefill_wall(&l, r, l.in_eff, l.in) + t * steps / 2 + (l.out - 1) * t;
        }
        qwait = C > cap ? e2e * (C - cap) / cap : 0; /* the clients beyond the KV cache wait their turn */
        ln = C / (e2e + qwait);
        if (fabs(ln - lam) <= 1e-9 * ln) {
          lam = ln;
          break;
        }
        lam = 0.5 * lam + 0.5 * ln;
      }
    } else {
      lam = ld->rate;
      r = fmin(cap, fmax(lam * l.out * it_s(&l, 1, 0, 0, NULL), 1e-3));
      if (lam < 0.97 * capacity) {
        /* Little's law: running = arrival rate x decode residence */
        for (i = 0; i < 80; i++) {
          double rn;
          t = steady_iter(&l, r, lam, NULL);
          rn = fmin(cap, lam * l.out * t);
          if (!isfinite(t)) break;
          if (fabs(rn - r) <= 1e-6 * fmax(rn, 1e-3)) {
            r = rn;
            break;
          }
          r = rn; /* a contraction: t grows slower than the running count */
        }
      }
    }
    t = steady_iter(&l, r, closed ? lam * (C - 1) / C : lam, &o->decode);
    t_plain = it_s(&l, r, 0, 0, NULL);
    if (l.separate) t_with = t_plain + o->prefill_s;
    else t_with = it_s(&l, r, fmin(l.in_eff, avail(&l, r)), l.in, NULL);
    s_marg = prefill_extra(&l, r, l.in_eff, l.in, t_plain);
    rho = lam * s_marg;
    o->running = r;
    o->req_s = lam;
    o->prefill_share = fmin(1, rho);
    if (!closed && (lam >= 0.97 * capacity || rho >= 0.97 || !isfinite(t))) {
      /* more arrivals than the replica serves: the queue grows without bound */
      o->saturated = 1;
      o->running = r_off;
      o->req_s = capacity;
      o->prefill_share = fmax(0, 1 - it_s(&l, r_off, 0, 0, NULL) / t_off);
      break;
    }
    /* the prefill stream as an M/G/1 queue (Kingman), exponential tail */
    wq_mean = !closed && rho > 0 ? rho / (1 - rho) * s_marg * (1 + cs2) / 2 : 0;
    /* the share of a request's iterations that carry another request's
     * prefill (closed loop: the other C - 1 clients' arrivals) */
    p_iter = 1 - exp(-(closed ? lam * (C - 1) / C : lam) * t);
    mu = (l.out - 1) * p_iter;
    for (qi = 0; qi < GPUPLAN__QN; qi++) {
      double inq = len_q(l.in, ld->exp_lengths, qi, (double)mem->max_len - 1);
      double outq = len_q(l.out, ld->exp_lengths, qi, (double)mem->max_len - inq);
      double w = !closed && rho > 1 - qv[qi] ? wq_mean / rho * log(rho / (1 - qv[qi])) : 0;
      double kq = mu + zq[qi] * sqrt(mu), tq, others = 0;
      if (closed && l.separate) others = o->prefill_s * (C - 1) * qv[qi]; /* the other clients' prefills */
      kq = fmin(fmax(kq, 0), l.out - 1);
      tq = l.out > 1 ? t_plain + (l.out > 1 ? kq / (l.out - 1) : 0) * (t_with - t_plain) : NAN;
      o->ttft[qi] = c->k->ttft_s + qv[qi] * t_plain * steps + prefill_wall(&l, r, inq * (1 - c->prefix_hit), inq) +
                    w + others + qwait * qv[qi] * 2;
      o->itl[qi] = (qv[qi] <= 1 - p_iter ? t_plain : t_with) * steps;
      o->tpot[qi] = tq;
      o->e2e[qi] = o->ttft[qi] + (outq - 1) * (l.out > 1 ? tq : 0);
    }
    o->ttft_mean = c->k->ttft_s + 0.5 * t_plain * steps + prefill_wall(&l, r, l.in_eff, l.in) + wq_mean + qwait +
                   (closed && l.separate ? o->prefill_s * (C - 1) / 2 : 0);
    o->tpot_mean = t;
    o->e2e_mean = o->ttft_mean + (l.out - 1) * t;
    if (closed && l.separate) o->e2e_mean = c->k->ttft_s + C * o->prefill_s + l.out * t_plain + qwait;
    break;
  }
  }
  o->out_tok_s = o->req_s * l.out;
  o->in_tok_s = o->req_s * l.in;
  return GPUPLAN_OK;
}

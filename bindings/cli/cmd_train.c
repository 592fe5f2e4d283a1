/* cmd_train.c: gpuplan plan, perf, search and simulate: the library's job
 * API (gpuplan_job_run), rendered as text from its documents.  No planning
 * rule lives here. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static double gib(double b) { return b / 1073741824.0; }

static const char plan_about[] =
    "Per-GPU memory by component for training or serving MODEL, against the\n"
    "GPU's capacity; when it does not fit, the fix ladder, each rung quantified.\n"
    "MODEL is a catalog model (gpuplan catalog models), a size such as 70B (the\n"
    "catalog model of that size), a Hugging Face config.json (or its directory),\n"
    "or none with the shape options (--layers, --hidden, --heads, --vocab, ...).\n";
static const char perf_about[] =
    "Step time and its breakdown (compute, pipeline bubble, exposed tensor-,\n"
    "context-, pipeline- and data-parallel communication, optimizer), tokens/s,\n"
    "MFU and HFU, bytes per step on NVLink, PCIe and the network, and cost per\n"
    "hour, per step, per million tokens and to train on --tokens.  With --gpu,\n"
    "nodes are DGX/HGX-style: --per-node GPUs on NVLink, one InfiniBand NIC each.\n";
static const char search_about[] =
    "Enumerate the layouts of MODEL on the cluster (tp, pp, cp, dp, ZeRO-1 or\n"
    "ZeRO-3, micro-batch, recompute, interleaving), drop those that do not fit\n"
    "in memory, rank the rest by step time (or cost per token) and print the\n"
    "best --top with what makes each fast or slow.  With --across: every priced\n"
    "node/VM type and 1, 2, 4, ... --max-nodes nodes, the best layout of each,\n"
    "the time and cost to train on --tokens; the cheapest within --days first.\n";
static const char simulate_about[] =
    "Run training steps of the worst rank through gpuplan's model of PyTorch's\n"
    "caching allocator on a mock GPU (the SKU's memory minus the CUDA context,\n"
    "NCCL buffers and cuBLAS workspace): parameters at setup, gradients in the\n"
    "first backward, optimizer states at the first step, activations per layer.\n"
    "Reports peak allocated and reserved, fragmentation, the first OOM (step,\n"
    "operation, PyTorch's message) and the comparison with `gpuplan plan`.\n"
    "PYTORCH_ALLOC_CONF (or the older PYTORCH_CUDA_ALLOC_CONF) in the\n"
    "environment counts as --alloc-conf, as the --torch release read it;\n"
    "--alloc-conf wins.  --summary prints torch.cuda.memory_summary() at the end,\n"
    "--memory-stats torch.cuda.memory_stats() (the keys of the --torch release).\n"
    "--snapshot's time_us is perf's step for the same case: the perf options\n"
    "(--intra, --inter, --nics, --framework, ...) set its clock.\n";

/* simulate reads the environment as replay does (cmd_replay.c): the new
 * name first, then its deprecated alias; an empty value is unset.  Which
 * of them a release's CUDA allocator read is the library's rule (the
 * torch option): it is told where the text came from. */
typedef struct simulate_args {
  int env_done;
} simulate_args;

static int simulate_extra(cli *c, void *payload, int argc, char **argv, int i) {
  simulate_args *sa = payload;
  (void)argc;
  (void)argv;
  (void)i;
  if (!sa->env_done) {
    int rc;
    sa->env_done = 1;
    if ((rc = cli_pass_alloc_env(c, "simulate"))) return -rc;
  }
  return 0;
}

/* The header every planning command prints. */
static void header(const gpuplan_value *r) {
  const gpuplan_value *o = dv(r, "options");
  char name[256], gname[256];
  term_safe(dstr(r, "model"), name, sizeof name);
  if (disnull(r, "gpu"))
    printf("%s (%.3gB params) %s on %lld x %s (CPU only, one data-parallel rank per node)\n", name,
           dnum(r, "params") / 1e9, strcmp(dstr(r, "workload"), "train") == 0 ? "training" : "inference",
           (long long)dint(r, "nodes"), dstr(r, "node"));
  else
    printf("%s (%.3gB params) %s on %lld x %s (%.1f GiB each)\n", name, dnum(r, "params") / 1e9,
           strcmp(dstr(r, "workload"), "train") == 0 ? "training" : "inference", (long long)dint(r, "gpus"),
           term_safe(dstr(r, "gpu_name"), gname, sizeof gname), gib(dnum(r, "gpu_memory_bytes")));
  if (!disnull(r, "model_note")) printf("  model: %s\n", dstr(r, "model_note"));
  if (dv(r, "impl")) printf("  implementation: %s\n", dstr(r, "impl_why"));
  if (strcmp(dstr(o, "workload"), "train") == 0) {
    printf("  precision %s, optimizer %s, convention %s, grads %s\n", dstr(o, "precision"), dstr(o, "optimizer"),
           dstr(o, "convention"),
           disnull(o, "grad_bytes") ? "per convention" : (dint(o, "grad_bytes") == 4 ? "fp32" : "16-bit"));
    printf("  micro-batch %lld, seq %lld, grad-accum %lld, recompute %s, attention %s%s\n",
           (long long)dint(o, "micro_batch"), (long long)dint(o, "seq_len"), (long long)dint(o, "grad_accum"),
           dstr(o, "recompute"), dbool(o, "flash_attention") ? "flash" : "explicit",
           dbool(o, "dropout") ? "" : ", no dropout");
    printf("  layout tp %lld, pp %lld (%s), dp %lld (%s), cp %lld, ep %lld%s\n", (long long)dint(o, "tp"),
           (long long)dint(o, "pp"), dstr(o, "schedule"), (long long)dint(o, "dp"), dstr(o, "dp_mode"),
           (long long)dint(o, "cp"), (long long)dint(o, "ep"), dbool(o, "sequence_parallel") ? ", sequence parallel" : "");
  } else {
    printf("  weights %s, KV cache %s (%s), context %lld, batch %lld, tp %lld\n", dstr(o, "weight_dtype"),
           dstr(o, "kv_dtype"), dbool(o, "paged") ? "paged" : "contiguous", (long long)dint(o, "context_len"),
           (long long)dint(o, "batch"), (long long)dint(o, "tp"));
  }
  {
    const gpuplan_value *d = dv(r, "defaults");
    size_t i, n = gpuplan_value_count(d);
    if (n) {
      printf("  defaults:");
      for (i = 0; i < n; i++)
        printf("%s %s %s", i ? "," : "", dstr(gpuplan_value_at(d, i), "option"), dstr(gpuplan_value_at(d, i), "value"));
      printf("\n");
    }
  }
}

static void print_stage(const gpuplan_value *r, const char *gpu_name, int worst) {
  table *t = table_new(4);
  const gpuplan_value *comps = dv(r, "components");
  size_t i, n = gpuplan_value_count(comps);
  printf("\n%s: stage %lld of the pipeline, %lld layers, %.3g micro-batches in flight, %.3gB params on this rank\n",
         worst ? "worst rank" : "rank", (long long)dint(r, "stage"), (long long)dint(r, "layers"),
         dnum(r, "microbatches_in_flight"), dnum(r, "params_rank") / 1e9);
  table_cell(t, "COMPONENT");
  table_cell(t, "GB");
  table_cell(t, "GiB");
  table_cell(t, "FORMULA");
  for (i = 0; i < n; i++) {
    const gpuplan_value *c = gpuplan_value_at(comps, i);
    table_cell(t, "%s", dstr(c, "name"));
    table_cell(t, "%.2f", dnum(c, "bytes") / 1e9);
    table_cell(t, "%.2f", gib(dnum(c, "bytes")));
    table_cell(t, "%s", dstr(c, "formula"));
  }
  table_cell(t, "total");
  table_cell(t, "%.2f", dnum(r, "total_bytes") / 1e9);
  table_cell(t, "%.2f", gib(dnum(r, "total_bytes")));
  table_cell(t, "of %.2f GiB (%s)", gib(dnum(r, "capacity_bytes")), gpu_name);
  table_align(t, 1, 'r');
  table_align(t, 2, 'r');
  table_print(t, stdout);
  table_free(t);
  if (dv(r, "sum_bytes") && dnum(r, "sum_bytes") > dnum(r, "total_bytes"))
    printf("the step peaks in %s (the components add up to %.2f GiB; not all coexist)\n", dstr(r, "peak_phase"),
           gib(dnum(r, "sum_bytes")));
  if (dbool(r, "fits"))
    printf("FITS: %.2f GiB headroom (%.0f%% of the GPU used)\n", gib(dnum(r, "headroom_bytes")),
           100.0 * dnum(r, "total_bytes") / dnum(r, "capacity_bytes"));
  else if (dv(r, "at_limit") && dbool(r, "at_limit"))
    printf("AT THE LIMIT: %.2f GiB headroom, under 2%% of the GPU's %.2f GiB (fragmentation can make it OOM)\n",
           gib(dnum(r, "headroom_bytes")), gib(dnum(r, "capacity_bytes")));
  else
    printf("DOES NOT FIT: short by %.2f GiB\n", gib(-dnum(r, "headroom_bytes")));
  if (dnum(r, "host_bytes") > 0) printf("host memory (offloaded): %.2f GiB\n", gib(dnum(r, "host_bytes")));
  if (dv(r, "kv_bytes_per_token"))
    printf("KV cache: %lld bytes per token per GPU; %.2f GiB reserved but unused; at most %lld "
           "concurrent sequences fit\n",
           (long long)dint(r, "kv_bytes_per_token"), gib(dnum(r, "kv_waste_bytes")), (long long)dint(r, "max_sequences"));
}

static int render_plan(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc), *stages = dv(r, "stages"), *lad = dv(r, "ladder");
  char gname[256];
  size_t i, n;
  (void)c;
  term_safe(dstr(r, "gpu_name"), gname, sizeof gname);
  header(r);
  if (stages && gpuplan_value_count(stages) > 1) {
    for (i = 0; i < gpuplan_value_count(stages); i++) print_stage(gpuplan_value_at(stages, i), gname, 0);
    printf("\nworst rank is stage %lld: %.2f GiB\n", (long long)dint(r, "worst.stage"), gib(dnum(r, "worst.total_bytes")));
  } else {
    print_stage(dv(r, "worst"), gname, 1);
  }
  n = gpuplan_value_count(lad);
  if (n) {
    printf("\nfix ladder (each step keeps the ones above it):\n");
    for (i = 0; i < n; i++) {
      const gpuplan_value *f = gpuplan_value_at(lad, i);
      printf("  %zu. %-60s %8.2f GiB of %.2f  %s\n", i + 1, dstr(f, "change"), gib(dnum(f, "total_bytes")),
             gib(dnum(f, "capacity_bytes")), dbool(f, "fits") ? "FITS" : "does not fit");
    }
    if (!dbool(gpuplan_value_at(lad, n - 1), "fits"))
      printf("  nothing on the ladder fits within %lld GPUs; try --max-gpus, tensor/pipeline "
             "parallelism (--tp, --pp) or offload (--offload-optimizer)\n", (long long)dint(r, "max_gpus"));
  } else if (!dbool(r, "worst.fits")) {
    printf("\nno rung of the fix ladder applies to this case\n");
  }
  return EXIT_OK;
}

/* "54.39 USD" or "54.39" when the currency is unknown. */
static const char *money(const gpuplan_value *r, double v, const char *fmt, char *buf, size_t cap) {
  int n = snprintf(buf, cap, fmt, v);
  if (n > 0 && (size_t)n < cap && !disnull(r, "currency"))
    snprintf(buf + n, cap - (size_t)n, " %.8s", dstr(r, "currency"));
  return buf;
}

static void print_perf_body(const gpuplan_value *r) {
  const gpuplan_value *cl = dv(r, "cluster"), *bk = dv(r, "breakdown_s"), *by = dv(r, "bytes_per_step_per_gpu");
  int gpu = !disnull(cl, "gpu");
  double b2g = 1e-9, tokens = dnum(r, "train_tokens");
  char m1[64], m2[64], m3[64];
  if (gpu)
    printf("\ncluster: %lld node(s) x %lld %s; inside a node %s %.0f GB/s each way per GPU; between nodes %s %.1f GB/s per node\n",
           (long long)dint(cl, "nodes"), (long long)dint(cl, "gpus_per_node"), dstr(r, "gpu_name"),
           disnull(cl, "intra") ? "-" : dstr(cl, "intra"), dnum(cl, "intra_bw_bytes_s") * b2g,
           disnull(cl, "inter") ? "-" : dstr(cl, "inter"), dnum(cl, "inter_bw_bytes_s") * b2g);
  else
    printf("\ncluster: %lld CPU-only node(s), one data-parallel rank each; between nodes %s %.1f GB/s per node\n",
           (long long)dint(cl, "nodes"), disnull(cl, "inter") ? "-" : dstr(cl, "inter"),
           dnum(cl, "inter_bw_bytes_s") * b2g);
  printf("step (global batch %lld sequences)   %10.3f s\n", (long long)dint(r, "global_batch"), dnum(r, "step_s"));
  printf("  compute (GEMM, attention, elementwise, recompute) %8.3f s\n", dnum(bk, "compute"));
  printf("  pipeline bubble                                   %8.3f s\n", dnum(bk, "bubble"));
  printf("  tensor-parallel collectives (exposed)             %8.3f s\n", dnum(bk, "tp_comm"));
  printf("  context-parallel exchange (exposed)               %8.3f s\n", dnum(bk, "cp_comm"));
  printf("  pipeline send/recv                                %8.3f s\n", dnum(bk, "pp_comm"));
  printf("  data-parallel / ZeRO / FSDP traffic (exposed)     %8.3f s\n", dnum(bk, "dp_comm"));
  printf("  optimizer step                                    %8.3f s\n", dnum(bk, "optimizer"));
  {
    const gpuplan_value *cs = dv(r, "collectives");
    size_t i, n = gpuplan_value_count(cs);
    if (n) {
      table *t = table_new(8);
      printf("collectives per step (per GPU):\n");
      table_cell(t, "  COLLECTIVE");
      table_cell(t, "OP");
      table_cell(t, "ALGO");
      table_cell(t, "RANKS");
      table_cell(t, "CALLS");
      table_cell(t, "GB/GPU");
      table_cell(t, "EXPOSED s");
      table_cell(t, "HIDDEN s");
      for (i = 0; i < n; i++) {
        const gpuplan_value *x = gpuplan_value_at(cs, i);
        table_cell(t, "  %s", dstr(x, "name"));
        table_cell(t, "%s", dstr(x, "op"));
        table_cell(t, "%s", dstr(x, "algo"));
        table_cell(t, "%lld", (long long)dint(x, "ranks"));
        table_cell(t, "%.0f", dnum(x, "count"));
        table_cell(t, "%.2f", dnum(x, "bytes_per_gpu") * b2g);
        table_cell(t, "%.3f", dnum(x, "exposed_s"));
        table_cell(t, "%.3f", dnum(x, "hidden_s"));
      }
      for (i = 3; i < 8; i++) table_align(t, (int)i, 'r');
      table_print(t, stdout);
      table_free(t);
      if (!disnull(r, "communication.bytes_per_nic"))
        printf("  network: %.2f GB through each NIC per step at %.1f GB/s\n", dnum(r, "communication.bytes_per_nic") * b2g,
               dnum(r, "communication.nic_bw_bytes_s") * b2g);
    }
  }
  printf("throughput   %.0f tokens/s (%.0f per %s)\n", dnum(r, "tokens_per_s"),
         dnum(r, "tokens_per_s") / (double)dint(r, "gpus"), gpu ? "GPU" : "node");
  printf("MFU %.1f%%, HFU %.1f%% of %.2f TFLOP/s per %s (%.2f TFLOP/s of model FLOPs per %s)\n", 100 * dnum(r, "mfu"),
         100 * dnum(r, "hfu"), dnum(r, "peak_flops") / 1e12, gpu ? "GPU" : "node",
         dnum(r, "model_flops_per_s_per_gpu") / 1e12, gpu ? "GPU" : "node");
  printf("bytes per step per GPU: NVLink %.2f GB, PCIe %.2f GB, network %.2f GB (cluster total %.1f GB on the network)\n",
         dnum(by, "nvlink") * b2g, dnum(by, "pcie") * b2g, dnum(by, "network") * b2g,
         dnum(by, "network") * (double)dint(r, "gpus") * b2g);
  if (isfinite(dnum(r, "cost_per_hour"))) {
    printf("cost %s per hour, %s per step, %s per million tokens", money(r, dnum(r, "cost_per_hour"), "%.2f", m1, sizeof m1),
           money(r, dnum(r, "cost_per_step"), "%.4f", m2, sizeof m2),
           money(r, dnum(r, "cost_per_mtok"), "%.3f", m3, sizeof m3));
    if (!disnull(r, "price_region"))
      printf(" (%s price of %s)", dstr(r, "price_region"), disnull(r, "price_date") ? "unknown date" : dstr(r, "price_date"));
    printf("\n");
  } else {
    printf("cost: no price in the catalog for this hardware (use --node with a priced VM)\n");
  }
  if (isfinite(tokens)) {
    double sec = dnum(r, "train_seconds");
    printf("to train on %.3g tokens: %.1f hours (%.1f days)", tokens, sec / 3600, sec / 86400);
    if (isfinite(dnum(r, "train_cost"))) printf(", %s", money(r, dnum(r, "train_cost"), "%.0f", m1, sizeof m1));
    printf("\n");
  }
}

static int render_perf(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc);
  (void)c;
  header(r);
  if (!disnull(r, "memory.fits"))
    printf("memory: worst rank %.2f GiB of %.2f GiB: %s\n", gib(dnum(r, "memory.total_bytes")),
           gib(dnum(r, "memory.capacity_bytes")), dbool(r, "memory.fits") ? "fits" : "DOES NOT FIT (see gpuplan plan)");
  print_perf_body(r);
  return EXIT_OK;
}

static int render_search(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc), *best;
  size_t i, n;
  char m1[64];
  if (strcmp(gpuplan_doc_kind(doc), "search-across") == 0) {
    const gpuplan_value *cf = dv(r, "configs");
    int shown = 0, winner = 0;
    n = gpuplan_value_count(cf);
    printf("%s (%.3gB params) on %.3g tokens within %g days, global batch %lld: %zu priced configurations\n\n",
           dstr(r, "model"), dnum(r, "params") / 1e9, dnum(r, "tokens"), dnum(r, "days"),
           (long long)dint(r, "global_batch"), n);
    printf("%-28s %5s %5s  %-30s %9s %16s  %s\n", "NODE", "NODES", "GPUS", "BEST LAYOUT", "DAYS", "COST", "");
    for (i = 0; i < n; i++) {
      const gpuplan_value *x = gpuplan_value_at(cf, i);
      int ok = dbool(x, "meets_deadline");
      char lay[96], cost[64];
      snprintf(lay, sizeof lay, "tp%lld pp%lld cp%lld dp%lld %s %s", (long long)dint(x, "tp"), (long long)dint(x, "pp"),
               (long long)dint(x, "cp"), (long long)dint(x, "dp"), dstr(x, "dp_mode"), dstr(x, "recompute"));
      snprintf(cost, sizeof cost, "%.0f %s", dnum(x, "cost"), dstr(x, "currency"));
      printf("%-28s %5lld %5lld  %-30s %9.1f %16s  %s\n", dstr(x, "node_name"), (long long)dint(x, "nodes"),
             (long long)dint(x, "gpus"), lay, dnum(x, "days"), cost,
             ok ? (winner++ ? "meets the deadline" : "CHEAPEST WITHIN THE DEADLINE") : "too slow");
      if (++shown >= 20) break;
    }
    if (!winner)
      printf("\nnothing finishes within %g days up to %lld nodes of each type; raise --max-nodes\n", dnum(r, "days"),
             (long long)dint(r, "max_nodes"));
    printf("\nprices: the catalog's (price_region, price_date); compute cost only, storage and egress excluded\n");
    return EXIT_OK;
  }
  best = dv(r, "best");
  n = gpuplan_value_count(best);
  printf("%s (%.3gB params) on %lld x %s, global batch %lld x %lld tokens: %lld layouts evaluated in %.3f s, "
         "%lld do not fit, %lld invalid\n",
         dstr(r, "model"), dnum(r, "params") / 1e9, (long long)(dint(r, "cluster.gpus_per_node") * dint(r, "cluster.nodes")),
         dstr(r, "gpu_name"), (long long)dint(r, "global_batch"), (long long)dint(r, "options.seq_len"),
         (long long)dint(r, "evaluated"), cli_now() - c->started, (long long)dint(r, "too_big"),
         (long long)dint(r, "invalid"));
  if (!n) {
    printf("no layout fits: try more GPUs, a bigger GPU, or a smaller global batch\n");
    return EXIT_OK;
  }
  for (i = 0; i < n; i++) {
    const gpuplan_value *b = gpuplan_value_at(best, i);
    printf("\n%zu. tp %lld, pp %lld%s, cp %lld, dp %lld (%s), micro-batch %lld, recompute %s\n", i + 1,
           (long long)dint(b, "tp"), (long long)dint(b, "pp"), dint(b, "vpp") > 1 ? " interleaved" : "",
           (long long)dint(b, "cp"), (long long)dint(b, "dp"), dstr(b, "dp_mode"), (long long)dint(b, "micro_batch"),
           dstr(b, "recompute"));
    printf("   step %.3f s, %.0f tokens/s, MFU %.1f%%", dnum(b, "step_s"), dnum(b, "tokens_per_s"), 100 * dnum(b, "mfu"));
    if (isfinite(dnum(b, "cost_per_mtok"))) printf(", %s per M tokens", money(r, dnum(b, "cost_per_mtok"), "%.3f", m1, sizeof m1));
    if (isfinite(dnum(b, "train_days"))) printf(", %.1f days for %.3g tokens", dnum(b, "train_days"), dnum(r, "train_tokens"));
    printf("\n   why: %s", dstr(b, "why"));
    if (i > 0) printf("; %.1f%% slower than #1%s", 100 * dnum(b, "slower_than_first"),
                      dbool(b, "tied_with_first") ? " (a tie within the model's error)" : "");
    printf("\n");
  }
  if (!disnull(r, "first_vs_second.summary")) printf("\n#1 vs #2: %s\n", dstr(r, "first_vs_second.summary"));
  return EXIT_OK;
}

static int render_simulate(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc), *d, *w = dv(r, "warnings");
  const char *from = dstr(r, "alloc_conf_source");
  char why[1024];
  size_t i;
  (void)c;
  header(r);
  printf("\nsimulated on the caching-allocator model (torch %s rules, alloc conf '%s'%s%s, %s), %.2f GiB for PyTorch:\n",
         dstr(r, "rules"), term_safe(dstr(r, "alloc_conf"), why, sizeof why),
         strncmp(from, "PYTORCH_", 8) == 0 ? " from " : "", /* (one variable, or 2.10's two) */
         strncmp(from, "PYTORCH_", 8) == 0 ? from : "",
         dbool(r, "set_to_none") ? "zero_grad(set_to_none=True)" : "gradients kept", gib(dnum(r, "capacity_bytes")));
  for (i = 0; i < gpuplan_value_count(w); i++)
    printf("warning: %s\n", term_safe(gpuplan_value_string(gpuplan_value_at(w, i), NULL), why, sizeof why));
  printf("  steps completed      %lld (%lld allocations and frees)\n", (long long)dint(r, "steps"), (long long)dint(r, "ops"));
  printf("  peak allocated       %8.2f GiB  (analytic model: %.2f GiB, %+.1f%%)\n", gib(dnum(r, "peak_allocated_bytes")),
         gib(dnum(r, "analytic_bytes")), 100 * dnum(r, "vs_analytic"));
  printf("  peak reserved        %8.2f GiB\n", gib(dnum(r, "peak_reserved_bytes")));
  printf("  fragmentation        %8.3f  (1 - peak allocated / peak reserved)\n", dnum(r, "fragmentation"));
  printf("  at peak reserved     %.2f GiB cached free, largest free block %.2f GiB\n",
         gib(dnum(r, "total_free_at_peak_bytes")), gib(dnum(r, "largest_free_at_peak_bytes")));
  printf("  cudaMalloc retries   %lld\n", (long long)dint(r, "num_alloc_retries"));
  if (dbool(r, "cuda_graph"))
    printf("  CUDA graph pool      %8.2f GiB reserved (%.2f GiB of it allocated%s)%s\n",
           gib(dnum(r, "graph_pool_reserved_bytes")), gib(dnum(r, "graph_pool_allocated_bytes")),
           dbool(r, "graph_captured") ? ": its static outputs" : " when the capture ran out",
           dbool(r, "empty_cache_before_capture") ? ", cache emptied before the capture" : "");
  if (dbool(r, "oom")) printf("OUT OF MEMORY in %s:\n%s\n", dstr(r, "oom_op"), dstr(r, "oom_message"));
  printf("nvidia-smi at the peak would show %.0fMiB / %.0fMiB used (PyTorch reserved %.0f + CUDA "
         "context, NCCL, cuBLAS %.0f + other processes %.0f)\n",
         dnum(r, "nvidia_smi_used_bytes") / 1048576.0, dnum(r, "gpu_usable_bytes") / 1048576.0, /* (memory.total: the driver's, as the simulated card's) */
         dnum(r, "peak_reserved_bytes") / 1048576.0, dnum(r, "resident_bytes") / 1048576.0,
         dnum(r, "other_procs_bytes") / 1048576.0);
  if (!disnull(r, "snapshot")) {
    printf("snapshot written to %s\n", dstr(r, "snapshot"));
    if (!disnull(r, "snapshot_step_s"))
      printf("  its time_us: the modelled clock (0 at the start, %.1f ms a step, as perf models it)\n",
             dnum(r, "snapshot_step_s") * 1e3);
    else if (!disnull(r, "snapshot_clock"))
      printf("  its time_us: %s\n", dstr(r, "snapshot_clock"));
  }
  if (dv(r, "summary") && !disnull(r, "summary")) {
    printf("\nmemory_summary() at the end of the run:\n");
    fputs(dstr(r, "summary"), stdout);
  }
  print_memory_stats(r, "memory_stats() at the end of the run:");
  if ((d = dv(r, "on_device"))) {
    double pred = dnum(d, "predicted_peak_reserved_bytes"), act = dnum(d, "actual_peak_reserved_bytes");
    printf("\non %s (device %lld, %.0f MiB, %.0f MiB free before the run):\n", dstr(d, "device"),
           (long long)dint(d, "index"), dnum(d, "total_bytes") / 1048576.0, dnum(d, "free_before_bytes") / 1048576.0);
    printf("  peak reserved   predicted %9.0f MiB   on the card %9.0f MiB (%+.1f%%)\n", pred / 1048576.0,
           act / 1048576.0, pred > 0 ? 100.0 * (act / pred - 1) : 0.0);
    printf("  driver-level    %9.0f MiB more in use at the peak (cuMemGetInfo)\n",
           dnum(d, "driver_peak_used_bytes") / 1048576.0);
    printf("  out of memory   predicted %s, on the card %s%s%s\n", dbool(d, "predicted_oom") ? "yes" : "no",
           dbool(d, "actual_oom") ? "yes" : "no", dbool(d, "actual_oom") ? " in " : "", dstr(d, "actual_oom_op"));
  }
  return EXIT_OK;
}

/* A progress bar on stderr, only on a terminal and after the first second. */
static int progress_bar(void *payload, uint64_t done, uint64_t total) {
  cli *c = payload;
  double el = cli_now() - c->started;
  int w = 40, k, i;
  if (el < 1.0 || !isatty(2)) return 0;
  k = total ? (int)((double)done / (double)total * w) : 0;
  if (k > w) k = w;
  fputs("\rsearching [", stderr);
  for (i = 0; i < w; i++) fputc(i < k ? '#' : ' ', stderr);
  fprintf(stderr, "] %llu layouts, %.1f s", (unsigned long long)done, el);
  return 0;
}

/* plan --check: exit 3 when the worst rank does not fit (for scripts). */
static int plan_status(const gpuplan_doc *doc) {
  return dbool(gpuplan_doc_root(doc), "worst.fits") ? EXIT_OK : 3;
}

static int plan_extra(cli *c, void *payload, int argc, char **argv, int i) {
  (void)payload;
  (void)argc;
  if (strcmp(argv[i], "--check") != 0) return 0;
  c->status = plan_status;
  return 1;
}

int cmd_plan(cli *c, int argc, char **argv) {
  return cli_run(c, gpuplan_command_find("plan"), argc, argv,
                 "usage: gpuplan plan MODEL (--gpu SKU [--gpus N] | --node VM [--nodes K]) [options] [--json|--csv]\n"
                 "                    [--check]   (exit 3 when it does not fit)",
                 plan_about, render_plan, plan_extra, NULL);
}
int cmd_perf(cli *c, int argc, char **argv) {
  return cli_run(c, gpuplan_command_find("perf"), argc, argv,
                 "usage: gpuplan perf MODEL (--gpu SKU --gpus N [--per-node G] | --node VM --nodes K) [options] [--json]",
                 perf_about, render_perf, NULL, NULL);
}
int cmd_search(cli *c, int argc, char **argv) {
  int rc;
  c->progress = progress_bar;
  rc = cli_run(c, gpuplan_command_find("search"), argc, argv,
               "usage: gpuplan search MODEL (--gpu SKU --gpus N | --node VM --nodes K) --global-batch B [options]\n"
               "       gpuplan search MODEL --across --tokens D --days T --global-batch B [--max-nodes N]",
               search_about, render_search, NULL, NULL);
  if (isatty(2) && cli_now() - c->started >= 1.0) fputs("\n", stderr);
  return rc;
}
int cmd_simulate(cli *c, int argc, char **argv) {
  simulate_args sa = {0};
  return cli_run(c, gpuplan_command_find("simulate"), argc, argv,
                 "usage: gpuplan simulate MODEL --gpu SKU [plan options] [--steps N] [--alloc-conf S] [--torch V] "
                 "[--summary] [--memory-stats] [--json]",
                 simulate_about, render_simulate, simulate_extra, &sa);
}

/*
 * test_simulate.c: training steps through the allocator model.  The seed
 * ticket (a 7B model on one A100-40GB) ends in an OOM with PyTorch's text;
 * where lifetimes allow it (gradients kept), the simulated peak allocated is
 * within 5% of the analytic model; zero_grad(set_to_none) is the named
 * effect that takes the gradients out of the peak.
 */
#include <math.h>
#include <stdio.h>

#include "testutil.h"

static void sim(fixture *f, const char *model, const char *gpu, gpuplan_memory_options *o,
                gpuplan_simulate_options *so, gpuplan_simulate_result *r) {
  const gpuplan_model *m;
  const gpuplan_gpu *g;
  int rc;
  assert_int_equal(gpuplan_catalog_model(f->cat, model, &m), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_gpu(f->cat, gpu, &g), GPUPLAN_OK);
  rc = gpuplan_simulate(f->ctx, m, g, o, so, r);
  if (rc) fprintf(stderr, "simulate: %s\n", gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, GPUPLAN_OK);
}

static void test_simulate__seed_ticket_ooms_like_pytorch(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
  gpuplan_simulate_result r;
  o.params_override = 7e9;
  sim(f, "llama-2-7b", "a100-40gb", &o, &so, &r);
  assert_true(r.oom);
  assert_int_equal(r.oom_step, 1);
  assert_int_equal(r.steps_done, 0);
  assert_true(strncmp(r.oom_message, "CUDA out of memory. Tried to allocate ", 38) == 0);
  assert_non_null(strstr(r.oom_message, " is allocated by PyTorch, and "));
  /* the allocator's device: NVML's 40,960 MiB less the 512 MiB CUDA context
   * (the 32 MiB cuBLAS workspace is an allocation inside it, as in PyTorch) */
  assert_non_null(strstr(r.oom_message, "GPU 0 has a total capacity of 39.50 GiB"));
  assert_true(strlen(r.oom_op) > 10);
  assert_int_equal(r.num_ooms, 1);
}

static void within_5pct(fixture *f, const char *model, gpuplan_memory_options *o) {
  gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
  gpuplan_simulate_result keep, none;
  so.set_to_none = 0;
  sim(f, model, "h100 sxm", o, &so, &keep);
  if (fabs(keep.vs_analytic) > 0.05)
    fprintf(stderr, "%s: simulated %.3f GB vs analytic %.3f GB (%+.1f%%)\n", model,
            keep.peak_allocated / 1e9, keep.analytic_bytes / 1e9, 100 * keep.vs_analytic);
  assert_false(keep.oom);
  assert_int_equal(keep.steps_done, 2);
  assert_true(fabs(keep.vs_analytic) <= 0.05);
  assert_true(keep.peak_reserved >= keep.peak_allocated);
  so.set_to_none = 1;
  sim(f, model, "h100 sxm", o, &so, &none);
  /* Freed gradients cannot raise the peak, beyond the allocator's slack
   * (a block handed out whole, up to 1 MiB over, R11). */
  assert_true((double)none.peak_allocated <= (double)keep.peak_allocated * 1.001);
}

static void test_simulate__agrees_with_the_analytic_model(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  o.params_override = 7e9;
  o.dp = 8;
  o.dp_mode = GPUPLAN_DP_ZERO3;
  o.seq_len = 2048;
  within_5pct(f, "llama-2-7b", &o);
  {
    gpuplan_memory_options d = GPUPLAN_MEMORY_OPTIONS_INIT;
    o = d;
  }
  o.tp = 4;
  o.pp = 2;
  o.dp = 4;
  o.sequence_parallel = 1;
  o.dp_mode = GPUPLAN_DP_ZERO1;
  o.recompute = GPUPLAN_RECOMPUTE_SELECTIVE;
  o.microbatches = 8;
  within_5pct(f, "llama-2-13b", &o);
  {
    gpuplan_memory_options d = GPUPLAN_MEMORY_OPTIONS_INIT;
    o = d;
  }
  o.micro_batch = 2;
  o.seq_len = 1024;
  {
    /* GPT-2: a 50,257-token vocabulary on a 124M model.  The peak is the
     * loss backward, where the gradient of the logits exists beside the
     * logits themselves: a named effect the analytic model (Megatron's
     * 4sbV/t) leaves out.  Simulated = analytic + one more logits tensor. */
    gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
    gpuplan_simulate_result r;
    gpuplan_memory mem;
    const gpuplan_model *m;
    const gpuplan_gpu *g;
    double want;
    assert_int_equal(gpuplan_catalog_model(f->cat, "gpt2", &m), GPUPLAN_OK);
    assert_int_equal(gpuplan_catalog_gpu(f->cat, "h100 sxm", &g), GPUPLAN_OK);
    assert_int_equal(gpuplan_memory_eval(f->ctx, m, g, &o, GPUPLAN_STAGE_WORST, &mem), GPUPLAN_OK);
    so.set_to_none = 0;
    sim(f, "gpt2", "h100 sxm", &o, &so, &r);
    want = (double)r.analytic_bytes + (double)mem.item[GPUPLAN_MEM_LOGITS].bytes;
    assert_true(r.vs_analytic > 0.05);
    assert_true(fabs((double)r.peak_allocated / want - 1) <= 0.05);
  }
}

static void test_simulate__expandable_segments_and_errors(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
  gpuplan_simulate_result a, b;
  const gpuplan_model *m;
  const gpuplan_gpu *g;
  o.params_override = 7e9;
  o.dp = 8;
  o.dp_mode = GPUPLAN_DP_ZERO3;
  o.seq_len = 2048;
  sim(f, "llama-2-7b", "a100-40gb", &o, &so, &a);
  so.alloc_conf = "expandable_segments:True";
  sim(f, "llama-2-7b", "a100-40gb", &o, &so, &b);
  assert_true(b.peak_reserved <= a.peak_reserved);
  assert_true(b.fragmentation <= a.fragmentation);
  assert_int_equal(gpuplan_catalog_model(f->cat, "llama-2-7b", &m), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "a100-40gb", &g), GPUPLAN_OK);
  so.steps = 0;
  assert_int_equal(gpuplan_simulate(f->ctx, m, g, &o, &so, &a), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "steps"));
  so.steps = 2;
  so.alloc_conf = "max_split_size_mb:1";
  assert_int_equal(gpuplan_simulate(f->ctx, m, g, &o, &so, &a), GPUPLAN_EINVAL);
  so.alloc_conf = NULL;
  o.tp = 3;
  assert_int_equal(gpuplan_simulate(f->ctx, m, g, &o, &so, &a), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "tp"));
  o.tp = 1;
  o.workload = GPUPLAN_INFER;
  assert_int_equal(gpuplan_simulate(f->ctx, m, g, &o, &so, &a), GPUPLAN_EINVAL);
}

/* The snapshot a simulation wrote replays exactly under release torch,
 * with its figures. */
static void replays_exactly_under(fixture *f, const char *path, const gpuplan_simulate_result *r,
                                  gpuplan_torch_version torch) {
  gpuplan_snapshot *s = NULL;
  gpuplan_replay_result rr;
  gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
  o.torch = torch;
  assert_int_equal(gpuplan_snapshot_load(f->ctx, path, 0, &s), GPUPLAN_OK);
  assert_int_equal(gpuplan_snapshot_replay(f->ctx, s, &o, &rr), GPUPLAN_OK);
  if (!rr.exact) fprintf(stderr, "%s: diverges at %zu: %s\n", path, rr.diverged_at, rr.divergence);
  assert_true(rr.exact);
  assert_false(rr.rebuilt_start);
  assert_int_equal(rr.oom_event != SIZE_MAX, r->oom);
  if (r->oom) assert_string_equal(rr.oom_message, r->oom_message);
  assert_int_equal(rr.peak_allocated, r->peak_allocated);
  assert_int_equal(rr.peak_reserved, r->peak_reserved);
  gpuplan_snapshot_free(s);
  remove(path);
}

static void replays_exactly(fixture *f, const char *path, const gpuplan_simulate_result *r) {
  replays_exactly_under(f, path, r, GPUPLAN_TORCH_LATEST);
}

/* CUDA graphs (R33, R36; PyTorch's Note [Interaction with CUDA graph
 * capture]): the captured step's allocations come from a private pool
 * that cannot use what the warm-up left cached in the default pools, and
 * the out-of-memory path cannot empty the cache during a capture.  GPT-2
 * XL at micro-batch 10 on an A100-80GB needs 54 GiB eagerly, of which the
 * step's activations and temporaries are some 25 GiB: without
 * empty_cache() the capture needs them again beside the warm-up's cached
 * copy and runs out; with it, the private pool "doesn't use memory more
 * wastefully than the default pools", so the peak stays the eager one. */
static void test_simulate__cuda_graph_capture(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
  gpuplan_simulate_result eager, g, ge, v1;
  const gpuplan_model *m;
  const gpuplan_gpu *gpu;
  char path[512];
  o.micro_batch = 10;
  o.seq_len = 1024;
  so.steps = 3;
  sim(f, "gpt-2-xl", "a100-80gb", &o, &so, &eager);
  assert_false(eager.oom);
  assert_int_equal(eager.steps_done, 3);
  so.cuda_graph = 1;
  tmp_path(path, sizeof path, "sim-graph.pickle");
  so.snapshot_path = path;
  sim(f, "gpt-2-xl", "a100-80gb", &o, &so, &g);
  /* gpuplan's own snapshot of it replays exactly: the segments name their
   * pool (segment_pool_id), the replay routes each allocation to the pool
   * of the segment it lies in, and infers the capture from an OOM in a
   * private pool that no cudaFree preceded (R36). */
  replays_exactly(f, path, &g);
  assert_true(g.oom);
  assert_int_equal(g.oom_step, 3);
  assert_int_equal(g.steps_done, 2);
  assert_non_null(strstr(g.oom_op, "step 3 (CUDA graph capture) "));
  /* cached free memory would have served it, had the cache been emptied */
  assert_true(g.total_free_at_peak > (uint64_t)1 << 30);
  assert_int_equal(g.num_alloc_retries, 0);
  assert_non_null(strstr(g.oom_message, " allocated in private pools (e.g., CUDA Graphs), and "));
  so.empty_cache_before_capture = 1;
  sim(f, "gpt-2-xl", "a100-80gb", &o, &so, &ge);
  replays_exactly(f, path, &ge);
  /* With expandable segments: the graph's pool is expandable from 2.5 and
   * made of cudaMalloc segments before (R34); each file replays exactly
   * under the rules of the release that wrote it. */
  so.alloc_conf = "expandable_segments:True";
  so.torch = GPUPLAN_TORCH_LATEST;
  sim(f, "gpt-2-xl", "a100-80gb", &o, &so, &ge);
  replays_exactly_under(f, path, &ge, GPUPLAN_TORCH_LATEST);
  so.torch = GPUPLAN_TORCH_V2_4;
  sim(f, "gpt-2-xl", "a100-80gb", &o, &so, &ge);
  replays_exactly_under(f, path, &ge, GPUPLAN_TORCH_V2_4);
  so.alloc_conf = NULL;
  so.torch = GPUPLAN_TORCH_LATEST;
  so.snapshot_path = NULL;
  assert_false(ge.oom);
  assert_int_equal(ge.steps_done, 3);
  /* Within 5% of the eager peak: what is left over are the warm-up's split
   * default-pool segments, which a live block keeps from empty_cache and
   * whose free parts the capture cannot use (+2.4% here). */
  assert_true((double)ge.peak_reserved <= 1.05 * (double)eager.peak_reserved);
  assert_true(ge.peak_reserved + ((uint64_t)20 << 30) < g.peak_reserved);
  assert_true(fabs((double)ge.peak_allocated / (double)eager.peak_allocated - 1) < 0.01);
  /* A version-1 caller's structure has no cuda_graph: not read. */
  so.version = 1;
  sim(f, "gpt-2-xl", "a100-80gb", &o, &so, &v1);
  assert_false(v1.oom);
  assert_int_equal(v1.peak_reserved, eager.peak_reserved);
  /* The capture needs a warm-up step before it. */
  so.version = GPUPLAN_SIMULATE_OPTIONS_VERSION;
  so.steps = 1;
  assert_int_equal(gpuplan_catalog_model(f->cat, "gpt-2-xl", &m), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "a100-80gb", &gpu), GPUPLAN_OK);
  assert_int_equal(gpuplan_simulate(f->ctx, m, gpu, &o, &so, &v1), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "cuda_graph: needs steps >= 2"));
}

/* A simulated run exported as a snapshot replays exactly, OOM included:
 * the exporter and the replay checker agree with the allocator. */
static void test_simulate__snapshot_export_round_trip(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
  gpuplan_simulate_result r;
  gpuplan_snapshot *s = NULL;
  gpuplan_replay_result rr;
  char path[512];
  tmp_path(path, sizeof path, "sim-7b.pickle");
  o.params_override = 7e9;
  so.snapshot_path = path;
  sim(f, "llama-2-7b", "a100-40gb", &o, &so, &r);
  assert_true(r.oom);
  assert_int_equal(gpuplan_snapshot_load(f->ctx, path, 0, &s), GPUPLAN_OK);
  assert_int_equal(gpuplan_snapshot_replay(f->ctx, s, NULL, &rr), GPUPLAN_OK);
  if (!rr.exact) fprintf(stderr, "diverges at %zu: %s\n", rr.diverged_at, rr.divergence);
  assert_true(rr.exact);
  assert_false(rr.rebuilt_start);
  assert_true(rr.oom_event != SIZE_MAX);
  assert_string_equal(rr.oom_message, r.oom_message);
  assert_int_equal(rr.peak_allocated, r.peak_allocated);
  assert_int_equal(rr.peak_reserved, r.peak_reserved);
  gpuplan_snapshot_free(s);
  /* Traces recorded with expandable segments (segment_map/segment_unmap)
   * replay exactly too: every map, unmap and address checked. */
  o.dp = 8;
  o.dp_mode = GPUPLAN_DP_ZERO3;
  so.alloc_conf = "expandable_segments:True";
  sim(f, "llama-2-7b", "a100-40gb", &o, &so, &r);
  assert_int_equal(gpuplan_snapshot_load(f->ctx, path, 0, &s), GPUPLAN_OK);
  assert_int_equal(gpuplan_snapshot_replay(f->ctx, s, NULL, &rr), GPUPLAN_OK);
  if (!rr.exact) fprintf(stderr, "expandable: diverges at %zu: %s\n", rr.diverged_at, rr.divergence);
  assert_true(rr.exact);
  assert_false(rr.rebuilt_start);
  assert_true(rr.segment_allocs > 0);
  assert_int_equal(rr.peak_allocated, r.peak_allocated);
  assert_int_equal(rr.peak_reserved, r.peak_reserved);
  gpuplan_snapshot_free(s);
}

/* The cuBLAS workspace is allocated by the caching allocator at the first
 * GEMM and kept (the real linear-grad.pickle shows a 33,554,432-byte
 * allocation from at::cuda::getNewWorkspace() on its sm 9.0 GPU):
 * memory_allocated() counts it.  On an A100 (sm 8.0) the default is
 * :4096:2:16:8 = 2 x 4 MiB + 8 x 16 KiB = 8,519,680 bytes per handle, and
 * training has two handles (forward's thread and the autograd engine's),
 * so the peak, reached in backward, is at most 17,039,360 bytes higher
 * than without workspaces, and more than one workspace higher (the peak
 * without them may come at another moment: here 512 KiB of activations
 * earlier). */
static void test_simulate__cublas_workspace_is_allocated(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT, none = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
  gpuplan_simulate_result with, without;
  none.workspace_bytes = 0;
  sim(f, "gpt-2", "a100-80gb", &o, &so, &with);
  sim(f, "gpt-2", "a100-80gb", &none, &so, &without);
  assert_false(with.oom);
  assert_true(with.peak_allocated - without.peak_allocated <= 2 * 8519680u);
  assert_true(with.peak_allocated - without.peak_allocated > 8519680u);
  assert_true(with.peak_reserved >= without.peak_reserved);
  /* the allocator may use the same capacity either way: nothing outside it changed */
  assert_true(with.capacity == without.capacity);
}

/* The file's bytes hold this string (the exporter writes no memo: each
 * entry spells its keys). */
static int file_has(const char *path, const char *needle) {
  static char buf[1 << 22];
  FILE *fp = fopen(path, "rb");
  size_t n, k = strlen(needle), i;
  assert_non_null(fp);
  n = fread(buf, 1, sizeof buf, fp);
  fclose(fp);
  for (i = 0; i + k <= n; i++)
    if (memcmp(buf + i, needle, k) == 0) return 1;
  return 0;
}

/* The snapshot's modelled clock (options version 3): entries carry time_us
 * only with a clock (tests/python/test_export_frames.py checks its times
 * against perf); a clock that is not a step is refused naming it, and a
 * version-2 caller's structure has no clock to read. */
static void test_simulate__snapshot_clock(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
  gpuplan_simulate_result r;
  gpuplan_perf pf;
  const gpuplan_model *m;
  const gpuplan_gpu *gpu;
  gpuplan_cluster cl;
  char path[512];
  tmp_path(path, sizeof path, "sim-clock.pickle");
  assert_int_equal(gpuplan_catalog_model(f->cat, "gpt-2", &m), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "a100-40gb", &gpu), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_default(f->ctx, f->cat, gpu, 1, 1, &cl), GPUPLAN_OK);
  assert_int_equal(gpuplan_perf_eval(f->ctx, m, &cl, &o, 0, 0, NULL, &pf), GPUPLAN_OK);
  so.snapshot_path = path;
  sim(f, "gpt-2", "a100-40gb", &o, &so, &r);
  assert_false(file_has(path, "time_us"));
  so.clock = &pf;
  sim(f, "gpt-2", "a100-40gb", &o, &so, &r);
  assert_true(file_has(path, "time_us"));
  pf.step_s = NAN;
  assert_int_equal(gpuplan_simulate(f->ctx, m, gpu, &o, &so, &r), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "clock: step_s"));
  pf.step_s = 1;
  pf.dp_comm_s = -1;
  assert_int_equal(gpuplan_simulate(f->ctx, m, gpu, &o, &so, &r), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "clock: the step's parts"));
  so.version = 2;
  sim(f, "gpt-2", "a100-40gb", &o, &so, &r);
  assert_false(file_has(path, "time_us"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fixture_setup, fixture_teardown)
    T(test_simulate__seed_ticket_ooms_like_pytorch),
    T(test_simulate__agrees_with_the_analytic_model),
    T(test_simulate__expandable_segments_and_errors),
    T(test_simulate__snapshot_export_round_trip),
    T(test_simulate__cublas_workspace_is_allocated),
      T(test_simulate__cuda_graph_capture),
    T(test_simulate__snapshot_clock),
  };
  return cmocka_run_group_tests_name("simulate", tests, NULL, NULL);
}

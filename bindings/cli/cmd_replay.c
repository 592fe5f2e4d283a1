/* cmd_replay.c: gpuplan replay FILE.pickle [--alloc-conf S] [--gpu SKU] [--json] */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char replay_usage[] =
    "usage: gpuplan replay FILE.pickle [--alloc-conf STRING] [--gpu SKU | --capacity MIB]\n"
    "                      [--torch latest|2.0|2.x] [--device N] [--json]\n"
    "\n"
    "Replay a torch.cuda.memory._dump_snapshot() pickle through gpuplan's model\n"
    "of PyTorch's caching allocator.  The file is read by a plain-data pickle\n"
    "reader that refuses anything that imports or calls code.\n"
    "\n"
    "Without options: the exact check.  Every allocation must land at its\n"
    "recorded address, every cudaMalloc have its recorded size, and the final\n"
    "layout equal the file's segments; traces that start mid-run (the history\n"
    "is a ring buffer) get their start state rebuilt backwards from the end.\n"
    "\n"
    "With --alloc-conf and/or --gpu: what if the same program ran under other\n"
    "PYTORCH_CUDA_ALLOC_CONF settings or on another card: peak reserved,\n"
    "fragmentation, and whether and where it would run out of memory.\n"
    "\n"
    "  --alloc-conf S  e.g. 'expandable_segments:True', 'max_split_size_mb:128'\n"
    "  --gpu SKU       capacity = the SKU's memory minus its CUDA context\n"
    "  --capacity MIB  capacity in MiB instead\n"
    "  --torch V       release whose rules to follow (default latest)\n"
    "  --device N      which device's trace (default 0)\n"
    "  --json          one JSON document\n";

static double mib(uint64_t b) { return (double)b / 1048576.0; }

int cmd_replay(cli *c, int argc, char **argv) {
  gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
  gpuplan_replay_result r;
  gpuplan_snapshot *s = NULL;
  const char *file = NULL, *gpu_name = NULL;
  int json = 0, device = 0, i, rc;
  uint64_t capacity = 0;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      fputs(replay_usage, stdout);
      return EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      json = 1;
    } else if (strcmp(a, "--alloc-conf") == 0 || strcmp(a, "--gpu") == 0 ||
               strcmp(a, "--capacity") == 0 || strcmp(a, "--torch") == 0 ||
               strcmp(a, "--device") == 0) {
      const char *v;
      if (i + 1 >= argc) return cli_fail(c, EXIT_USAGE, "replay: %s needs a value", a);
      v = argv[++i];
      if (a[2] == 'a') o.alloc_conf = v;
      else if (a[2] == 'g') gpu_name = v;
      else if (a[2] == 'c') {
        char *end;
        double mb = strtod(v, &end);
        if (*end || !(mb > 0) || mb > 1e9)
          return cli_fail(c, EXIT_USAGE, "replay: --capacity '%s' is not a size in MiB", v);
        capacity = (uint64_t)(mb * 1048576.0);
      } else if (a[2] == 't') {
        if (strcmp(v, "latest") == 0) o.torch = GPUPLAN_TORCH_LATEST;
        else if (strcmp(v, "2.0") == 0) o.torch = GPUPLAN_TORCH_2_0;
        else if (strcmp(v, "2.x") == 0) o.torch = GPUPLAN_TORCH_2_X;
        else return cli_fail(c, EXIT_USAGE, "replay: --torch '%s' is not one of latest, 2.0, 2.x", v);
      } else {
        char *end;
        long d = strtol(v, &end, 10);
        if (*end || d < 0 || d > 1024) return cli_fail(c, EXIT_USAGE, "replay: --device '%s' is not a device index", v);
        device = (int)d;
      }
    } else if (a[0] == '-' && a[1]) {
      return cli_fail(c, EXIT_USAGE, "replay: unknown option '%s'", a);
    } else if (!file) {
      file = a;
    } else {
      return cli_fail(c, EXIT_USAGE, "replay: unexpected argument '%s'", a);
    }
  }
  if (!file) return cli_fail(c, EXIT_USAGE, "replay: needs a FILE.pickle (see gpuplan replay --help)");
  if (gpu_name) {
    const gpuplan_gpu *g;
    if ((rc = cli_catalog(c))) return rc;
    if ((rc = gpuplan_catalog_gpu(c->cat, gpu_name, &g))) return cli_lib_fail(c, rc);
    capacity = g->memory_bytes > g->context_bytes ? g->memory_bytes - g->context_bytes : 0;
  }
  o.capacity = capacity;
  if ((rc = gpuplan_snapshot_load(c->ctx, file, device, &s))) return cli_lib_fail(c, rc);
  rc = gpuplan_snapshot_replay(c->ctx, s, &o, &r);
  if (rc) {
    gpuplan_snapshot_free(s);
    return cli_lib_fail(c, rc);
  }
  if (json) {
    printf("{\n  \"file\": ");
    json_str(stdout, file);
    printf(",\n  \"mode\": \"%s\",\n  \"alloc_conf\": ", o.alloc_conf || o.capacity ? "what-if" : "exact");
    json_str(stdout, o.alloc_conf);
    printf(",\n  \"capacity_bytes\": %llu,\n  \"events\": %zu,\n  \"trace_events\": %zu,\n  \"segments_in_file\": %zu,\n"
           "  \"rebuilt_start\": %s,\n  \"exact\": %s,\n  \"allocs\": %zu,\n  \"segment_allocs\": %zu,\n",
           (unsigned long long)o.capacity, r.events, gpuplan_snapshot_event_count(s),
           gpuplan_snapshot_segment_count(s), r.rebuilt_start ? "true" : "false",
           r.exact ? "true" : "false", r.allocs, r.segment_allocs);
    printf("  \"diverged_at\": ");
    if (r.diverged_at == SIZE_MAX) printf("null");
    else printf("%zu", r.diverged_at);
    printf(",\n  \"divergence\": ");
    json_str(stdout, r.diverged_at == SIZE_MAX ? NULL : r.divergence);
    printf(",\n  \"start_allocated_bytes\": %llu,\n  \"start_reserved_bytes\": %llu,\n"
           "  \"peak_allocated_bytes\": %llu,\n  \"peak_reserved_bytes\": %llu,\n"
           "  \"final_allocated_bytes\": %llu,\n  \"final_reserved_bytes\": %llu,\n"
           "  \"allocated_at_peak_reserved_bytes\": %llu,\n  \"largest_free_at_peak_bytes\": %llu,\n"
           "  \"total_free_at_peak_bytes\": %llu,\n  \"fragmentation\": ",
           (unsigned long long)r.start_allocated, (unsigned long long)r.start_reserved,
           (unsigned long long)r.peak_allocated, (unsigned long long)r.peak_reserved,
           (unsigned long long)r.final_allocated, (unsigned long long)r.final_reserved,
           (unsigned long long)r.allocated_at_peak_reserved,
           (unsigned long long)r.largest_free_at_peak, (unsigned long long)r.total_free_at_peak);
    json_num(stdout, r.fragmentation);
    printf(",\n  \"num_alloc_retries\": %lld,\n  \"num_ooms\": %lld,\n  \"oom_event\": ",
           (long long)r.num_alloc_retries, (long long)r.num_ooms);
    if (r.oom_event == SIZE_MAX) printf("null");
    else printf("%zu", r.oom_event);
    printf(",\n  \"oom_message\": ");
    json_str(stdout, r.oom_event == SIZE_MAX ? NULL : r.oom_message);
    printf("\n}\n");
  } else {
    printf("%s: %zu trace events, %zu segments at the end\n", file, gpuplan_snapshot_event_count(s),
           gpuplan_snapshot_segment_count(s));
    if (r.rebuilt_start)
      printf("trace starts mid-run: start state rebuilt backwards from the final segments "
             "(%.1f MiB allocated, %.1f MiB reserved at the first event)\n",
             mib(r.start_allocated), mib(r.start_reserved));
    if (!o.alloc_conf && !o.capacity) {
      if (r.exact)
        printf("exact match: %zu allocations at their recorded addresses, %zu cudaMallocs of "
               "their recorded sizes, final layout equal to the file's segments\n",
               r.allocs, r.segment_allocs);
      else
        printf("DIVERGES at event %zu: %s\n", r.diverged_at, r.divergence);
    } else {
      printf("what-if: alloc conf '%s'%s", o.alloc_conf ? o.alloc_conf : "",
             o.capacity ? "" : ", unlimited device memory\n");
      if (o.capacity) printf(", %.2f GiB usable on the device\n", (double)o.capacity / 1073741824.0);
    }
    printf("peak allocated %10.1f MiB\npeak reserved  %10.1f MiB\nfragmentation  %10.3f  "
           "(1 - peak allocated / peak reserved)\n",
           mib(r.peak_allocated), mib(r.peak_reserved), r.fragmentation);
    printf("at peak reserved: %.1f MiB allocated, %.1f MiB cached free, largest free block %.1f MiB\n",
           mib(r.allocated_at_peak_reserved), mib(r.total_free_at_peak), mib(r.largest_free_at_peak));
    printf("cudaMalloc retries %lld, OOMs %lld\n", (long long)r.num_alloc_retries, (long long)r.num_ooms);
    if (r.oom_event != SIZE_MAX)
      printf("OUT OF MEMORY at event %zu:\n%s\n", r.oom_event, r.oom_message);
  }
  gpuplan_snapshot_free(s);
  return EXIT_OK;
}

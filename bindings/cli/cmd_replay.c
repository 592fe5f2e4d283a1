/* cmd_replay.c: gpuplan replay FILE.pickle: the library's replay command
 * (gpuplan_job_run), rendered from its document.  The CLI's own part is the
 * environment: PYTORCH_ALLOC_CONF, then PYTORCH_CUDA_ALLOC_CONF, as PyTorch
 * reads them, unless --alloc-conf is given. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char replay_about[] =
    "Replay a torch.cuda.memory._dump_snapshot() pickle through gpuplan's model\n"
    "of PyTorch's caching allocator.  The file is read by a plain-data pickle\n"
    "reader that refuses anything that imports or calls code.\n"
    "\n"
    "Without options: the exact check.  Every allocation must land at its\n"
    "recorded address, every cudaMalloc have its recorded size, and the final\n"
    "layout equal the file's segments; traces that start mid-run (the history\n"
    "is a ring buffer) get their start state rebuilt backwards from the end.\n"
    "\n"
    "With --alloc-conf, --gpu or --capacity: what if the same program ran\n"
    "under other allocator settings or on another card: peak reserved,\n"
    "fragmentation, and whether and where it would run out of memory.\n"
    "PYTORCH_ALLOC_CONF (or the older PYTORCH_CUDA_ALLOC_CONF) in the\n"
    "environment counts as --alloc-conf, as in PyTorch; --alloc-conf wins.\n"
    "--summary prints torch.cuda.memory_summary() at the end of the replay,\n"
    "--memory-stats torch.cuda.memory_stats() (the keys of the --torch release).\n"
    "--html OUT writes a self-contained page: memory over the replay, the peak,\n"
    "the segment map at the peak (and at the OOM), the OOM message.\n";

/* The environment as PyTorch reads it (c10 AllocatorConfig): the new name
 * first, the old one as its deprecated alias.  An empty value is taken as
 * unset: it would turn the exact check into a what-if with the defaults. */
typedef struct replay_args {
  int env_done;
} replay_args;

static int replay_extra(cli *c, void *payload, int argc, char **argv, int i) {
  replay_args *ra = payload;
  (void)argc;
  (void)argv;
  (void)i;
  if (!ra->env_done) {
    int rc;
    ra->env_done = 1;
    if ((rc = cli_pass_alloc_env(c, "replay"))) return -rc;
  }
  return 0;
}

static double mib(double b) { return b / 1048576.0; }

static int render_replay(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc), *w = dv(r, "warnings");
  char file[1024], why[1024];
  size_t i;
  (void)c;
  printf("%s: %lld trace events, %lld segments at the end\n",
         disnull(r, "file") ? "(snapshot data)" : term_safe(dstr(r, "file"), file, sizeof file),
         (long long)dint(r, "trace_events"), (long long)dint(r, "segments_in_file"));
  if (dint(r, "format") == 1)
    printf("torch 1.13 format: a plain list of segments (no trace, no allocator settings)\n");
  if (dbool(r, "rebuilt_start"))
    printf("trace starts mid-run: start state rebuilt backwards from the final segments "
           "(%.1f MiB allocated, %.1f MiB reserved at the first event)\n",
           mib(dnum(r, "start_allocated_bytes")), mib(dnum(r, "start_reserved_bytes")));
  if (dv(r, "host_entries") && !disnull(r, "host_entries"))
    printf("pinned host memory: %lld host_segments/host_traces entries (read, not replayed)\n",
           (long long)dint(r, "host_entries"));
  if (strcmp(dstr(r, "mode"), "exact") == 0) {
    if (dint(r, "trace_events") == 0)
      printf("nothing to check: no trace events\n");
    else if (dbool(r, "exact"))
      printf("exact match: %lld allocations at their recorded addresses, %lld %s of "
             "their recorded sizes, final layout equal to the file's segments\n",
             (long long)dint(r, "allocs"), (long long)dint(r, "segment_allocs"),
             dbool(r, "expandable") ? "segment maps (cuMemMap)" : "cudaMallocs");
    else if (!disnull(r, "diverged_at"))
      printf("DIVERGES at event %lld: %s\n", (long long)dint(r, "diverged_at"),
             term_safe(dstr(r, "divergence"), why, sizeof why));
  } else {
    const char *from = dstr(r, "alloc_conf_source");
    if ((strcmp(from, "snapshot") == 0 || strcmp(from, "defaults") == 0) && !*dstr(r, "alloc_conf"))
      printf("what-if: the file's allocator settings (PyTorch's defaults)");
    else if (strcmp(from, "snapshot") == 0)
      printf("what-if: the file's allocator settings ('%s')", term_safe(dstr(r, "alloc_conf"), why, sizeof why));
    else
      printf("what-if: alloc conf '%s'", term_safe(dstr(r, "alloc_conf"), why, sizeof why));
    /* (PYTORCH_CUDA_ALLOC_CONF is the deprecated name only from 2.10, the
     * first release that reads PYTORCH_ALLOC_CONF: no more said here) */
    if (strncmp(from, "PYTORCH_", 8) == 0) /* (one variable, or 2.10's two) */
      printf(" (from %s)", from);
    if (disnull(r, "capacity_bytes")) printf(", unlimited device memory\n");
    else printf(", %.2f GiB usable on the device\n", dnum(r, "capacity_bytes") / 1073741824.0);
  }
  if (!disnull(r, "unchecked"))
    printf("events %lld to %lld cannot be checked: %s\n", (long long)dint(r, "unchecked.from_event"),
           (long long)dint(r, "unchecked.to_event") - 1, term_safe(dstr(r, "unchecked.why"), why, sizeof why));
  for (i = 0; i < gpuplan_value_count(w); i++)
    printf("warning: %s\n", term_safe(gpuplan_value_string(gpuplan_value_at(w, i), NULL), why, sizeof why));
  if (strcmp(dstr(r, "mode"), "exact") == 0 && !disnull(r, "diverged_at"))
    /* (the figures are the replay's, which stops where it diverges) */
    printf("figures below: events 0 to %lld, up to the divergence (the trace's own go on to event %lld)\n",
           (long long)dint(r, "events") - 1, (long long)dint(r, "trace_events") - 1);
  printf("peak allocated %10.1f MiB\npeak reserved  %10.1f MiB\nfragmentation  %10.3f  "
         "(1 - peak allocated / peak reserved)\n",
         mib(dnum(r, "peak_allocated_bytes")), mib(dnum(r, "peak_reserved_bytes")), dnum(r, "fragmentation"));
  printf("at peak reserved: %.1f MiB allocated, %.1f MiB cached free, largest free block %.1f MiB\n",
         mib(dnum(r, "allocated_at_peak_reserved_bytes")), mib(dnum(r, "total_free_at_peak_bytes")),
         mib(dnum(r, "largest_free_at_peak_bytes")));
  printf("cudaMalloc retries %lld, OOMs %lld\n", (long long)dint(r, "num_alloc_retries"),
         (long long)dint(r, "num_ooms"));
  if (!disnull(r, "oom_event"))
    printf("OUT OF MEMORY at event %lld:\n%s\n", (long long)dint(r, "oom_event"), dstr(r, "oom_message"));
  if (dv(r, "summary") && !disnull(r, "summary")) {
    printf("\nmemory_summary() at the end of the replay (%s):\n",
           dint(r, "trace_events") == 0 ? "the file has no trace: the figures are its final segments'"
           : dbool(r, "rebuilt_start")  ? "Tot Alloc and Tot Freed count from the rebuilt start, peaks are over the trace"
                                        : "the whole history is in the trace");
    fputs(dstr(r, "summary"), stdout);
  }
  print_memory_stats(r, "memory_stats() at the end of the replay:");
  if (dv(r, "timeline") && !disnull(r, "timeline"))
    printf("timeline: %zu points of allocated and reserved bytes, one after each trace event (in --json: "
           "timeline.allocated_bytes, timeline.reserved_bytes)\n",
           gpuplan_value_count(dv(r, "timeline.allocated_bytes")));
  if (dv(r, "html") && !disnull(r, "html")) printf("html page: %s\n", term_safe(dstr(r, "html"), file, sizeof file));
  return EXIT_OK;
}

int cmd_replay(cli *c, int argc, char **argv) {
  replay_args ra = {0};
  return cli_run(c, gpuplan_command_find("replay"), argc, argv,
                 "usage: gpuplan replay FILE.pickle [--alloc-conf S] [--gpu SKU | --capacity MIB] "
                 "[--torch V] [--device N] [--summary [--abbreviated]] [--memory-stats] [--timeline] [--html OUT] [--json]",
                 replay_about, render_replay, replay_extra, &ra);
}

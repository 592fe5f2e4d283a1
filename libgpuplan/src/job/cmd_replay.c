/*
 * cmd_replay.c: the replay command: a torch memory snapshot, from a file or
 * from memory (gpuplan_job_run_snapshot), replayed through the allocator
 * model exactly (the file's own settings, the recorded addresses) or "what
 * if" (other settings, a device of a given capacity), as one document;
 * with the html option, also as a page (replay/html.c).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "alloc/alloc_int.h"
#include "catalog/catalog_int.h"
#include "job/tools_int.h"
#include "replay/html_int.h"
#include "replay/replay_int.h"

/* What the job asks for, resolved. */
typedef struct replay_job {
  const char *file;
  int device;
  const char *alloc_conf;
  const char *conf_from;          /* "option", an environment variable, "snapshot" or "defaults" */
  const char *gpu;                /* the catalog id, when capacity came from a GPU */
  uint64_t capacity;              /* 0: unlimited */
  uint64_t device_total;          /* gpu: the card's total as the driver reports it; 0: capacity */
  const gpuplan__torch_release *torch;
  const char *html;               /* the page to write, or NULL */
  char conf_warn[512];            /* the environment's settings the release ignores */
} replay_job;

/* torch.cuda.memory_stats() (tools_int.h).  The dict torch/csrc/cuda/
 * Module.cpp (_cuda_memoryStats) builds, flattened and sorted by
 * torch/cuda/memory.py's memory_stats(): StatArrays as
 * NAME.{all,large_pool,small_pool}.{current,peak,allocated,freed} (c10's
 * StatType: 0 aggregate, 1 small, 2 large), Stats as NAME.{...}, counters
 * by name.  requested_bytes came in 2.0 (pytorch#88575); the three device
 * counters in 2.3 (pytorch#120050, merged 2024-02-27). */
/* Keys are static strings (the document does not copy them): one table,
 * each key with the int64_t it reads and the release it came in, written
 * in the order memory_stats() sorts its items (C's byte order: '.' before
 * '_'; test_torch_releases checks the document's order). */
typedef struct ms_key {
  const char *key;
  size_t off;
  unsigned since;
} ms_key;

#define MS_OFF(member) offsetof(gpuplan_alloc_stats, member)
#define MS_STAT(name, member, since)                                                     \
  {name ".allocated", MS_OFF(member.allocated), since}, {name ".current", MS_OFF(member.current), since}, \
  {name ".freed", MS_OFF(member.freed), since}, {name ".peak", MS_OFF(member.peak), since},
#define MS_ARRAY(name, since)                                                            \
  MS_STAT(#name ".all", name[GPUPLAN_POOL_ALL], since)                                   \
  MS_STAT(#name ".large_pool", name[GPUPLAN_POOL_LARGE], since)                          \
  MS_STAT(#name ".small_pool", name[GPUPLAN_POOL_SMALL], since)
static const ms_key ms_keys[] = {
  MS_ARRAY(active, 0) MS_ARRAY(active_bytes, 0) MS_ARRAY(allocated_bytes, 0) MS_ARRAY(allocation, 0)
  MS_ARRAY(inactive_split, 0) MS_ARRAY(inactive_split_bytes, 0)
  {"max_split_size", MS_OFF(max_split_size), 0},
  {"num_alloc_retries", MS_OFF(num_alloc_retries), 0},
  {"num_device_alloc", MS_OFF(num_device_alloc), 203},
  {"num_device_free", MS_OFF(num_device_free), 203},
  {"num_ooms", MS_OFF(num_ooms), 0},
  {"num_sync_all_streams", MS_OFF(num_sync_all_streams), 203},
  MS_STAT("oversize_allocations", oversize_allocations, 0) MS_STAT("oversize_segments", oversize_segments, 0)
  MS_ARRAY(requested_bytes, 200) MS_ARRAY(reserved_bytes, 0) MS_ARRAY(segment, 0)
};
#undef MS_ARRAY
#undef MS_STAT
#undef MS_OFF

void gpuplan__doc_memory_stats(gpuplan__docb *b, const gpuplan_alloc_stats *st, unsigned release) {
  size_t i;
  int64_t v;
  gpuplan__doc_obj(b, "memory_stats");
  for (i = 0; i < sizeof ms_keys / sizeof ms_keys[0]; i++) {
    if (release < ms_keys[i].since) continue;
    memcpy(&v, (const char *)st + ms_keys[i].off, sizeof v);
    gpuplan__doc_int(b, ms_keys[i].key, v);
  }
  gpuplan__doc_end(b);
}

/* The allocator settings of a replay or a simulation (tools_int.h). */
int gpuplan__alloc_conf_source(gpuplan_job *j, unsigned release, const char **conf, const char **from, char *warn,
                               size_t warn_cap) {
  static const char *const names[] = {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"};
  const char *opt = gpuplan__job_str(j, JOPT(J_ALLOC_CONF), NULL);
  const char *env = gpuplan__job_str(j, TOPT(T_ENV_ALLOC_CONF), NULL);
  const char *env_old = gpuplan__job_str(j, TOPT(T_ENV_CUDA_ALLOC_CONF), NULL);
  char rel[24];
  /* Set, even empty, is what 2.10 asks of PYTORCH_ALLOC_CONF before it
   * falls back to the other (c10::utils::get_env's optional); the text of
   * an empty variable, or one of spaces only (PyTorch's lexer drops
   * spaces), holds no setting. */
  int env_set = env != NULL, old_set = env_old != NULL;
  if (warn && warn_cap) warn[0] = '\0';
  if (env && !env[strspn(env, " ")]) env = NULL;
  if (env_old && !env_old[strspn(env_old, " ")]) env_old = NULL;
  gpuplan__torch_release_name(release, rel, sizeof rel);
  if (opt) {
    *conf = opt;
    *from = "option";
    return GPUPLAN_OK;
  }
  if (gpuplan__reads_pytorch_alloc_conf(release) && env_set && old_set) {
    /* 2.10+ with both set: the generic keys from PYTORCH_ALLOC_CONF, the
     * CUDA allocator's own (per_process_memory_fraction, backend...) from
     * PYTORCH_CUDA_ALLOC_CONF (conf.c; review 2026-12-02: the fraction of
     * PYTORCH_CUDA_ALLOC_CONF was dropped) */
    const char *g = env ? env : "", *c = env_old ? env_old : "";
    size_t cap = strlen(g) + strlen(c) + 2, n, cuda;
    char *both = gpuplan__arena_alloc(&j->arena, cap), unread[256];
    if (!both) return gpuplan__nomem(j->ctx);
    if (gpuplan__alloc_conf_split_210(j->ctx, release, g, c, both, cap, &n, &cuda, unread, sizeof unread)) {
      char msg[GPUPLAN_ERRMSG_MAX]; /* (said as an error of the variable alone is) */
      snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(j->ctx));
      return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "alloc_conf (from PYTORCH_CUDA_ALLOC_CONF): %s", msg);
    }
    if (unread[0] && warn)
      snprintf(warn, warn_cap,
               "torch %s reads the generic keys from PYTORCH_ALLOC_CONF and the CUDA allocator's own "
               "(per_process_memory_fraction, backend, pinned_*...) from PYTORCH_CUDA_ALLOC_CONF when both are "
               "set: '%.200s' was not read, as that release does not read it",
               rel, unread);
    *conf = n ? both : NULL;
    *from = !n ? "defaults" : !cuda ? names[0] : n == cuda ? names[1] : "PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF";
  } else if (gpuplan__reads_pytorch_alloc_conf(release)) {
    /* 2.10+: c10/core/AllocatorConfig.cpp reads PYTORCH_ALLOC_CONF first,
     * then the deprecated PYTORCH_CUDA_ALLOC_CONF */
    *conf = env ? env : env_old;
    *from = env ? names[0] : env_old ? names[1] : "defaults";
  } else {
    *conf = env_old;
    *from = env_old ? names[1] : "defaults";
    if (env && warn)
      snprintf(warn, warn_cap,
               "torch %s's CUDA allocator does not read PYTORCH_ALLOC_CONF (2.10 is the first that does; "
               "pytorch#183387): its settings '%.200s' are ignored, as that release ignored them%s",
               rel, env, env_old ? "; PYTORCH_CUDA_ALLOC_CONF applies" : "");
  }
  return GPUPLAN_OK;
}

static int resolve(gpuplan_job *j, replay_job *rj) {
  memset(rj, 0, sizeof *rj);
  rj->file = gpuplan__job_str(j, TOPT(T_FILE), NULL);
  rj->device = (int)gpuplan__job_int(j, TOPT(T_DEVICE), 0);
  rj->torch = gpuplan__torch_release_at(gpuplan__job_int(j, TOPT(T_TORCH), 0));
  GPUPLAN_TRY(gpuplan__alloc_conf_source(j, gpuplan__release_of(rj->torch->rules), &rj->alloc_conf, &rj->conf_from,
                                         rj->conf_warn, sizeof rj->conf_warn));
  rj->html = gpuplan__job_str(j, TOPT(T_HTML), NULL);
  if (rj->html && !*rj->html)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, TOPT(T_HTML), "give the path of the page to write");
  if (gpuplan__job_isset(j, TOPT(T_CAPACITY)) && gpuplan__job_isset(j, JOPT(J_GPU)))
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL,
                          "capacity, gpu: give the device's capacity or a GPU to take it from, not both");
  if (gpuplan__job_isset(j, TOPT(T_CAPACITY))) rj->capacity = (uint64_t)gpuplan__job_int(j, TOPT(T_CAPACITY), 0);
  if (gpuplan__job_isset(j, JOPT(J_GPU))) {
    const gpuplan_gpu *g;
    int rc = gpuplan_catalog_gpu(j->cat, gpuplan__job_str(j, JOPT(J_GPU), ""), &g);
    if (rc) {
      char msg[GPUPLAN_ERRMSG_MAX];
      snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(j->cat->ctx)); /* the catalog's context */
      return gpuplan__opt_error(j->ctx, rc, JOPT(J_GPU), "%s", msg);
    }
    rj->gpu = g->id;
    /* What PyTorch can get: the memory the driver reports, as simulate
     * takes it (gpuplan_gpu_usable_bytes: NVML's total where the catalog
     * has it, not the marketed size), less the CUDA context it never
     * sees (review A-1: replay took the marketed size, 1 GiB more on a T4
     * than simulate). */
    {
      uint64_t usable = gpuplan_gpu_usable_bytes(g, NULL);
      rj->capacity = usable > g->context_bytes ? usable - g->context_bytes : 1;
      rj->device_total = usable; /* an OOM's "total capacity", as simulate's mock reports it */
    }
  }
  return GPUPLAN_OK;
}

static void put_u64_or_null(gpuplan__docb *b, const char *key, size_t v) {
  if (v == SIZE_MAX) gpuplan__doc_null(b, key);
  else gpuplan__doc_uint(b, key, (uint64_t)v);
}

static void put_ints(gpuplan__docb *b, const char *key, const int64_t *v, size_t n) {
  size_t i;
  gpuplan__doc_arr(b, key);
  for (i = 0; i < n; i++) gpuplan__doc_int(b, NULL, v[i]);
  gpuplan__doc_end(b);
}

/* The page of the html option, from the replay just run. */
static int write_html(gpuplan_job *j, const replay_job *rj, const gpuplan_snapshot *s, const void *data, size_t len,
                      gpuplan__html *h, const gpuplan_replay_result *r, const gpuplan__replay_ext *x,
                      const char *conf, const char *conf_from) {
  gpuplan__html_page pg;
  gpuplan_alloc_conf parsed;
  int rc;
  memset(&pg, 0, sizeof pg);
  pg.path = rj->html;
  pg.file = rj->file;
  pg.data = data;
  pg.len = len;
  pg.device = rj->device;
  pg.mode = rj->alloc_conf || rj->capacity ? "what-if" : "exact";
  pg.torch = rj->torch->name;
  pg.rules = rj->torch->rules_name;
  pg.alloc_conf = conf;
  pg.alloc_conf_source = conf_from;
  pg.gpu = rj->gpu;
  pg.capacity = rj->capacity;
  pg.conf = gpuplan_snapshot_conf(s);
  if (rj->alloc_conf) {
    GPUPLAN_TRY(gpuplan_alloc_conf_parse(j->ctx, rj->alloc_conf, rj->torch->rules, &parsed)); /* parsed once already */
    pg.conf = &parsed;
  }
  rc = gpuplan__html_write(h, &pg, s, r, x);
  if (rc == GPUPLAN_EIO) {
    char msg[GPUPLAN_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(j->ctx));
    return gpuplan__opt_error(j->ctx, rc, TOPT(T_HTML), "%s", msg);
  }
  return rc;
}

static int replay_doc(gpuplan_job *j, const replay_job *rj, const gpuplan_snapshot *s, const void *data, size_t len,
                      gpuplan_doc **out) {
  const gpuplan__snapshot_facts *f = gpuplan__snapshot_facts_of(s);
  gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
  gpuplan_replay_result r;
  gpuplan__replay_ext x;
  gpuplan__docb *b;
  gpuplan__html *h = NULL;
  const char *conf, *conf_from;
  size_t i;
  int whatif, rc, timeline;
  o.alloc_conf = rj->alloc_conf;
  o.capacity = rj->capacity;
  o.device_total = rj->device_total;
  o.torch = rj->torch->rules;
  gpuplan__replay_ext_init(&x);
  timeline = (int)gpuplan__job_int(j, TOPT(T_TIMELINE), 0);
  x.timeline = timeline || rj->html; /* the page draws it */
  x.summary = (int)gpuplan__job_int(j, TOPT(T_SUMMARY), 0) || gpuplan__job_int(j, TOPT(T_ABBREVIATED), 0);
  x.abbreviated = (int)gpuplan__job_int(j, TOPT(T_ABBREVIATED), 0);
  x.want_stats = (int)gpuplan__job_int(j, TOPT(T_MEMORY_STATS), 0);
  x.layout = rj->torch->rules;
  if (rj->html) {
    /* The page's segment maps: the allocator's own layout at the peak and
     * the OOM; the model's trace entries name the events behind its blocks. */
    x.layout_at_peak = 1;
    GPUPLAN_TRY(gpuplan__html_new(j->ctx, &x, &h));
    o.trace = gpuplan__html_trace;
    o.trace_payload = h;
  }
  rc = gpuplan__snapshot_replay_ext(j->ctx, s, &o, &r, &x);
  if (rc) {
    gpuplan__html_free(h);
    gpuplan__replay_ext_dispose(j->ctx, &x);
    /* A bad alloc conf is the option's fault: say so. */
    if (rc == GPUPLAN_EINVAL && rj->alloc_conf) {
      char msg[GPUPLAN_ERRMSG_MAX];
      snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(j->ctx));
      if (strcmp(rj->conf_from, "option") != 0) /* the environment's: say so, not the flag */
        return gpuplan__error(j->ctx, rc, "alloc_conf (from %s): %s", rj->conf_from, msg);
      return gpuplan__opt_error(j->ctx, rc, JOPT(J_ALLOC_CONF), "%s", msg);
    }
    return rc;
  }
  whatif = rj->alloc_conf || rj->capacity;
  if (rj->alloc_conf) {
    conf = rj->alloc_conf;
    conf_from = rj->conf_from;
  } else {
    conf = f->recorded_conf;
    conf_from = f->has_settings ? "snapshot" : "defaults";
  }
  if (h) {
    rc = write_html(j, rj, s, data, len, h, &r, &x, conf, conf_from);
    gpuplan__html_free(h);
    if (rc) {
      gpuplan__replay_ext_dispose(j->ctx, &x);
      return rc;
    }
  }
  if (!(b = gpuplan__doc_begin(j->ctx, "replay"))) {
    gpuplan__replay_ext_dispose(j->ctx, &x);
    return gpuplan_errcode(j->ctx);
  }
  gpuplan__doc_str(b, "file", rj->file);
  gpuplan__doc_int(b, "device", rj->device);
  gpuplan__doc_int(b, "format", f->format);
  gpuplan__doc_str(b, "mode", whatif ? "what-if" : "exact");
  gpuplan__doc_str(b, "torch", rj->torch->name);
  gpuplan__doc_str(b, "rules", rj->torch->rules_name);
  gpuplan__doc_str(b, "alloc_conf", conf);
  gpuplan__doc_str(b, "alloc_conf_source", conf_from);
  gpuplan__doc_str(b, "gpu", rj->gpu);
  if (rj->capacity) gpuplan__doc_uint(b, "capacity_bytes", rj->capacity);
  else gpuplan__doc_null(b, "capacity_bytes");
  gpuplan__doc_uint(b, "events", r.events);
  gpuplan__doc_uint(b, "trace_events", gpuplan_snapshot_event_count(s));
  gpuplan__doc_uint(b, "segments_in_file", gpuplan_snapshot_segment_count(s));
  gpuplan__doc_bool(b, "expandable", f->expandable);
  gpuplan__doc_uint(b, "annotations", f->annotations);
  gpuplan__doc_uint(b, "private_pools", f->pools);
  if (f->has_host) gpuplan__doc_uint(b, "host_entries", f->host_entries);
  else gpuplan__doc_null(b, "host_entries");
  gpuplan__doc_bool(b, "rebuilt_start", r.rebuilt_start);
  gpuplan__doc_bool(b, "exact", r.exact);
  gpuplan__doc_uint(b, "allocs", r.allocs);
  gpuplan__doc_uint(b, "segment_allocs", r.segment_allocs);
  put_u64_or_null(b, "diverged_at", r.diverged_at);
  gpuplan__doc_str(b, "divergence", r.diverged_at == SIZE_MAX ? NULL : r.divergence);
  if (x.unchecked_from == SIZE_MAX) {
    gpuplan__doc_null(b, "unchecked");
  } else {
    gpuplan__doc_obj(b, "unchecked");
    gpuplan__doc_uint(b, "from_event", x.unchecked_from);
    gpuplan__doc_uint(b, "to_event", x.unchecked_to);
    gpuplan__doc_str(b, "why", x.unchecked_why);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_uint(b, "start_allocated_bytes", r.start_allocated);
  gpuplan__doc_uint(b, "start_reserved_bytes", r.start_reserved);
  gpuplan__doc_uint(b, "peak_allocated_bytes", r.peak_allocated);
  gpuplan__doc_uint(b, "peak_reserved_bytes", r.peak_reserved);
  gpuplan__doc_uint(b, "final_allocated_bytes", r.final_allocated);
  gpuplan__doc_uint(b, "final_reserved_bytes", r.final_reserved);
  gpuplan__doc_uint(b, "allocated_at_peak_reserved_bytes", r.allocated_at_peak_reserved);
  gpuplan__doc_uint(b, "largest_free_at_peak_bytes", r.largest_free_at_peak);
  gpuplan__doc_uint(b, "total_free_at_peak_bytes", r.total_free_at_peak);
  gpuplan__doc_real(b, "fragmentation", r.fragmentation);
  gpuplan__doc_int(b, "num_alloc_retries", r.num_alloc_retries);
  gpuplan__doc_int(b, "num_ooms", r.num_ooms);
  put_u64_or_null(b, "oom_event", r.oom_event);
  gpuplan__doc_str(b, "oom_message", r.oom_event == SIZE_MAX ? NULL : r.oom_message);
  gpuplan__doc_arr(b, "warnings");
  if (rj->conf_warn[0]) gpuplan__doc_str(b, NULL, rj->conf_warn);
  for (i = 0; i < x.nwarn; i++) gpuplan__doc_str(b, NULL, x.warn[i]);
  gpuplan__doc_end(b);
  if (x.summary) gpuplan__doc_str(b, "summary", x.summary_text);
  /* (as the summary: none where the replay stopped at a divergence) */
  if (x.want_stats && x.have_stats) gpuplan__doc_memory_stats(b, &x.stats, gpuplan__release_of(rj->torch->rules));
  else if (x.want_stats) gpuplan__doc_null(b, "memory_stats");
  if (rj->html) gpuplan__doc_str(b, "html", rj->html);
  if (timeline) {
    gpuplan__doc_obj(b, "timeline");
    put_ints(b, "allocated_bytes", x.tl_allocated, x.tl_n);
    put_ints(b, "reserved_bytes", x.tl_reserved, x.tl_n);
    gpuplan__doc_end(b);
  }
  gpuplan__replay_ext_dispose(j->ctx, &x);
  return gpuplan__doc_finish(b, out);
}

int gpuplan__cmd_replay(gpuplan_job *j, gpuplan_doc **out) {
  replay_job rj;
  gpuplan_snapshot *s = NULL;
  int rc;
  GPUPLAN_TRY(resolve(j, &rj));
  if (!rj.file)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, TOPT(T_FILE),
                              "replay needs a snapshot (a torch.cuda.memory._dump_snapshot() pickle)");
  GPUPLAN_TRY(gpuplan_snapshot_load(j->ctx, rj.file, rj.device, &s));
  rc = replay_doc(j, &rj, s, NULL, 0, out);
  gpuplan_snapshot_free(s);
  return rc;
}

int gpuplan_job_run_snapshot(gpuplan_job *j, const void *data, size_t len, gpuplan_doc **out) {
  replay_job rj;
  gpuplan_snapshot *s = NULL;
  size_t i;
  int rc;
  if (!out) return j ? gpuplan__error(j->ctx, GPUPLAN_EMISUSE, "job: NULL out") : GPUPLAN_EMISUSE;
  *out = NULL;
  if (!j) return GPUPLAN_EMISUSE;
  if (!data && len) return gpuplan__error(j->ctx, GPUPLAN_EMISUSE, "replay: NULL data");
  /* As gpuplan_job_run: an option replay does not take is an error. */
  for (i = 0; i < j->nopts; i++) {
    const gpuplan_option_info *o = gpuplan_job_option(i);
    if (j->val[i].set && !(o->commands & C_REPLAY))
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, o, "replay does not take this option");
  }
  if (gpuplan__job_isset(j, TOPT(T_FILE)))
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, TOPT(T_FILE),
                              "the snapshot is given as data: leave file unset");
  gpuplan__clear(j->ctx);
  GPUPLAN_TRY(resolve(j, &rj));
  GPUPLAN_TRY(gpuplan_snapshot_load_buffer(j->ctx, data, len, rj.device, &s));
  rc = replay_doc(j, &rj, s, data, len, out);
  gpuplan_snapshot_free(s);
  return rc;
}

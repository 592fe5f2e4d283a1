/*
 * export.c: recording allocator traces and writing them as the pickle that
 * torch.cuda.memory._dump_snapshot() writes (allocator-rules.md section 4),
 * so that PyTorch's memory_viz opens simulated runs.
 *
 * The writer emits protocol 2 with the plainest opcodes (no memo): dicts,
 * lists, tuples, str, int, float, bool and None, as MemoryViz.js's own
 * unpickler and gpuplan's reader both accept.
 *
 * Every trace entry and block carries frames (review AL-4): the frame the
 * caller set while it was recorded (gpuplan_recorder_set_frame: the layer
 * and op of a step program), else one naming gpuplan, so that the viewer
 * never shows "This block has no frames".  time_us is written only when
 * the caller gave times (gpuplan_recorder_set_time): a made-up clock would
 * be read as real.  A trace longer than the reader takes (its value limit,
 * pickle.h) is written as its last entries, as PyTorch's ring buffer
 * (_record_memory_history(max_entries=N)) keeps them (review L11).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "alloc/alloc_int.h"
#include "common/amap.h"
#include "replay/pickle.h"
#include "replay/replay_int.h"

/* A frame as the viewer shows it. */
typedef struct rframe {
  char *name, *filename;
  int line;
} rframe;

struct gpuplan_recorder {
  gpuplan_ctx *ctx;
  gpuplan_alloc_event *ev;
  uint32_t *frame;   /* per event: index into frames + 1, 0 for none */
  int64_t *time;     /* per event, when times were given */
  size_t n, cap;
  rframe *frames;
  size_t nframes, capframes;
  uint32_t *fh;      /* frames by (name, filename, line): index + 1, 0 empty */
  size_t fhcap;
  gpuplan__amap by_addr;     /* a block's address -> the frame of the last allocation there */
  gpuplan__amap seg_by_addr; /* a segment's address -> the frame of its segment_alloc */
  uint32_t cur_frame;
  int64_t cur_time;
  int timed;
  int failed;
};

int gpuplan_recorder_new(gpuplan_ctx *ctx, gpuplan_recorder **out) {
  gpuplan_recorder *r;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "recorder: out is NULL");
  r = gpuplan__calloc(ctx, 1, sizeof *r);
  if (!r) return gpuplan__nomem(ctx);
  r->ctx = ctx;
  gpuplan__ctx_ref(ctx);
  *out = r;
  return GPUPLAN_OK;
}

void gpuplan_recorder_free(gpuplan_recorder *r) {
  gpuplan_ctx *ctx;
  size_t i;
  if (!r) return;
  ctx = r->ctx;
  for (i = 0; i < r->nframes; i++) {
    gpuplan__free(ctx, r->frames[i].name);
    gpuplan__free(ctx, r->frames[i].filename);
  }
  gpuplan__free(ctx, r->frames);
  gpuplan__free(ctx, r->fh);
  gpuplan__amap_dispose(ctx, &r->by_addr);
  gpuplan__amap_dispose(ctx, &r->seg_by_addr);
  gpuplan__free(ctx, r->frame);
  gpuplan__free(ctx, r->time);
  gpuplan__free(ctx, r->ev);
  gpuplan__free(ctx, r);
  gpuplan__ctx_unref(ctx);
}

static uint64_t frame_hash(const char *name, const char *filename, int line) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)(uint32_t)line;
  const unsigned char *c;
  for (c = (const unsigned char *)name; *c; c++) h = (h ^ *c) * 1099511628211ull;
  h = (h ^ 0xff) * 1099511628211ull;
  for (c = (const unsigned char *)filename; *c; c++) h = (h ^ *c) * 1099511628211ull;
  return h;
}

/* Room for one more frame in the lookup table (kept at most half full). */
static int fh_room(gpuplan_recorder *r) {
  size_t cap, i;
  uint32_t *t;
  if (2 * (r->nframes + 1) <= r->fhcap) return GPUPLAN_OK;
  cap = r->fhcap ? 2 * r->fhcap : 128;
  if (!(t = gpuplan__calloc(r->ctx, cap, sizeof *t))) return gpuplan__nomem(r->ctx);
  for (i = 0; i < r->nframes; i++) {
    const rframe *f = &r->frames[i];
    size_t j = (size_t)frame_hash(f->name, f->filename, f->line) & (cap - 1);
    while (t[j]) j = (j + 1) & (cap - 1);
    t[j] = (uint32_t)i + 1;
  }
  gpuplan__free(r->ctx, r->fh);
  r->fh = t;
  r->fhcap = cap;
  return GPUPLAN_OK;
}

int gpuplan_recorder_set_frame(gpuplan_recorder *r, const char *name, const char *filename, int line) {
  size_t j;
  rframe *f;
  if (!r) return GPUPLAN_EMISUSE;
  if (!name) {
    r->cur_frame = 0;
    return GPUPLAN_OK;
  }
  if (!filename) filename = "";
  GPUPLAN_TRY(fh_room(r));
  /* a program repeats its steps: a frame met before is reused */
  for (j = (size_t)frame_hash(name, filename, line) & (r->fhcap - 1); r->fh[j]; j = (j + 1) & (r->fhcap - 1)) {
    const rframe *g = &r->frames[r->fh[j] - 1];
    if (g->line == line && strcmp(g->name, name) == 0 && strcmp(g->filename, filename) == 0) {
      r->cur_frame = r->fh[j];
      return GPUPLAN_OK;
    }
  }
  if (r->nframes == r->capframes) {
    size_t ncap = r->capframes ? r->capframes * 2 : 64;
    rframe *nf = gpuplan__realloc(r->ctx, r->frames, ncap * sizeof *nf);
    if (!nf) return gpuplan__nomem(r->ctx);
    r->frames = nf;
    r->capframes = ncap;
  }
  f = &r->frames[r->nframes];
  f->name = gpuplan__strdup(r->ctx, name);
  f->filename = gpuplan__strdup(r->ctx, filename);
  f->line = line;
  if (!f->name || !f->filename) {
    gpuplan__free(r->ctx, f->name);
    gpuplan__free(r->ctx, f->filename);
    return gpuplan__nomem(r->ctx);
  }
  r->cur_frame = (uint32_t)++r->nframes;
  r->fh[j] = r->cur_frame;
  return GPUPLAN_OK;
}

void gpuplan_recorder_set_time(gpuplan_recorder *r, int64_t time_us) {
  if (!r) return;
  r->cur_time = time_us;
  r->timed = 1;
}

void gpuplan_recorder_trace(void *payload, const gpuplan_alloc_event *ev) {
  gpuplan_recorder *r = payload;
  if (!r || r->failed) return;
  if (r->n == r->cap) {
    size_t ncap = r->cap ? r->cap * 2 : 1024;
    gpuplan_alloc_event *ne = gpuplan__realloc(r->ctx, r->ev, ncap * sizeof *ne);
    uint32_t *nf;
    int64_t *nt;
    if (!ne) {
      r->failed = 1;
      return;
    }
    r->ev = ne;
    nf = gpuplan__realloc(r->ctx, r->frame, ncap * sizeof *nf);
    if (!nf) {
      r->failed = 1;
      return;
    }
    r->frame = nf;
    nt = gpuplan__realloc(r->ctx, r->time, ncap * sizeof *nt);
    if (!nt) {
      r->failed = 1;
      return;
    }
    r->time = nt;
    r->cap = ncap;
  }
  r->frame[r->n] = r->cur_frame;
  if (ev->addr && ev->action == GPUPLAN_ACT_ALLOC) {
    if (gpuplan__amap_put(r->ctx, &r->by_addr, ev->addr, r->cur_frame)) {
      r->failed = 1;
      return;
    }
  } else if (ev->addr && ev->action == GPUPLAN_ACT_SEGMENT_ALLOC) {
    if (gpuplan__amap_put(r->ctx, &r->seg_by_addr, ev->addr, r->cur_frame)) {
      r->failed = 1;
      return;
    }
  } else if (ev->addr && (ev->action == GPUPLAN_ACT_FREE_REQUESTED || ev->action == GPUPLAN_ACT_FREE_COMPLETED)) {
    r->frame[r->n] = (uint32_t)gpuplan__amap_get(&r->by_addr, ev->addr); /* what it frees */
  }
  r->time[r->n] = r->cur_time;
  r->ev[r->n++] = *ev;
}

size_t gpuplan_recorder_count(const gpuplan_recorder *r) { return r ? r->n : 0; }

/* --- pickle writer ----------------------------------------------------------- */

typedef struct pw {
  gpuplan__buf b;
  int dry;        /* count only */
  size_t pushes;  /* values the reader will push (pickle.c counts the same) */
} pw;

static void put(pw *w, const void *p, size_t n) {
  if (!w->dry) gpuplan__buf_put(&w->b, p, n);
}

/* A byte that is an opcode's argument, not an opcode. */
static void byte(pw *w, int c) {
  char ch = (char)c;
  put(w, &ch, 1);
}

static void op(pw *w, int c) {
  char ch = (char)c;
  /* the opcodes that push a value; MARK, SETITEMS, APPENDS, STOP do not */
  if (c == '}' || c == ']' || c == 0x88 || c == 0x89 || c == 0x86 || c == 'N') w->pushes++;
  put(w, &ch, 1);
}

static void u32(pw *w, uint32_t v) {
  char b[4];
  b[0] = (char)(v & 0xff);
  b[1] = (char)((v >> 8) & 0xff);
  b[2] = (char)((v >> 16) & 0xff);
  b[3] = (char)((v >> 24) & 0xff);
  put(w, b, 4);
}

static void str(pw *w, const char *s) {
  size_t n = strlen(s);
  op(w, 'X'); /* BINUNICODE */
  w->pushes++;
  u32(w, (uint32_t)n);
  put(w, s, n);
}

static void integer(pw *w, int64_t v) {
  w->pushes++;
  if (v >= INT32_MIN && v <= INT32_MAX) {
    op(w, 'J'); /* BININT */
    u32(w, (uint32_t)(int32_t)v);
  } else {
    /* LONG1: little-endian two's complement, minimal length */
    char b[9];
    int n = 8, i;
    uint64_t u = (uint64_t)v;
    for (i = 0; i < 8; i++) b[i] = (char)((u >> (8 * i)) & 0xff);
    while (n > 1 && ((b[n - 1] == 0 && !(b[n - 2] & 0x80)) ||
                     ((unsigned char)b[n - 1] == 0xff && (b[n - 2] & 0x80))))
      n--;
    if (v >= 0 && (b[n - 1] & 0x80)) b[n++] = 0;
    op(w, 0x8a);
    byte(w, n);
    put(w, b, (size_t)n);
  }
}

static void real(pw *w, double d) {
  unsigned char b[8];
  uint64_t u;
  int i;
  memcpy(&u, &d, 8);
  for (i = 0; i < 8; i++) b[i] = (unsigned char)(u >> (56 - 8 * i)); /* big-endian */
  op(w, 'G'); /* BINFLOAT */
  w->pushes++;
  put(w, (const char *)b, 8);
}

#define KEY(w, k) str(w, k)
#define DICT_BEGIN(w) (op(w, '}'), op(w, '('))   /* EMPTY_DICT, MARK */
#define DICT_END(w) op(w, 'u')                   /* SETITEMS */
#define LIST_BEGIN(w) (op(w, ']'), op(w, '('))   /* EMPTY_LIST, MARK */
#define LIST_END(w) op(w, 'e')                   /* APPENDS */

static const char *const action_names[] = {"alloc", "free_requested", "free_completed",
                                           "segment_alloc", "segment_free", "segment_map",
                                           "segment_unmap", "oom", "snapshot"};

/* [{name, filename, line}] for frame index f (0: gpuplan's own). */
static void frames(pw *w, const gpuplan_recorder *rec, uint32_t f) {
  const rframe *fr = rec && f ? &rec->frames[f - 1] : NULL;
  LIST_BEGIN(w);
  DICT_BEGIN(w);
  KEY(w, "name"); str(w, fr ? fr->name : "gpuplan: allocator model (no frame set for this allocation)");
  KEY(w, "filename"); str(w, fr ? fr->filename : "gpuplan");
  KEY(w, "line"); integer(w, fr ? fr->line : 0);
  DICT_END(w);
  LIST_END(w);
}

static void event(pw *w, const gpuplan_recorder *rec, size_t i) {
  const gpuplan_alloc_event *e = &rec->ev[i];
  DICT_BEGIN(w);
  KEY(w, "action"); str(w, action_names[e->action]);
  if (e->action == GPUPLAN_ACT_OOM) {
    KEY(w, "device_free"); integer(w, (int64_t)e->device_free);
  } else {
    KEY(w, "addr"); integer(w, (int64_t)e->addr);
  }
  KEY(w, "size"); integer(w, (int64_t)e->size);
  KEY(w, "stream"); integer(w, (int64_t)e->stream);
  if (rec->timed) {
    KEY(w, "time_us"); integer(w, rec->time[i]);
  }
  KEY(w, "frames"); frames(w, rec, rec->frame[i]);
  DICT_END(w);
}

int gpuplan_snapshot_write(gpuplan_cachealloc *a, const gpuplan_recorder *rec, const char *path) {
  return gpuplan_snapshot_write_as(a, rec, path, GPUPLAN_TORCH_LATEST);
}

/* The frame of the allocation that made the block at addr. */
static uint32_t block_frame(const gpuplan_recorder *rec, uint64_t addr) {
  return rec ? (uint32_t)gpuplan__amap_get(&rec->by_addr, addr) : 0;
}

/* torch 1.13's block: size and state; an allocated one's history is its
 * allocation (Module.cpp of 1.13 wrote every recorded allocation made in
 * the block; the model keeps the live one). */
static void block_113(pw *w, const gpuplan_recorder *rec, const gpuplan_block_info *b) {
  DICT_BEGIN(w);
  KEY(w, "size"); integer(w, (int64_t)b->size);
  KEY(w, "state"); str(w, b->state ? "active_allocated" : "inactive");
  if (b->state) {
    KEY(w, "history");
    LIST_BEGIN(w);
    DICT_BEGIN(w);
    KEY(w, "addr"); integer(w, (int64_t)b->addr);
    KEY(w, "real_size"); integer(w, (int64_t)b->requested);
    KEY(w, "frames"); frames(w, rec, block_frame(rec, b->addr));
    DICT_END(w);
    LIST_END(w);
  }
  DICT_END(w);
}

int gpuplan_snapshot_write_as(gpuplan_cachealloc *a, const gpuplan_recorder *rec, const char *path,
                              gpuplan_torch_version torch) {
  return gpuplan__snapshot_write_conf(a, rec, path, torch, NULL);
}

int gpuplan__snapshot_write_conf(gpuplan_cachealloc *a, const gpuplan_recorder *rec, const char *path,
                                 gpuplan_torch_version torch, const char *conf_text) {
  gpuplan_ctx *ctx;
  pw w;
  size_t i, nseg, k, first = 0;
  int rc = GPUPLAN_OK;
  gpuplan_block_info *blocks = NULL;
  size_t bcap = 0;
  const gpuplan__pickle_limits lim = gpuplan__pickle_default_limits();
  unsigned release;
  int v113;
  if (!a) return GPUPLAN_EMISUSE;
  ctx = gpuplan__alloc_ctx(a);
  if (!path) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "snapshot write: path is NULL");
  if (!(release = gpuplan__release_of(torch)))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot write: torch: not a release (%d)", (int)torch);
  v113 = gpuplan__snapshot_v113(release); /* 1.13: the list of segments */
  if (rec && rec->failed) return gpuplan__error(ctx, GPUPLAN_ENOMEM, "out of memory (while recording the trace)");
  memset(&w, 0, sizeof w);
  /* The trace entries that fit the reader's value limit, from the end,
   * with room for the segments (counted exactly below) kept aside: a
   * first, dry pass over the entries. */
  if (rec && rec->n && !v113) {
    pw d;
    size_t budget = lim.max_items / 10 * 9, used = 0;
    memset(&d, 0, sizeof d);
    d.dry = 1;
    for (i = rec->n; i-- > 0;) {
      d.pushes = 0;
      event(&d, rec, i);
      if (used + d.pushes > budget) {
        first = i + 1;
        break;
      }
      used += d.pushes;
    }
  }
  gpuplan__buf_init(&w.b, ctx);
  op(&w, 0x80);
  byte(&w, 2); /* PROTO 2 */
  if (!v113) {
    DICT_BEGIN(&w);
    KEY(&w, "segments");
  }
  LIST_BEGIN(&w);
  nseg = gpuplan_cachealloc_segment_count(a);
  for (i = 0; i < nseg && rc == GPUPLAN_OK; i++) {
    gpuplan_segment_info si;
    if ((rc = gpuplan_cachealloc_segment(a, i, &si, NULL, 0))) break;
    if (si.nblocks > bcap) {
      gpuplan__free(ctx, blocks);
      bcap = si.nblocks * 2;
      blocks = gpuplan__malloc(ctx, bcap * sizeof *blocks);
      if (!blocks) {
        rc = gpuplan__nomem(ctx);
        break;
      }
    }
    if ((rc = gpuplan_cachealloc_segment(a, i, &si, blocks, bcap))) break;
    DICT_BEGIN(&w);
    KEY(&w, "device"); integer(&w, 0);
    KEY(&w, "address"); integer(&w, (int64_t)si.addr);
    KEY(&w, "total_size"); integer(&w, (int64_t)si.total_size);
    KEY(&w, "allocated_size"); integer(&w, (int64_t)si.allocated_size);
    KEY(&w, "active_size"); integer(&w, (int64_t)si.allocated_size);
    if (!v113) { /* (requested_size came in 2.0, pytorch#88575) */
      KEY(&w, "requested_size"); integer(&w, (int64_t)si.requested_size);
    }
    KEY(&w, "stream"); integer(&w, (int64_t)si.stream);
    KEY(&w, "segment_type"); str(&w, si.large ? "large" : "small");
    if (v113) {
      KEY(&w, "blocks");
      LIST_BEGIN(&w);
      for (k = 0; k < si.nblocks; k++) block_113(&w, rec, &blocks[k]);
      LIST_END(&w);
      DICT_END(&w);
      continue;
    }
    /* MempoolId_t: (0, 0) the default pools; a graph capture's pool is
     * (its id, 0), as CUDAGraph::capture_begin names it. */
    KEY(&w, "segment_pool_id"); integer(&w, (int64_t)si.pool_id); integer(&w, 0); op(&w, 0x86); /* TUPLE2 */
    KEY(&w, "is_expandable"); op(&w, si.expandable ? 0x88 : 0x89);
    KEY(&w, "frames"); frames(&w, rec, rec ? (uint32_t)gpuplan__amap_get(&rec->seg_by_addr, si.addr) : 0);
    KEY(&w, "blocks");
    LIST_BEGIN(&w);
    for (k = 0; k < si.nblocks; k++) {
      DICT_BEGIN(&w);
      KEY(&w, "address"); integer(&w, (int64_t)blocks[k].addr);
      KEY(&w, "size"); integer(&w, (int64_t)blocks[k].size);
      KEY(&w, "requested_size"); integer(&w, (int64_t)blocks[k].requested);
      KEY(&w, "state"); str(&w, blocks[k].state ? "active_allocated" : "inactive");
      KEY(&w, "frames");
      if (blocks[k].state) frames(&w, rec, block_frame(rec, blocks[k].addr));
      else op(&w, ']'); /* free: no allocation to name */
      DICT_END(&w);
    }
    LIST_END(&w);
    DICT_END(&w);
  }
  LIST_END(&w);
  if (v113) goto stop;

  KEY(&w, "device_traces");
  LIST_BEGIN(&w);
  LIST_BEGIN(&w);
  for (i = first; rec && i < rec->n; i++) event(&w, rec, i);
  LIST_END(&w);
  LIST_END(&w);

  KEY(&w, "allocator_settings");
  DICT_BEGIN(&w);
  {
    const gpuplan_alloc_conf *c = gpuplan_cachealloc_conf(a);
    /* What PyTorch records: the settings' text as the run was given it;
     * without it, the one setting the structured keys below cannot say
     * whole is named. */
    KEY(&w, "PYTORCH_CUDA_ALLOC_CONF");
    str(&w, conf_text ? conf_text : c->expandable_segments ? "expandable_segments:True" : "");
    KEY(&w, "max_split_size"); integer(&w, c->max_split_size == UINT64_MAX ? -1 : (int64_t)c->max_split_size);
    KEY(&w, "garbage_collection_threshold"); real(&w, c->garbage_collection_threshold);
    KEY(&w, "expandable_segments"); op(&w, c->expandable_segments ? 0x88 : 0x89);
    KEY(&w, "roundup_power2_divisions");
    DICT_BEGIN(&w);
    for (k = 0; k < 16; k++) {
      char key[16];
      snprintf(key, sizeof key, "%u", 1u << k);
      KEY(&w, key);
      integer(&w, c->roundup_divisions[k]);
    }
    DICT_END(&w);
  }
  DICT_END(&w);
  DICT_END(&w);
stop:
  op(&w, '.'); /* STOP */
  if (rc == GPUPLAN_OK && w.pushes > lim.max_items)
    rc = gpuplan__error(ctx, GPUPLAN_EUNSUPPORTED,
                        "snapshot %s: the allocator's %zu segments alone exceed what a snapshot reader takes", path,
                        nseg);
  if (rc == GPUPLAN_OK && w.b.failed) rc = gpuplan__nomem(ctx);
  if (rc == GPUPLAN_OK) rc = gpuplan__write_file(ctx, path, w.b.ptr, w.b.len, "snapshot");
  gpuplan__buf_dispose(&w.b);
  gpuplan__free(ctx, blocks);
  if (rc == GPUPLAN_OK) gpuplan__clear(ctx);
  return rc;
}

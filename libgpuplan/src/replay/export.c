/*
 * export.c: recording allocator traces and writing them as the pickle that
 * torch.cuda.memory._dump_snapshot() writes (allocator-rules.md section 4),
 * so that PyTorch's memory_viz opens simulated runs.
 *
 * The writer emits protocol 2 with the plainest opcodes (no memo): dicts,
 * lists, tuples, str, int, float, bool and None, as MemoryViz.js's own
 * unpickler and gpuplan's reader both accept.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "alloc/alloc_int.h"

struct gpuplan_recorder {
  gpuplan_ctx *ctx;
  gpuplan_alloc_event *ev;
  size_t n, cap;
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
  if (!r) return;
  ctx = r->ctx;
  gpuplan__free(ctx, r->ev);
  gpuplan__free(ctx, r);
  gpuplan__ctx_unref(ctx);
}

void gpuplan_recorder_trace(void *payload, const gpuplan_alloc_event *ev) {
  gpuplan_recorder *r = payload;
  if (!r || r->failed) return;
  if (r->n == r->cap) {
    size_t ncap = r->cap ? r->cap * 2 : 1024;
    gpuplan_alloc_event *ne = gpuplan__realloc(r->ctx, r->ev, ncap * sizeof *ne);
    if (!ne) {
      r->failed = 1;
      return;
    }
    r->ev = ne;
    r->cap = ncap;
  }
  r->ev[r->n++] = *ev;
}

size_t gpuplan_recorder_count(const gpuplan_recorder *r) { return r ? r->n : 0; }

/* --- pickle writer ----------------------------------------------------------- */

typedef struct pw {
  gpuplan__buf b;
} pw;

static void op(pw *w, int c) {
  char ch = (char)c;
  gpuplan__buf_put(&w->b, &ch, 1);
}

static void u32(pw *w, uint32_t v) {
  char b[4];
  b[0] = (char)(v & 0xff);
  b[1] = (char)((v >> 8) & 0xff);
  b[2] = (char)((v >> 16) & 0xff);
  b[3] = (char)((v >> 24) & 0xff);
  gpuplan__buf_put(&w->b, b, 4);
}

static void str(pw *w, const char *s) {
  size_t n = strlen(s);
  op(w, 'X'); /* BINUNICODE */
  u32(w, (uint32_t)n);
  gpuplan__buf_put(&w->b, s, n);
}

static void integer(pw *w, int64_t v) {
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
    op(w, n);
    gpuplan__buf_put(&w->b, b, (size_t)n);
  }
}

static void real(pw *w, double d) {
  unsigned char b[8];
  uint64_t u;
  int i;
  memcpy(&u, &d, 8);
  for (i = 0; i < 8; i++) b[i] = (unsigned char)(u >> (56 - 8 * i)); /* big-endian */
  op(w, 'G'); /* BINFLOAT */
  gpuplan__buf_put(&w->b, (const char *)b, 8);
}

#define KEY(w, k) str(w, k)
#define DICT_BEGIN(w) (op(w, '}'), op(w, '('))   /* EMPTY_DICT, MARK */
#define DICT_END(w) op(w, 'u')                   /* SETITEMS */
#define LIST_BEGIN(w) (op(w, ']'), op(w, '('))   /* EMPTY_LIST, MARK */
#define LIST_END(w) op(w, 'e')                   /* APPENDS */

static const char *const action_names[] = {"alloc", "free_requested", "free_completed",
                                           "segment_alloc", "segment_free", "segment_map",
                                           "segment_unmap", "oom", "snapshot"};

int gpuplan_snapshot_write(gpuplan_cachealloc *a, const gpuplan_recorder *rec, const char *path) {
  gpuplan_ctx *ctx;
  pw w;
  size_t i, nseg, k;
  FILE *f;
  int rc = GPUPLAN_OK;
  gpuplan_block_info *blocks = NULL;
  size_t bcap = 0;
  if (!a) return GPUPLAN_EMISUSE;
  ctx = a->ctx;
  if (!path) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "snapshot write: path is NULL");
  if (rec && rec->failed) return gpuplan__error(ctx, GPUPLAN_ENOMEM, "out of memory (while recording the trace)");
  gpuplan__buf_init(&w.b, ctx);
  op(&w, 0x80);
  op(&w, 2); /* PROTO 2 */
  DICT_BEGIN(&w);

  KEY(&w, "segments");
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
    KEY(&w, "requested_size"); integer(&w, (int64_t)si.requested_size);
    KEY(&w, "stream"); integer(&w, (int64_t)si.stream);
    KEY(&w, "segment_type"); str(&w, si.large ? "large" : "small");
    KEY(&w, "segment_pool_id"); integer(&w, 0); integer(&w, 0); op(&w, 0x86); /* TUPLE2 */
    KEY(&w, "is_expandable"); op(&w, si.expandable ? 0x88 : 0x89);
    KEY(&w, "frames"); op(&w, ']');
    KEY(&w, "blocks");
    LIST_BEGIN(&w);
    for (k = 0; k < si.nblocks; k++) {
      DICT_BEGIN(&w);
      KEY(&w, "address"); integer(&w, (int64_t)blocks[k].addr);
      KEY(&w, "size"); integer(&w, (int64_t)blocks[k].size);
      KEY(&w, "requested_size"); integer(&w, (int64_t)blocks[k].requested);
      KEY(&w, "state"); str(&w, blocks[k].state ? "active_allocated" : "inactive");
      KEY(&w, "frames"); op(&w, ']');
      DICT_END(&w);
    }
    LIST_END(&w);
    DICT_END(&w);
  }
  LIST_END(&w);

  KEY(&w, "device_traces");
  LIST_BEGIN(&w);
  LIST_BEGIN(&w);
  for (i = 0; rec && i < rec->n; i++) {
    const gpuplan_alloc_event *e = &rec->ev[i];
    DICT_BEGIN(&w);
    KEY(&w, "action"); str(&w, action_names[e->action]);
    if (e->action == GPUPLAN_ACT_OOM) {
      KEY(&w, "device_free"); integer(&w, (int64_t)e->device_free);
    } else {
      KEY(&w, "addr"); integer(&w, (int64_t)e->addr);
    }
    KEY(&w, "size"); integer(&w, (int64_t)e->size);
    KEY(&w, "stream"); integer(&w, (int64_t)e->stream);
    KEY(&w, "time_us"); integer(&w, (int64_t)(1700000000000000ll + (int64_t)i));
    KEY(&w, "frames"); op(&w, ']');
    DICT_END(&w);
  }
  LIST_END(&w);
  LIST_END(&w);

  KEY(&w, "allocator_settings");
  DICT_BEGIN(&w);
  {
    const gpuplan_alloc_conf *c = gpuplan_cachealloc_conf(a);
    char conf[160];
    snprintf(conf, sizeof conf, "%s", c->expandable_segments ? "expandable_segments:True" : "");
    KEY(&w, "PYTORCH_CUDA_ALLOC_CONF"); str(&w, conf);
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
  op(&w, '.'); /* STOP */
  gpuplan__free(ctx, blocks);
  if (rc == GPUPLAN_OK && w.b.failed) rc = gpuplan__nomem(ctx);
  if (rc == GPUPLAN_OK) {
    f = fopen(path, "wb");
    if (!f || fwrite(w.b.ptr, 1, w.b.len, f) != w.b.len) {
      int e = errno;
      rc = gpuplan__error(ctx, GPUPLAN_EIO, "snapshot %s: cannot write: %s", path, strerror(e));
      gpuplan__error_detail(ctx, e);
    }
    if (f && fclose(f) != 0 && rc == GPUPLAN_OK)
      rc = gpuplan__error(ctx, GPUPLAN_EIO, "snapshot %s: cannot write", path);
  }
  gpuplan__buf_dispose(&w.b);
  if (rc == GPUPLAN_OK) gpuplan__clear(ctx);
  return rc;
}

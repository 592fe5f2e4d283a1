/*
 * fuzz_pickle.c: libFuzzer target for the plain-data pickle reader.
 *
 * Each input is loaded once with the default limits and the result walked;
 * a load that succeeds is then repeated with one allocation failing (chosen
 * from the input), which must give GPUPLAN_OK or GPUPLAN_ENOMEM and leak
 * nothing.  The same input is also loaded skipping the keys a replay never
 * reads (gpuplan__pickle_load_skip, "frames" and "time_us"): it must fail
 * the same way (but for a cycle or over-deep nesting through a skipped
 * value, which it may accept) or give the same tree with those pairs left
 * out.  And it is loaded through a reader's window (gpuplan__pickle_load_reader,
 * a file's way), from a byte a read and a window of one to the loader's
 * own: the same as the skipping load of the whole input.  And it is loaded
 * decoding the lists a replay reads as records (gpuplan__pickle_load_decode,
 * whole or through a window): the same error as the skipping load (but
 * for a cycle or over-deep nesting through a field a record drops, which
 * it may accept), or its tree with each decoded list's dicts as records
 * of the fields named.  Any
 * other outcome aborts, so libFuzzer records the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/pickle.h"
#include "replay/snapshot_fields.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct counter {
  long long blocks, calls, fail_at;
} counter;

static void *counting(void *ud, void *ptr, size_t osize, size_t nsize) {
  counter *c = ud;
  void *p;
  (void)osize;
  if (nsize == 0) {
    if (ptr) c->blocks--;
    free(ptr);
    return NULL;
  }
  if (c->calls++ == c->fail_at) return NULL;
  p = realloc(ptr, nsize);
  if (p && !ptr) c->blocks++;
  return p;
}

/* Visit the result as a consumer would.  A DAG can be exponentially larger
 * as a tree, so the walk stops after a budget of visits. */
static void walk(const gpuplan__pv *v, size_t depth, size_t *budget, uint64_t *sum) {
  size_t i;
  int64_t iv;
  if (*budget == 0) return;
  (*budget)--;
  if (depth > 200) abort(); /* the default max_depth */
  switch (v->type) {
  case GPUPLAN__PV_NONE: break;
  case GPUPLAN__PV_BOOL:
  case GPUPLAN__PV_INT:
    if (gpuplan__pv_int(v, &iv) != 0) abort();
    *sum += (uint64_t)iv;
    break;
  case GPUPLAN__PV_FLOAT: *sum += (uint64_t)(v->u.f == v->u.f); break;
  case GPUPLAN__PV_STR:
  case GPUPLAN__PV_BYTES:
    if (v->u.str.s[v->u.str.len] != '\0') abort();
    if (v->u.str.len) *sum += (unsigned char)v->u.str.s[v->u.str.len - 1];
    if ((gpuplan__pv_str(v) != NULL) != (v->type == GPUPLAN__PV_STR)) abort();
    break;
  case GPUPLAN__PV_LIST:
  case GPUPLAN__PV_TUPLE:
    if (v->u.seq.n > v->u.seq.cap) abort();
    for (i = 0; i < v->u.seq.n; i++) walk(v->u.seq.items[i], depth + 1, budget, sum);
    break;
  case GPUPLAN__PV_DICT:
    if (v->u.dict.n > v->u.dict.cap) abort();
    for (i = 0; i < v->u.dict.n; i++) {
      const gpuplan__pv *k = v->u.dict.keys[i];
      walk(k, depth + 1, budget, sum);
      walk(v->u.dict.vals[i], depth + 1, budget, sum);
      if (k->type == GPUPLAN__PV_STR && strlen(k->u.str.s) == k->u.str.len &&
          gpuplan__pv_get(v, k->u.str.s) == NULL)
        abort();
    }
    (void)gpuplan__pv_get(v, "segments");
    break;
  default: abort();
  }
}

static int load(const uint8_t *data, size_t size, long long fail_at, long long *calls) {
  counter c = {0, 0, -1};
  gpuplan_ctx_options o = GPUPLAN_CTX_OPTIONS_INIT;
  gpuplan_ctx *ctx = NULL;
  gpuplan__pickle p;
  const gpuplan__pv *root = NULL;
  int rc;
  o.allocator.fn = counting;
  o.allocator.ud = &c;
  if (gpuplan_ctx_new(&ctx, &o) != GPUPLAN_OK) abort();
  c.fail_at = fail_at < 0 ? -1 : c.calls + fail_at;
  rc = gpuplan__pickle_load(ctx, data, size, &p, &root);
  c.fail_at = -1;
  if (calls) *calls = c.calls;
  if (rc == GPUPLAN_OK) {
    size_t budget = 1u << 20;
    uint64_t sum = 0;
    if (!root) abort();
    walk(root, 0, &budget, &sum);
    if (sum == 0x5eed) fputc(' ', stderr); /* keep the walk from being optimised out */
  } else {
    if (root) abort();
    if (rc == GPUPLAN_EINVAL) {
      if (strncmp(gpuplan_errmsg(ctx), "pickle: ", 8) != 0) abort();
    } else if (rc != GPUPLAN_ENOMEM) {
      abort();
    }
  }
  gpuplan__pickle_free(&p);
  gpuplan_ctx_free(ctx);
  if (c.blocks != 0) abort();
  return rc;
}

static const char *const skip_keys[] = {"frames", "time_us", NULL};

static int skipped_key(const gpuplan__pv *k) {
  size_t i;
  if (k->type != GPUPLAN__PV_STR) return 0;
  for (i = 0; skip_keys[i]; i++)
    if (k->u.str.len == strlen(skip_keys[i]) && memcmp(k->u.str.s, skip_keys[i], k->u.str.len) == 0) return 1;
  return 0;
}

/* a (plain) and b (skipping) are the same tree but for a's skipped pairs.
 * A shared (memo) value is compared where it is met; the budget bounds a
 * DAG's expansion (0 left: stop comparing, as far as it went it agreed). */
static void same(const gpuplan__pv *a, const gpuplan__pv *b, size_t *budget) {
  size_t i, j;
  if (*budget == 0) return;
  (*budget)--;
  if (a->type != b->type) abort();
  switch (a->type) {
  case GPUPLAN__PV_NONE: break;
  case GPUPLAN__PV_BOOL: if (a->u.b != b->u.b) abort(); break;
  case GPUPLAN__PV_INT: if (a->u.i != b->u.i) abort(); break;
  case GPUPLAN__PV_FLOAT: if (memcmp(&a->u.f, &b->u.f, sizeof a->u.f) != 0) abort(); break;
  case GPUPLAN__PV_STR:
  case GPUPLAN__PV_BYTES:
    if (a->u.str.len != b->u.str.len || memcmp(a->u.str.s, b->u.str.s, a->u.str.len) != 0) abort();
    break;
  case GPUPLAN__PV_LIST:
  case GPUPLAN__PV_TUPLE:
    if (a->u.seq.n != b->u.seq.n) abort();
    for (i = 0; i < a->u.seq.n; i++) same(a->u.seq.items[i], b->u.seq.items[i], budget);
    break;
  case GPUPLAN__PV_DICT:
    for (i = j = 0; i < a->u.dict.n; i++) {
      if (skipped_key(a->u.dict.keys[i])) continue;
      if (j >= b->u.dict.n) abort();
      same(a->u.dict.keys[i], b->u.dict.keys[j], budget);
      same(a->u.dict.vals[i], b->u.dict.vals[j], budget);
      j++;
    }
    if (j != b->u.dict.n) abort();
    break;
  default: abort();
  }
}


/* A list of dicts (a, skipping load) and its decoded records (b): each
 * record holds the dict's fields of schema sc as the dict holds them. */
static void same_records(const gpuplan__pv *a, const gpuplan__pv *b, const gpuplan__pickle_schema *sc, int lists,
                         size_t *budget) {
  size_t i, k;
  if (a->type != GPUPLAN__PV_LIST) abort();
  if (lists == 2) {
    if (b->type != GPUPLAN__PV_LIST || b->u.seq.n != a->u.seq.n) abort();
    for (i = 0; i < a->u.seq.n; i++) same_records(a->u.seq.items[i], b->u.seq.items[i], sc, 1, budget);
    return;
  }
  if (b->type != GPUPLAN__PV_RECORDS || b->u.rec.n != a->u.seq.n) abort();
  for (i = 0; i < a->u.seq.n; i++) {
    const gpuplan__pv *d = a->u.seq.items[i];
    const gpuplan__pfield *r = gpuplan__pv_record(b, i);
    if (d->type != GPUPLAN__PV_DICT) abort();
    for (k = 0; sc->names[k]; k++) {
      const gpuplan__pv *v = gpuplan__pv_get(d, sc->names[k]);
      int64_t iv;
      if (!v) {
        if (r[k].v) abort();
      } else if (sc->kinds[k] == GPUPLAN__PF_RECORDS) {
        if (!r[k].v) abort();
        same_records(v, r[k].v, sc->sub[k], 1, budget);
      } else if (r[k].v == &gpuplan__pf_int) {
        if (sc->kinds[k] != GPUPLAN__PF_INT || gpuplan__pv_int(v, &iv) != 0 || iv != r[k].i) abort();
      } else {
        if (!r[k].v) abort();
        same(v, r[k].v, budget);
      }
    }
  }
}

/* The skipping load's tree (a) and the decoding load's (b): the same, but
 * for the decoded values of the top-level dict's keys to decode. */
static void same_decoded(const gpuplan__pv *a, const gpuplan__pv *b, size_t *budget) {
  size_t i;
  if (a->type != GPUPLAN__PV_DICT || b->type != GPUPLAN__PV_DICT) {
    same(a, b, budget);
    return;
  }
  if (a->u.dict.n != b->u.dict.n) abort();
  for (i = 0; i < a->u.dict.n; i++) {
    const gpuplan__pickle_decode *d = snapshot_decode_of(a->u.dict.keys[i]);
    const gpuplan__pv *bv = b->u.dict.vals[i];
    same(a->u.dict.keys[i], b->u.dict.keys[i], budget);
    if (d && (bv->type == GPUPLAN__PV_RECORDS ||
              (bv->type == GPUPLAN__PV_LIST && bv->u.seq.n && bv->u.seq.items[0]->type == GPUPLAN__PV_RECORDS) ||
              (bv->type == GPUPLAN__PV_LIST && d->lists == 2 && a->u.dict.vals[i]->type == GPUPLAN__PV_LIST &&
               a->u.dict.vals[i]->u.seq.n == 0)))
      same_records(a->u.dict.vals[i], bv, d->schema, d->lists, budget);
    else
      same(a->u.dict.vals[i], bv, budget);
  }
}

/* The input served as a file would be, at most max bytes a read. */
typedef struct mem_in {
  const uint8_t *data;
  size_t len, max;
} mem_in;

static int mem_read(void *ud, gpuplan_ctx *ctx, uint64_t off, void *dst, size_t n, size_t *got) {
  const mem_in *m = ud;
  (void)ctx;
  if (off > m->len) abort();
  if (n > m->max) n = m->max;
  if (n > m->len - off) n = m->len - (size_t)off;
  memcpy(dst, m->data + off, n);
  *got = n;
  return GPUPLAN_OK;
}

static int shape_error(const char *m) {
  return strstr(m, "recursive") || strstr(m, "contains itself") || strstr(m, "cycle") || strstr(m, "deep") ||
         strstr(m, "depth") || strstr(m, "nest");
}

/* The plain and the skipping load of the same input agree, and so does the
 * skipping load through a reader's window (sized from the input's hash,
 * from a byte to the loader's own). */
static void differential(const uint8_t *data, size_t size, uint32_t h) {
  gpuplan_ctx *ctx = NULL;
  gpuplan__pickle pa, pb, pw;
  gpuplan__pickle_reader rd;
  mem_in in = {data, size, 1 + h % 7};
  const gpuplan__pv *ra = NULL, *rb = NULL, *rw = NULL;
  char m[GPUPLAN_ERRMSG_MAX], mb[GPUPLAN_ERRMSG_MAX];
  int a, b, w;
  if (gpuplan_ctx_new(&ctx, NULL) != GPUPLAN_OK) abort();
  a = gpuplan__pickle_load(ctx, data, size, &pa, &ra);
  snprintf(m, sizeof m, "%s", a ? gpuplan_errmsg(ctx) : "");
  b = gpuplan__pickle_load_skip(ctx, data, size, NULL, skip_keys, &pb, &rb);
  snprintf(mb, sizeof mb, "%s", b ? gpuplan_errmsg(ctx) : "");
  memset(&rd, 0, sizeof rd);
  rd.read = mem_read;
  rd.ud = &in;
  rd.size = size;
  if (h & 8) { /* else the loader's own window */
    rd.window = 1 + (h >> 4) % 61;
    rd.ahead = 1 + (h >> 10) % 17;
    rd.chunk = in.max;
  }
  w = gpuplan__pickle_load_reader(ctx, &rd, NULL, skip_keys, &pw, &rw);
  if (!((b == GPUPLAN_OK || (b == GPUPLAN_EINVAL && shape_error(mb))) && w == GPUPLAN_EINVAL &&
        shape_error(gpuplan_errmsg(ctx)))) {
    if (w != b || (w && strcmp(mb, gpuplan_errmsg(ctx)) != 0)) abort();
    if (w == GPUPLAN_OK) {
      size_t budget = 1u << 20;
      same(rb, rw, &budget);
      if (pw.values != pb.values) abort();
    }
  }
  gpuplan__pickle_free(&pw);
  {
    /* decoding, whole or (h & 16) through the window */
    gpuplan__pickle pd;
    const gpuplan__pv *rdd = NULL;
    int d;
    in.max = 1 + h % 7;
    d = gpuplan__pickle_load_decode(ctx, data, size, (h & 16) ? &rd : NULL, NULL, skip_keys, snapshot_decoded, &pd, &rdd);
    /* A decoded record keeps only the fields named, and what it drops is
     * not built, so not shape-checked (pickle.h): where the skipping load
     * refused a cycle or a depth, the decoding load may accept (a record
     * with a key of its own whose value holds the record itself). */
    if (!((b == GPUPLAN_OK || (b == GPUPLAN_EINVAL && shape_error(mb))) && d == GPUPLAN_EINVAL &&
          shape_error(gpuplan_errmsg(ctx))) &&
        !(b == GPUPLAN_EINVAL && shape_error(mb) && d == GPUPLAN_OK)) {
      if (d != b || (d && strcmp(mb, gpuplan_errmsg(ctx)) != 0)) abort();
      if (d == GPUPLAN_OK) {
        size_t budget = 1u << 20;
        same_decoded(rb, rdd, &budget);
        if (pd.values != pb.values) abort();
      }
    }
    gpuplan__pickle_free(&pd);
  }
  if (a == GPUPLAN_OK) {
    size_t budget = 1u << 20;
    if (b != GPUPLAN_OK) abort();
    same(ra, rb, &budget);
    if (pa.values != pb.values) abort(); /* the same count, skipped values included */
  } else if (b == GPUPLAN_OK) {
    /* accepted only where the plain load refused the shape (a cycle, too deep) */
    if (a != GPUPLAN_EINVAL || !shape_error(m)) abort();
  } else if (a != b) {
    abort();
  }
  gpuplan__pickle_free(&pa);
  gpuplan__pickle_free(&pb);
  gpuplan_ctx_free(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  long long calls = 0;
  uint32_t h = 2166136261u;
  size_t i;
  int rc = load(data, size, -1, &calls);
  for (i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
  differential(data, size, h);
  if (rc != GPUPLAN_OK || calls <= 1) return 0;
  rc = load(data, size, (long long)(h % (uint32_t)(calls - 1)), NULL);
  if (rc != GPUPLAN_OK && rc != GPUPLAN_ENOMEM) abort();
  return 0;
}

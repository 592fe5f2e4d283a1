/*
 * doc.c: result documents: building, reading, JSON and CSV.
 *
 * Values live in one arena per document.  While an object or array is open
 * its children form a linked list; closing it turns the list into an array
 * of pointers, so reading by index is O(1) and by key a short linear scan.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc/doc_int.h"

struct gpuplan_value {
  unsigned char type;
  unsigned count;                /* containers */
  const char *key;               /* member of an object: its key */
  struct gpuplan_value *next;    /* build-time sibling list */
  union {
    int64_t i;
    double r;
    struct { const char *s; size_t len; } s;
    struct {
      struct gpuplan_value *first, *last; /* build time */
      const struct gpuplan_value **items; /* after closing */
    } c;
  } u;
};

struct gpuplan_doc {
  gpuplan_ctx *ctx;
  gpuplan__arena arena;
  const gpuplan__kind_desc *kind;
  gpuplan_value *root;
  char schema[48];
  char *json[2];
  size_t json_len[2];
  char *csv;
  size_t csv_len;
};

#define DOC_DEPTH 32

struct gpuplan__docb {
  gpuplan_doc *doc;
  int failed;          /* an error code, 0 when fine */
  int depth;
  gpuplan_value *stack[DOC_DEPTH];
};

/* --- building ------------------------------------------------------------ */

static gpuplan_value *node(gpuplan__docb *b, const char *key, int type) {
  gpuplan_value *v, *parent;
  if (b->failed) return NULL;
  if (b->depth < 1) {
    b->failed = gpuplan__error(b->doc->ctx, GPUPLAN_ERROR, "document: value after the root closed");
    return NULL;
  }
  parent = b->stack[b->depth - 1];
  if ((parent->type == GPUPLAN_VALUE_OBJECT) != (key != NULL)) {
    b->failed = gpuplan__error(b->doc->ctx, GPUPLAN_ERROR, "document: %s %s",
                               key ? "key inside an array:" : "member without a key in an object",
                               key ? key : "");
    return NULL;
  }
  v = gpuplan__arena_alloc(&b->doc->arena, sizeof *v);
  if (!v) {
    b->failed = gpuplan__nomem(b->doc->ctx);
    return NULL;
  }
  memset(v, 0, sizeof *v);
  v->type = (unsigned char)type;
  v->key = key;
  if (parent->u.c.last) parent->u.c.last->next = v;
  else parent->u.c.first = v;
  parent->u.c.last = v;
  parent->count++;
  return v;
}

gpuplan__docb *gpuplan__doc_begin(gpuplan_ctx *ctx, const char *kind) {
  gpuplan__docb *b;
  gpuplan_doc *d;
  const gpuplan__kind_desc *k = gpuplan__kind_find(kind);
  if (!k) {
    gpuplan__error(ctx, GPUPLAN_ERROR, "document: unknown kind '%s'", kind ? kind : "(null)");
    return NULL;
  }
  b = gpuplan__calloc(ctx, 1, sizeof *b);
  d = gpuplan__calloc(ctx, 1, sizeof *d);
  if (!b || !d) {
    gpuplan__free(ctx, b);
    gpuplan__free(ctx, d);
    gpuplan__nomem(ctx);
    return NULL;
  }
  d->ctx = ctx;
  d->kind = k;
  {
    /* "gpuplan.<kind>/<version>" without printf: this runs for every call */
    size_t kl = strlen(k->kind), n = 0;
    char ver[12];
    int v = k->version, vl = 0, i;
    if (kl > sizeof d->schema - 24) kl = sizeof d->schema - 24;
    memcpy(d->schema, "gpuplan.", 8);
    n = 8;
    memcpy(d->schema + n, k->kind, kl);
    n += kl;
    d->schema[n++] = '/';
    do {
      ver[vl++] = (char)('0' + v % 10);
      v /= 10;
    } while (v > 0 && vl < 11);
    for (i = vl - 1; i >= 0; i--) d->schema[n++] = ver[i];
    d->schema[n] = 0;
  }
  gpuplan__arena_init(&d->arena, ctx);
  b->doc = d;
  d->root = gpuplan__arena_alloc(&d->arena, sizeof *d->root);
  if (!d->root) {
    gpuplan__nomem(ctx);
    gpuplan__free(ctx, b);
    gpuplan__free(ctx, d);
    return NULL;
  }
  memset(d->root, 0, sizeof *d->root);
  d->root->type = GPUPLAN_VALUE_OBJECT;
  b->stack[0] = d->root;
  b->depth = 1;
  gpuplan__doc_str(b, "schema", d->schema);
  gpuplan__ctx_ref(ctx);
  return b;
}

gpuplan_ctx *gpuplan__doc_ctx(gpuplan__docb *b) { return b->doc->ctx; }

static void open_container(gpuplan__docb *b, const char *key, int type) {
  gpuplan_value *v = node(b, key, type);
  if (!v) return;
  if (b->depth >= DOC_DEPTH) {
    b->failed = gpuplan__error(b->doc->ctx, GPUPLAN_ERROR, "document: nested deeper than %d", DOC_DEPTH);
    return;
  }
  b->stack[b->depth++] = v;
}

void gpuplan__doc_obj(gpuplan__docb *b, const char *key) { open_container(b, key, GPUPLAN_VALUE_OBJECT); }
void gpuplan__doc_arr(gpuplan__docb *b, const char *key) { open_container(b, key, GPUPLAN_VALUE_ARRAY); }

/* Turn a container's child list into an array of pointers. */
static int seal(gpuplan__docb *b, gpuplan_value *c) {
  const gpuplan_value **items = NULL;
  gpuplan_value *v;
  unsigned i = 0;
  if (c->count) {
    items = gpuplan__arena_alloc(&b->doc->arena, c->count * sizeof *items);
    if (!items) return gpuplan__nomem(b->doc->ctx);
    for (v = c->u.c.first; v; v = v->next) items[i++] = v;
  }
  c->u.c.first = c->u.c.last = NULL;
  c->u.c.items = items;
  return 0;
}

void gpuplan__doc_end(gpuplan__docb *b) {
  gpuplan_value *c;
  if (b->failed) return;
  if (b->depth <= 1) {
    b->failed = gpuplan__error(b->doc->ctx, GPUPLAN_ERROR, "document: end without an open container");
    return;
  }
  c = b->stack[--b->depth];
  if (seal(b, c)) b->failed = GPUPLAN_ENOMEM;
}

void gpuplan__doc_int(gpuplan__docb *b, const char *key, int64_t v) {
  gpuplan_value *n = node(b, key, GPUPLAN_VALUE_INT);
  if (n) n->u.i = v;
}

void gpuplan__doc_uint(gpuplan__docb *b, const char *key, uint64_t v) {
  if (v > (uint64_t)INT64_MAX) gpuplan__doc_real(b, key, (double)v);
  else gpuplan__doc_int(b, key, (int64_t)v);
}

void gpuplan__doc_real(gpuplan__docb *b, const char *key, double v) {
  gpuplan_value *n;
  if (!isfinite(v)) {
    gpuplan__doc_null(b, key);
    return;
  }
  n = node(b, key, GPUPLAN_VALUE_REAL);
  if (n) n->u.r = v;
}

void gpuplan__doc_bool(gpuplan__docb *b, const char *key, int v) {
  gpuplan_value *n = node(b, key, GPUPLAN_VALUE_BOOL);
  if (n) n->u.i = v ? 1 : 0;
}

void gpuplan__doc_null(gpuplan__docb *b, const char *key) { (void)node(b, key, GPUPLAN_VALUE_NULL); }

void gpuplan__doc_strn(gpuplan__docb *b, const char *key, const char *s, size_t len) {
  gpuplan_value *n;
  char *p;
  if (!s) {
    gpuplan__doc_null(b, key);
    return;
  }
  n = node(b, key, GPUPLAN_VALUE_STRING);
  if (!n) return;
  p = gpuplan__arena_alloc(&b->doc->arena, len + 1);
  if (!p) {
    b->failed = gpuplan__nomem(b->doc->ctx);
    return;
  }
  memcpy(p, s, len);
  p[len] = 0;
  n->u.s.s = p;
  n->u.s.len = len;
}

void gpuplan__doc_str(gpuplan__docb *b, const char *key, const char *s) {
  gpuplan__doc_strn(b, key, s, s ? strlen(s) : 0);
}

void gpuplan__doc_strf(gpuplan__docb *b, const char *key, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof tmp) n = (int)sizeof tmp - 1;
  gpuplan__doc_strn(b, key, tmp, (size_t)n);
}

void gpuplan__doc_copy(gpuplan__docb *b, const char *key, const gpuplan_value *v) {
  size_t i;
  switch (gpuplan_value_type_of(v)) {
  case GPUPLAN_VALUE_NULL: gpuplan__doc_null(b, key); break;
  case GPUPLAN_VALUE_BOOL: gpuplan__doc_bool(b, key, (int)v->u.i); break;
  case GPUPLAN_VALUE_INT: gpuplan__doc_int(b, key, v->u.i); break;
  case GPUPLAN_VALUE_REAL: gpuplan__doc_real(b, key, v->u.r); break;
  case GPUPLAN_VALUE_STRING: gpuplan__doc_strn(b, key, v->u.s.s, v->u.s.len); break;
  case GPUPLAN_VALUE_ARRAY:
    gpuplan__doc_arr(b, key);
    for (i = 0; i < v->count; i++) gpuplan__doc_copy(b, NULL, v->u.c.items[i]);
    gpuplan__doc_end(b);
    break;
  case GPUPLAN_VALUE_OBJECT:
    gpuplan__doc_obj(b, key);
    for (i = 0; i < v->count; i++) gpuplan__doc_copy(b, v->u.c.items[i]->key, v->u.c.items[i]);
    gpuplan__doc_end(b);
    break;
  }
}

void gpuplan__doc_fail(gpuplan__docb *b, int code) {
  if (!b->failed) b->failed = code ? code : GPUPLAN_ERROR;
}

void gpuplan__doc_abort(gpuplan__docb *b) {
  gpuplan_ctx *ctx;
  if (!b) return;
  ctx = b->doc->ctx;
  gpuplan_doc_free(b->doc);
  gpuplan__free(ctx, b);
}

#if defined(GPUPLAN_TESTING)
/* Check every path of the document against the kind's field description. */
static int described(const gpuplan__kind_desc *k, const char *path, int type) {
  size_t i;
  for (i = 0; i < k->nfields; i++) {
    if (strcmp(k->fields[i].path, path) != 0) continue;
    if (type == GPUPLAN_VALUE_NULL || (int)k->fields[i].type == type) return 1;
    if (k->fields[i].type == GPUPLAN_VALUE_REAL && type == GPUPLAN_VALUE_INT) return 1;
    return -1;
  }
  return 0;
}

static int check(gpuplan_ctx *ctx, const gpuplan__kind_desc *k, const gpuplan_value *v, char *path, size_t len,
                 int self) {
  size_t i;
  if (len && self) {
    int d = described(k, path, v->type);
    if (d == 0)
      return gpuplan__error(ctx, GPUPLAN_ERROR, "document %s: '%s' is not in its field description", k->kind, path);
    if (d < 0)
      return gpuplan__error(ctx, GPUPLAN_ERROR, "document %s: '%s' has type %d, not as described", k->kind,
                            path, v->type);
  }
  if (v->type == GPUPLAN_VALUE_OBJECT) {
    for (i = 0; i < v->count; i++) {
      const gpuplan_value *c = v->u.c.items[i];
      size_t kl = strlen(c->key);
      if (len + kl + 2 >= 256) return gpuplan__error(ctx, GPUPLAN_ERROR, "document: path too long");
      if (len) path[len] = '.';
      memcpy(path + len + (len ? 1 : 0), c->key, kl + 1);
      GPUPLAN_TRY(check(ctx, k, c, path, len + kl + (len ? 1 : 0), 1));
      path[len] = 0;
    }
  } else if (v->type == GPUPLAN_VALUE_ARRAY) {
    if (len + 3 >= 256) return gpuplan__error(ctx, GPUPLAN_ERROR, "document: path too long");
    memcpy(path + len, "[]", 3);
    for (i = 0; i < v->count; i++) {
      const gpuplan_value *c = v->u.c.items[i];
      if (c->type == GPUPLAN_VALUE_OBJECT || c->type == GPUPLAN_VALUE_ARRAY) {
        GPUPLAN_TRY(check(ctx, k, c, path, len + 2, 0));
      }
    }
    path[len] = 0;
  }
  return 0;
}
#endif

int gpuplan__doc_finish(gpuplan__docb *b, gpuplan_doc **out) {
  int rc;
  *out = NULL;
  while (!b->failed && b->depth > 1) gpuplan__doc_end(b);
  if (!b->failed && seal(b, b->doc->root)) b->failed = GPUPLAN_ENOMEM;
#if defined(GPUPLAN_TESTING)
  /* The check costs ~10x the document; tests ask for it (GPUPLAN_CHECK_DOCS=1,
   * set by tests/CMakeLists.txt for every test but the benchmarks). */
  if (!b->failed && getenv("GPUPLAN_CHECK_DOCS") && getenv("GPUPLAN_CHECK_DOCS")[0] == '1') {
    char path[256];
    path[0] = 0;
    if (check(b->doc->ctx, b->doc->kind, b->doc->root, path, 0, 1)) b->failed = GPUPLAN_ERROR;
  }
#endif
  rc = b->failed;
  if (rc) {
    gpuplan__doc_abort(b);
    return rc;
  }
  *out = b->doc;
  gpuplan__free(b->doc->ctx, b);
  return GPUPLAN_OK;
}

/* --- reading ------------------------------------------------------------- */

const gpuplan_value *gpuplan_doc_root(const gpuplan_doc *d) { return d ? d->root : NULL; }
const char *gpuplan_doc_schema(const gpuplan_doc *d) { return d ? d->schema : NULL; }
const char *gpuplan_doc_kind(const gpuplan_doc *d) { return d ? d->kind->kind : NULL; }

void gpuplan_doc_free(gpuplan_doc *d) {
  gpuplan_ctx *ctx;
  int i;
  if (!d) return;
  ctx = d->ctx;
  for (i = 0; i < 2; i++) gpuplan__free(ctx, d->json[i]);
  gpuplan__free(ctx, d->csv);
  gpuplan__arena_free(&d->arena);
  gpuplan__free(ctx, d);
  gpuplan__ctx_unref(ctx);
}

gpuplan_value_type gpuplan_value_type_of(const gpuplan_value *v) {
  return v ? (gpuplan_value_type)v->type : GPUPLAN_VALUE_NULL;
}
int gpuplan_value_bool(const gpuplan_value *v) { return v && v->type == GPUPLAN_VALUE_BOOL ? (int)v->u.i : 0; }
int64_t gpuplan_value_int(const gpuplan_value *v) {
  if (!v) return 0;
  if (v->type == GPUPLAN_VALUE_INT || v->type == GPUPLAN_VALUE_BOOL) return v->u.i;
  if (v->type == GPUPLAN_VALUE_REAL && v->u.r > -9.2e18 && v->u.r < 9.2e18) return (int64_t)v->u.r;
  return 0;
}
double gpuplan_value_real(const gpuplan_value *v) {
  if (!v) return 0;
  if (v->type == GPUPLAN_VALUE_REAL) return v->u.r;
  if (v->type == GPUPLAN_VALUE_INT) return (double)v->u.i;
  return 0;
}
const char *gpuplan_value_string(const gpuplan_value *v, size_t *len) {
  if (!v || v->type != GPUPLAN_VALUE_STRING) {
    if (len) *len = 0;
    return NULL;
  }
  if (len) *len = v->u.s.len;
  return v->u.s.s;
}
size_t gpuplan_value_count(const gpuplan_value *v) {
  return v && (v->type == GPUPLAN_VALUE_ARRAY || v->type == GPUPLAN_VALUE_OBJECT) ? v->count : 0;
}
const gpuplan_value *gpuplan_value_at(const gpuplan_value *v, size_t i) {
  return i < gpuplan_value_count(v) ? v->u.c.items[i] : NULL;
}
const char *gpuplan_value_key(const gpuplan_value *v, size_t i) {
  return v && v->type == GPUPLAN_VALUE_OBJECT && i < v->count ? v->u.c.items[i]->key : NULL;
}
static const gpuplan_value *getn(const gpuplan_value *v, const char *key, size_t n) {
  unsigned i;
  if (!v || v->type != GPUPLAN_VALUE_OBJECT || !key) return NULL;
  for (i = 0; i < v->count; i++) {
    const char *k = v->u.c.items[i]->key;
    if (strncmp(k, key, n) == 0 && k[n] == 0) return v->u.c.items[i];
  }
  return NULL;
}
const gpuplan_value *gpuplan_value_get(const gpuplan_value *v, const char *key) {
  return key ? getn(v, key, strlen(key)) : NULL;
}
const gpuplan_value *gpuplan_value_path(const gpuplan_value *v, const char *path) {
  if (!path) return NULL;
  while (v && *path) {
    size_t n = strcspn(path, ".");
    if (v->type == GPUPLAN_VALUE_ARRAY) {
      char *end;
      unsigned long i = strtoul(path, &end, 10);
      if (end != path + n || n == 0) return NULL;
      v = gpuplan_value_at(v, i);
    } else {
      v = getn(v, path, n);
    }
    path += n;
    if (*path == '.') path++;
  }
  return v;
}

/* --- JSON ---------------------------------------------------------------- */

void gpuplan__fmt_real(char *buf, size_t cap, double v) {
  int prec;
  if (v == floor(v) && fabs(v) < 9.007199254740992e15) {
    snprintf(buf, cap, "%.1f", v); /* a real stays a real: "2.0" */
    return;
  }
  for (prec = 15; prec <= 17; prec++) {
    snprintf(buf, cap, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

static void json_string(gpuplan__buf *o, const char *s, size_t n) {
  size_t i, run = 0;
  gpuplan__buf_put(o, "\"", 1);
  for (i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    const char *esc = NULL;
    char u[8];
    switch (ch) {
    case '"': esc = "\\\""; break;
    case '\\': esc = "\\\\"; break;
    case '\n': esc = "\\n"; break;
    case '\r': esc = "\\r"; break;
    case '\t': esc = "\\t"; break;
    default:
      if (ch < 0x20 || ch == 0x7f) {
        snprintf(u, sizeof u, "\\u%04x", ch);
        esc = u;
      }
    }
    if (esc) {
      gpuplan__buf_put(o, s + run, i - run);
      gpuplan__buf_puts(o, esc);
      run = i + 1;
    }
  }
  gpuplan__buf_put(o, s + run, n - run);
  gpuplan__buf_put(o, "\"", 1);
}

static void indent(gpuplan__buf *o, unsigned flags, int depth) {
  static const char spaces[] = "                                                                ";
  if (!(flags & GPUPLAN_JSON_PRETTY)) return;
  gpuplan__buf_put(o, "\n", 1);
  depth *= 2;
  while (depth > 0) {
    int k = depth > 64 ? 64 : depth;
    gpuplan__buf_put(o, spaces, (size_t)k);
    depth -= k;
  }
}

static void json_value(gpuplan__buf *o, const gpuplan_value *v, unsigned flags, int depth) {
  char num[40];
  unsigned i;
  switch (v->type) {
  case GPUPLAN_VALUE_NULL: gpuplan__buf_put(o, "null", 4); break;
  case GPUPLAN_VALUE_BOOL: gpuplan__buf_puts(o, v->u.i ? "true" : "false"); break;
  case GPUPLAN_VALUE_INT:
    snprintf(num, sizeof num, "%lld", (long long)v->u.i);
    gpuplan__buf_puts(o, num);
    break;
  case GPUPLAN_VALUE_REAL:
    gpuplan__fmt_real(num, sizeof num, v->u.r);
    gpuplan__buf_puts(o, num);
    break;
  case GPUPLAN_VALUE_STRING: json_string(o, v->u.s.s, v->u.s.len); break;
  case GPUPLAN_VALUE_ARRAY:
  case GPUPLAN_VALUE_OBJECT: {
    int obj = v->type == GPUPLAN_VALUE_OBJECT;
    gpuplan__buf_put(o, obj ? "{" : "[", 1);
    for (i = 0; i < v->count; i++) {
      const gpuplan_value *c = v->u.c.items[i];
      if (i) gpuplan__buf_put(o, ",", 1);
      indent(o, flags, depth + 1);
      if (obj) {
        json_string(o, c->key, strlen(c->key));
        gpuplan__buf_puts(o, (flags & GPUPLAN_JSON_PRETTY) ? ": " : ":");
      }
      json_value(o, c, flags, depth + 1);
    }
    if (v->count) indent(o, flags, depth);
    gpuplan__buf_put(o, obj ? "}" : "]", 1);
    break;
  }
  }
}

const char *gpuplan_doc_json(gpuplan_doc *d, unsigned flags, size_t *len) {
  int k = (flags & GPUPLAN_JSON_PRETTY) ? 1 : 0;
  gpuplan__buf o;
  if (!d) return NULL;
  if (!d->json[k]) {
    gpuplan__buf_init(&o, d->ctx);
    json_value(&o, d->root, flags, 0);
    if (k) gpuplan__buf_put(&o, "\n", 1);
    gpuplan__buf_put(&o, "", 1);
    if (o.failed) {
      gpuplan__buf_dispose(&o);
      gpuplan__nomem(d->ctx);
      return NULL;
    }
    d->json[k] = o.ptr;
    d->json_len[k] = o.len - 1;
  }
  if (len) *len = d->json_len[k];
  return d->json[k];
}

/* --- CSV ----------------------------------------------------------------- */

static void csv_text(gpuplan__buf *o, const char *s, size_t n) {
  size_t i;
  if (!memchr(s, ',', n) && !memchr(s, '"', n) && !memchr(s, '\n', n) && !memchr(s, '\r', n)) {
    gpuplan__buf_put(o, s, n);
    return;
  }
  gpuplan__buf_put(o, "\"", 1);
  for (i = 0; i < n; i++) {
    if (s[i] == '"') gpuplan__buf_put(o, "\"", 1);
    gpuplan__buf_put(o, s + i, 1);
  }
  gpuplan__buf_put(o, "\"", 1);
}

static void csv_cell(gpuplan__buf *o, gpuplan_ctx *ctx, const gpuplan_value *v) {
  char num[40];
  if (!v) return;
  switch (v->type) {
  case GPUPLAN_VALUE_NULL: break;
  case GPUPLAN_VALUE_BOOL: gpuplan__buf_puts(o, v->u.i ? "true" : "false"); break;
  case GPUPLAN_VALUE_INT:
    snprintf(num, sizeof num, "%lld", (long long)v->u.i);
    gpuplan__buf_puts(o, num);
    break;
  case GPUPLAN_VALUE_REAL:
    gpuplan__fmt_real(num, sizeof num, v->u.r);
    gpuplan__buf_puts(o, num);
    break;
  case GPUPLAN_VALUE_STRING: csv_text(o, v->u.s.s, v->u.s.len); break;
  default: {
    gpuplan__buf t;
    gpuplan__buf_init(&t, ctx);
    json_value(&t, v, 0, 0);
    if (t.failed) o->failed = 1;
    else csv_text(o, t.ptr, t.len);
    gpuplan__buf_dispose(&t);
  }
  }
}

const char *gpuplan_doc_csv(gpuplan_doc *d, size_t *len) {
  const gpuplan_value *t, *first;
  gpuplan__buf o;
  unsigned i, j;
  if (!d) return NULL;
  if (d->csv) {
    if (len) *len = d->csv_len;
    return d->csv;
  }
  if (!d->kind->table || !(t = gpuplan_value_get(d->root, d->kind->table)) || t->type != GPUPLAN_VALUE_ARRAY) {
    gpuplan__error(d->ctx, GPUPLAN_EUNSUPPORTED, "%s results have no table for CSV; use JSON", d->kind->kind);
    return NULL;
  }
  gpuplan__buf_init(&o, d->ctx);
  first = t->count ? t->u.c.items[0] : NULL;
  if (first && first->type == GPUPLAN_VALUE_OBJECT) {
    for (j = 0; j < first->count; j++) {
      if (j) gpuplan__buf_put(&o, ",", 1);
      csv_text(&o, first->u.c.items[j]->key, strlen(first->u.c.items[j]->key));
    }
    gpuplan__buf_put(&o, "\r\n", 2);
    for (i = 0; i < t->count; i++) {
      const gpuplan_value *row = t->u.c.items[i];
      for (j = 0; j < first->count; j++) {
        if (j) gpuplan__buf_put(&o, ",", 1);
        csv_cell(&o, d->ctx, gpuplan_value_get(row, first->u.c.items[j]->key));
      }
      gpuplan__buf_put(&o, "\r\n", 2);
    }
  } else {
    for (i = 0; i < t->count; i++) {
      csv_cell(&o, d->ctx, t->u.c.items[i]);
      gpuplan__buf_put(&o, "\r\n", 2);
    }
  }
  gpuplan__buf_put(&o, "", 1);
  if (o.failed) {
    gpuplan__buf_dispose(&o);
    gpuplan__nomem(d->ctx);
    return NULL;
  }
  d->csv = o.ptr;
  d->csv_len = o.len - 1;
  if (len) *len = d->csv_len;
  return d->csv;
}

/*
 * lookup.c: the name index of a snapshot and gpuplan_catalog_find().
 *
 * Every record answers to its id, its display name and its aliases.  Keys
 * are compared after normalisation: ASCII lower case with the separators
 * ' ', '-', '_', '.', '/' removed ("H100 SXM5 80GB" -> "h100sxm580gb").
 * A query that equals no key matches a record when each of its words begins
 * some word of one of the record's keys ("H100 SXM" -> "h100 sxm5 80gb").
 */
#include <ctype.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "catalog/catalog_int.h"
#include "catalog/embedded.h"

#define KEY_MAX 256

static int is_sep(int c) {
  return c == ' ' || c == '-' || c == '_' || c == '.' || c == '/' ||
         c == '\t' || c == '(' || c == ')' || c == ',';
}

/* norm: separators removed; words: words joined by single spaces. */
static void normalize(const char *s, char *norm, char *words, size_t cap) {
  size_t n = 0, w = 0;
  int gap = 0;
  for (; *s && n + 1 < cap && w + 2 < cap; s++) {
    int c = tolower((unsigned char)*s);
    if (is_sep(c)) {
      gap = w > 0;
      continue;
    }
    if (gap) words[w++] = ' ';
    gap = 0;
    norm[n++] = (char)c;
    words[w++] = (char)c;
  }
  norm[n] = '\0';
  words[w] = '\0';
}

static int add_key(gpuplan_catalog *cat, gpuplan__snapshot *s, gpuplan__table *t,
                   size_t *cap, const char *text, size_t rec) {
  char norm[KEY_MAX], words[KEY_MAX];
  gpuplan__key *k;
  if (!text) return GPUPLAN_OK;
  normalize(text, norm, words, sizeof norm);
  if (!norm[0]) return GPUPLAN_OK;
  if (t->nkeys == *cap) {
    size_t ncap = *cap ? *cap * 2 : 32;
    gpuplan__key *nk = gpuplan__realloc(cat->ctx, t->keys, ncap * sizeof *nk);
    if (!nk) return gpuplan__nomem(cat->ctx);
    t->keys = nk;
    *cap = ncap;
  }
  k = &t->keys[t->nkeys];
  k->norm = gpuplan__arena_strdup(&s->arena, norm);
  k->words = gpuplan__arena_strdup(&s->arena, words);
  if (!k->norm || !k->words) return gpuplan__nomem(cat->ctx);
  k->rec = rec;
  t->nkeys++;
  return GPUPLAN_OK;
}

#define REC(s, kind, i) \
  ((const char *)(s)->t[kind].recs + (i) * gpuplan__kinds[kind].size)

/* id and name are the first two fields of every record struct. */
static const char *rec_id(const gpuplan__snapshot *s, int kind, size_t i) {
  return *(const char *const *)REC(s, kind, i);
}
static const char *rec_name(const gpuplan__snapshot *s, int kind, size_t i) {
  return *(const char *const *)(REC(s, kind, i) + sizeof(const char *));
}

/* Records are sorted by id (ORDER BY 1); binary search on it. */
static long find_id(const gpuplan__snapshot *s, int kind, const char *id) {
  size_t lo = 0, hi = s->t[kind].n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(rec_id(s, kind, mid), id);
    if (c == 0) return (long)mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

static int check_ref(gpuplan_catalog *cat, const gpuplan__snapshot *s,
                     const char *owner_label, const char *owner, const char *field,
                     int kind, const char *id) {
  if (!id || find_id(s, kind, id) >= 0) return GPUPLAN_OK;
  return gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                        "catalog %s: %s '%s': %s '%s' is not a %s in the catalog",
                        cat->path, owner_label, owner, field, id,
                        gpuplan__kinds[kind].label);
}

static int kind_from_name(const char *name) {
  int k;
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
    if (strcmp(gpuplan__kinds[k].name, name) == 0) return k;
  return -1;
}

/* Checks across fields and records, after every column passed its own. */
static int check_records(gpuplan_catalog *cat, const gpuplan__snapshot *s) {
  size_t i;
  for (i = 0; i < s->t[GPUPLAN_KIND_NODE].n; i++) {
    const gpuplan_node *n = (const gpuplan_node *)REC(s, GPUPLAN_KIND_NODE, i);
    GPUPLAN_TRY(check_ref(cat, s, "node", n->id, "gpu_id", GPUPLAN_KIND_GPU, n->gpu_id));
    GPUPLAN_TRY(check_ref(cat, s, "node", n->id, "intra_fabric_id",
                          GPUPLAN_KIND_FABRIC, n->intra_fabric_id));
    GPUPLAN_TRY(check_ref(cat, s, "node", n->id, "inter_fabric_id",
                          GPUPLAN_KIND_FABRIC, n->inter_fabric_id));
    if (n->gpu_count < 0)
      return gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                            "catalog %s: node '%s': gpu_count must not be negative",
                            cat->path, n->id);
  }
  for (i = 0; i < s->t[GPUPLAN_KIND_GPU].n; i++) {
    const gpuplan_gpu *g = (const gpuplan_gpu *)REC(s, GPUPLAN_KIND_GPU, i);
    if (g->memory_bytes == 0 || !(g->mem_bw_bytes_s > 0))
      return gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                            "catalog %s: GPU '%s': memory_bytes and mem_bw_bytes_s "
                            "must be positive", cat->path, g->id);
  }
  for (i = 0; i < s->t[GPUPLAN_KIND_MODEL].n; i++) {
    const gpuplan_model *m = (const gpuplan_model *)REC(s, GPUPLAN_KIND_MODEL, i);
    /* The field checks keep kv_heads >= 1; this stays a guard (H2). */
    if (NEVER(m->kv_heads <= 0) || m->heads % m->kv_heads != 0)
      return gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                            "catalog %s: model '%s': heads (%lld) must be a "
                            "multiple of kv_heads (%lld)", cat->path, m->id,
                            (long long)m->heads, (long long)m->kv_heads);
    if (m->top_k > m->experts)
      return gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                            "catalog %s: model '%s': top_k (%lld) exceeds experts "
                            "(%lld)", cat->path, m->id, (long long)m->top_k,
                            (long long)m->experts);
  }
  return GPUPLAN_OK;
}

/* Keys for every record's id and display name. */
static int add_record_keys(gpuplan_catalog *cat, gpuplan__snapshot *s, size_t *cap) {
  size_t i;
  int k;
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++) {
    for (i = 0; i < s->t[k].n; i++) {
      GPUPLAN_TRY(add_key(cat, s, &s->t[k], &cap[k], rec_id(s, k, i), i));
      GPUPLAN_TRY(add_key(cat, s, &s->t[k], &cap[k], rec_name(s, k, i), i));
    }
  }
  return GPUPLAN_OK;
}

int gpuplan__catalog_index_builtin(gpuplan_catalog *cat, gpuplan__snapshot *s) {
  const gpuplan__builtin *b = &gpuplan__catalog_builtin;
  size_t cap[GPUPLAN_KIND_COUNT] = {0}, i;
  int k;
  /* Each kind's keys in one block: two per record, plus its aliases. */
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++) cap[k] = 2 * s->t[k].n;
  for (i = 0; i < b->naliases; i++) cap[b->aliases[i].kind]++;
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++) {
    if (!cap[k]) continue;
    s->t[k].keys = gpuplan__malloc(cat->ctx, cap[k] * sizeof *s->t[k].keys);
    if (!s->t[k].keys) return gpuplan__nomem(cat->ctx);
  }
  GPUPLAN_TRY(add_record_keys(cat, s, cap));
  for (i = 0; i < b->naliases; i++) {
    const gpuplan__builtin_alias *a = &b->aliases[i];
    GPUPLAN_TRY(add_key(cat, s, &s->t[a->kind], &cap[a->kind], a->alias, a->rec));
  }
  return GPUPLAN_OK;
}

int gpuplan__catalog_index(gpuplan_catalog *cat, gpuplan__snapshot *s) {
  size_t cap[GPUPLAN_KIND_COUNT] = {0};
  sqlite3_stmt *st = NULL;
  int k, rc;

  GPUPLAN_TRY(check_records(cat, s));
  GPUPLAN_TRY(add_record_keys(cat, s, cap));

  /* Aliases; a user alias overrides a default one with the same name. */
  rc = sqlite3_prepare_v2(
      cat->db,
      cat->layered
          ? "SELECT kind, alias, target FROM main.alias UNION ALL "
            "SELECT kind, alias, target FROM base.alias b WHERE NOT EXISTS "
            "(SELECT 1 FROM main.alias m WHERE m.kind=b.kind AND m.alias=b.alias)"
          : "SELECT kind, alias, target FROM main.alias",
      -1, &st, NULL);
  if (rc != SQLITE_OK) {
    gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                   "catalog %s: cannot read table 'alias': %s", cat->path,
                   sqlite3_errmsg(cat->db));
    gpuplan__error_detail(cat->ctx, sqlite3_extended_errcode(cat->db));
    return (rc & 0xff) == SQLITE_NOMEM ? gpuplan__nomem(cat->ctx) : GPUPLAN_ECATALOG;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *kn = (const char *)sqlite3_column_text(st, 0);
    const char *alias = (const char *)sqlite3_column_text(st, 1);
    const char *target = (const char *)sqlite3_column_text(st, 2);
    long rec;
    int r;
    if (!kn || !alias || !target) {
      int oom = sqlite3_errcode(cat->db) == SQLITE_NOMEM;
      sqlite3_finalize(st);
      if (oom) return gpuplan__nomem(cat->ctx);
      return gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                            "catalog %s: table alias: a row has a NULL kind, alias "
                            "or target", cat->path);
    }
    k = kind_from_name(kn);
    rec = k < 0 ? -1 : find_id(s, k, target);
    if (rec < 0) {
      gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                     "catalog %s: alias '%s': target %s '%s' is not in the catalog",
                     cat->path, alias, kn, target);
      sqlite3_finalize(st);
      return GPUPLAN_ECATALOG;
    }
    r = add_key(cat, s, &s->t[k], &cap[k], alias, (size_t)rec);
    if (r) {
      sqlite3_finalize(st);
      return r;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                   "catalog %s: cannot read table 'alias': %s", cat->path,
                   sqlite3_errmsg(cat->db));
    return (rc & 0xff) == SQLITE_NOMEM ? gpuplan__nomem(cat->ctx) : GPUPLAN_ECATALOG;
  }
  return GPUPLAN_OK;
}

/* --- find ---------------------------------------------------------------- */

/* Does every word of q begin some word of w? */
static int words_match(const char *q, const char *w) {
  while (*q) {
    const char *qe = strchr(q, ' ');
    size_t ql = qe ? (size_t)(qe - q) : strlen(q);
    const char *p = w;
    int hit = 0;
    while (*p) {
      const char *pe = strchr(p, ' ');
      size_t pl = pe ? (size_t)(pe - p) : strlen(p);
      if (pl >= ql && memcmp(p, q, ql) == 0) {
        hit = 1;
        break;
      }
      p = pe ? pe + 1 : p + pl;
    }
    if (!hit) return 0;
    q = qe ? qe + 1 : q + ql;
  }
  return 1;
}

/*
 * Optimal-string-alignment distance (edits with adjacent transposition) when
 * it is at most limit; otherwise some value above limit.  Every suggestion
 * search runs this against each key, and `catalog show` searches the kinds
 * it does not hit, so only the band |i - j| <= limit is computed (an
 * alignment that leaves it costs more than limit; a transposition moves
 * along the diagonal) and two rows above limit end it early: no row's
 * minimum is below the smaller of the two before it.
 */
static size_t osa(const char *a, size_t n, const char *b, size_t m, size_t limit) {
  const size_t big = limit + 1;
  size_t i, j, prevmin = 0;
  /* Three rolling rows, indexed by j; rows are i-2, i-1, i mod 3. */
  size_t rows[3][KEY_MAX + 1];

  if (n >= KEY_MAX) n = KEY_MAX - 1;
  if (m >= KEY_MAX) m = KEY_MAX - 1;
  if ((n > m ? n - m : m - n) > limit) return big;
  for (j = 0; j <= m; j++) rows[0][j] = j <= limit ? j : big;
  for (i = 1; i <= n; i++) {
    size_t *cur = rows[i % 3], *prev = rows[(i - 1) % 3], *pp = rows[(i + 1) % 3];
    size_t lo = i > limit ? i - limit : 1, hi = i + limit < m ? i + limit : m;
    size_t rowmin;
    /* The cells just outside the band read as "too far"; column 0 is in it
     * while i <= limit. */
    cur[lo - 1] = lo == 1 && i <= limit ? i : big;
    if (hi < m) cur[hi + 1] = big;
    rowmin = cur[lo - 1];
    for (j = lo; j <= hi; j++) {
      size_t cost = a[i - 1] != b[j - 1];
      size_t v = prev[j] + 1;
      if (cur[j - 1] + 1 < v) v = cur[j - 1] + 1;
      if (prev[j - 1] + cost < v) v = prev[j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          pp[j - 2] + 1 < v)
        v = pp[j - 2] + 1;
      if (v > big) v = big;
      cur[j] = v;
      if (v < rowmin) rowmin = v;
    }
    if (rowmin > limit && prevmin > limit) return big;
    prevmin = rowmin;
  }
  return rows[n % 3][m];
}

#define MAX_LIST 8

/* Append "id (name)" for up to MAX_LIST records to msg. */
static void list_records(const gpuplan__snapshot *s, int kind, const size_t *recs,
                         size_t n, char *msg, size_t cap) {
  size_t i, len = strlen(msg);
  for (i = 0; i < n && i < MAX_LIST && len + 1 < cap; i++) {
    int w = snprintf(msg + len, cap - len, "%s%s (%s)", i ? ", " : "",
                     rec_id(s, kind, recs[i]), rec_name(s, kind, recs[i]));
    if (w < 0) break;
    len += (size_t)w;
    if (len >= cap) len = cap - 1;
  }
  if (n > MAX_LIST && len + 1 < cap)
    snprintf(msg + len, cap - len, ", and %zu more", n - MAX_LIST);
}

static int add_unique(size_t *recs, size_t *n, size_t rec) {
  size_t i;
  for (i = 0; i < *n; i++)
    if (recs[i] == rec) return 0;
  recs[(*n)++] = rec;
  return 1;
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

int gpuplan_catalog_find(gpuplan_catalog *cat, gpuplan_kind kind,
                         const char *name, const void **out) {
  const gpuplan__snapshot *s;
  const gpuplan__table *t;
  const char *label;
  char norm[KEY_MAX], words[KEY_MAX], msg[GPUPLAN_ERRMSG_MAX];
  size_t *hits, nhits = 0, i;
  size_t stackhits[64];
  int rc;

  if (!out) return cat ? gpuplan__error(cat->ctx, GPUPLAN_EMISUSE, "find: out is NULL")
                       : GPUPLAN_EMISUSE;
  *out = NULL;
  if (!cat) return GPUPLAN_EMISUSE;
  if ((unsigned)kind >= GPUPLAN_KIND_COUNT)
    return gpuplan__error(cat->ctx, GPUPLAN_EINVAL,
                          "find: kind %d is not one of gpu, fabric, node, model",
                          (int)kind);
  label = gpuplan__kinds[kind].label;
  if (!name)
    return gpuplan__error(cat->ctx, GPUPLAN_EINVAL, "%s name: must not be NULL", label);
  normalize(name, norm, words, sizeof norm);
  if (!norm[0])
    return gpuplan__error(cat->ctx, GPUPLAN_EINVAL, "%s name: must not be empty", label);
  if (strlen(name) >= KEY_MAX)
    return gpuplan__error(cat->ctx, GPUPLAN_EINVAL,
                          "%s name: longer than %d characters", label, KEY_MAX - 1);

  s = &cat->snap;
  t = &s->t[kind];
  hits = t->n <= sizeof stackhits / sizeof stackhits[0]
             ? stackhits
             : gpuplan__malloc(cat->ctx, t->n * sizeof *hits);
  if (!hits) return gpuplan__nomem(cat->ctx);

  for (i = 0; i < t->nkeys; i++)
    if (strcmp(t->keys[i].norm, norm) == 0) add_unique(hits, &nhits, t->keys[i].rec);
  if (nhits == 0)
    for (i = 0; i < t->nkeys; i++)
      if (words_match(words, t->keys[i].words)) add_unique(hits, &nhits, t->keys[i].rec);

  if (nhits == 1) {
    *out = REC(s, kind, hits[0]);
    rc = GPUPLAN_OK;
    gpuplan__clear(cat->ctx);
  } else if (nhits > 1) {
    qsort(hits, nhits, sizeof *hits, cmp_size);
    snprintf(msg, sizeof msg, "%s name '%s' is ambiguous; it matches %zu: ", label,
             name, nhits);
    list_records(s, kind, hits, nhits, msg, sizeof msg);
    rc = gpuplan__error(cat->ctx, GPUPLAN_EAMBIGUOUS, "%s", msg);
  } else {
    /* Suggest the nearest keys by edit distance (whole key, or its prefix of
     * the query's length, which catches typos in partial names). */
    size_t qn = strlen(norm), best[3], bestd[3], nb = 0, limit;
    limit = qn / 3 > 2 ? qn / 3 : 2;
    for (i = 0; i < t->nkeys; i++) {
      const char *kn = t->keys[i].norm;
      size_t kl = strlen(kn), d, dp, j, pos;
      d = osa(norm, qn, kn, kl, limit);
      if (kl > qn) {
        dp = osa(norm, qn, kn, qn, limit) + 1;
        if (dp < d) d = dp;
      }
      if (d > limit) continue;
      /* Keep the three best distinct records. */
      for (j = 0; j < nb; j++)
        if (best[j] == t->keys[i].rec) break;
      if (j < nb) {
        if (d < bestd[j]) bestd[j] = d;
        continue;
      }
      pos = nb < 3 ? nb++ : 3;
      if (pos == 3) {
        size_t worst = 0;
        for (j = 1; j < 3; j++)
          if (bestd[j] > bestd[worst]) worst = j;
        if (d >= bestd[worst]) continue;
        pos = worst;
      }
      best[pos] = t->keys[i].rec;
      bestd[pos] = d;
    }
    /* Order suggestions by distance. */
    for (i = 1; i < nb; i++) {
      size_t j = i;
      while (j > 0 && bestd[j - 1] > bestd[j]) {
        size_t tb = best[j], td = bestd[j];
        best[j] = best[j - 1], bestd[j] = bestd[j - 1];
        best[j - 1] = tb, bestd[j - 1] = td;
        j--;
      }
    }
    if (nb > 0) {
      snprintf(msg, sizeof msg, "unknown %s '%s'; did you mean ", label, name);
      list_records(s, kind, best, nb, msg, sizeof msg);
      {
        size_t len = strlen(msg);
        if (len + 1 < sizeof msg) snprintf(msg + len, sizeof msg - len, "?");
      }
    } else {
      snprintf(msg, sizeof msg, "unknown %s '%s' (the catalog has %zu %ss)", label,
               name, t->n, gpuplan__kinds[kind].name);
    }
    rc = gpuplan__error(cat->ctx, GPUPLAN_ENOTFOUND, "%s", msg);
  }
  if (hits != stackhits) gpuplan__free(cat->ctx, hits);
  return rc;
}

int gpuplan_catalog_gpu(gpuplan_catalog *cat, const char *name,
                        const gpuplan_gpu **out) {
  return gpuplan_catalog_find(cat, GPUPLAN_KIND_GPU, name, (const void **)out);
}
int gpuplan_catalog_fabric(gpuplan_catalog *cat, const char *name,
                           const gpuplan_fabric **out) {
  return gpuplan_catalog_find(cat, GPUPLAN_KIND_FABRIC, name, (const void **)out);
}
int gpuplan_catalog_node(gpuplan_catalog *cat, const char *name,
                         const gpuplan_node **out) {
  return gpuplan_catalog_find(cat, GPUPLAN_KIND_NODE, name, (const void **)out);
}
int gpuplan_catalog_model(gpuplan_catalog *cat, const char *name,
                          const gpuplan_model **out) {
  return gpuplan_catalog_find(cat, GPUPLAN_KIND_MODEL, name, (const void **)out);
}

size_t gpuplan_catalog_count(const gpuplan_catalog *cat, gpuplan_kind kind) {
  if (!cat || (unsigned)kind >= GPUPLAN_KIND_COUNT) return 0;
  return cat->snap.t[kind].n;
}

const void *gpuplan_catalog_at(const gpuplan_catalog *cat, gpuplan_kind kind,
                               size_t i) {
  if (!cat || (unsigned)kind >= GPUPLAN_KIND_COUNT || i >= cat->snap.t[kind].n)
    return NULL;
  return REC(&cat->snap, kind, i);
}

/*
 * job.c: the job object: the option table, strict value parsing, and the
 * command dispatch.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/job_int.h"

/* --- the table ------------------------------------------------------------ */

static const gpuplan__opt_table *const tables[] = {
  &gpuplan__opts_job,
  &gpuplan__opts_tools,
  &gpuplan__opts_devices,
  &gpuplan__opts_validate,
  &gpuplan__opts_model,
  &gpuplan__opts_serve,
};
#define NTABLES (sizeof tables / sizeof tables[0])

static size_t total_options(void) {
  size_t i, n = 0;
  for (i = 0; i < NTABLES; i++) n += tables[i]->n;
  return n;
}

const gpuplan_option_info *gpuplan_job_option(size_t i) {
  size_t t;
  for (t = 0; t < NTABLES; t++) {
    if (i < tables[t]->n) return &tables[t]->opts[i];
    i -= tables[t]->n;
  }
  return NULL;
}

/* The global index of a descriptor, or (size_t)-1. */
static size_t index_of(const gpuplan_option_info *opt) {
  size_t t, base = 0;
  for (t = 0; t < NTABLES; t++) {
    if (opt >= tables[t]->opts && opt < tables[t]->opts + tables[t]->n)
      return base + (size_t)(opt - tables[t]->opts);
    base += tables[t]->n;
  }
  return (size_t)-1;
}

/* Names compare with '-' and '_' as one, case-insensitively. */
static int name_eq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    int x = tolower((unsigned char)*a), y = tolower((unsigned char)*b);
    if (x == '_') x = '-';
    if (y == '_') y = '-';
    if (x != y) return 0;
  }
  return *a == *b;
}

const gpuplan_option_info *gpuplan_job_option_find(const char *name, int *negated) {
  size_t i;
  const gpuplan_option_info *o;
  if (negated) *negated = 0;
  if (!name) return NULL;
  /* the exact name first (what bindings pass), then flags and spellings */
  {
    size_t t, k;
    for (t = 0; t < NTABLES; t++)
      for (k = 0; k < tables[t]->n; k++) {
        o = &tables[t]->opts[k];
        if (o->name[0] == name[0] && strcmp(o->name, name) == 0) return o;
      }
  }
  for (i = 0; (o = gpuplan_job_option(i)); i++)
    if (name_eq(o->name, name) || name_eq(o->flag, name)) return o;
  if (strncmp(name, "no-", 3) == 0 || strncmp(name, "no_", 3) == 0) {
    for (i = 0; (o = gpuplan_job_option(i)); i++)
      if (o->type == GPUPLAN_OPT_BOOL && (name_eq(o->flag, name + 3) || name_eq(o->name, name + 3))) {
        if (negated) *negated = 1;
        return o;
      }
  }
  return NULL;
}

/* --- commands ------------------------------------------------------------- */

static const struct {
  const char *name;
  const char *help;
  gpuplan__cmd_fn fn;
} commands[GPUPLAN__CMD_COUNT] = {
  {"plan", "per-GPU memory for training or serving a model; what to change", gpuplan__cmd_plan},
  {"perf", "step time, MFU, traffic per link and cost of a layout on a cluster", gpuplan__cmd_perf},
  {"search", "the best layouts of a model on a cluster, ranked by time or cost", gpuplan__cmd_search},
  {"simulate", "run training steps through PyTorch's allocator on a mock GPU", gpuplan__cmd_simulate},
  {"replay", "replay a PyTorch memory snapshot through the allocator model", gpuplan__cmd_replay},
  {"explain-oom", "read a PyTorch OOM message: fragmentation or real demand", gpuplan__cmd_explain},
  {"smi", "the nvidia-smi view of this machine's GPUs or of simulated ones (faults)", gpuplan__cmd_smi},
  {"topo", "a node's GPU/NIC matrix (nvidia-smi topo -m) and rank placement", gpuplan__cmd_topo},
  {"doctor", "check a GPU environment: driver, CUDA, ECC, NVLink, throttling", gpuplan__cmd_doctor},
  {"validate", "predicted vs measured throughput of published training runs", gpuplan__cmd_validate},
  {"catalog", "list and show GPUs, nodes/VMs, models and fabrics", gpuplan__cmd_catalog},
  {"version", "the version of the library and its catalog", gpuplan__cmd_version},
  {"serve", "memory, latency, throughput and cost of serving a model (vLLM, SGLang, TensorRT-LLM)",
   gpuplan__cmd_serve},
};

const char *gpuplan_command_name(size_t i) { return i < GPUPLAN__CMD_COUNT ? commands[i].name : NULL; }
const char *gpuplan_command_help(size_t i) { return i < GPUPLAN__CMD_COUNT ? commands[i].help : NULL; }

int gpuplan_command_find(const char *name) {
  int i;
  if (!name) return -1;
  for (i = 0; i < GPUPLAN__CMD_COUNT; i++)
    if (strcmp(commands[i].name, name) == 0) return i;
  return -1;
}

/* --- the job -------------------------------------------------------------- */

int gpuplan_job_new(gpuplan_ctx *ctx, gpuplan_catalog *cat, gpuplan_job **out) {
  gpuplan_job *j;
  if (!out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "job: NULL out");
  *out = NULL;
  if (!ctx || !cat) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "job: NULL context or catalog");
  j = gpuplan__calloc(ctx, 1, sizeof *j);
  if (!j) return gpuplan__nomem(ctx);
  j->ctx = ctx;
  j->cat = cat;
  j->nopts = total_options();
  j->val = gpuplan__calloc(ctx, j->nopts, sizeof *j->val);
  if (!j->val) {
    gpuplan__free(ctx, j);
    return gpuplan__nomem(ctx);
  }
  gpuplan__arena_init(&j->arena, ctx);
  gpuplan__ctx_ref(ctx);
  *out = j;
  return GPUPLAN_OK;
}

void gpuplan_job_free(gpuplan_job *j) {
  gpuplan_ctx *ctx;
  if (!j) return;
  ctx = j->ctx;
  gpuplan__arena_free(&j->arena);
  gpuplan__free(ctx, j->val);
  gpuplan__free(ctx, j);
  gpuplan__ctx_unref(ctx);
}

void gpuplan_job_reset(gpuplan_job *j) {
  if (!j) return;
  memset(j->val, 0, j->nopts * sizeof *j->val);
  gpuplan__arena_free(&j->arena);
  gpuplan__arena_init(&j->arena, j->ctx);
}

void gpuplan_job_set_progress(gpuplan_job *j, gpuplan_job_progress_fn fn, void *payload) {
  if (!j) return;
  j->progress = fn;
  j->progress_payload = payload;
}

const gpuplan__optval *gpuplan__job_val(const gpuplan_job *j, const gpuplan_option_info *opt) {
  size_t i = index_of(opt);
  return i < j->nopts && j->val[i].set ? &j->val[i] : NULL;
}
int gpuplan__job_isset(const gpuplan_job *j, const gpuplan_option_info *opt) {
  return gpuplan__job_val(j, opt) != NULL;
}
int64_t gpuplan__job_int(const gpuplan_job *j, const gpuplan_option_info *opt, int64_t dflt) {
  const gpuplan__optval *v = gpuplan__job_val(j, opt);
  return v ? v->i : dflt;
}
double gpuplan__job_real(const gpuplan_job *j, const gpuplan_option_info *opt, double dflt) {
  const gpuplan__optval *v = gpuplan__job_val(j, opt);
  return v ? v->r : dflt;
}
const char *gpuplan__job_str(const gpuplan_job *j, const gpuplan_option_info *opt, const char *dflt) {
  const gpuplan__optval *v = gpuplan__job_val(j, opt);
  return v ? v->s : dflt;
}
const gpuplan__optlist *gpuplan__job_list(const gpuplan_job *j, const gpuplan_option_info *opt) {
  const gpuplan__optval *v = gpuplan__job_val(j, opt);
  return v ? v->list : NULL;
}

const char *gpuplan__opt_choice(const gpuplan_option_info *opt, int64_t n, char *buf, size_t cap) {
  const char *p = opt->choices;
  buf[0] = 0;
  if (!p || n < 0) return buf;
  while (n-- > 0) {
    p = strchr(p, '|');
    if (!p) return buf;
    p++;
  }
  {
    size_t len = strcspn(p, "|");
    if (len >= cap) len = cap - 1;
    memcpy(buf, p, len);
    buf[len] = 0;
  }
  return buf;
}

static const char *flag_note(const gpuplan_option_info *opt, char *buf, size_t cap) {
  if (strcmp(opt->flag, opt->name) == 0) buf[0] = 0;
  else snprintf(buf, cap, " (--%s)", opt->flag);
  return buf;
}

int gpuplan__opt_error(gpuplan_ctx *ctx, int code, const gpuplan_option_info *opt, const char *fmt, ...) {
  char msg[700], fl[80];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return gpuplan__error(ctx, code, "%s%s: %s", opt->name, flag_note(opt, fl, sizeof fl), msg);
}

/* The allowed values of an option, in words. */
static void allowed(const gpuplan_option_info *o, char *buf, size_t cap) {
  switch (o->type) {
  case GPUPLAN_OPT_INT:
    snprintf(buf, cap, "an integer in %.0f..%.0f", o->min, o->max);
    break;
  case GPUPLAN_OPT_REAL:
    snprintf(buf, cap, "a number in %g..%g", o->min, o->max);
    break;
  case GPUPLAN_OPT_BOOL: snprintf(buf, cap, "true or false"); break;
  case GPUPLAN_OPT_ENUM: {
    size_t k = 0;
    const char *p;
    snprintf(buf, cap, "one of ");
    k = strlen(buf);
    for (p = o->choices; *p && k + 3 < cap; p++) {
      if (*p == '|') {
        buf[k++] = ',';
        buf[k++] = ' ';
      } else {
        buf[k++] = *p;
      }
    }
    buf[k] = 0;
    break;
  }
  case GPUPLAN_OPT_BYTES: {
    char lo[48] = "";
    /* the least size, where there is one (capacity: 1 MiB) */
    if (o->min >= 1048576.0) snprintf(lo, sizeof lo, " from %g MiB", o->min / 1048576.0);
    else if (o->min > 0) snprintf(lo, sizeof lo, " from %.0f bytes", o->min);
    snprintf(buf, cap, "a size in %s (or with a unit: 512MiB, 2GiB, 100MB)%s up to %.0f MiB", o->unit, lo,
             o->max / 1048576.0);
    break;
  }
  default: snprintf(buf, cap, "text"); break;
  }
}

static int bad(gpuplan_ctx *ctx, const gpuplan_option_info *o, const char *shown) {
  char a[300];
  allowed(o, a, sizeof a);
  return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, o, "'%s' is not %s", shown, a);
}

static int store_int(gpuplan_job *j, const gpuplan_option_info *o, int64_t v, const char *shown) {
  size_t i = index_of(o);
  if ((double)v < o->min || (double)v > o->max) {
    char a[300];
    allowed(o, a, sizeof a);
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, o, "%s is out of range (allowed: %s)", shown, a);
  }
  if (o == JOPT(J_GRAD_BYTES) && v != 2 && v != 4)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, o, "%s is not 2 or 4", shown);
  j->val[i].set = 1;
  j->val[i].i = v;
  j->val[i].r = (double)v;
  return GPUPLAN_OK;
}

static int store_real(gpuplan_job *j, const gpuplan_option_info *o, double v, const char *shown) {
  size_t i = index_of(o);
  if (!isfinite(v) || v < o->min || v > o->max) {
    char a[300];
    allowed(o, a, sizeof a);
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, o, "%s is out of range (allowed: %s)", shown, a);
  }
  j->val[i].set = 1;
  j->val[i].r = v;
  j->val[i].i = (int64_t)v;
  return GPUPLAN_OK;
}

static int store_bytes(gpuplan_job *j, const gpuplan_option_info *o, double bytes, const char *shown) {
  size_t i = index_of(o);
  if (!isfinite(bytes) || bytes < o->min || bytes > o->max || bytes != floor(bytes))
    return bad(j->ctx, o, shown);
  j->val[i].set = 1;
  j->val[i].i = (int64_t)bytes;
  j->val[i].r = bytes;
  return GPUPLAN_OK;
}

/* Strict numbers: the whole text, no spaces, no hex, no inf/nan. */
static int parse_real(const char *s, double *out) {
  char *end;
  const char *p = s;
  if (!*s || isspace((unsigned char)*s)) return 0;
  if (*p == '-' || *p == '+') p++;
  if (!isdigit((unsigned char)*p) && *p != '.') return 0;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) return 0;
  errno = 0;
  *out = strtod(s, &end);
  return end != s && *end == 0 && errno != ERANGE && isfinite(*out);
}

static int parse_int(const char *s, int64_t *out) {
  const char *p = s;
  int64_t v = 0;
  int neg = 0;
  if (*p == '-') {
    neg = 1;
    p++;
  }
  if (!isdigit((unsigned char)*p)) return 0;
  for (; *p; p++) {
    if (!isdigit((unsigned char)*p)) return 0;
    if (v > (INT64_MAX - 9) / 10) return 0;
    v = v * 10 + (*p - '0');
  }
  *out = neg ? -v : v;
  return 1;
}

static int parse_size(const char *s, double unit, double *bytes) {
  static const struct { const char *suffix; double mult; } units[] = {
    {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
  };
  char num[64];
  size_t n = 0, k;
  double v;
  while (s[n] && (isdigit((unsigned char)s[n]) || s[n] == '.' || s[n] == 'e' || s[n] == 'E' ||
                  (n && (s[n] == '+' || s[n] == '-') && (s[n - 1] == 'e' || s[n - 1] == 'E'))))
    n++;
  /* "e" alone could start no unit we know: units never start with e */
  if (n == 0 || n >= sizeof num) return 0;
  memcpy(num, s, n);
  num[n] = 0;
  if (!parse_real(num, &v) || v < 0) return 0;
  if (!s[n]) {
    *bytes = v * unit;
    return 1;
  }
  for (k = 0; k < sizeof units / sizeof units[0]; k++)
    if (strcmp(s + n, units[k].suffix) == 0) {
      *bytes = v * units[k].mult;
      return 1;
    }
  return 0;
}

static double unit_bytes(const gpuplan_option_info *o) {
  if (strcmp(o->unit, "MiB") == 0) return 1048576.0;
  if (strcmp(o->unit, "GiB") == 0) return 1073741824.0;
  return 1.0;
}

/* Levenshtein distance, bounded, for "did you mean". */
static int distance(const char *a, const char *b) {
  int row[64], i, j, la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 60 || lb > 60) return 99;
  for (j = 0; j <= lb; j++) row[j] = j;
  for (i = 1; i <= la; i++) {
    int prev = row[0];
    row[0] = i;
    for (j = 1; j <= lb; j++) {
      int cur = row[j];
      int cost = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ? 0 : 1;
      int best = prev + cost;
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      prev = cur;
    }
  }
  return row[lb];
}

static int unknown_option(gpuplan_ctx *ctx, const char *name) {
  const gpuplan_option_info *o, *best = NULL;
  int bd = 99;
  size_t i;
  for (i = 0; (o = gpuplan_job_option(i)); i++) {
    int d = distance(name, o->name), d2 = distance(name, o->flag);
    if (d2 < d) d = d2;
    if (d < bd) {
      bd = d;
      best = o;
    }
  }
  if (best && bd <= 3)
    return gpuplan__error(ctx, GPUPLAN_ENOTFOUND, "option '%s' is unknown; did you mean '%s'?", name, best->name);
  return gpuplan__error(ctx, GPUPLAN_ENOTFOUND, "option '%s' is unknown", name);
}

static const gpuplan_option_info *lookup(gpuplan_job *j, const char *name, int *neg, int *rc) {
  const gpuplan_option_info *o;
  *rc = GPUPLAN_OK;
  if (!j) {
    *rc = GPUPLAN_EMISUSE;
    return NULL;
  }
  if (!name) {
    *rc = gpuplan__error(j->ctx, GPUPLAN_EMISUSE, "job: NULL option name");
    return NULL;
  }
  o = gpuplan_job_option_find(name, neg);
  if (!o) *rc = unknown_option(j->ctx, name);
  return o;
}

static int set_text(gpuplan_job *j, const gpuplan_option_info *o, int neg, const char *v) {
  size_t i = index_of(o);
  char shown[80];
  snprintf(shown, sizeof shown, "%s", v);
  if (neg) {
    int b;
    if (!*v) b = 1;
    else if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0) b = 1;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0) b = 0;
    else return bad(j->ctx, o, shown);
    return store_int(j, o, !b, shown);
  }
  switch (o->type) {
  case GPUPLAN_OPT_INT: {
    int64_t x;
    double d;
    if (parse_int(v, &x)) return store_int(j, o, x, shown);
    /* "1e6" and "300e9": integral reals in scientific notation */
    if (parse_real(v, &d) && strpbrk(v, "eE") && d == floor(d) && fabs(d) < 9.2e18)
      return store_int(j, o, (int64_t)d, shown);
    return bad(j->ctx, o, shown);
  }
  case GPUPLAN_OPT_REAL: {
    double d;
    if (!parse_real(v, &d)) return bad(j->ctx, o, shown);
    return store_real(j, o, d, shown);
  }
  case GPUPLAN_OPT_BOOL: {
    static const char *const yes[] = {"true", "1", "yes", "on", "True", "TRUE"};
    static const char *const no[] = {"false", "0", "no", "off", "False", "FALSE"};
    size_t k;
    for (k = 0; k < 6; k++) {
      if (strcmp(v, yes[k]) == 0) return store_int(j, o, 1, shown);
      if (strcmp(v, no[k]) == 0) return store_int(j, o, 0, shown);
    }
    return bad(j->ctx, o, shown);
  }
  case GPUPLAN_OPT_ENUM: {
    const char *p = o->choices;
    int64_t n = 0;
    while (p && *p) {
      size_t len = strcspn(p, "|");
      char c[64];
      if (len < sizeof c) {
        memcpy(c, p, len);
        c[len] = 0;
        if (name_eq(c, v)) {
          j->val[i].set = 1;
          j->val[i].i = n;
          return GPUPLAN_OK;
        }
      }
      p += len;
      if (*p == '|') p++;
      n++;
    }
    return bad(j->ctx, o, shown);
  }
  case GPUPLAN_OPT_BYTES: {
    double b;
    if (!parse_size(v, unit_bytes(o), &b)) return bad(j->ctx, o, shown);
    return store_bytes(j, o, b, shown);
  }
  case GPUPLAN_OPT_STRING: {
    char *s = gpuplan__arena_strdup(&j->arena, v);
    if (!s) return gpuplan__nomem(j->ctx);
    j->val[i].set = 1;
    j->val[i].s = s;
    return GPUPLAN_OK;
  }
  case GPUPLAN_OPT_LIST: {
    gpuplan__optlist *it = gpuplan__arena_alloc(&j->arena, sizeof *it);
    char *s = gpuplan__arena_strdup(&j->arena, v);
    if (!it || !s) return gpuplan__nomem(j->ctx);
    it->s = s;
    it->next = NULL;
    if (j->val[i].list_tail) j->val[i].list_tail->next = it;
    else j->val[i].list = it;
    j->val[i].list_tail = it;
    j->val[i].set = 1;
    return GPUPLAN_OK;
  }
  }
  return bad(j->ctx, o, shown);
}

int gpuplan_job_set(gpuplan_job *j, const char *name, const char *value) {
  int neg, rc;
  const gpuplan_option_info *o = lookup(j, name, &neg, &rc);
  if (!o) return rc;
  if (!value) return gpuplan__opt_error(j->ctx, GPUPLAN_EMISUSE, o, "NULL value");
  return set_text(j, o, neg, value);
}

int gpuplan_job_set_text(gpuplan_job *j, const char *name, const char *value, size_t len) {
  int neg, rc;
  const gpuplan_option_info *o = lookup(j, name, &neg, &rc);
  if (!o) return rc;
  if (!value) return gpuplan__opt_error(j->ctx, GPUPLAN_EMISUSE, o, "NULL value");
  if (memchr(value, 0, len)) return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, o, "the value contains a NUL byte");
  if (value[len] != 0) {
    /* not NUL-terminated: copy */
    char *s = gpuplan__arena_alloc(&j->arena, len + 1);
    if (!s) return gpuplan__nomem(j->ctx);
    memcpy(s, value, len);
    s[len] = 0;
    value = s;
  }
  return set_text(j, o, neg, value);
}

int gpuplan_job_set_int(gpuplan_job *j, const char *name, int64_t v) {
  int neg, rc;
  char shown[32];
  const gpuplan_option_info *o = lookup(j, name, &neg, &rc);
  if (!o) return rc;
  snprintf(shown, sizeof shown, "%lld", (long long)v);
  switch (o->type) {
  case GPUPLAN_OPT_INT: return store_int(j, o, v, shown);
  case GPUPLAN_OPT_REAL: return store_real(j, o, (double)v, shown);
  case GPUPLAN_OPT_BOOL:
    if (v != 0 && v != 1) return bad(j->ctx, o, shown);
    return store_int(j, o, neg ? !v : v, shown);
  case GPUPLAN_OPT_BYTES: return store_bytes(j, o, (double)v * unit_bytes(o), shown);
  default: {
    char a[300];
    allowed(o, a, sizeof a);
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, o, "takes %s, not the number %s", a, shown);
  }
  }
}

int gpuplan_job_set_real(gpuplan_job *j, const char *name, double v) {
  int neg, rc;
  char shown[40];
  const gpuplan_option_info *o = lookup(j, name, &neg, &rc);
  if (!o) return rc;
  snprintf(shown, sizeof shown, "%g", v);
  switch (o->type) {
  case GPUPLAN_OPT_REAL: return store_real(j, o, v, shown);
  case GPUPLAN_OPT_INT:
    if (isfinite(v) && v == floor(v) && fabs(v) < 9.2e18) return store_int(j, o, (int64_t)v, shown);
    return bad(j->ctx, o, shown);
  case GPUPLAN_OPT_BYTES: return store_bytes(j, o, floor(v * unit_bytes(o) + 0.5), shown);
  case GPUPLAN_OPT_BOOL:
    if (v == 0 || v == 1) return store_int(j, o, neg ? v == 0 : v == 1, shown);
    return bad(j->ctx, o, shown);
  default: {
    char a[300];
    allowed(o, a, sizeof a);
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, o, "takes %s, not the number %s", a, shown);
  }
  }
}

int gpuplan_job_set_bool(gpuplan_job *j, const char *name, int v) {
  int neg, rc;
  const gpuplan_option_info *o = lookup(j, name, &neg, &rc);
  if (!o) return rc;
  if (o->type != GPUPLAN_OPT_BOOL) {
    char a[300];
    allowed(o, a, sizeof a);
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, o, "takes %s, not a boolean", a);
  }
  return store_int(j, o, neg ? !v : !!v, v ? "true" : "false");
}

int gpuplan_job_unset(gpuplan_job *j, const char *name) {
  int neg, rc;
  const gpuplan_option_info *o = lookup(j, name, &neg, &rc);
  if (!o) return rc;
  memset(&j->val[index_of(o)], 0, sizeof j->val[0]);
  return GPUPLAN_OK;
}

int gpuplan_job_run(gpuplan_job *j, const char *command, gpuplan_doc **out) {
  int c;
  size_t i;
  if (!out) return j ? gpuplan__error(j->ctx, GPUPLAN_EMISUSE, "job: NULL out") : GPUPLAN_EMISUSE;
  *out = NULL;
  if (!j) return GPUPLAN_EMISUSE;
  c = gpuplan_command_find(command);
  if (c < 0) return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "command '%s' is unknown", command ? command : "(null)");
  for (i = 0; i < j->nopts; i++) {
    const gpuplan_option_info *o = gpuplan_job_option(i);
    if (j->val[i].set && !(o->commands & (1u << c))) {
      char who[200] = "";
      size_t k, len = 0;
      for (k = 0; k < GPUPLAN__CMD_COUNT; k++)
        if (o->commands & (1u << k)) {
          snprintf(who + len, sizeof who - len, "%s%s", len ? ", " : "", commands[k].name);
          len = strlen(who);
        }
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, o, "%s does not take this option (%s%s do)", command,
                                len ? "" : "no command", who);
    }
  }
  gpuplan__clear(j->ctx);
  return commands[c].fn(j, out);
}

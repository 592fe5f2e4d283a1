/* out.c: JSON, CSV and aligned-table output for the gpuplan command. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

void json_str(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    switch (ch) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    default:
      if (ch < 0x20) fprintf(f, "\\u%04x", ch);
      else fputc(ch, f);
    }
  }
  fputc('"', f);
}

void json_num(FILE *f, double v) {
  if (!isfinite(v)) {
    fputs("null", f);
    return;
  }
  if (v == floor(v) && fabs(v) < 9.007199254740992e15)
    fprintf(f, "%.0f", v);
  else
    fprintf(f, "%.15g", v);
}

static void json_field(FILE *f, const gpuplan_field *fd, const void *rec) {
  const char *p = (const char *)rec + fd->offset;
  switch (fd->type) {
  case GPUPLAN_FIELD_STRING: json_str(f, *(const char *const *)p); break;
  case GPUPLAN_FIELD_INT: fprintf(f, "%lld", (long long)*(const int64_t *)p); break;
  case GPUPLAN_FIELD_UINT:
    fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p);
    break;
  case GPUPLAN_FIELD_REAL: json_num(f, *(const double *)p); break;
  case GPUPLAN_FIELD_BOOL: fputs(*(const int *)p ? "true" : "false", f); break;
  }
}

void json_record(FILE *f, gpuplan_kind kind, const void *rec, int indent) {
  size_t n, i;
  const gpuplan_field *fd = gpuplan_kind_fields(kind, &n);
  fputs("{", f);
  for (i = 0; i < n; i++) {
    fprintf(f, "%s\n%*s", i ? "," : "", indent + 2, "");
    json_str(f, fd[i].name);
    fputs(": ", f);
    json_field(f, &fd[i], rec);
  }
  fprintf(f, "\n%*s}", indent, "");
}

static void csv_str(FILE *f, const char *s) {
  if (!s) return;
  if (strpbrk(s, ",\"\n\r")) {
    fputc('"', f);
    for (; *s; s++) {
      if (*s == '"') fputc('"', f);
      fputc(*s, f);
    }
    fputc('"', f);
  } else {
    fputs(s, f);
  }
}

void csv_header(FILE *f, gpuplan_kind kind) {
  size_t n, i;
  const gpuplan_field *fd = gpuplan_kind_fields(kind, &n);
  for (i = 0; i < n; i++) fprintf(f, "%s%s", i ? "," : "", fd[i].name);
  fputc('\n', f);
}

void csv_record(FILE *f, gpuplan_kind kind, const void *rec) {
  size_t n, i;
  const gpuplan_field *fd = gpuplan_kind_fields(kind, &n);
  for (i = 0; i < n; i++) {
    const char *p = (const char *)rec + fd[i].offset;
    if (i) fputc(',', f);
    switch (fd[i].type) {
    case GPUPLAN_FIELD_STRING: csv_str(f, *(const char *const *)p); break;
    case GPUPLAN_FIELD_INT: fprintf(f, "%lld", (long long)*(const int64_t *)p); break;
    case GPUPLAN_FIELD_UINT:
      fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p);
      break;
    case GPUPLAN_FIELD_REAL:
      if (isfinite(*(const double *)p)) json_num(f, *(const double *)p);
      break;
    case GPUPLAN_FIELD_BOOL: fputs(*(const int *)p ? "1" : "0", f); break;
    }
  }
  fputc('\n', f);
}

/* --- table ----------------------------------------------------------------- */

struct table {
  int ncols;
  char **cells;
  size_t n, cap;
  char align[32];
};

table *table_new(int ncols) {
  table *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->ncols = ncols > 32 ? 32 : ncols;
  memset(t->align, 'l', sizeof t->align);
  return t;
}

void table_align(table *t, int col, char how) {
  if (t && col >= 0 && col < t->ncols) t->align[col] = how;
}

void table_cell(table *t, const char *fmt, ...) {
  va_list ap;
  char buf[2048];
  if (!t) return;
  char safe[4 * sizeof buf];
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  term_safe(buf, safe, sizeof safe);
  if (t->n == t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 64;
    char **nc = realloc(t->cells, ncap * sizeof *nc);
    if (!nc) return;
    t->cells = nc;
    t->cap = ncap;
  }
  t->cells[t->n] = strdup(safe);
  if (t->cells[t->n]) t->n++;
}

/* Display width of UTF-8 text: count code points. */
static size_t width(const char *s) {
  size_t w = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xc0) != 0x80) w++;
  return w;
}

void table_print(table *t, FILE *f) {
  size_t w[32] = {0}, i;
  int c;
  if (!t) return;
  for (i = 0; i < t->n; i++) {
    size_t cw = width(t->cells[i]);
    c = (int)(i % (size_t)t->ncols);
    if (cw > w[c]) w[c] = cw;
  }
  for (i = 0; i < t->n; i++) {
    c = (int)(i % (size_t)t->ncols);
    size_t pad = w[c] - width(t->cells[i]);
    int last = c == t->ncols - 1 || i + 1 == t->n;
    if (t->align[c] == 'r') fprintf(f, "%*s", (int)pad, "");
    fputs(t->cells[i], f);
    if (!last) {
      if (t->align[c] != 'r') fprintf(f, "%*s", (int)pad, "");
      fputs("  ", f);
    } else {
      fputc('\n', f);
    }
  }
}

void table_free(table *t) {
  size_t i;
  if (!t) return;
  for (i = 0; i < t->n; i++) free(t->cells[i]);
  free(t->cells);
  free(t);
}

/* --- documents ------------------------------------------------------------- */

const gpuplan_value *dv(const gpuplan_value *v, const char *path) { return gpuplan_value_path(v, path); }

void print_memory_stats(const gpuplan_value *r, const char *title) {
  const gpuplan_value *m = gpuplan_value_get(r, "memory_stats");
  size_t i;
  if (m && gpuplan_value_type_of(m) == GPUPLAN_VALUE_NULL)
    printf("\nmemory_stats(): none (the replay stopped where it diverged)\n");
  if (gpuplan_value_type_of(m) != GPUPLAN_VALUE_OBJECT) return;
  printf("\n%s\n", title);
  for (i = 0; i < gpuplan_value_count(m); i++)
    printf("  %-40s %lld\n", gpuplan_value_key(m, i), (long long)gpuplan_value_int(gpuplan_value_at(m, i)));
}

double dnum(const gpuplan_value *v, const char *path) {
  const gpuplan_value *x = gpuplan_value_path(v, path);
  gpuplan_value_type t = gpuplan_value_type_of(x);
  return t == GPUPLAN_VALUE_INT || t == GPUPLAN_VALUE_REAL ? gpuplan_value_real(x) : NAN;
}

int64_t dint(const gpuplan_value *v, const char *path) { return gpuplan_value_int(gpuplan_value_path(v, path)); }

const char *dstr(const gpuplan_value *v, const char *path) {
  const char *s = gpuplan_value_string(gpuplan_value_path(v, path), NULL);
  return s ? s : "";
}

int dbool(const gpuplan_value *v, const char *path) { return gpuplan_value_bool(gpuplan_value_path(v, path)); }

int disnull(const gpuplan_value *v, const char *path) {
  return gpuplan_value_type_of(gpuplan_value_path(v, path)) == GPUPLAN_VALUE_NULL;
}

const char *term_safe(const char *s, char *buf, size_t cap) {
  size_t n = 0;
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  if (!cap) return buf;
  for (; *p && n + 5 < cap; p++) {
    int c1 = p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f; /* C1 controls in UTF-8 */
    if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f || c1) {
      if (c1) p++;
      n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", c1 ? *p : *p);
    } else {
      buf[n++] = (char)*p;
    }
  }
  buf[n] = 0;
  return buf;
}

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * conf.c: the allocator's settings, as PyTorch parses PYTORCH_ALLOC_CONF
 * (c10/core/AllocatorConfig.cpp, c10/cuda/CUDAAllocatorConfig.cpp: max_split_size_mb,
 * roundup_power2_divisions, garbage_collection_threshold, expandable_segments,
 * ...), and the size rounding they govern (round_size, R2-R5;
 * get_allocation_size, R7).  Rule numbers refer to
 * data/reference/allocator-rules.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_parts.h"

/* --- configuration ------------------------------------------------------- */

void gpuplan__alloc_conf_defaults(gpuplan_alloc_conf *c, gpuplan_torch_version v) {
  memset(c, 0, sizeof *c);
  c->version = GPUPLAN_ALLOC_CONF_VERSION;
  c->torch = v;
  c->max_split_size = UINT64_MAX;
  c->max_non_split_rounding = 20 * MiB;
  c->large_segment_size = 20 * MiB;
  c->memory_fraction = 1.0;
}

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

static int ilog2(uint64_t x) {
  int r = -1;
  while (x) {
    x >>= 1;
    r++;
  }
  return r;
}

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t') p++;
  return p;
}

/* Parse an unsigned decimal; returns the end or NULL. */
static const char *parse_u64(const char *p, uint64_t *out) {
  uint64_t v = 0;
  const char *s = p;
  while (*p >= '0' && *p <= '9') {
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return NULL;
    v = v * 10 + d;
    p++;
  }
  if (p == s) return NULL;
  *out = v;
  return p;
}

static int conf_err(gpuplan_ctx *ctx, const char *key, const char *fmt, const char *val) {
  return gpuplan__error(ctx, GPUPLAN_EINVAL, "alloc conf%s%s: %s (got '%.60s')", *key ? " " : "", key, fmt, val);
}

/* roundup_power2_divisions: "4" or "[256:1,512:2,1024:4,>:8]" (R5). */
static const char *parse_divisions(gpuplan_ctx *ctx, const char *p, gpuplan_alloc_conf *c,
                                   int *rc) {
  uint64_t v;
  int i;
  *rc = GPUPLAN_OK;
  p = skip_ws(p);
  if (*p != '[') {
    const char *e = parse_u64(p, &v);
    if (!e || (v != 0 && !is_pow2(v)) || v > 65536) {
      *rc = conf_err(ctx, "roundup_power2_divisions", "must be 0 or a power of two", p);
      return NULL;
    }
    for (i = 0; i < 16; i++) c->roundup_divisions[i] = (unsigned)v;
    return e;
  }
  {
    int last = -1, first = 1;
    p++;
    for (;;) {
      uint64_t key = 0, val;
      int gt = 0, idx;
      p = skip_ws(p);
      if (*p == '>') {
        gt = 1;
        p++;
      } else {
        p = parse_u64(p, &key);
        if (!p || !is_pow2(key)) {
          *rc = conf_err(ctx, "roundup_power2_divisions", "keys are power-of-two sizes in MB or '>'", p ? p : "?");
          return NULL;
        }
      }
      p = skip_ws(p);
      if (*p != ':') {
        *rc = conf_err(ctx, "roundup_power2_divisions", "expected ':' in [size:divisions,...]", p);
        return NULL;
      }
      p = parse_u64(skip_ws(p + 1), &val);
      if (!p || (val != 0 && !is_pow2(val)) || val > 65536) {
        *rc = conf_err(ctx, "roundup_power2_divisions", "divisions must be 0 or a power of two", p ? p : "?");
        return NULL;
      }
      if (gt) {
        /* Newest code fills from last+1; older code from last, overwriting
         * the last explicit key (R5). */
        int from = c->torch == GPUPLAN_TORCH_LATEST ? last + 1 : (last < 0 ? 0 : last);
        for (i = from; i < 16; i++) c->roundup_divisions[i] = (unsigned)val;
      } else {
        idx = ilog2(key);
        if (idx > 15) idx = 15;
        if (first)
          for (i = 0; i < idx; i++) c->roundup_divisions[i] = (unsigned)val;
        c->roundup_divisions[idx] = (unsigned)val;
        last = idx;
      }
      first = 0;
      p = skip_ws(p);
      if (*p == ',') {
        p++;
        continue;
      }
      if (*p == ']') return p + 1;
      *rc = conf_err(ctx, "roundup_power2_divisions", "expected ',' or ']'", p);
      return NULL;
    }
  }
}

/* A real number that is the whole of v[0..n). */
static int parse_real(const char *v, size_t n, double *out) {
  char buf[64];
  char *e;
  if (n == 0 || n >= sizeof buf) return 0;
  memcpy(buf, v, n);
  buf[n] = '\0';
  *out = strtod(buf, &e);
  return *e == '\0';
}

static int parse_bool(const char *v, size_t n, int *out) {
  if (n == 4 && (strncmp(v, "True", 4) == 0 || strncmp(v, "true", 4) == 0)) *out = 1;
  else if (n == 5 && (strncmp(v, "False", 5) == 0 || strncmp(v, "false", 5) == 0)) *out = 0;
  else return 0;
  return 1;
}

int gpuplan_alloc_conf_parse(gpuplan_ctx *ctx, const char *s, gpuplan_torch_version v,
                             gpuplan_alloc_conf *out) {
  const char *p;
  int rc;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "alloc conf: out is NULL");
  if ((unsigned)v > GPUPLAN_TORCH_1_13)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "alloc conf: unknown torch version %d", (int)v);
  gpuplan__alloc_conf_defaults(out, v);
  if (!s) return GPUPLAN_OK;
  p = s;
  while (*(p = skip_ws(p))) {
    const char *k = p, *val;
    size_t klen, vlen;
    while (*p && *p != ':' && *p != ',') p++;
    klen = (size_t)(p - k);
    while (klen && (k[klen - 1] == ' ')) klen--;
    if (*p != ':')
      return conf_err(ctx, "", "expected key:value", k);
    val = skip_ws(p + 1);
#define KEY(name) (klen == sizeof(name) - 1 && strncmp(k, name, klen) == 0)
    if (KEY("roundup_power2_divisions")) {
      p = parse_divisions(ctx, val, out, &rc);
      if (!p) return rc;
    } else {
      p = val;
      while (*p && *p != ',') p++;
      vlen = (size_t)(p - val);
      while (vlen && val[vlen - 1] == ' ') vlen--;
      if (KEY("max_split_size_mb")) {
        uint64_t mb;
        const char *e = parse_u64(val, &mb);
        if (!e || (size_t)(e - val) != vlen)
          return conf_err(ctx, "max_split_size_mb", "must be an integer number of MiB", val);
        if (mb < 20)
          return conf_err(ctx, "max_split_size_mb", "must be at least 20 (kLargeBuffer)", val);
        out->max_split_size = mb > (UINT64_MAX >> 20) ? UINT64_MAX : mb << 20;
      } else if (KEY("max_non_split_rounding_mb")) {
        uint64_t mb;
        const char *e = parse_u64(val, &mb);
        if (!e || (size_t)(e - val) != vlen || mb > (1ull << 40))
          return conf_err(ctx, "max_non_split_rounding_mb", "must be an integer number of MiB", val);
        out->max_non_split_rounding = mb << 20;
      } else if (KEY("garbage_collection_threshold")) {
        double t;
        if (!parse_real(val, vlen, &t) || !(t > 0 && t < 1))
          return conf_err(ctx, "garbage_collection_threshold", "must be in (0, 1)", val);
        out->garbage_collection_threshold = t;
      } else if (KEY("expandable_segments")) {
        if (!parse_bool(val, vlen, &out->expandable_segments))
          return conf_err(ctx, "expandable_segments", "must be True or False", val);
      } else if (KEY("large_segment_size_mb")) {
        uint64_t mb;
        const char *e = parse_u64(val, &mb);
        if (!e || (size_t)(e - val) != vlen || mb < 2 || mb > 65536)
          return conf_err(ctx, "large_segment_size_mb", "must be an integer number of MiB >= 2", val);
        out->large_segment_size = mb << 20;
      } else if (KEY("per_process_memory_fraction")) {
        double t;
        if (!parse_real(val, vlen, &t) || !(t > 0 && t <= 1))
          return conf_err(ctx, "per_process_memory_fraction", "must be in (0, 1]", val);
        out->memory_fraction = t;
      } else if (KEY("backend")) {
        if (!(vlen == 6 && strncmp(val, "native", 6) == 0))
          return conf_err(ctx, "backend", "only 'native' is modelled (cudaMallocAsync is not)", val);
      } else if (KEY("release_lock_on_cudamalloc") || KEY("pinned_use_cuda_host_register") ||
                 KEY("pinned_num_register_threads") || KEY("graph_capture_record_stream_reuse") ||
                 KEY("pinned_use_background_threads")) {
        /* Accepted; no effect on a single-threaded model. */
      } else {
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(klen < 60 ? klen : 60), k);
        return gpuplan__error(ctx, GPUPLAN_EINVAL,
                              "alloc conf: unknown key '%s' (known: max_split_size_mb, "
                              "roundup_power2_divisions, garbage_collection_threshold, "
                              "expandable_segments, max_non_split_rounding_mb, "
                              "large_segment_size_mb, per_process_memory_fraction, backend)", key);
      }
    }
#undef KEY
    p = skip_ws(p);
    if (*p == ',') p++;
    else if (*p) return conf_err(ctx, "", "expected ',' between settings", p);
  }
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

/* --- rounding (R2-R4, R7) ------------------------------------------------ */

static unsigned divisions_for(const gpuplan_alloc_conf *c, uint64_t n) {
  int idx = ilog2(n) - 20;
  if (idx < 0) idx = 0;
  if (idx > 15) idx = 15;
  return c->roundup_divisions[idx];
}

static uint64_t next_division(uint64_t n, uint64_t d) {
  uint64_t f, step;
  if (is_pow2(n)) return n;
  f = 1ull << ilog2(n);
  step = f >> ilog2(d);
  if (step == 0) return 2 * f;
  return (n + step - 1) / step * step;
}

uint64_t gpuplan__round_size(const gpuplan_alloc_conf *c, uint64_t n) {
  uint64_t d;
  if (n < KMIN_BLOCK) return KMIN_BLOCK;
  d = divisions_for(c, n);
  if ((c->torch == GPUPLAN_TORCH_LATEST ? d > 1 : d > 0) && n > KMIN_BLOCK * d)
    return next_division(n, d);
  return (n + KMIN_BLOCK - 1) / KMIN_BLOCK * KMIN_BLOCK;
}

uint64_t gpuplan__allocation_size(const gpuplan_alloc_conf *c, uint64_t size) {
  if (size <= KSMALL_SIZE) return KSMALL_BUFFER;
  if (size < KMIN_LARGE_ALLOC) return c->large_segment_size;
  return (size + KROUND_LARGE - 1) / KROUND_LARGE * KROUND_LARGE;
}


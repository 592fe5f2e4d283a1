/*
 * conf.c: the allocator's settings, as PyTorch parses PYTORCH_ALLOC_CONF
 * (c10/core/AllocatorConfig.cpp, c10/cuda/CUDAAllocatorConfig.cpp: max_split_size_mb,
 * roundup_power2_divisions, garbage_collection_threshold, expandable_segments,
 * ...), and the size rounding they govern (round_size, R2-R5;
 * get_allocation_size, R7).  Rule numbers refer to
 * data/reference/allocator-rules.md.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_parts.h"

/* --- releases ---------------------------------------------------------------
 *
 * Every rule that differs between releases tests c->release (major*100 +
 * minor) and cites the PyTorch source it follows.  Sources read (through
 * the code index; "id" is the index's id where it names no commit):
 *   [113]  c10/cuda/CUDACachingAllocator.cpp as of tag v1.13.1 (a verbatim
 *          third-party copy, index id 17481589746, that names the tag), and
 *          a late-2022 main version (index id 171536164)
 *   [CCA]  c10/cuda/CUDACachingAllocator.cpp @ eb42ad6eca0c (CUDAAllocatorConfig
 *          era, ~2.3) and the newest main (index id 79076714)
 *   [CFG]  c10/cuda/CUDAAllocatorConfig.cpp, pre-refactor version with
 *          graph_capture_record_stream_reuse and pinned_reserve_segment_size_mb
 *          (index id 706613213, the parser of 2.9), and the refactored
 *          @ 01f9ef32eae5 / @ b944315b93d3 (2.10 and later)
 *   [ACF]  c10/core/AllocatorConfig.cpp @ 0ac716637f32 (AcceleratorAllocatorConfig)
 *   [HDR]  c10/cuda/CUDAAllocatorConfig.h @ 012117ce596c (~2.6-2.7)
 * and the pull requests that made each change, placed in the release whose
 * branch was cut after them (docs/allocator.md, "Versions"). */

#define REL_MAIN 211u /* GPUPLAN_TORCH_LATEST: main after 2.10 */

unsigned gpuplan__release_of(gpuplan_torch_version v) {
  int x = (int)v;
  switch (x) {
  case GPUPLAN_TORCH_LATEST: return REL_MAIN;
  case GPUPLAN_TORCH_2_0: return 200;
  case GPUPLAN_TORCH_2_X: return 209; /* "2.x" (2.1-2.9): the rules of the last of them */
  case GPUPLAN_TORCH_1_13: return 113;
  default: break;
  }
  if (x == 113 || (x >= 200 && x <= 210)) return (unsigned)x;
  return 0;
}

void gpuplan__torch_release_name(unsigned r, char *buf, size_t cap) {
  if (r >= REL_MAIN) snprintf(buf, cap, "main after 2.10");
  else snprintf(buf, cap, "%u.%u", r / 100, r % 100);
}

/* PYTORCH_ALLOC_CONF reaches the CUDA allocator from 2.10: the refactored
 * CUDAAllocatorConfig reuses AcceleratorAllocatorConfig ([CFG] @ 01f9ef32,
 * pytorch#165135), whose instance() reads PYTORCH_ALLOC_CONF, then
 * PYTORCH_CUDA_ALLOC_CONF as a deprecated alias ([ACF]).  In 2.8 and 2.9
 * only the generic config read it and the CUDA allocator ignored it
 * (pytorch#183387, "silently ignored for CUDA in 2.9.1"); before 2.8 only
 * PYTORCH_CUDA_ALLOC_CONF existed ([HDR] instance()). */
int gpuplan__reads_pytorch_alloc_conf(unsigned release) { return release >= 210; }

/* The OOM text.  <= 2.0: "(GPU 0; ... total capacity; ...)" ([113], id
 * 171536164); 2.2-2.9: "GPU 0 has a total capacity of ..." with
 * PYTORCH_CUDA_ALLOC_CONF and the pytorch.org #environment-variables link
 * (2.x logs, e.g. pytorch/FBGEMM#3763 on a 2.6 nightly); 2.1 has its own
 * wording (gpuplan__oom_text_v21); 2.10: 2.2-2.9's with
 * PYTORCH_ALLOC_CONF (huggingface/trl#5197's log; pytorch#172327 describes
 * the text it replaced); main after 2.10: PYTORCH_CUDA_ALLOC_CONF again and
 * the docs.pytorch.org link (pytorch#172327, 2026-01-13; [CCA] newest). */
int gpuplan__oom_text_v1(const gpuplan_alloc_conf *c) { return c->release < 201; }
/* 2.1's own text (review 2026-12-02): pytorch#99699 ("Improve OOM error
 * message", 2023-04, after the 2.0 branch cut) wrote "GPU 0 has a total
 * capacty of" (sic), advised max_split_size_mb and ended "See documentation
 * for Memory Management and PYTORCH_CUDA_ALLOC_CONF", no link;
 * pytorch#113481 ("Don't recommmend max_split_size_mb first", 2023-11,
 * after 2.1.0) brought the expandable_segments advice and the link in 2.2.
 * Logs of 2.1 runs show the text (a traceback through 2.1's
 * Module._wrapped_call_impl ending in it; FoundationVision/GenerateU#10). */
int gpuplan__oom_text_v21(const gpuplan_alloc_conf *c) { return c->release == 201; }

/* R35: the OOM text's "with X allocated in private pools (e.g., CUDA
 * Graphs), " (pytorch#124673, merged 2024-04 for pytorch#121932, after
 * 2.3's branch cut: pytorch#121974 moved main to 2.4.0 on 2024-03-15;
 * so 2.4). */
int gpuplan__oom_private_pools(const gpuplan_alloc_conf *c) { return c->release >= 204; }

/* R34: whether a private pool's segments are expandable when
 * expandable_segments is on.  Before pytorch#128068 ("Support for
 * expandable segments with cuda graph trees", 2024-06) alloc_block took
 * the expandable path only for `!p.pool->owner_PrivatePool` ("our
 * checkpointing logic for private pools doesn't support the
 * expandable_segments_ structure yet"), so private pools got cudaMalloc
 * segments; after it, both pools do.  It was still in review on
 * 2024-06-14, after 2.4's branch cut (pytorch#128514 moved main to 2.5.0
 * on 2024-06-12): 2.5. */
int gpuplan__private_pools_expandable(unsigned release) { return release >= 205; }
const char *gpuplan__oom_env(const gpuplan_alloc_conf *c) {
  return c->release == 210 ? "PYTORCH_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
}
const char *gpuplan__oom_url(const gpuplan_alloc_conf *c) {
  return c->release >= REL_MAIN
             ? "https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf"
             : "https://pytorch.org/docs/stable/notes/cuda.html#environment-variables";
}

/* memory_summary(): 1.13's KB/MB layout without "Requested memory" rows
 * (torch/cuda/memory.py of 1.13; requested_bytes came in 2.0). */
int gpuplan__summary_v113(unsigned release) { return release && release < 200; }

/* torch.cuda.memory_snapshot() of 1.13: the list of segments alone, each
 * allocated block's history (the dict with device_traces came in 2.0). */
int gpuplan__snapshot_v113(unsigned release) { return release && release < 200; }

/* Expandable segments exist from 2.1 (pytorch#96995; the key table below). */
int gpuplan__has_expandable_segments(unsigned release) { return release >= 201; }

/* Which of gpuplan__round_size's rules a release follows: 0 1.13 (the
 * bypass threshold), 1 2.0 to 2.3 (a division of 1 leaves a request
 * unrounded), 2 from 2.4 (it rounds to 512 bytes, pytorch#126830). */
int gpuplan__rounding_rules(unsigned release) { return release < 200 ? 0 : release < 204 ? 1 : 2; }

/* --- configuration ------------------------------------------------------- */

void gpuplan__alloc_conf_defaults(gpuplan_alloc_conf *c, gpuplan_torch_version v) {
  memset(c, 0, sizeof *c);
  c->version = GPUPLAN_ALLOC_CONF_VERSION;
  c->torch = v;
  c->release = gpuplan__release_of(v);
  if (!c->release) c->release = REL_MAIN;
  c->max_split_size = UINT64_MAX;
  c->max_non_split_rounding = 20 * MiB;
  c->large_segment_size = 20 * MiB;
  c->memory_fraction = 1.0;
  c->roundup_bypass_threshold = UINT64_MAX;
}

unsigned gpuplan__alloc_conf_release(const gpuplan_alloc_conf *c) {
  if (c->version >= 2 && c->release) {
    if (c->release == 113 || (c->release >= 200 && c->release <= REL_MAIN)) return c->release;
    return 0;
  }
  return gpuplan__release_of(c->torch);
}

void gpuplan__alloc_conf_copy(gpuplan_alloc_conf *dst, const gpuplan_alloc_conf *src) {
  unsigned r = gpuplan__alloc_conf_release(src);
  if (src->version >= 2) {
    *dst = *src;
  } else { /* a version-1 caller's structure ends before release */
    gpuplan__alloc_conf_defaults(dst, src->torch);
    memcpy(dst, src, offsetof(gpuplan_alloc_conf, release));
    dst->version = GPUPLAN_ALLOC_CONF_VERSION;
  }
  dst->release = r ? r : REL_MAIN;
}

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

/* floor(log2(x)), -1 for 0: one instruction where the compiler has it
 * (round_size runs it on every allocation). */
static int ilog2(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
  return x ? 63 - __builtin_clzll(x) : -1;
#else
  int r = -1;
  while (x) {
    x >>= 1;
    r++;
  }
  return r;
#endif
}

unsigned gpuplan__roundup_interval(uint64_t mb) {
  const int i = ilog2(mb);
  return i < 0 ? 0 : i > 15 ? 15 : (unsigned)i;
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

/* An error in the [size:divisions,...] list naming the token at tok (up to
 * the next ',', ':' or ']'), or saying there is none. */
static int div_err(gpuplan_ctx *ctx, const char *what, const char *tok) {
  size_t n = strcspn(tok, ",:]");
  if (n == 0)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "alloc conf roundup_power2_divisions: %s (got nothing before '%.20s')",
                          what, *tok ? tok : "the end");
  return gpuplan__error(ctx, GPUPLAN_EINVAL, "alloc conf roundup_power2_divisions: %s (got '%.*s')", what,
                        (int)(n > 60 ? 60 : n), tok);
}

/* The largest division PyTorch reads: 2.0-2.9 read it with stoi (an int:
 * 2^30 is the largest power of two), 2.10 with toSizeT; gpuplan keeps it in
 * an unsigned and takes up to 2^30 in every release (was 65536, a cap
 * PyTorch never had; review 2026-12-02). */
#define MAX_DIVISIONS (1u << 30)

/* roundup_power2_divisions: "4" or "[256:1,512:2,1024:4,>:8]" (R5). */

static const char *parse_divisions(gpuplan_ctx *ctx, const char *p, gpuplan_alloc_conf *c,
                                   int *rc) {
  uint64_t v;
  int i;
  char rel[24];
  *rc = GPUPLAN_OK;
  p = skip_ws(p);
  gpuplan__torch_release_name(c->release, rel, sizeof rel);
  if (*p != '[') {
    /* The single value must be a power of two in every release: 0 is
     * refused (llvm::isPowerOf2_64(0) is false; [113] parseArgs, [CFG]
     * "Keep this for backwards compatibility", [ACF]); 0 turns an
     * interval off only inside the list. */
    const char *e = parse_u64(p, &v);
    if (!e || !is_pow2(v) || v > MAX_DIVISIONS) {
      *rc = conf_err(ctx, "roundup_power2_divisions",
                     "must be a power of two up to 2^30 (0, off, only inside the [...] list)", p);
      return NULL;
    }
    for (i = 0; i < 16; i++) c->roundup_divisions[i] = (unsigned)v;
    return e;
  }
  /* The per-interval list came in 2.0 (pytorch#87290); 1.13 took one
   * value ([113]: stoi of the text after ':'). */
  if (c->release < 200) {
    *rc = gpuplan__error(ctx, GPUPLAN_EINVAL,
                         "alloc conf roundup_power2_divisions: the [size:divisions,...] list form came in torch 2.0 "
                         "(pytorch#87290); torch %s takes one value (got '%.60s')", rel, p);
    return NULL;
  }
  {
    int last = 0, first = 1; /* PyTorch's last_index and first_value */
    p++;
    for (;;) {
      uint64_t key = 0, val;
      int gt = 0, idx;
      const char *tok;
      p = tok = skip_ws(p);
      if (*p == '>') {
        gt = 1;
        p++;
      } else {
        p = parse_u64(p, &key);
        if (!p || !is_pow2(key) || (*skip_ws(p) && !strchr(":,]", *skip_ws(p)))) {
          *rc = div_err(ctx, "keys are power-of-two sizes in MB or '>'", tok);
          return NULL;
        }
      }
      p = skip_ws(p);
      if (*p != ':') {
        *rc = conf_err(ctx, "roundup_power2_divisions", "expected ':' in [size:divisions,...]", p);
        return NULL;
      }
      tok = skip_ws(p + 1);
      p = parse_u64(tok, &val);
      if (!p || (val != 0 && !is_pow2(val)) || val > MAX_DIVISIONS || (*skip_ws(p) && !strchr(",]", *skip_ws(p)))) {
        *rc = div_err(ctx, "divisions must be 0 or a power of two up to 2^30", tok);
        return NULL;
      }
      if (gt) {
        /* '>' fills from last_index + 1 since 2.10 ([ACF]
         * parseRoundUpPower2Divisions, used by CUDA from pytorch#165135);
         * up to 2.9 from last_index, overwriting the last explicit key
         * ([CFG] id 706613213, R5). */
        /* last_index starts at 0 in both ([CFG], [ACF]): a '>' before any
         * key fills from 0 up to 2.9 and from 1 in 2.10 (review
         * 2026-12-02: was from 0) */
        int from = c->release >= 210 ? last + 1 : last;
        for (i = from; i < 16; i++) c->roundup_divisions[i] = (unsigned)val;
      } else {
        idx = (int)gpuplan__roundup_interval(key);
        /* the first explicit key fills the intervals below it; a '>'
         * before it does not count as first (first_value is cleared in
         * the key's branch only, [CFG] and [ACF]; review 2026-12-02) */
        if (first)
          for (i = 0; i < idx; i++) c->roundup_divisions[i] = (unsigned)val;
        first = 0;
        c->roundup_divisions[idx] = (unsigned)val;
        last = idx;
      }
      p = skip_ws(p);
      if (*p == ',') {
        p++;
        continue;
      }
      if (*p == ']') return p + 1;
      *rc = *p ? conf_err(ctx, "roundup_power2_divisions", "expected ',' or ']'", p)
               : gpuplan__error(ctx, GPUPLAN_EINVAL,
                                "alloc conf roundup_power2_divisions: the [size:divisions,...] list is not closed "
                                "with ']'");
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

/* True or False, as every release spells them (ConfigTokenizer::toBool in
 * [ACF]; "Expected a single True/False argument" in [CFG]). */
static int parse_bool(const char *v, size_t n, int *out) {
  if (n == 4 && strncmp(v, "True", 4) == 0) *out = 1;
  else if (n == 5 && strncmp(v, "False", 5) == 0) *out = 0;
  else return 0;
  return 1;
}

/* The keys, with the first release that parsed each and the last (0:
 * still parsed).  A key outside its range is refused, as that release
 * refused it. */
typedef struct key_rule {
  const char *name;
  unsigned since, until;
  int cuda; /* 2.10's CUDAAllocatorConfig::getKeys() has it: the CUDA allocator's own, not the generic config's */
} key_rule;

static const key_rule keys[] = {
  /* [113] CachingAllocatorConfig::parseArgs: the four keys of 1.13 */
  {"max_split_size_mb", 113, 0, 0},
  {"roundup_power2_divisions", 113, 0, 0},
  {"garbage_collection_threshold", 113, 0, 0},
  /* [113]; gone from CUDAAllocatorConfig.cpp (split out for 2.0), the
   * per-interval list of pytorch#87290 replacing it ([CCA] @ eb42ad6e has
   * no bypass) */
  {"roundup_bypass_threshold_mb", 113, 113, 0},
  /* backend:cudaMallocAsync (pytorch#82682, re-opened 2022-08): not in
   * [113]'s v1.13.1 copy, in its late-2022 main (id 171536164): 2.0 */
  {"backend", 200, 0, 1},
  /* pytorch#96995, merged April 2023 (pytorch#100184 enables it in fbcode
   * "now that expandable_segments has been merged from OSS"): 2.1 */
  {"expandable_segments", 201, 0, 0},
  /* pytorch#108367 (2023-08-31, after the 2.1 branch cut): 2.2 */
  {"release_lock_on_cudamalloc", 202, 0, 1},
  /* pytorch#108488 (reviewed 2023-10-05): 2.2 */
  {"pinned_use_cuda_host_register", 202, 0, 1},
  {"pinned_num_register_threads", 202, 0, 1},
  /* pytorch#136174 (2024-09-16, after the 2.5 branch cut): 2.6 */
  {"max_non_split_rounding_mb", 206, 0, 0},
  /* pytorch#135524 (opened 2024-09-09, after the 2.5 branch cut; in
   * [HDR] @ 012117ce beside max_non_split_rounding): 2.6 */
  {"pinned_use_background_threads", 206, 0, 0},
  /* pytorch#158352 (merged before 2025-09-04, pytorch#162186 builds on
   * it): 2.9 */
  {"graph_capture_record_stream_reuse", 209, 0, 1},
  /* pytorch#164501 (2025-10-02, after the 2.9 branch cut): 2.10 */
  {"pinned_reserve_segment_size_mb", 210, 0, 1},
  /* pytorch#161035; in [CFG] @ b944315b, not in the 2.9 parser
   * (id 706613213, which already has pinned_reserve_segment_size_mb): 2.10 */
  {"per_process_memory_fraction", 210, 0, 1},
  /* pytorch#172056 (2026-01-09, after the 2.10 branch cut): main */
  {"large_segment_size_mb", REL_MAIN, 0, 0},
};

static const key_rule *find_key(const char *k, size_t n) {
  size_t i;
  for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (strlen(keys[i].name) == n && strncmp(keys[i].name, k, n) == 0) return &keys[i];
  return NULL;
}

/* What the release said of a key it did not know: 2.10 and later
 * TORCH_CHECK_VALUE "Unrecognized key 'X' in CUDA allocator config."
 * ([CFG] @ 01f9ef32 parseArgs); before, TORCH_CHECK "Unrecognized
 * CachingAllocator option: X" ([113], [CFG] id 706613213). */
static void unrecognized(unsigned release, const char *key, char *buf, size_t cap) {
  if (release >= 210) snprintf(buf, cap, "Unrecognized key '%s' in CUDA allocator config.", key);
  else snprintf(buf, cap, "Unrecognized CachingAllocator option: %s", key);
}

static int key_error(gpuplan_ctx *ctx, unsigned release, const char *k, size_t klen, const key_rule *kr) {
  char key[64], rel[24], since[24], said[128], known[512];
  size_t i, n = 0;
  snprintf(key, sizeof key, "%.*s", (int)(klen < 60 ? klen : 60), k);
  gpuplan__torch_release_name(release, rel, sizeof rel);
  unrecognized(release, key, said, sizeof said);
  if (kr && release < kr->since) {
    gpuplan__torch_release_name(kr->since, since, sizeof since);
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "alloc conf: %s is not an option of torch %s: it came in %s (torch %s raised \"%s\")",
                          key, rel, since, rel, said);
  }
  if (kr) {
    gpuplan__torch_release_name(kr->until + 1 < 200 ? 200 : kr->until + 1, since, sizeof since);
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "alloc conf: %s is not an option of torch %s: it was removed in %s (torch %s raised \"%s\")",
                          key, rel, since, rel, said);
  }
  known[0] = '\0';
  for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (release >= keys[i].since && (!keys[i].until || release <= keys[i].until))
      n += (size_t)snprintf(known + n, n < sizeof known ? sizeof known - n : 0, "%s%s", n ? ", " : "",
                            keys[i].name);
  return gpuplan__error(ctx, GPUPLAN_EINVAL, "alloc conf: unknown key '%s' (torch %s raised \"%s\"; known: %s)", key,
                        rel, said, known);
}

/* 2.10 reads the two variables per key.  The generic keys go through
 * AcceleratorAllocatorConfig, which reads PYTORCH_ALLOC_CONF first ([ACF])
 * and skips keys it does not know (skipKey); the CUDA allocator's own (the
 * table's `cuda` rows: CUDAAllocatorConfig::getKeys()) go through
 * CUDAAllocatorConfig::instance(), which reads PYTORCH_CUDA_ALLOC_CONF
 * first and PYTORCH_ALLOC_CONF only when that is unset ("keep the parsing
 * order and logic stable", the refactored c10/cuda/CUDAAllocatorConfig.h
 * with per_process_memory_fraction, index id 695804354), and refuses a key
 * neither config knows ("Unrecognized key ... in CUDA allocator config."). */

/* The pair of text at *pp (up to a ',' outside [...]), its key [*k, *ke);
 * *pp moves past it and its ','.  Returns the pair's start, NULL at the end. */
static const char *next_pair(const char **pp, const char **k, const char **ke, size_t *n) {
  const char *p = *pp, *b = p;
  int depth = 0;
  if (!*p) return NULL;
  while (*p && (depth || *p != ',')) {
    if (*p == '[') depth++;
    else if (*p == ']' && depth) depth--;
    p++;
  }
  *n = (size_t)(p - b);
  for (*k = b; *k < p && **k == ' '; (*k)++) continue;
  for (*ke = *k; *ke < p && **ke != ':' && **ke != ' ' && **ke != '['; (*ke)++) continue;
  *pp = *p == ',' ? p + 1 : p;
  return b;
}

static size_t put_pair(char *out, size_t at, size_t cap, const char *b, size_t n) {
  if (at == SIZE_MAX || at + (at ? 1 : 0) + n + 1 > cap) return SIZE_MAX;
  if (at) out[at++] = ',';
  memcpy(out + at, b, n);
  at += n;
  out[at] = '\0';
  return at;
}

/* put_pair into a report that may be cut short: what fits is kept */
static size_t note_pair(char *out, size_t at, size_t cap, const char *b, size_t n) {
  size_t r = put_pair(out, at, cap, b, n);
  return r == SIZE_MAX ? at : r;
}

/* A key of the release: -1 none, 0 generic, 1 the CUDA allocator's own. */
static int key_kind(unsigned release, const char *k, size_t n) {
  const key_rule *r = find_key(k, n);
  if (!r || release < r->since || (r->until && release > r->until)) return -1;
  return r->cuda;
}

int gpuplan__alloc_conf_split_210(gpuplan_ctx *ctx, unsigned release, const char *generic_from, const char *cuda_from,
                                  char *out, size_t cap, size_t *len, size_t *cuda_len, char *unread, size_t rcap) {
  const char *p, *b, *k, *ke;
  size_t at = 0, n, rat = 0;
  *len = *cuda_len = 0;
  if (rcap) unread[0] = '\0';
  if (NEVER(!cap)) return gpuplan__error(ctx, GPUPLAN_ERROR, "alloc conf: no room for the two variables' keys");
  out[0] = '\0';
  /* The CUDA allocator's keys first (from PYTORCH_CUDA_ALLOC_CONF): an
   * unclosed list of the other text then ends the text, where the parser
   * says so.  A key neither config knows is the CUDA parser's error. */
  for (p = cuda_from; (b = next_pair(&p, &k, &ke, &n));) {
    int kind = ke == k ? 1 : key_kind(release, k, (size_t)(ke - k)); /* (an empty key: the parser refuses it) */
    if (kind == 1) {
      at = put_pair(out, at, cap, b, n);
    } else if (kind < 0) {
      return key_error(ctx, release, k, (size_t)(ke - k), find_key(k, (size_t)(ke - k))); /* as the parser says it */
    } else {
      rat = note_pair(unread, rat, rcap, b, n); /* a generic key: not read */
    }
  }
  *cuda_len = at;
  /* The generic keys from PYTORCH_ALLOC_CONF: the CUDA allocator's own are
   * not read there (the CUDA config read the other variable), unknown ones
   * are skipped as skipKey does; an empty key stays, for the parser to
   * refuse as it refuses it alone. */
  for (p = generic_from; (b = next_pair(&p, &k, &ke, &n));) {
    if (ke == k || key_kind(release, k, (size_t)(ke - k)) == 0) at = put_pair(out, at, cap, b, n);
    else rat = note_pair(unread, rat, rcap, b, n);
  }
  if (NEVER(at == SIZE_MAX)) return gpuplan__error(ctx, GPUPLAN_ERROR, "alloc conf: the two variables' keys miscounted");
  *len = at;
  return GPUPLAN_OK;
}

/* max_split_size_mb and max_non_split_rounding_mb take whole MiB of at
 * least kLargeBuffer: "> 20" up to 2.9 ([113], [CFG] id 706613213
 * parseMaxSplitSize/parseMaxNonSplitRoundingSize: val1 > kLargeBuffer / mb),
 * ">= 20" since 2.10 ([ACF]: val_env >= min_allowed_split_size_mb). */
static int parse_mb_min20(gpuplan_ctx *ctx, const gpuplan_alloc_conf *c, const char *key, const char *val,
                          size_t vlen, uint64_t *out) {
  uint64_t mb;
  const char *e = parse_u64(val, &mb);
  char rel[24], msg[128];
  if (!e || (size_t)(e - val) != vlen) return conf_err(ctx, key, "must be an integer number of MiB", val);
  if (c->release >= 210 ? mb < 20 : mb <= 20) {
    gpuplan__torch_release_name(c->release, rel, sizeof rel);
    if (c->release >= 210) snprintf(msg, sizeof msg, "must be at least 20 (kLargeBuffer)");
    else snprintf(msg, sizeof msg, "must be more than 20 (kLargeBuffer) in torch %s (20 is allowed since 2.10)", rel);
    return conf_err(ctx, key, msg, val);
  }
  *out = mb > (UINT64_MAX >> 20) ? UINT64_MAX : mb << 20;
  return GPUPLAN_OK;
}

int gpuplan_alloc_conf_parse(gpuplan_ctx *ctx, const char *s, gpuplan_torch_version v,
                             gpuplan_alloc_conf *out) {
  const char *p;
  int rc;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "alloc conf: out is NULL");
  if (!gpuplan__release_of(v))
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "alloc conf: torch %d is not a release gpuplan knows (1.13 = 113, 2.0 = 200 ... 2.10 = 210, "
                          "or GPUPLAN_TORCH_LATEST)", (int)v);
  gpuplan__alloc_conf_defaults(out, v);
  if (!s) return GPUPLAN_OK;
  p = s;
  while (*(p = skip_ws(p))) {
    const char *k = p, *val;
    const key_rule *kr;
    size_t klen, vlen;
    while (*p && *p != ':' && *p != ',') p++;
    klen = (size_t)(p - k);
    while (klen && (k[klen - 1] == ' ')) klen--;
    if (*p != ':')
      return conf_err(ctx, "", "expected key:value", k);
    kr = find_key(k, klen);
    if (!kr || out->release < kr->since || (kr->until && out->release > kr->until))
      return key_error(ctx, out->release, k, klen, kr);
    val = skip_ws(p + 1);
#define KEY(key_name) (strcmp(kr->name, key_name) == 0)
    if (KEY("roundup_power2_divisions")) {
      p = parse_divisions(ctx, val, out, &rc);
      if (!p) return rc;
    } else {
      p = val;
      while (*p && *p != ',') p++;
      vlen = (size_t)(p - val);
      while (vlen && val[vlen - 1] == ' ') vlen--;
      if (KEY("max_split_size_mb")) {
        GPUPLAN_TRY(parse_mb_min20(ctx, out, "max_split_size_mb", val, vlen, &out->max_split_size));
      } else if (KEY("max_non_split_rounding_mb")) {
        GPUPLAN_TRY(parse_mb_min20(ctx, out, "max_non_split_rounding_mb", val, vlen, &out->max_non_split_rounding));
      } else if (KEY("roundup_bypass_threshold_mb")) {
        /* 1.13: requests above it are rounded to 512 bytes only ([113]
         * round_size; m_roundup_bypass_threshold = val2 * 1024 * 1024). */
        uint64_t mb;
        const char *e = parse_u64(val, &mb);
        if (!e || (size_t)(e - val) != vlen)
          return conf_err(ctx, "roundup_bypass_threshold_mb", "must be an integer number of MiB", val);
        out->roundup_bypass_threshold = mb > (UINT64_MAX >> 20) ? UINT64_MAX : mb << 20;
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
        /* val_env >= 0.0 && val_env <= 1.0 ([CFG]
         * @ b944315b93d3 parsePerProcessMemoryFraction): 0 lets nothing be cudaMalloc'ed */
        if (!parse_real(val, vlen, &t) || !(t >= 0 && t <= 1))
          return conf_err(ctx, "per_process_memory_fraction", "must be in [0, 1]", val);
        out->memory_fraction = t;
      } else if (KEY("backend")) {
        if (!(vlen == 6 && strncmp(val, "native", 6) == 0))
          return conf_err(ctx, "backend", "only 'native' is modelled (cudaMallocAsync is not)", val);
      } else if (KEY("release_lock_on_cudamalloc") || KEY("pinned_use_cuda_host_register") ||
                 KEY("graph_capture_record_stream_reuse") || KEY("pinned_use_background_threads")) {
        /* Accepted; no effect on a single-threaded model without host
         * memory or graph capture.  True/False as [CFG] checks them. */
        int b;
        if (!parse_bool(val, vlen, &b)) return conf_err(ctx, kr->name, "must be True or False", val);
      } else if (KEY("pinned_num_register_threads")) {
        /* A power of two up to pinned_max_register_threads() = 128 ([CFG]
         * parsePinnedNumRegisterThreads, [HDR]); host memory, no effect. */
        uint64_t n;
        const char *e = parse_u64(val, &n);
        if (!e || (size_t)(e - val) != vlen || !is_pow2(n) || n > 128)
          return conf_err(ctx, "pinned_num_register_threads", "must be a power of two up to 128", val);
      } else {
        /* pinned_reserve_segment_size_mb: "has to be greater than 0"
         * ([CFG] parsePinnedReserveSegmentSize); host memory, no effect. */
        uint64_t n;
        const char *e = parse_u64(val, &n);
        if (!e || (size_t)(e - val) != vlen || n == 0)
          return conf_err(ctx, kr->name, "must be a positive integer number of MiB", val);
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
  /* 1.13: above roundup_bypass_threshold_mb, 512-byte rounding only ([113]
   * round_size). */
  if (gpuplan__rounding_rules(c->release) == 0 && n > c->roundup_bypass_threshold)
    return (n + KMIN_BLOCK - 1) / KMIN_BLOCK * KMIN_BLOCK;
  d = divisions_for(c, n);
  if (gpuplan__rounding_rules(c->release) == 2) {
    /* 2.4 and later: d > 1 (pytorch#126830, 2024-05-22, "Round to nearest
     * 512 bytes boundary if number of divisions=1"; [CCA] newest:
     * TORCH_CHECK(divisions >= 2)): 1 means no power-of-two rounding. */
    if (d > 1 && n > KMIN_BLOCK * d) return next_division(n, d);
  } else if (d > 0 && n > KMIN_BLOCK * d) {
    /* 1.13 to 2.3: d > 0, and roundup_power2_next_division returns the
     * size itself for d <= 1 ("if (size <= 4 || divisions <= 1) return
     * size;", [113], [CCA] @ eb42ad6e): with 1 a request is not even
     * rounded to 512 bytes. */
    return d <= 1 ? n : next_division(n, d);
  }
  return (n + KMIN_BLOCK - 1) / KMIN_BLOCK * KMIN_BLOCK;
}

uint64_t gpuplan__allocation_size(const gpuplan_alloc_conf *c, uint64_t size) {
  if (size <= KSMALL_SIZE) return KSMALL_BUFFER;
  if (size < KMIN_LARGE_ALLOC) return c->large_segment_size;
  return (size + KROUND_LARGE - 1) / KROUND_LARGE * KROUND_LARGE;
}


/*
 * report.c: what the allocator shows of itself: the segments of
 * torch.cuda.memory._snapshot() (one per cudaMalloc, one per contiguous
 * mapped range of an expandable segment, R30), memory_summary() as
 * torch/cuda/memory.py prints it, and format_size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_parts.h"

/* --- inspection ------------------------------------------------------------ */

/* What the snapshot calls a segment: a cudaMalloc, or one contiguous mapped
 * range of an expandable segment (R30). */
typedef struct view {
  uint64_t addr, size, stream;
  gpuplan__blk *first;
  size_t nblocks;
  int small, expandable, pool;
} view;

static int view_cmp(const void *x, const void *y) {
  const view *a = x, *b = y;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* All views in address order; *n_out views (the array is ctx-allocated). */
static int collect_views(gpuplan_cachealloc *a, view **out, size_t *n_out) {
  gpuplan__seg *s;
  gpuplan__blk *b;
  size_t n = gpuplan_cachealloc_segment_count(a), k = 0;
  view *v;
  *n_out = n;
  *out = NULL;
  if (!n) return GPUPLAN_OK;
  v = gpuplan__malloc(a->ctx, n * sizeof *v);
  if (!v) return gpuplan__nomem(a->ctx);
  for (s = a->segs; s; s = s->snext) {
    if (!s->expandable) {
      v[k].addr = s->addr;
      v[k].size = s->size;
      v[k].stream = s->stream;
      v[k].first = s->first;
      v[k].small = s->small;
      v[k].pool = s->pool;
      v[k].expandable = 0;
      for (v[k].nblocks = 0, b = s->first; b; b = b->next) v[k].nblocks++;
      k++;
      continue;
    }
    for (b = s->first; b; b = b->next) {
      if (!b->mapped || (b->prev && b->prev->mapped)) continue;
      v[k].addr = b->addr;
      v[k].size = 0;
      v[k].stream = s->stream;
      v[k].first = b;
      v[k].small = s->small;
      v[k].pool = s->pool;
      v[k].expandable = 1;
      v[k].nblocks = 0;
      {
        gpuplan__blk *c;
        for (c = b; c && c->mapped; c = c->next) {
          v[k].size += c->size;
          v[k].nblocks++;
        }
      }
      k++;
    }
  }
  qsort(v, n, sizeof *v, view_cmp);
  *out = v;
  return GPUPLAN_OK;
}

size_t gpuplan_cachealloc_segment_count(const gpuplan_cachealloc *a) {
  gpuplan__seg *s;
  gpuplan__blk *b;
  size_t n = 0;
  if (!a) return 0;
  for (s = a->segs; s; s = s->snext) {
    if (!s->expandable) {
      n++;
      continue;
    }
    for (b = s->first; b; b = b->next)
      if (b->mapped && (!b->prev || !b->prev->mapped)) n++;
  }
  return n;
}

/* A view as the snapshot shows it, and up to cap of its blocks. */
static void view_info(const gpuplan_cachealloc *a, const view *v, gpuplan_segment_info *out,
                      gpuplan_block_info *blocks, size_t cap) {
  size_t k;
  gpuplan__blk *b;
  memset(out, 0, sizeof *out);
  out->addr = v->addr;
  out->total_size = v->size;
  out->stream = v->stream;
  out->large = !v->small;
  out->expandable = v->expandable;
  out->nblocks = v->nblocks;
  out->pool_id = v->pool ? a->pp[v->pool - 1].id : 0;
  for (k = 0, b = v->first; k < v->nblocks; k++, b = b->next) {
    if (b->allocated) {
      out->allocated_size += b->size;
      out->requested_size += b->requested;
    }
    if (blocks && k < cap) {
      blocks[k].addr = b->addr;
      blocks[k].size = b->size;
      blocks[k].requested = b->requested;
      blocks[k].state = b->allocated;
    }
  }
}

int gpuplan_cachealloc_segment(gpuplan_cachealloc *a, size_t i, gpuplan_segment_info *out,
                        gpuplan_block_info *blocks, size_t cap) {
  view *v;
  size_t n;
  int rc;
  if (!a || !out) return GPUPLAN_EMISUSE;
  if ((rc = collect_views(a, &v, &n))) return rc;
  if (i >= n) {
    gpuplan__free(a->ctx, v);
    return gpuplan__error(a->ctx, GPUPLAN_EINVAL, "segment %zu out of range (%zu segments)", i, n);
  }
  view_info(a, &v[i], out, blocks, cap);
  gpuplan__free(a->ctx, v);
  return GPUPLAN_OK;
}

int gpuplan__alloc_layout(gpuplan_cachealloc *a, gpuplan_segment_info **segs_out, gpuplan_block_info **blocks_out,
                          size_t *n_out) {
  view *v;
  size_t n, i, nb = 0;
  gpuplan_segment_info *segs = NULL;
  gpuplan_block_info *blocks = NULL;
  *segs_out = NULL;
  *blocks_out = NULL;
  *n_out = 0;
  GPUPLAN_TRY(collect_views(a, &v, &n));
  for (i = 0; i < n; i++) nb += v[i].nblocks;
  segs = gpuplan__calloc(a->ctx, n ? n : 1, sizeof *segs);
  blocks = gpuplan__calloc(a->ctx, nb ? nb : 1, sizeof *blocks);
  if (!segs || !blocks) {
    gpuplan__free(a->ctx, v);
    gpuplan__free(a->ctx, segs);
    gpuplan__free(a->ctx, blocks);
    return gpuplan__nomem(a->ctx);
  }
  for (i = 0, nb = 0; i < n; i++) {
    view_info(a, &v[i], &segs[i], blocks + nb, v[i].nblocks);
    nb += v[i].nblocks;
  }
  gpuplan__free(a->ctx, v);
  *segs_out = segs;
  *blocks_out = blocks;
  *n_out = n;
  return GPUPLAN_OK;
}

void gpuplan_format_size(uint64_t n, char *buf, size_t cap) {
  if (n <= 1024) snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
  else if (n <= 1048576) snprintf(buf, cap, "%.2f KiB", (double)n / 1024.0);
  else if (n <= 1073741824ull) snprintf(buf, cap, "%.2f MiB", (double)n / 1048576.0);
  else snprintf(buf, cap, "%.2f GiB", (double)n / 1073741824.0);
}

/* --- memory_summary() --------------------------------------------------------- */

/* memory.py _format_size: integer division while the preferred value is at
 * least 768 of the unit.  torch <= 1.13 wrote "KB"/"MB" in "{:7d} {}";
 * 2.0 and later "KiB"/"MiB" in "{:6d} {}" (a column of the same width). */
static void fmt_size(gpuplan__buf *b, int64_t sz, double pref, int old) {
  static const char *const pfx[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  static const char *const opfx[] = {"B ", "KB", "MB", "GB", "TB", "PB"};
  int k = 0;
  while (k < 5 && pref >= 768 * 1024) {
    k++;
    sz /= 1024;
    pref /= 1024;
  }
  if (old) gpuplan__buf_printf(b, "%7lld %s", (long long)sz, opfx[k]);
  else gpuplan__buf_printf(b, "%6lld %s", (long long)sz, pfx[k]);
}

static void fmt_count(gpuplan__buf *b, int64_t c, double pref) {
  static const char *const pfx[] = {" ", "K", "M"};
  int k = 0;
  while (k < 2 && pref >= 750 * 1000) {
    k++;
    c /= 1000;
    pref /= 1000;
  }
  gpuplan__buf_printf(b, "%7lld %s ", (long long)c, pfx[k]);
}

static void sum_line(gpuplan__buf *b, const char *name, const gpuplan_stat *s,
                     const gpuplan_stat *pref, int bytes, int old) {
  gpuplan__buf_printf(b, "| %-21s | ", name);
  if (bytes) {
    fmt_size(b, s->current, (double)pref->current, old); gpuplan__buf_puts(b, " | ");
    fmt_size(b, s->peak, (double)pref->peak, old); gpuplan__buf_puts(b, " | ");
    fmt_size(b, s->allocated, (double)pref->allocated, old); gpuplan__buf_puts(b, " | ");
    fmt_size(b, s->freed, (double)pref->freed, old);
  } else {
    fmt_count(b, s->current, (double)pref->current); gpuplan__buf_puts(b, " | ");
    fmt_count(b, s->peak, (double)pref->peak); gpuplan__buf_puts(b, " | ");
    fmt_count(b, s->allocated, (double)pref->allocated); gpuplan__buf_puts(b, " | ");
    fmt_count(b, s->freed, (double)pref->freed);
  }
  gpuplan__buf_puts(b, " |\n");
}

/* torch.cuda.memory_summary(device, abbreviated): torch/cuda/memory.py's
 * table, line for line.  2.0 added the "Requested memory" rows
 * (requested_bytes) and the KiB/MiB units; 1.13 is the layout before. */
int gpuplan__alloc_summary(gpuplan_cachealloc *a, int device, int abbreviated, gpuplan_torch_version layout,
                           char **out) {
  gpuplan__buf b;
  const gpuplan_alloc_stats *st;
  static const char rule[] = "|---------------------------------------------------------------------------|\n";
  static const char dbl[] = "|===========================================================================|\n";
  struct { const char *name; const gpuplan_stat *s; int bytes; } m[9];
  int i, old = gpuplan__summary_v113(gpuplan__release_of(layout)); /* 1.13: conf.c */
  char hdr[128];
  if (!a || !out) return GPUPLAN_EMISUSE;
  *out = NULL;
  st = &a->st;
  m[0].name = "Allocated memory"; m[0].s = st->allocated_bytes; m[0].bytes = 1;
  m[1].name = "Active memory"; m[1].s = st->active_bytes; m[1].bytes = 1;
  m[2].name = "Requested memory"; m[2].s = st->requested_bytes; m[2].bytes = 1;
  m[3].name = "GPU reserved memory"; m[3].s = st->reserved_bytes; m[3].bytes = 1;
  m[4].name = "Non-releasable memory"; m[4].s = st->inactive_split_bytes; m[4].bytes = 1;
  m[5].name = "Allocations"; m[5].s = st->allocation; m[5].bytes = 0;
  m[6].name = "Active allocs"; m[6].s = st->active; m[6].bytes = 0;
  m[7].name = "GPU reserved segments"; m[7].s = st->segment; m[7].bytes = 0;
  m[8].name = "Non-releasable allocs"; m[8].s = st->inactive_split; m[8].bytes = 0;
  gpuplan__buf_init(&b, a->ctx);
  gpuplan__buf_puts(&b, dbl);
  gpuplan__buf_printf(&b, "| %16s PyTorch CUDA memory summary, device ID %-17d |\n", "", device);
  gpuplan__buf_puts(&b, rule);
  snprintf(hdr, sizeof hdr, "|  %9s CUDA OOMs: %-12lld | %6s cudaMalloc retries: %-8lld  |\n", "",
           (long long)st->num_ooms, "", (long long)st->num_alloc_retries);
  gpuplan__buf_puts(&b, hdr);
  gpuplan__buf_puts(&b, dbl);
  gpuplan__buf_puts(&b, "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n");
  for (i = 0; i < 9; i++) {
    if (old && m[i].s == st->requested_bytes) continue;
    gpuplan__buf_puts(&b, rule);
    sum_line(&b, m[i].name, &m[i].s[GPUPLAN_POOL_ALL], &m[i].s[GPUPLAN_POOL_ALL], m[i].bytes, old);
    if (abbreviated) continue;
    sum_line(&b, "      from large pool", &m[i].s[GPUPLAN_POOL_LARGE], &m[i].s[GPUPLAN_POOL_ALL], m[i].bytes, old);
    sum_line(&b, "      from small pool", &m[i].s[GPUPLAN_POOL_SMALL], &m[i].s[GPUPLAN_POOL_ALL], m[i].bytes, old);
  }
  gpuplan__buf_puts(&b, rule);
  sum_line(&b, "Oversize allocations", &st->oversize_allocations, &st->oversize_allocations, 0, old);
  gpuplan__buf_puts(&b, rule);
  sum_line(&b, "Oversize GPU segments", &st->oversize_segments, &st->oversize_segments, 0, old);
  gpuplan__buf_puts(&b, dbl);
  if (b.failed) {
    gpuplan__buf_dispose(&b);
    return gpuplan__nomem(a->ctx);
  }
  *out = b.ptr;
  return GPUPLAN_OK;
}

int gpuplan_cachealloc_summary(gpuplan_cachealloc *a, char **out) {
  if (!a || !out) return GPUPLAN_EMISUSE;
  return gpuplan__alloc_summary(a, 0, 0, gpuplan__summary_v113(a->conf.release) ? GPUPLAN_TORCH_V1_13 : GPUPLAN_TORCH_LATEST,
                               out);
}

/*
 * html.c: the replay command's HTML page (the job option html): one
 * self-contained file (inline CSS, inline JavaScript drawing inline SVG, the
 * data as a JSON script element; nothing fetched) with
 *
 *  - a header: the file, the release whose allocator rules were followed,
 *    the allocator settings and where they came from, exact or what-if and
 *    what the check found;
 *  - allocated and reserved bytes after every trace event (the replay's
 *    timeline; over a few thousand events, the min and max of each of
 *    1,500 buckets, the peaks kept exactly), the peaks marked and labelled;
 *  - the OOM, if the replay ran out of memory, with PyTorch's message;
 *  - the segment map at the peak of allocated bytes (and at the OOM): each
 *    segment a bar, its blocks coloured allocated / inactive (free, in a
 *    segment that still holds allocations: inactive_split) / free (a whole
 *    free segment, which empty_cache() would release), each with a hover
 *    title naming its size, address, and the event and frames that
 *    allocated it where the snapshot has them.
 *
 * The segment map is the allocator's own layout at that event, which the
 * replay captures when asked (gpuplan__replay_ext.layout_at_peak: a second
 * replay up to the event): every segment (for expandable segments, each
 * mapped range) and block as the model holds them.  Which event allocated a
 * block comes from the model's own trace entries (gpuplan__html_trace); the
 * frames of blocks live when the trace starts from a map rebuilt from the
 * file's final segments, undone backwards over the trace to the start (as
 * the replay's rebuild does, rules section 8) and run forwards over those
 * entries with the model's split rule (R11), which is also what is drawn
 * when the replay captured no layout.  The blocks are checked against the
 * replay's timeline at the same event, and the page says whether they add
 * up.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_int.h"
#include "common/span.h"
#include "common/treap.h"
#include "replay/html_int.h"
#include "replay/pickle.h"

#define TL_DIRECT 3000   /* timelines up to this many events are drawn point by point */
#define TL_BUCKETS 1500  /* longer ones as the min and max of this many buckets */
#define MAP_MAX_BLOCKS 100000 /* blocks drawn per segment map (then segments are left out) */
#define TITLE_FRAMES 4   /* frames named in a block's title */

/* --- the model's trace entries ---------------------------------------------- */

typedef struct hrec {
  uint64_t addr, size;
  size_t event; /* the trace event being replayed when the model did this */
  int action;
} hrec;

struct gpuplan__html {
  gpuplan_ctx *ctx;
  const gpuplan__replay_ext *x;
  hrec *v;
  size_t n, cap;
  size_t last_alloc; /* the last alloc or oom entry, or SIZE_MAX */
  int failed;
};

int gpuplan__html_new(gpuplan_ctx *ctx, const gpuplan__replay_ext *x, gpuplan__html **out) {
  gpuplan__html *h = gpuplan__calloc(ctx, 1, sizeof *h);
  *out = NULL;
  if (!h) return gpuplan__nomem(ctx);
  h->ctx = ctx;
  h->x = x;
  h->last_alloc = SIZE_MAX;
  *out = h;
  return GPUPLAN_OK;
}

void gpuplan__html_free(gpuplan__html *h) {
  if (!h) return;
  gpuplan__free(h->ctx, h->v);
  gpuplan__free(h->ctx, h);
}

void gpuplan__html_trace(void *payload, const gpuplan_alloc_event *ev) {
  gpuplan__html *h = payload;
  size_t at = h->x->tl_n;
  hrec *r;
  int alloc = ev->action == GPUPLAN_ACT_ALLOC || ev->action == GPUPLAN_ACT_OOM;
  if (h->failed) return;
  /* The exact replay starts again when it learns a block's size from the
   * trace: only the last run counts.  A new run shows as an event before
   * the last one, or as a second malloc for one event (a replay calls it
   * once per alloc or oom event, and it answers with one alloc or oom
   * entry): what came after the first run's is the new run's. */
  if (h->n && at < h->v[h->n - 1].event) {
    h->n = 0;
    h->last_alloc = SIZE_MAX;
  } else if (alloc && h->last_alloc != SIZE_MAX && h->v[h->last_alloc].event == at) {
    size_t keep = h->n - h->last_alloc - 1;
    memmove(h->v, h->v + h->last_alloc + 1, keep * sizeof *h->v);
    h->n = keep;
    h->last_alloc = SIZE_MAX;
  }
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 1024;
    hrec *nv = gpuplan__realloc(h->ctx, h->v, cap * sizeof *nv);
    if (!nv) {
      h->failed = 1;
      return;
    }
    h->v = nv;
    h->cap = cap;
  }
  r = &h->v[h->n++];
  r->addr = ev->addr;
  r->size = ev->size;
  r->event = at;
  r->action = (int)ev->action;
  if (alloc) h->last_alloc = h->n - 1;
}

/* --- the segment map ------------------------------------------------------------ */

typedef struct hblk {
  uint64_t addr, size, requested;
  int allocated;
  int pending;                /* active_pending_free: freed by free_requested, awaiting free_completed */
  size_t ev;                  /* the trace event that allocated it, or SIZE_MAX (before the trace) */
  size_t freed;               /* live at the start: the event that frees it, or SIZE_MAX */
  const gpuplan__pv *frames;  /* the file's frames for a block of its final segments, or NULL */
} hblk;

typedef struct hseg {
  uint64_t addr, size, stream;
  int small, expandable; /* expandable: a mapped range of an expandable segment */
  uint64_t pool;         /* the allocator's layout only: a private pool's (1 + its index), 0 default */
  hblk *b;               /* its blocks by address (a walked map: as map_flatten last wrote them) */
  size_t n, cap;         /* (a walked map: n counts the tree's blocks) */
  long root;             /* a walked map: the tree of its blocks, -1 empty */
} hseg;

/* A block of a walked map, in its segment's tree (a treap by address). */
typedef struct hnode {
  hblk b;
  uint32_t pri;
  long l, r;
} hnode;
GPUPLAN__TREAP_POOL(hn, hnode, hblk) /* common/treap.h: hn_pool, hn_new, hn_free */
GPUPLAN__TREAP(hn, hnode)            /* hn_le, hn_gt, hn_link, hn_unlink */

typedef struct hmap {
  gpuplan_ctx *ctx;
  const gpuplan_alloc_conf *conf;
  hseg *v; /* by address */
  size_t n, cap;
  size_t odd; /* entries that did not fit the map */
  int nomem;
  int exact;  /* the allocator's own layout (gpuplan__replay_ext.lay), not rebuilt */
  /* A walked map (the file's end undone to the start, then the model's
   * entries forwards) keeps each segment's blocks in a tree: the walks
   * split and merge blocks in the middle of a segment, and a flat array
   * made that quadratic (review B-1: 400,000 blocks in one segment ran
   * past a minute).  A map built once (the allocator's own layout) keeps
   * arrays only (tp empty); only walked maps are walked. */
  hn_pool tp;
} hmap;

static void map_dispose(hmap *m) {
  size_t i;
  for (i = 0; i < m->n; i++) gpuplan__free(m->ctx, m->v[i].b);
  gpuplan__free(m->ctx, m->v);
  gpuplan__free(m->ctx, m->tp.v);
  m->v = NULL;
  m->n = m->cap = 0;
  memset(&m->tp, 0, sizeof m->tp);
  m->tp.freed = -1;
}

/* --- a walked map's trees ----------------------------------------------------- */

static long tn_le(const hmap *m, long x, uint64_t key) { return hn_le(m->tp.v, x, key); }
static long tn_gt(const hmap *m, long x, uint64_t key) { return hn_gt(m->tp.v, x, key); }

static int tn_insert(hmap *m, hseg *g, const hblk *b) {
  long k = hn_new(&m->tp, b);
  if (k < 0) {
    m->nomem = 1;
    return -1;
  }
  hn_link(m->tp.v, &g->root, k);
  g->n++;
  return 0;
}

static void tn_erase(hmap *m, hseg *g, uint64_t key) {
  long k = hn_unlink(m->tp.v, &g->root, key);
  if (k < 0) return;
  hn_free(&m->tp, k);
  g->n--;
}

static int tn_any_allocated(const hmap *m, long x) {
  return x >= 0 && (m->tp.v[x].b.allocated || tn_any_allocated(m, m->tp.v[x].l) || tn_any_allocated(m, m->tp.v[x].r));
}

static void tn_release_all(hmap *m, long x) {
  if (x < 0) return;
  tn_release_all(m, m->tp.v[x].l);
  tn_release_all(m, m->tp.v[x].r);
  hn_free(&m->tp, x);
}

static void tn_write(const hmap *m, long x, hblk *out, size_t *k) {
  if (x < 0) return;
  tn_write(m, m->tp.v[x].l, out, k);
  out[(*k)++] = m->tp.v[x].b;
  tn_write(m, m->tp.v[x].r, out, k);
}

/* Each segment's array as its tree has it, for the readers. */
static int map_flatten(hmap *m) {
  size_t i, k;
  for (i = 0; i < m->n; i++) {
    hseg *g = &m->v[i];
    if (g->n > g->cap) {
      hblk *nb = gpuplan__realloc(m->ctx, g->b, g->n * sizeof *nb);
      if (!nb) {
        m->nomem = 1;
        return -1;
      }
      g->b = nb;
      g->cap = g->n;
    }
    k = 0;
    tn_write(m, g->root, g->b, &k);
  }
  return 0;
}

/* The segment holding addr, or -1; the block of g holding addr, or -1. */
GPUPLAN__SPAN_FIND(hseg_find, hseg, GPUPLAN__SPAN_DIRECT)
GPUPLAN__SPAN_FIND(hblk_find, hblk, GPUPLAN__SPAN_DIRECT)
static long seg_find(const hmap *m, uint64_t addr) { return hseg_find(m->v, m->n, addr); }
static long blk_find(const hseg *g, uint64_t addr) { return hblk_find(g->b, g->n, addr); }

/* A block after g's last (a map built once, in address order). */
static int blk_append(hmap *m, hseg *g, const hblk *b) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 4;
    hblk *nb = gpuplan__realloc(m->ctx, g->b, cap * sizeof *nb);
    if (!nb) {
      m->nomem = 1;
      return -1;
    }
    g->b = nb;
    g->cap = cap;
  }
  g->b[g->n++] = *b;
  return 0;
}

static hblk free_blk(uint64_t addr, uint64_t size) {
  hblk b;
  memset(&b, 0, sizeof b);
  b.addr = addr;
  b.size = size;
  b.ev = b.freed = SIZE_MAX;
  return b;
}

/* A segment at [addr, addr + size), one free block unless blocks follow. */
static hseg *seg_insert(hmap *m, uint64_t addr, uint64_t size, int small, int one_free_block) {
  size_t lo = 0, hi = m->n;
  hseg *g;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->v[mid].addr < addr) lo = mid + 1;
    else hi = mid;
  }
  if ((lo > 0 && m->v[lo - 1].addr + m->v[lo - 1].size > addr) || (lo < m->n && addr + size > m->v[lo].addr)) {
    m->odd++; /* overlaps a segment the map has */
    return NULL;
  }
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 16;
    hseg *nv = gpuplan__realloc(m->ctx, m->v, cap * sizeof *nv);
    if (!nv) {
      m->nomem = 1;
      return NULL;
    }
    m->v = nv;
    m->cap = cap;
  }
  memmove(m->v + lo + 1, m->v + lo, (m->n - lo) * sizeof *m->v);
  g = &m->v[lo];
  memset(g, 0, sizeof *g);
  g->addr = addr;
  g->size = size;
  g->small = small;
  g->root = -1;
  m->n++;
  if (one_free_block) {
    hblk b = free_blk(addr, size);
    if (tn_insert(m, g, &b)) return NULL; /* (a walked map's: only they start a segment free) */
  }
  return g;
}

static void seg_erase(hmap *m, uint64_t addr) {
  long i = seg_find(m, addr);
  if (i < 0 || m->v[i].addr != addr) {
    m->odd++;
    return;
  }
  if (tn_any_allocated(m, m->v[i].root)) m->odd++; /* a cudaFree of a segment with live blocks */
  tn_release_all(m, m->v[i].root);
  gpuplan__free(m->ctx, m->v[i].b);
  memmove(m->v + i, m->v + i + 1, (m->n - (size_t)i - 1) * sizeof *m->v);
  m->n--;
}

/* Free the allocated block at addr and merge it with free neighbours.
 * Returns 0, or -1 when there is no allocated block there. */
/* (The walks' operations: on a walked map, whose blocks are in trees.) */
static int blk_release(hmap *m, uint64_t addr) {
  long i = seg_find(m, addr), k, nx, px;
  hseg *g;
  if (i < 0) return -1;
  g = &m->v[i];
  k = tn_le(m, g->root, addr);
  if (k < 0 || m->tp.v[k].b.addr != addr || !m->tp.v[k].b.allocated) return -1;
  m->tp.v[k].b = free_blk(m->tp.v[k].b.addr, m->tp.v[k].b.size);
  nx = tn_gt(m, g->root, addr);
  if (nx >= 0 && !m->tp.v[nx].b.allocated && m->tp.v[nx].b.addr == addr + m->tp.v[k].b.size) {
    m->tp.v[k].b.size += m->tp.v[nx].b.size;
    tn_erase(m, g, m->tp.v[nx].b.addr);
  }
  px = addr > g->addr ? tn_le(m, g->root, addr - 1) : -1;
  if (px >= 0 && !m->tp.v[px].b.allocated) {
    m->tp.v[px].b.size += m->tp.v[k].b.size;
    tn_erase(m, g, addr);
  }
  return 0;
}

/* Allocate requested bytes at addr, out of the free block holding it, as
 * alloc_found_block does: the rounded size, and the rest of the free block
 * too unless should_split (R11) would give it back.  forward: addr should
 * start the free block (the model hands out the low end of a free block);
 * undoing a free, a free neighbour before it is expected.  The block, or
 * NULL (its fields stay valid until the next insert). */
static hblk *blk_carve(hmap *m, uint64_t addr, uint64_t requested, int forward) {
  long i = seg_find(m, addr), k;
  hseg *g;
  hblk b;
  uint64_t size, end, remaining, faddr;
  int split;
  if (i < 0) {
    m->odd++;
    return NULL;
  }
  g = &m->v[i];
  k = tn_le(m, g->root, addr);
  if (k < 0 || m->tp.v[k].b.allocated || m->tp.v[k].b.addr + m->tp.v[k].b.size <= addr) {
    m->odd++;
    return NULL;
  }
  faddr = m->tp.v[k].b.addr;
  end = faddr + m->tp.v[k].b.size;
  size = gpuplan__round_size(m->conf, requested ? requested : 1);
  if (size > end - addr) {
    m->odd++;
    size = end - addr;
  }
  remaining = end - addr - size;
  if (g->small || m->conf->expandable_segments) split = remaining >= KMIN_BLOCK;
  else split = size < m->conf->max_split_size && remaining > KSMALL_SIZE;
  if (!split) size = end - addr;
  if (faddr < addr) {
    /* The free space below stays free. */
    if (forward) m->odd++;
    m->tp.v[k].b.size = addr - faddr;
    b = free_blk(addr, size);
    if (tn_insert(m, g, &b)) return NULL;
    k = tn_le(m, g->root, addr);
  } else {
    m->tp.v[k].b.size = size;
  }
  if (addr + size < end) {
    b = free_blk(addr + size, end - addr - size);
    if (tn_insert(m, g, &b)) return NULL;
  }
  m->tp.v[k].b.allocated = 1;
  m->tp.v[k].b.requested = requested;
  return &m->tp.v[k].b;
}

/* The final segments of the device, as the file has them. */
static int map_from_file(hmap *m, const gpuplan__pv *root, int device) {
  const gpuplan__pv *segs = root && root->type == GPUPLAN__PV_LIST ? root : gpuplan__pv_get(root, "segments");
  size_t i, j;
  if (!segs || segs->type != GPUPLAN__PV_LIST) return GPUPLAN_OK;
  for (i = 0; i < segs->u.seq.n; i++) {
    const gpuplan__pv *d = segs->u.seq.items[i], *blocks, *type;
    int64_t addr, size, dev;
    uint64_t at;
    long last; /* the segment's last block so far */
    hseg *g;
    if (gpuplan__pv_int(gpuplan__pv_get(d, "device"), &dev) == 0 && dev != device) continue;
    if (gpuplan__pv_int(gpuplan__pv_get(d, "address"), &addr) || gpuplan__pv_int(gpuplan__pv_get(d, "total_size"), &size))
      continue;
    type = gpuplan__pv_get(d, "segment_type");
    g = seg_insert(m, (uint64_t)addr, (uint64_t)size,
                   gpuplan__pv_str(type) ? strcmp(gpuplan__pv_str(type), "small") == 0 : (uint64_t)size == KSMALL_BUFFER,
                   0);
    if (m->nomem) return gpuplan__nomem(m->ctx);
    if (!g) continue;
    blocks = gpuplan__pv_get(d, "blocks");
    at = (uint64_t)addr;
    last = -1;
    for (j = 0; blocks && blocks->type == GPUPLAN__PV_LIST && j < blocks->u.seq.n; j++) {
      const gpuplan__pv *bv = blocks->u.seq.items[j], *hist = gpuplan__pv_get(bv, "history");
      const char *state = gpuplan__pv_str(gpuplan__pv_get(bv, "state"));
      int64_t bs, req = 0;
      hblk b;
      if (gpuplan__pv_int(gpuplan__pv_get(bv, "size"), &bs) || bs <= 0) continue;
      b = free_blk(at, (uint64_t)bs);
      b.allocated = state && strcmp(state, "inactive") != 0;
      if (gpuplan__pv_int(gpuplan__pv_get(bv, "requested_size"), &req) && hist && hist->type == GPUPLAN__PV_LIST &&
          hist->u.seq.n)
        gpuplan__pv_int(gpuplan__pv_get(hist->u.seq.items[0], "real_size"), &req);
      b.requested = req > 0 ? (uint64_t)req : 0;
      b.frames = gpuplan__pv_get(bv, "frames");
      if (!b.frames && hist && hist->type == GPUPLAN__PV_LIST && hist->u.seq.n)
        b.frames = gpuplan__pv_get(hist->u.seq.items[0], "frames");
      if (!b.allocated) b.frames = NULL;
      /* Free neighbours are one block, as the allocator keeps them. */
      if (!b.allocated && last >= 0 && !m->tp.v[last].b.allocated) {
        m->tp.v[last].b.size += b.size;
      } else {
        if (tn_insert(m, g, &b)) return gpuplan__nomem(m->ctx);
        last = tn_le(m, g->root, b.addr);
      }
      at += (uint64_t)bs;
    }
    if (at != (uint64_t)addr + (uint64_t)size) m->odd++; /* the replay refused such a file already */
  }
  return GPUPLAN_OK;
}

/* The state before trace event i, from the state after it. */
static void undo(hmap *m, const gpuplan_alloc_event *e, size_t i) {
  hblk *b;
  switch (e->action) {
  case GPUPLAN_ACT_ALLOC:
    if (blk_release(m, e->addr)) m->odd++;
    break;
  case GPUPLAN_ACT_FREE_COMPLETED:
    if ((b = blk_carve(m, e->addr, e->size, 0))) b->freed = i;
    break;
  case GPUPLAN_ACT_SEGMENT_ALLOC:
    seg_erase(m, e->addr);
    break;
  case GPUPLAN_ACT_SEGMENT_FREE:
    seg_insert(m, e->addr, e->size, e->size == KSMALL_BUFFER, 1);
    break;
  default:
    break;
  }
}

/* The model's entry r, forwards. */
static void apply(hmap *m, const hrec *r) {
  hblk *b;
  switch (r->action) {
  case GPUPLAN_ACT_ALLOC:
    if ((b = blk_carve(m, r->addr, r->size, 1))) b->ev = r->event;
    break;
  case GPUPLAN_ACT_FREE_REQUESTED:
  case GPUPLAN_ACT_FREE_COMPLETED:
    blk_release(m, r->addr); /* the model emits both at once: the second finds it free */
    break;
  case GPUPLAN_ACT_SEGMENT_ALLOC:
    seg_insert(m, r->addr, r->size, r->size == KSMALL_BUFFER, 1);
    break;
  case GPUPLAN_ACT_SEGMENT_FREE:
    seg_erase(m, r->addr);
    break;
  case GPUPLAN_ACT_SEGMENT_MAP:
  case GPUPLAN_ACT_SEGMENT_UNMAP:
    m->odd++; /* expandable segments: not drawn block by block */
    break;
  default:
    break;
  }
}

/* --- the allocator's own layout ---------------------------------------------------- */

/* The model's alloc entries up to an event, by address (the last one at an
 * address last): the event that allocated a live block. */
typedef struct hallocd {
  uint64_t addr;
  size_t event, idx;
} hallocd;

static int hallocd_cmp(const void *x, const void *y) {
  const hallocd *a = x, *b = y;
  if (a->addr != b->addr) return a->addr < b->addr ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The event of the last alloc entry at addr, or SIZE_MAX. */
static size_t hallocd_find(const hallocd *v, size_t n, uint64_t addr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].addr <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && v[lo - 1].addr == addr ? v[lo - 1].event : SIZE_MAX;
}

/* The map of the replay's captured layout l; the blocks' events from the
 * model's entries up to event at, and the frames of blocks live when the
 * trace starts from the rebuilt map (rebuilt: the same moment). */
static int map_from_layout(hmap *lm, const gpuplan__replay_layout *l, const gpuplan__html *h, size_t at,
                           const hmap *rebuilt) {
  hallocd *v = NULL;
  size_t nv = 0, i, k;
  if (h->n && at != SIZE_MAX) {
    if (!(v = gpuplan__malloc(lm->ctx, h->n * sizeof *v))) return gpuplan__nomem(lm->ctx);
    for (i = 0; i < h->n && h->v[i].event <= at; i++)
      if (h->v[i].action == GPUPLAN_ACT_ALLOC) {
        v[nv].addr = h->v[i].addr;
        v[nv].event = h->v[i].event;
        v[nv].idx = i;
        nv++;
      }
    qsort(v, nv, sizeof *v, hallocd_cmp);
  }
  lm->exact = 1;
  for (i = 0; i < l->nsegs; i++) {
    const gpuplan__layout_seg *ls = &l->segs[i];
    hseg *g = seg_insert(lm, ls->addr, ls->size, ls->small, 0);
    if (lm->nomem) break;
    if (!g) continue;
    g->stream = ls->stream;
    g->expandable = ls->expandable;
    g->pool = ls->pool;
    for (k = 0; k < ls->n; k++) {
      const gpuplan__layout_block *lb = &l->blocks[ls->first + k];
      hblk b = free_blk(lb->addr, lb->size);
      b.allocated = lb->state == GPUPLAN__LB_ALLOCATED;
      b.pending = lb->state == GPUPLAN__LB_PENDING_FREE;
      b.requested = lb->requested;
      if (b.allocated) {
        b.ev = hallocd_find(v, nv, b.addr);
        if (b.ev == SIZE_MAX && rebuilt) {
          /* Live when the trace starts: the file's frames, as rebuilt. */
          long si = seg_find(rebuilt, b.addr), bi;
          if (si >= 0 && (bi = blk_find(&rebuilt->v[si], b.addr)) >= 0 && rebuilt->v[si].b[bi].addr == b.addr &&
              rebuilt->v[si].b[bi].allocated && rebuilt->v[si].b[bi].ev == SIZE_MAX) {
            b.frames = rebuilt->v[si].b[bi].frames;
            b.freed = rebuilt->v[si].b[bi].freed;
          }
        }
      }
      if (blk_append(lm, g, &b)) break;
    }
  }
  gpuplan__free(lm->ctx, v);
  return lm->nomem ? gpuplan__nomem(lm->ctx) : GPUPLAN_OK;
}

/* The replay's captured layout after event at (SIZE_MAX: the start), or NULL. */
static const gpuplan__replay_layout *layout_at(const gpuplan__replay_ext *x, size_t at) {
  int k;
  for (k = 0; k < 2; k++)
    if (x->lay[k].valid && x->lay[k].event == at) return &x->lay[k];
  return NULL;
}

/* --- text ------------------------------------------------------------------------- */

/* Length of the UTF-8 sequence at s (n bytes left), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t k, need;
  unsigned c = s[0];
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) need = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) need = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) need = 4, cp = c & 0x07;
  else return 0;
  if (n < need) return 0;
  for (k = 1; k < need; k++) {
    if ((s[k] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[k] & 0x3f);
  }
  if ((need == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (need == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return need;
}

/* Text for HTML: & < > " ' as references, control characters dropped
 * (newline and tab kept), bytes that are not UTF-8 as U+FFFD. */
static void put_html(gpuplan__buf *b, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t n = strlen((const char *)p), i = 0;
  while (i < n) {
    size_t k = utf8_len(p + i, n - i);
    unsigned c = p[i];
    if (k == 0) {
      gpuplan__buf_puts(b, "\xef\xbf\xbd");
      i++;
      continue;
    }
    if (k == 1) {
      if (c == '&') gpuplan__buf_puts(b, "&amp;");
      else if (c == '<') gpuplan__buf_puts(b, "&lt;");
      else if (c == '>') gpuplan__buf_puts(b, "&gt;");
      else if (c == '"') gpuplan__buf_puts(b, "&quot;");
      else if (c == '\'') gpuplan__buf_puts(b, "&#39;");
      else if (c >= 0x20 || c == '\n' || c == '\t') gpuplan__buf_put(b, (const char *)p + i, 1);
    } else {
      gpuplan__buf_put(b, (const char *)p + i, k);
    }
    i += k;
  }
}

/* A JSON string that is safe inside a <script> element: < > & as \u
 * escapes (no "</script>", no "<!--"), U+2028/9 escaped, bytes that are not
 * UTF-8 as U+FFFD.  NULL is null. */
static void put_json_n(gpuplan__buf *b, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  gpuplan__buf_put(b, "\"", 1);
  while (i < n) {
    size_t k = utf8_len(p + i, n - i);
    unsigned c = p[i];
    if (k == 0) {
      gpuplan__buf_puts(b, "\\ufffd");
      i++;
      continue;
    }
    if (k == 1) {
      if (c == '"') gpuplan__buf_puts(b, "\\\"");
      else if (c == '\\') gpuplan__buf_puts(b, "\\\\");
      else if (c == '\n') gpuplan__buf_puts(b, "\\n");
      else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) gpuplan__buf_printf(b, "\\u%04x", c);
      else gpuplan__buf_put(b, (const char *)p + i, 1);
    } else if (k == 3 && c == 0xe2 && p[i + 1] == 0x80 && (p[i + 2] == 0xa8 || p[i + 2] == 0xa9)) {
      gpuplan__buf_puts(b, p[i + 2] == 0xa8 ? "\\u2028" : "\\u2029");
    } else {
      gpuplan__buf_put(b, (const char *)p + i, k);
    }
    i += k;
  }
  gpuplan__buf_put(b, "\"", 1);
}

static void put_json(gpuplan__buf *b, const char *s) {
  if (!s) gpuplan__buf_puts(b, "null");
  else put_json_n(b, s, strlen(s));
}

static const char *fmt_size(uint64_t n, char *buf, size_t cap) {
  gpuplan_format_size(n, buf, cap);
  return buf;
}

/* --- the snapshot's own words: frames and times ------------------------------------ */

typedef struct hfile {
  gpuplan__pickle p;
  int loaded;
  const gpuplan__pv *root;
  const gpuplan__pv **ev; /* the trace entries the replay read, in its order (NULL: they do not line up) */
  size_t nev;
  int64_t t0;             /* time_us of the first entry */
  int times;              /* every entry has time_us */
} hfile;

/* The entries the snapshot reader keeps (replay.c's action names). */
static int known_action(const char *a) {
  static const char *const names[] = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
                                      "segment_map", "segment_unmap", "oom", "snapshot"};
  size_t i;
  for (i = 0; a && i < sizeof names / sizeof names[0]; i++)
    if (strcmp(a, names[i]) == 0) return 1;
  return 0;
}

static int file_read(gpuplan_ctx *ctx, const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  long n;
  char *buf;
  *out = NULL;
  if (!f) return gpuplan__error(ctx, GPUPLAN_EIO, "html: cannot read the snapshot %s again: %s", path, strerror(errno));
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return gpuplan__error(ctx, GPUPLAN_EIO, "html: cannot size the snapshot %s", path);
  }
  if (!(buf = gpuplan__malloc(ctx, (size_t)n + 1))) {
    fclose(f);
    return gpuplan__nomem(ctx);
  }
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    gpuplan__free(ctx, buf);
    return gpuplan__error(ctx, GPUPLAN_EIO, "html: cannot read the snapshot %s again", path);
  }
  fclose(f);
  *out = buf;
  *len = (size_t)n;
  return GPUPLAN_OK;
}

static int file_open(gpuplan_ctx *ctx, const gpuplan__html_page *pg, const gpuplan_snapshot *s, hfile *hf) {
  char *buf = NULL;
  const void *data = pg->data;
  size_t len = pg->len, i, k;
  const gpuplan__pv *traces, *tr = NULL;
  int rc;
  memset(hf, 0, sizeof *hf);
  if (pg->file) {
    GPUPLAN_TRY(file_read(ctx, pg->file, &buf, &len));
    data = buf;
  }
  rc = gpuplan__pickle_load(ctx, data, len, &hf->p, &hf->root);
  hf->loaded = 1;
  gpuplan__free(ctx, buf);
  if (rc) return rc;
  traces = hf->root->type == GPUPLAN__PV_DICT ? gpuplan__pv_get(hf->root, "device_traces") : NULL;
  if (traces && traces->type == GPUPLAN__PV_LIST && pg->device >= 0 && (size_t)pg->device < traces->u.seq.n)
    tr = traces->u.seq.items[pg->device];
  if (!tr || tr->type != GPUPLAN__PV_LIST || !gpuplan_snapshot_event_count(s)) return GPUPLAN_OK;
  if (!(hf->ev = gpuplan__calloc(ctx, tr->u.seq.n ? tr->u.seq.n : 1, sizeof *hf->ev))) return gpuplan__nomem(ctx);
  for (i = 0; i < tr->u.seq.n; i++)
    if (known_action(gpuplan__pv_str(gpuplan__pv_get(tr->u.seq.items[i], "action")))) hf->ev[hf->nev++] = tr->u.seq.items[i];
  if (hf->nev != gpuplan_snapshot_event_count(s)) {
    gpuplan__free(ctx, hf->ev); /* they do not line up: no frames, no times */
    hf->ev = NULL;
    hf->nev = 0;
    return GPUPLAN_OK;
  }
  hf->times = 1;
  for (k = 0; k < hf->nev && hf->times; k++) {
    int64_t t;
    if (gpuplan__pv_int(gpuplan__pv_get(hf->ev[k], "time_us"), &t)) hf->times = 0;
    else if (k == 0) hf->t0 = t;
  }
  return GPUPLAN_OK;
}

static void file_close(gpuplan_ctx *ctx, hfile *hf) {
  gpuplan__free(ctx, hf->ev);
  if (hf->loaded) gpuplan__pickle_free(&hf->p);
}

static int64_t ev_time(const hfile *hf, size_t i) {
  int64_t t = 0;
  if (!hf->times || i >= hf->nev) return 0;
  gpuplan__pv_int(gpuplan__pv_get(hf->ev[i], "time_us"), &t);
  return t - hf->t0;
}

/* The last path components of a frame's file name. */
static const char *short_path(const char *f) {
  const char *p = f + strlen(f);
  int slashes = 0;
  while (p > f) {
    if (p[-1] == '/' && ++slashes == 2) break;
    p--;
  }
  return p;
}

/* Up to TITLE_FRAMES frames of a frames list, one a line: Python frames
 * (those with a line number) outside torch first, then any Python frame,
 * then the first C++ frames past the allocator's own. */
static void put_frames(gpuplan__buf *b, const gpuplan__pv *frames) {
  size_t i, shown = 0;
  int pass;
  if (!frames || frames->type != GPUPLAN__PV_LIST) return;
  for (pass = 0; pass < 3 && shown == 0; pass++)
    for (i = 0; i < frames->u.seq.n && shown < TITLE_FRAMES; i++) {
      const gpuplan__pv *f = frames->u.seq.items[i];
      const char *name = gpuplan__pv_str(gpuplan__pv_get(f, "name"));
      const char *file = gpuplan__pv_str(gpuplan__pv_get(f, "filename"));
      int64_t line = 0;
      int py;
      if (!name) continue;
      gpuplan__pv_int(gpuplan__pv_get(f, "line"), &line);
      py = file && line > 0 && strcmp(file, "??") != 0;
      if (pass == 0 && (!py || strstr(file, "/torch/"))) continue;
      if (pass == 1 && !py) continue;
      if (pass == 2 && (strstr(name, "unwind") || strstr(name, "Traceback") || strstr(name, "gather") ||
                        strstr(name, "CachingAllocator")))
        continue;
      gpuplan__buf_puts(b, "\n  ");
      gpuplan__buf_puts(b, name);
      if (py) gpuplan__buf_printf(b, " (%s:%lld)", short_path(file), (long long)line);
      shown++;
    }
}

/* --- the document's data ------------------------------------------------------------ */

enum { ST_ALLOCATED = 0, ST_INACTIVE = 1, ST_FREE = 2, ST_PENDING = 3 };

/* One segment map as JSON; expected_* are the replay's figures at the same
 * moment (UINT64_MAX: unknown). */
static void put_map(gpuplan__buf *b, const hmap *m, const hfile *hf, const char *title, size_t event,
                    uint64_t expected_alloc, uint64_t expected_res) {
  uint64_t alloc = 0, res = 0;
  size_t i, k, drawn = 0, left_out = 0, nout = 0;
  char A[32], B[32];
  for (i = 0; i < m->n; i++) {
    res += m->v[i].size;
    for (k = 0; k < m->v[i].n; k++)
      if (m->v[i].b[k].allocated) alloc += m->v[i].b[k].size;
  }
  gpuplan__buf_puts(b, "{\"title\":");
  put_json(b, title);
  if (event == SIZE_MAX) gpuplan__buf_puts(b, ",\"event\":null");
  else gpuplan__buf_printf(b, ",\"event\":%zu", event);
  gpuplan__buf_printf(b, ",\"allocated\":%llu,\"reserved\":%llu,\"odd\":%zu", (unsigned long long)alloc,
                      (unsigned long long)res, m->odd);
  if (expected_alloc == UINT64_MAX) gpuplan__buf_puts(b, ",\"expected_allocated\":null,\"expected_reserved\":null");
  else
    gpuplan__buf_printf(b, ",\"expected_allocated\":%llu,\"expected_reserved\":%llu", (unsigned long long)expected_alloc,
                        (unsigned long long)expected_res);
  gpuplan__buf_puts(b, ",\"segments\":[");
  for (i = 0; i < m->n; i++) {
    const hseg *g = &m->v[i];
    uint64_t galloc = 0;
    size_t live = 0;
    if (drawn + g->n > MAP_MAX_BLOCKS) {
      left_out++;
      continue;
    }
    drawn += g->n;
    for (k = 0; k < g->n; k++) {
      if (g->b[k].allocated) galloc += g->b[k].size, live++;
      else if (g->b[k].pending) live++; /* still active: the segment is not free */
    }
    gpuplan__buf_printf(b, "%s{\"addr\":\"0x%llx\",\"size\":%llu,\"stream\":%llu,\"small\":%s,\"expandable\":%s,"
                           "\"pool\":%llu,\"allocated\":%llu,\"live\":%zu,\"blocks\":[",
                        nout++ ? "," : "", (unsigned long long)g->addr, (unsigned long long)g->size,
                        (unsigned long long)g->stream, g->small ? "true" : "false", g->expandable ? "true" : "false",
                        (unsigned long long)g->pool, (unsigned long long)galloc, live);
    for (k = 0; k < g->n; k++) {
      const hblk *x = &g->b[k];
      int st = x->allocated ? ST_ALLOCATED : x->pending ? ST_PENDING : live ? ST_INACTIVE : ST_FREE;
      gpuplan__buf t;
      gpuplan__buf_init(&t, m->ctx);
      if (st == ST_ALLOCATED) {
        gpuplan__buf_printf(&t, "allocated %s", fmt_size(x->size, A, sizeof A));
        if (x->requested && x->requested != x->size)
          gpuplan__buf_printf(&t, " (requested %s)", fmt_size(x->requested, B, sizeof B));
        gpuplan__buf_printf(&t, " at 0x%llx", (unsigned long long)x->addr);
        if (x->ev != SIZE_MAX) {
          gpuplan__buf_printf(&t, "\nallocated at event %zu", x->ev);
          if (hf->times) gpuplan__buf_printf(&t, " (+%.3f ms)", (double)ev_time(hf, x->ev) / 1000.0);
          if (x->ev < hf->nev) put_frames(&t, gpuplan__pv_get(hf->ev[x->ev], "frames"));
        } else {
          gpuplan__buf_puts(&t, "\nlive when the trace starts");
          if (x->freed != SIZE_MAX) gpuplan__buf_printf(&t, " (freed at event %zu)", x->freed);
          put_frames(&t, x->frames);
        }
      } else if (st == ST_PENDING) {
        gpuplan__buf_printf(&t, "active, pending free %s at 0x%llx", fmt_size(x->size, A, sizeof A),
                            (unsigned long long)x->addr);
        gpuplan__buf_puts(&t, "\nfreed by free_requested, awaiting free_completed (its stream uses)");
      } else {
        gpuplan__buf_printf(&t, "%s %s at 0x%llx", st == ST_INACTIVE ? "inactive (cached, free)" : "free (cached segment)",
                            fmt_size(x->size, A, sizeof A), (unsigned long long)x->addr);
        if (st == ST_INACTIVE)
          gpuplan__buf_puts(&t, "\na free part of a segment that still holds allocations: empty_cache() cannot release it");
        else
          gpuplan__buf_puts(&t, "\nthe whole segment is free: empty_cache() would release it");
      }
      gpuplan__buf_printf(b, "%s[%llu,%llu,%d,", k ? "," : "", (unsigned long long)(x->addr - g->addr),
                          (unsigned long long)x->size, st);
      if (t.failed) b->failed = 1;
      put_json_n(b, t.ptr ? t.ptr : "", t.len);
      gpuplan__buf_puts(b, "]");
      gpuplan__buf_dispose(&t);
    }
    gpuplan__buf_puts(b, "]}");
  }
  gpuplan__buf_printf(b, "],\"left_out\":%zu}", left_out);
}

/* The first event where v reaches its highest value, or SIZE_MAX. */
static size_t argmax(const int64_t *v, size_t n) {
  size_t i, at = SIZE_MAX;
  for (i = 0; i < n; i++)
    if (at == SIZE_MAX || v[i] > v[at]) at = i;
  return at;
}

static void put_timeline(gpuplan__buf *b, const gpuplan__replay_ext *x, const hfile *hf) {
  size_t n = x->tl_n, nb = n <= TL_DIRECT ? n : TL_BUCKETS, k, i;
  static const char *const keys[] = {"x", "x1", "amin", "amax", "rmin", "rmax", "t"};
  int key;
  gpuplan__buf_printf(b, "{\"n\":%zu,\"bucketed\":%s", n, n <= TL_DIRECT ? "false" : "true");
  for (key = 0; key < 7; key++) {
    if (key == 6 && !hf->times) {
      gpuplan__buf_puts(b, ",\"t\":null");
      continue;
    }
    gpuplan__buf_printf(b, ",\"%s\":[", keys[key]);
    for (k = 0; k < nb; k++) {
      size_t lo = k * n / nb, hi = (k + 1) * n / nb; /* events [lo, hi) */
      long long v = 0;
      if (key == 0 || key == 6) v = (long long)lo;
      else if (key == 1) v = (long long)(hi - 1);
      else {
        const int64_t *s = key < 4 ? x->tl_allocated : x->tl_reserved;
        int want_max = key == 3 || key == 5;
        v = s[lo];
        for (i = lo + 1; i < hi; i++)
          if (want_max ? s[i] > v : s[i] < v) v = s[i];
      }
      if (key == 6) v = (long long)ev_time(hf, lo);
      gpuplan__buf_printf(b, "%s%lld", k ? "," : "", v);
    }
    gpuplan__buf_puts(b, "]");
  }
  gpuplan__buf_puts(b, "}");
}

/* --- the page ------------------------------------------------------------------------ */

static const char css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1000px;"
    "color:#1d2330;background:#fff;padding:0 16px}\n"
    "h1{font-size:20px;margin:0 0 12px;word-break:break-all}h2{font-size:16px;margin:28px 0 8px}\n"
    "table.facts{border-collapse:collapse}table.facts th{text-align:left;font-weight:600;padding:2px 16px 2px 0;"
    "vertical-align:top;white-space:nowrap}table.facts td{padding:2px 0;word-break:break-word}\n"
    ".ok{color:#137333;font-weight:600}.bad{color:#b3261e;font-weight:600}.note{color:#5f6368}\n"
    "ul.warn{color:#8a5300;margin:6px 0}\n"
    ".oom{border:1px solid #e8a6a1;background:#fdf0ef;border-radius:6px;padding:8px 14px;margin:16px 0}\n"
    ".oom h2{margin:4px 0 6px;color:#b3261e}pre{white-space:pre-wrap;word-break:break-word;font-size:12.5px;margin:0}\n"
    "svg text{font-size:11px;fill:#3c4043}svg .axis{stroke:#9aa0a6;stroke-width:1}svg .grid{stroke:#eceff1}\n"
    "svg .res{fill:#f6b26b;fill-opacity:.45;stroke:#e69138;stroke-width:1}\n"
    "svg .alloc{fill:#6fa8dc;fill-opacity:.85;stroke:#3d85c6;stroke-width:1}\n"
    "svg .lo{fill:none;stroke:#1c4587;stroke-width:.6;stroke-dasharray:2 2}\n"
    "svg .peak{fill:#1c4587}svg text.peak{font-weight:600;fill:#1c4587;font-size:12px}\n"
    "svg .rpeak{fill:#b45f06}svg text.rpeak{fill:#b45f06;font-weight:600;font-size:12px}\n"
    "svg line.lead{stroke-width:.8;stroke-dasharray:2 2}svg line.peak{stroke:#1c4587}svg line.rpeak{stroke:#b45f06}\n"
    "svg .oomline{stroke:#b3261e;stroke-width:1.5;stroke-dasharray:5 3}svg text.oomtext{fill:#b3261e;font-weight:600}\n"
    "svg .cap{stroke:#b3261e;stroke-width:1;stroke-dasharray:2 3}svg text.captext{fill:#b3261e}\n"
    "svg .cursor{stroke:#5f6368;stroke-width:.8}\n"
    "svg rect.b0,svg rect.b1,svg rect.b2{stroke:#fff;stroke-width:.6}\n"
    "svg rect.b3{stroke:#fff;stroke-width:.6;fill:#8e7cc3}\n"
    "svg rect.b0{fill:#3d85c6}svg rect.b1{fill:#f6b26b}svg rect.b2{fill:#cfd8dc}svg rect.segbox{fill:none;"
    "stroke:#78909c;stroke-width:.6}svg rect:hover{stroke:#000;stroke-width:1}\n"
    ".legend span{display:inline-block;margin-right:16px}.legend i{display:inline-block;width:12px;height:12px;"
    "vertical-align:-1px;margin-right:5px;border-radius:2px}\n"
    "#tip{position:absolute;pointer-events:none;background:#202124;color:#fff;font-size:12px;padding:4px 7px;"
    "border-radius:4px;display:none;white-space:pre}\n"
    ".wrap{overflow-x:auto}footer{margin-top:32px;color:#80868b;font-size:12px}\n";

static const char js[] =
    "(function () {\n"
    "  'use strict';\n"
    "  var D = JSON.parse(document.getElementById('gpuplan-data').textContent);\n"
    "  var NS = 'http://www.w3.org/2000/svg';\n"
    "  function el(name, attrs, parent) {\n"
    "    var e = document.createElementNS(NS, name);\n"
    "    for (var k in attrs) e.setAttribute(k, attrs[k]);\n"
    "    if (parent) parent.appendChild(e);\n"
    "    return e;\n"
    "  }\n"
    "  function text(parent, x, y, s, cls, anchor) {\n"
    "    var t = el('text', {x: x, y: y}, parent);\n"
    "    if (cls) t.setAttribute('class', cls);\n"
    "    if (anchor) t.setAttribute('text-anchor', anchor);\n"
    "    t.textContent = s;\n"
    "    return t;\n"
    "  }\n"
    "  /* PyTorch's format_size, as the OOM message writes sizes. */\n"
    "  function fmt(n) {\n"
    "    if (n <= 1024) return n + ' bytes';\n"
    "    if (n <= 1048576) return (n / 1024).toFixed(2) + ' KiB';\n"
    "    if (n <= 1073741824) return (n / 1048576).toFixed(2) + ' MiB';\n"
    "    return (n / 1073741824).toFixed(2) + ' GiB';\n"
    "  }\n"
    "  function axisUnit(max) {\n"
    "    if (max >= 1073741824) return [1073741824, 'GiB'];\n"
    "    if (max >= 1048576) return [1048576, 'MiB'];\n"
    "    if (max >= 1024) return [1024, 'KiB'];\n"
    "    return [1, 'B'];\n"
    "  }\n"
    "  function niceStep(raw) {\n"
    "    var p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10)), m = raw / p;\n"
    "    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;\n"
    "  }\n"
    "  function timeline() {\n"
    "    var T = D.timeline, host = document.getElementById('timeline');\n"
    "    if (!T || !T.n) {\n"
    "      host.textContent = 'No trace events: nothing was replayed, so there is no timeline.';\n"
    "      return;\n"
    "    }\n"
    "    var W = 960, H = 380, ml = 64, mr = 24, mt = 52, mb = 42, n = T.n, m = T.x.length;\n"
    "    var top = Math.max(D.peak_reserved.bytes, D.peak.bytes, D.capacity || 0, 1) * 1.06;\n"
    "    var svg = el('svg', {id: 'timeline-svg', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H,\n"
    "                         role: 'img', 'aria-label': 'allocated and reserved bytes after each event'}, host);\n"
    "    function X(i) { return ml + (n > 1 ? i / (n - 1) : 0.5) * (W - ml - mr); }\n"
    "    function Y(v) { return H - mb - v / top * (H - mt - mb); }\n"
    "    var u = axisUnit(top), step = niceStep(top / u[0] / 5) * u[0], v, i;\n"
    "    for (v = 0; v <= top; v += step) {\n"
    "      el('line', {x1: ml, x2: W - mr, y1: Y(v), y2: Y(v), 'class': 'grid'}, svg);\n"
    "      text(svg, ml - 6, Y(v) + 4, +(v / u[0]).toFixed(2) + ' ' + u[1], null, 'end');\n"
    "    }\n"
    "    var xs = Math.max(1, niceStep(Math.max(n - 1, 1) / 8));\n"
    "    for (v = 0; v <= n - 1; v += xs) {\n"
    "      el('line', {x1: X(v), x2: X(v), y1: H - mb, y2: H - mb + 4, 'class': 'axis'}, svg);\n"
    "      text(svg, X(v), H - mb + 16, String(v), null, 'middle');\n"
    "    }\n"
    "    text(svg, (ml + W - mr) / 2, H - 6, 'trace event' + (T.t ? ' (hover for the time)' : ''), null, 'middle');\n"
    "    el('line', {x1: ml, x2: W - mr, y1: H - mb, y2: H - mb, 'class': 'axis'}, svg);\n"
    "    el('line', {x1: ml, x2: ml, y1: mt - 8, y2: H - mb, 'class': 'axis'}, svg);\n"
    "    function area(vals, cls) {\n"
    "      var d = 'M' + X(T.x[0]) + ',' + Y(0);\n"
    "      for (var k = 0; k < m; k++)\n"
    "        d += 'L' + X(T.x[k]) + ',' + Y(vals[k]) + 'L' + X(k + 1 < m ? T.x[k + 1] : T.x1[k]) + ',' + Y(vals[k]);\n"
    "      d += 'L' + X(T.x1[m - 1]) + ',' + Y(0) + 'Z';\n"
    "      return el('path', {d: d, 'class': cls}, svg);\n"
    "    }\n"
    "    function line(vals, cls) {\n"
    "      var d = '';\n"
    "      for (var k = 0; k < m; k++) d += (k ? 'L' : 'M') + X(T.x[k]) + ',' + Y(vals[k]);\n"
    "      return el('path', {d: d, 'class': cls}, svg);\n"
    "    }\n"
    "    area(T.rmax, 'res').setAttribute('id', 'reserved-series');\n"
    "    area(T.amax, 'alloc').setAttribute('id', 'allocated-series');\n"
    "    if (T.bucketed) line(T.amin, 'lo');\n"
    "    if (D.capacity) {\n"
    "      el('line', {x1: ml, x2: W - mr, y1: Y(D.capacity), y2: Y(D.capacity), 'class': 'cap'}, svg);\n"
    "      text(svg, ml + 6, Y(D.capacity) - 4, 'device capacity ' + fmt(D.capacity), 'captext', 'start');\n"
    "    }\n"
    "    function mark(p, cls, id, row) {\n"
    "      if (p.event === null) return;\n"
    "      var cx = X(p.event), cy = Y(p.bytes), ly = 13 + row * 15;\n"
    "      el('line', {x1: cx, x2: cx, y1: ly + 3, y2: cy - 4, 'class': 'lead ' + cls}, svg);\n"
    "      el('circle', {cx: cx, cy: cy, r: 4, 'class': cls}, svg);\n"
    "      var right = cx > (ml + W - mr) / 2;\n"
    "      var t = text(svg, cx + (right ? 3 : -3), ly, p.label, cls, right ? 'end' : 'start');\n"
    "      t.setAttribute('id', id);\n"
    "      t.setAttribute('data-bytes', String(p.bytes));\n"
    "      t.setAttribute('data-event', String(p.event));\n"
    "    }\n"
    "    mark(D.peak_reserved, 'rpeak', 'peak-reserved-label', 0);\n"
    "    mark(D.peak, 'peak', 'peak-label', 1);\n"
    "    if (D.oom && D.oom.event !== null) {\n"
    "      var ox = X(Math.min(D.oom.event, n - 1));\n"
    "      el('line', {id: 'oom-marker', x1: ox, x2: ox, y1: mt - 10, y2: H - mb, 'class': 'oomline'}, svg);\n"
    "      text(svg, ox - 5, H - mb - 8, 'OOM at event ' + D.oom.event, 'oomtext', 'end');\n"
    "    }\n"
    "    var cur = el('line', {x1: 0, x2: 0, y1: mt - 8, y2: H - mb, 'class': 'cursor', visibility: 'hidden'}, svg);\n"
    "    var tip = document.getElementById('tip');\n"
    "    svg.addEventListener('mousemove', function (ev) {\n"
    "      var r = svg.getBoundingClientRect(), px = (ev.clientX - r.left) * W / r.width;\n"
    "      var e = Math.round((px - ml) / (W - ml - mr) * (n - 1));\n"
    "      if (e < 0 || e > n - 1) { tip.style.display = 'none'; cur.setAttribute('visibility', 'hidden'); return; }\n"
    "      var lo = 0, hi = m - 1;\n"
    "      while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (T.x[mid] <= e) lo = mid; else hi = mid - 1; }\n"
    "      var s = (T.bucketed ? 'events ' + T.x[lo] + '-' + T.x1[lo] : 'event ' + T.x[lo]);\n"
    "      if (T.t) s += '  (+' + (T.t[lo] / 1000).toFixed(3) + ' ms)';\n"
    "      s += '\\nallocated ' + (T.bucketed ? fmt(T.amin[lo]) + ' to ' : '') + fmt(T.amax[lo]);\n"
    "      s += '\\nreserved  ' + (T.bucketed ? fmt(T.rmin[lo]) + ' to ' : '') + fmt(T.rmax[lo]);\n"
    "      tip.textContent = s;\n"
    "      tip.style.display = 'block';\n"
    "      tip.style.left = (ev.pageX + 14) + 'px';\n"
    "      tip.style.top = (ev.pageY + 10) + 'px';\n"
    "      cur.setAttribute('x1', X(T.x[lo])); cur.setAttribute('x2', X(T.x[lo]));\n"
    "      cur.setAttribute('visibility', 'visible');\n"
    "    });\n"
    "    svg.addEventListener('mouseleave', function () { tip.style.display = 'none'; cur.setAttribute('visibility', 'hidden'); });\n"
    "  }\n"
    "  function segmap(M, host) {\n"
    "    var W = 960, lab = 190, rh = 14, gap = 5, segs = M.segments;\n"
    "    var H = segs.length * (rh + gap) + 8, bw = W - lab - 6;\n"
    "    var svg = el('svg', {'class': 'segmap', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H}, host);\n"
    "    segs.forEach(function (s, i) {\n"
    "      var y = 4 + i * (rh + gap);\n"
    "      var t = text(svg, 0, y + rh - 3, s.addr + '  ' + fmt(s.size), 'seglabel');\n"
    "      el('title', {}, t).textContent = (s.expandable ? 'mapped range ' : 'segment ') + s.addr + ': ' + fmt(s.size) +\n"
    "          ', ' + (s.small ? 'small' : 'large') + (s.pool ? ' blocks of private pool ' + s.pool + ' (a CUDA graph\\'s or a MemPool\\'s)' : ' pool') + ', stream ' + s.stream + ', ' + s.blocks.length + ' blocks, ' + s.live + ' allocated (' + fmt(s.allocated) + ')';\n"
    "      s.blocks.forEach(function (b) {\n"
    "        var r = el('rect', {x: lab + b[0] / s.size * bw, y: y, width: Math.max(b[1] / s.size * bw, 0.6), height: rh,\n"
    "                            'class': 'b' + b[2]}, svg);\n"
    "        el('title', {}, r).textContent = b[3];\n"
    "      });\n"
    "      el('rect', {x: lab, y: y, width: bw, height: rh, 'class': 'segbox'}, svg);\n"
    "    });\n"
    "  }\n"
    "  timeline();\n"
    "  D.maps.forEach(function (M, i) { segmap(M, document.getElementById('map-' + i)); });\n"
    "  document.body.setAttribute('data-rendered', '1');\n"
    "})();\n";

static void put_fact(gpuplan__buf *b, const char *name, const char *value) {
  gpuplan__buf_puts(b, "<tr><th>");
  put_html(b, name);
  gpuplan__buf_puts(b, "</th><td>");
  put_html(b, value);
  gpuplan__buf_puts(b, "</td></tr>\n");
}

/* The page's header: what was replayed, how, and what the check found. */
static void put_header(gpuplan__buf *b, const gpuplan__html_page *pg, const gpuplan_snapshot *s,
                       const gpuplan_replay_result *r, const gpuplan__replay_ext *x) {
  char line[1400], A[32], B[32];
  size_t i;
  gpuplan__buf_puts(b, "<h1>gpuplan replay: ");
  put_html(b, pg->file ? pg->file : "(snapshot data)");
  gpuplan__buf_puts(b, "</h1>\n<table class=\"facts\">\n");
  put_fact(b, "snapshot", pg->file ? pg->file : "(given as data)");
  snprintf(line, sizeof line, "%zu trace events of device %d, %zu segments at the end%s", gpuplan_snapshot_event_count(s),
           pg->device, gpuplan_snapshot_segment_count(s),
           r->rebuilt_start ? "; the trace starts mid-run: its start state was rebuilt from the end" : "");
  put_fact(b, "trace", line);
  snprintf(line, sizeof line, "torch %s (the rules of %s)", pg->torch, pg->rules);
  put_fact(b, "allocator rules", line);
  snprintf(line, sizeof line, "%s (%s)", pg->alloc_conf && *pg->alloc_conf ? pg->alloc_conf : "PyTorch's defaults",
           strcmp(pg->alloc_conf_source, "snapshot") == 0   ? "the file's allocator_settings"
           : strcmp(pg->alloc_conf_source, "defaults") == 0 ? "the file records none"
           : strcmp(pg->alloc_conf_source, "option") == 0   ? "the alloc_conf option"
                                                            : pg->alloc_conf_source);
  put_fact(b, "alloc conf", line);
  if (pg->capacity) {
    snprintf(line, sizeof line, "%s usable by PyTorch%s%s", fmt_size(pg->capacity, A, sizeof A), pg->gpu ? " (gpu " : "",
             pg->gpu ? pg->gpu : "");
    if (pg->gpu) strncat(line, ")", sizeof line - strlen(line) - 1);
    put_fact(b, "device", line);
  }
  gpuplan__buf_puts(b, "<tr><th>replay</th><td>");
  if (strcmp(pg->mode, "exact") == 0) {
    if (!gpuplan_snapshot_event_count(s)) {
      gpuplan__buf_puts(b, "exact mode: <span class=\"note\">nothing to check (no trace events)</span>");
    } else if (r->exact) {
      snprintf(line, sizeof line,
               ": %zu allocations at their recorded addresses, %zu cudaMallocs of their recorded sizes, "
               "final layout equal to the file's segments",
               r->allocs, r->segment_allocs);
      gpuplan__buf_puts(b, "<span class=\"ok\" id=\"exact\" data-exact=\"1\">exact match</span>");
      put_html(b, line);
    } else if (r->diverged_at != SIZE_MAX) {
      snprintf(line, sizeof line, "diverges at event %zu: %s", r->diverged_at, r->divergence);
      gpuplan__buf_puts(b, "<span class=\"bad\" id=\"exact\" data-exact=\"0\">not exact</span> ");
      put_html(b, line);
    } else {
      gpuplan__buf_puts(b, "<span class=\"bad\" id=\"exact\" data-exact=\"0\">not exact</span>");
    }
  } else {
    gpuplan__buf_puts(b, "<span id=\"exact\" data-exact=\"0\">what-if</span>: the trace's requests under these "
                         "settings, from the start state the file gives (not a check)");
  }
  gpuplan__buf_puts(b, "</td></tr>\n");
  if (x->unchecked_from != SIZE_MAX) {
    snprintf(line, sizeof line, "events %zu to %zu cannot be checked: %s", x->unchecked_from, x->unchecked_to - 1,
             x->unchecked_why);
    put_fact(b, "unchecked", line);
  }
  snprintf(line, sizeof line, "%s allocated, %s reserved (fragmentation %.3f)", fmt_size(r->peak_allocated, A, sizeof A),
           fmt_size(r->peak_reserved, B, sizeof B), r->fragmentation);
  put_fact(b, "peaks", line);
  snprintf(line, sizeof line, "%lld cudaMalloc retries, %lld OOMs", (long long)r->num_alloc_retries, (long long)r->num_ooms);
  put_fact(b, "allocator", line);
  gpuplan__buf_puts(b, "</table>\n");
  if (x->nwarn) {
    gpuplan__buf_puts(b, "<ul class=\"warn\">\n");
    for (i = 0; i < x->nwarn; i++) {
      gpuplan__buf_puts(b, "<li>warning: ");
      put_html(b, x->warn[i]);
      gpuplan__buf_puts(b, "</li>\n");
    }
    gpuplan__buf_puts(b, "</ul>\n");
  }
  if (r->oom_event != SIZE_MAX) {
    gpuplan__buf_printf(b, "<section class=\"oom\" id=\"oom\"><h2>Out of memory at event %zu</h2>\n<pre id=\"oom-message\">",
                        r->oom_event);
    put_html(b, r->oom_message);
    gpuplan__buf_puts(b, "</pre></section>\n");
  }
}

/* A caption under a map: whether its blocks add up to the replay's figures. */
static void put_map_note(gpuplan__buf *b, const hmap *m, uint64_t ea, uint64_t er, const gpuplan_replay_result *r) {
  uint64_t alloc = 0, res = 0;
  size_t i, k;
  char A[32], B[32], C[32], E[32];
  if (r->diverged_at != SIZE_MAX)
    /* (review C-5: the map of a replay that diverged was called exact) */
    gpuplan__buf_printf(b, "<p class=\"note diverged\" data-diverged=\"%zu\">The replay diverged at event %zu: "
                           "this map is the model's up to there, not the program's, and its peak is not the "
                           "file's.</p>\n", r->diverged_at, r->diverged_at);
  for (i = 0; i < m->n; i++) {
    res += m->v[i].size;
    for (k = 0; k < m->v[i].n; k++)
      if (m->v[i].b[k].allocated) alloc += m->v[i].b[k].size;
  }
  fmt_size(alloc, A, sizeof A);
  fmt_size(res, B, sizeof B);
  if (ea == UINT64_MAX) {
    gpuplan__buf_printf(b, "<p class=\"note\">%zu segments, %s allocated of %s reserved%s.</p>\n", m->n, A, B,
                        m->exact ? " (the allocator's own layout)" : "");
  } else if (alloc == ea && res == er && !m->odd && m->exact) {
    gpuplan__buf_printf(b, "<p class=\"note map-check\" data-matches=\"1\" data-layout=\"exact\">%zu segments; exact: "
                           "the allocator's own layout at this event, as the replay left it; its blocks add up to the "
                           "replay's figures: %s allocated, %s reserved.</p>\n", m->n, A, B);
  } else if (alloc == ea && res == er && !m->odd) {
    gpuplan__buf_printf(b, "<p class=\"note map-check\" data-matches=\"1\">%zu segments; the blocks add up to the replay's "
                           "figures at this event: %s allocated, %s reserved.</p>\n", m->n, A, B);
  } else {
    gpuplan__buf_printf(b, "<p class=\"note map-check\" data-matches=\"0\">%zu segments; approximate: the blocks add up to "
                           "%s allocated and %s reserved where the replay has %s and %s (the start state a cut trace "
                           "leaves open, or block sizes the trace does not record).</p>\n",
                        m->n, A, B, fmt_size(ea, C, sizeof C), fmt_size(er, E, sizeof E));
  }
}

int gpuplan__html_write(gpuplan__html *h, const gpuplan__html_page *pg, const gpuplan_snapshot *s,
                        const gpuplan_replay_result *r, const gpuplan__replay_ext *x) {
  gpuplan_ctx *ctx = h->ctx;
  hfile hf;
  hmap m, lm; /* lm: the allocator's own layout, when the replay captured it */
  const gpuplan__replay_layout *lay;
  gpuplan__buf b, maps, notes;
  size_t nev = gpuplan_snapshot_event_count(s), i, k, peak, rpeak, at[2], nmaps = 0, nmaps_out = 0;
  char line[200], A[32];
  uint64_t ea[2], er[2];
  int rc, expandable = pg->conf->expandable_segments;
  if (h->failed) return gpuplan__nomem(ctx);
  memset(&m, 0, sizeof m);
  memset(&lm, 0, sizeof lm);
  m.ctx = ctx;
  m.tp.ctx = ctx;
  m.tp.freed = -1;
  m.tp.seed = 2463534242u;
  lm.ctx = ctx;
  m.conf = gpuplan_snapshot_conf(s); /* the trace ran under the file's settings */
  gpuplan__buf_init(&b, ctx);
  gpuplan__buf_init(&maps, ctx);
  gpuplan__buf_init(&notes, ctx);
  rc = file_open(ctx, pg, s, &hf);
  if (rc) goto out;

  /* The peaks, on the timeline. */
  peak = argmax(x->tl_allocated, x->tl_n);
  rpeak = argmax(x->tl_reserved, x->tl_n);

  /* The segment map: the file's end, undone to the start, then the model's
   * entries forwards to the peak and to the OOM. */
  if ((rc = map_from_file(&m, hf.root, pg->device))) goto out;
  for (i = nev; i-- > 0;) undo(&m, gpuplan_snapshot_event(s, i), i);
  if (m.nomem) {
    rc = gpuplan__nomem(ctx);
    goto out;
  }
  m.conf = pg->conf; /* the model's, forwards */
  for (i = 0; i < h->n; i++)
    if (h->v[i].action == GPUPLAN_ACT_SEGMENT_MAP || h->v[i].action == GPUPLAN_ACT_SEGMENT_UNMAP) expandable = 1;
  at[0] = peak; /* SIZE_MAX: no events, the map is the file's */
  if (peak == SIZE_MAX && r->oom_event != SIZE_MAX) at[0] = r->oom_event; /* the start did not fit */
  ea[0] = peak == SIZE_MAX ? UINT64_MAX : (uint64_t)x->tl_allocated[peak];
  er[0] = peak == SIZE_MAX ? UINT64_MAX : (uint64_t)x->tl_reserved[peak];
  nmaps = 1;
  if (r->oom_event != SIZE_MAX && r->oom_event != peak && peak != SIZE_MAX) {
    at[1] = r->oom_event;
    ea[1] = r->oom_event < x->tl_n ? (uint64_t)x->tl_allocated[r->oom_event] : UINT64_MAX;
    er[1] = r->oom_event < x->tl_n ? (uint64_t)x->tl_reserved[r->oom_event] : UINT64_MAX;
    nmaps = 2;
  }
  if (nmaps == 2 && at[1] < at[0]) {
    size_t t = at[0];
    uint64_t u = ea[0], w = er[0];
    at[0] = at[1], ea[0] = ea[1], er[0] = er[1];
    at[1] = t, ea[1] = u, er[1] = w;
  }
  gpuplan__buf_puts(&maps, "[");
  for (k = 0, i = 0; k < nmaps; k++) {
    char title[160];
    int is_oom = at[k] == r->oom_event && at[k] != peak;
    /* Everything the model did up to and including event at[k]. */
    while (i < h->n && at[k] != SIZE_MAX && h->v[i].event <= at[k]) apply(&m, &h->v[i++]);
    map_flatten(&m); /* (the readers below take arrays) */
    if (m.nomem) {
      rc = gpuplan__nomem(ctx);
      goto out;
    }
    lay = layout_at(x, peak == SIZE_MAX ? SIZE_MAX : at[k]);
    if (lay) {
      /* The allocator's own layout, captured by the replay. */
      map_dispose(&lm);
      memset(&lm, 0, sizeof lm);
      lm.ctx = ctx;
      lm.conf = pg->conf;
      if ((rc = map_from_layout(&lm, lay, h, at[k], &m))) goto out;
    }
    if (is_oom || (peak == SIZE_MAX && at[k] != SIZE_MAX))
      snprintf(title, sizeof title, "Segment map at the OOM (event %zu)", at[k]);
    else if (at[k] == SIZE_MAX) snprintf(title, sizeof title, "Segment map (the file's final segments)");
    else snprintf(title, sizeof title, "Segment map at the peak of allocated memory (event %zu)%s", at[k],
                  at[k] == r->oom_event ? ", the OOM" : "");
    if (expandable && !lay) {
      /* Blocks move within one reserved range as pages are mapped: the
       * map of segments and blocks the rules above build does not apply. */
      if (k == 0)
        gpuplan__buf_puts(&notes, "<section class=\"map\"><h2>Segment map</h2>\n<p class=\"note\" id=\"no-map\">Not "
                                  "drawn: with expandable segments the allocator maps pages into one reserved range per "
                                  "stream, which this page does not draw block by block; the timeline above is the "
                                  "replay's.</p></section>\n");
      continue;
    }
    if (nmaps_out++) gpuplan__buf_puts(&maps, ",");
    put_map(&maps, lay ? &lm : &m, &hf, title, at[k], ea[k], er[k]);
    gpuplan__buf_printf(&notes, "<section class=\"map\"><h2>");
    put_html(&notes, title);
    gpuplan__buf_printf(&notes, "</h2>\n<div class=\"wrap\" id=\"map-%zu\"></div>\n", k);
    put_map_note(&notes, lay ? &lm : &m, ea[k], er[k], r);
    gpuplan__buf_puts(&notes, "</section>\n");
  }
  gpuplan__buf_puts(&maps, "]");

  /* The page. */
  gpuplan__buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                        "<meta name=\"generator\" content=\"gpuplan ");
  put_html(&b, gpuplan_version_string());
  gpuplan__buf_puts(&b, "\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n<title>gpuplan replay: ");
  put_html(&b, pg->file ? pg->file : "(snapshot data)");
  gpuplan__buf_puts(&b, "</title>\n<style>\n");
  gpuplan__buf_puts(&b, css);
  gpuplan__buf_puts(&b, "</style>\n</head>\n<body>\n");
  put_header(&b, pg, s, r, x);
  gpuplan__buf_puts(&b, "<section><h2>Allocated and reserved memory after each trace event</h2>\n"
                        "<div class=\"legend\"><span><i style=\"background:#6fa8dc\"></i>allocated "
                        "(torch.cuda.memory_allocated())</span><span><i style=\"background:#f6b26b\"></i>reserved "
                        "(memory_reserved())</span>");
  if (x->tl_n > TL_DIRECT)
    gpuplan__buf_printf(&b, "<span class=\"note\">%zu events in %d buckets: each shows its highest value, the dashed line "
                            "the lowest allocated</span>", x->tl_n, TL_BUCKETS);
  gpuplan__buf_puts(&b, "</div>\n<div class=\"wrap\" id=\"timeline\"></div>\n"
                        "<noscript><p>The charts are drawn by the page's script.</p></noscript>\n</section>\n");
  gpuplan__buf_puts(&b, "<div class=\"legend\" style=\"margin-top:20px\"><span><i style=\"background:#3d85c6\"></i>"
                        "allocated</span><span><i style=\"background:#f6b26b\"></i>inactive (free, in a segment with "
                        "allocations)</span><span><i style=\"background:#8e7cc3\"></i>pending free (free_requested, awaiting "
                        "free_completed)</span><span><i style=\"background:#cfd8dc\"></i>free (a whole free segment)</span>"
                        "<span class=\"note\">hover a block for its size, address and where it was allocated</span></div>\n");
  if (notes.ptr) gpuplan__buf_put(&b, notes.ptr, notes.len);
  gpuplan__buf_puts(&b, "<div id=\"tip\"></div>\n<footer>Written by gpuplan ");
  put_html(&b, gpuplan_version_string());
  gpuplan__buf_puts(&b, " (gpuplan replay --html). Self-contained: no network, no external files.</footer>\n");

  /* The data, for the script. */
  gpuplan__buf_puts(&b, "<script type=\"application/json\" id=\"gpuplan-data\">{\"file\":");
  put_json(&b, pg->file);
  gpuplan__buf_puts(&b, ",\"mode\":");
  put_json(&b, pg->mode);
  gpuplan__buf_printf(&b, ",\"exact\":%s,\"events\":%zu", r->exact ? "true" : "false", nev);
  if (pg->capacity) gpuplan__buf_printf(&b, ",\"capacity\":%llu", (unsigned long long)pg->capacity);
  else gpuplan__buf_puts(&b, ",\"capacity\":null");
  if (peak != SIZE_MAX && (uint64_t)x->tl_allocated[peak] == r->peak_allocated)
    snprintf(line, sizeof line, "peak allocated %s at event %zu", fmt_size(r->peak_allocated, A, sizeof A), peak);
  else if (peak != SIZE_MAX)
    snprintf(line, sizeof line, "peak allocated %s (the timeline's highest: event %zu)",
             fmt_size(r->peak_allocated, A, sizeof A), peak);
  else
    snprintf(line, sizeof line, "peak allocated %s", fmt_size(r->peak_allocated, A, sizeof A));
  gpuplan__buf_printf(&b, ",\"peak\":{\"bytes\":%llu,\"event\":", (unsigned long long)r->peak_allocated);
  if (peak == SIZE_MAX) gpuplan__buf_puts(&b, "null");
  else gpuplan__buf_printf(&b, "%zu", peak);
  gpuplan__buf_puts(&b, ",\"label\":");
  put_json(&b, line);
  if (rpeak != SIZE_MAX && (uint64_t)x->tl_reserved[rpeak] == r->peak_reserved)
    snprintf(line, sizeof line, "peak reserved %s at event %zu", fmt_size(r->peak_reserved, A, sizeof A), rpeak);
  else
    snprintf(line, sizeof line, "peak reserved %s", fmt_size(r->peak_reserved, A, sizeof A));
  gpuplan__buf_printf(&b, "},\"peak_reserved\":{\"bytes\":%llu,\"event\":", (unsigned long long)r->peak_reserved);
  if (rpeak == SIZE_MAX) gpuplan__buf_puts(&b, "null");
  else gpuplan__buf_printf(&b, "%zu", rpeak);
  gpuplan__buf_puts(&b, ",\"label\":");
  put_json(&b, line);
  gpuplan__buf_puts(&b, "},\"oom\":");
  if (r->oom_event == SIZE_MAX) {
    gpuplan__buf_puts(&b, "null");
  } else {
    gpuplan__buf_printf(&b, "{\"event\":%zu,\"message\":", r->oom_event);
    put_json(&b, r->oom_message);
    gpuplan__buf_puts(&b, "}");
  }
  gpuplan__buf_puts(&b, ",\"timeline\":");
  put_timeline(&b, x, &hf);
  gpuplan__buf_puts(&b, ",\"maps\":");
  if (maps.ptr) gpuplan__buf_put(&b, maps.ptr, maps.len);
  gpuplan__buf_puts(&b, "}</script>\n<script>\n");
  gpuplan__buf_puts(&b, js);
  gpuplan__buf_puts(&b, "</script>\n</body>\n</html>\n");
  if (b.failed || maps.failed || notes.failed || !b.ptr) {
    rc = gpuplan__nomem(ctx);
    goto out;
  }

  if ((rc = gpuplan__write_file(ctx, pg->path, b.ptr, b.len, "html page"))) goto out;
  rc = GPUPLAN_OK;
out:
  map_dispose(&m);
  map_dispose(&lm);
  file_close(ctx, &hf);
  gpuplan__buf_dispose(&b);
  gpuplan__buf_dispose(&maps);
  gpuplan__buf_dispose(&notes);
  return rc;
}

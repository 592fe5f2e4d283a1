/*
 * pickle.c: a plain-data pickle reader (see pickle.h).
 *
 * The loader is the pickle machine of Python's Unpickler with everything
 * that touches code removed: a value stack, a stack of MARK positions and
 * the memo.  Those three are temporary and come from the context's
 * allocator; the values themselves come from the pickle's arena, so that
 * sharing a value through the memo is only copying a pointer, and freeing
 * is freeing the arena.  Lists and dicts grow in place (APPEND onto a list
 * fetched with GET changes it for every holder, as in Python), with
 * geometric growth; the arrays they outgrow stay in the arena, which at
 * most doubles their cost.
 *
 * Every read is checked against the bytes left before it happens, and every
 * length the file gives is checked before anything is allocated for it.
 * Cycles and nesting deeper than the limit are refused, so that consumers
 * can recurse safely: container heights are kept as children are added
 * (exact and cheap for what picklers write), and the rare pickle that
 * changes a container after another one holds it gets one full pass over
 * the result after STOP instead (see adopt and check_shape).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/pickle.h"

/* --- opcodes -------------------------------------------------------------- */

enum {
  OP_MARK = '(', OP_STOP = '.', OP_POP = '0', OP_POP_MARK = '1', OP_DUP = '2',
  OP_FLOAT = 'F', OP_INT = 'I', OP_BININT = 'J', OP_BININT1 = 'K', OP_LONG = 'L',
  OP_BININT2 = 'M', OP_NONE = 'N', OP_PERSID = 'P', OP_BINPERSID = 'Q',
  OP_REDUCE = 'R', OP_STRING = 'S', OP_BINSTRING = 'T', OP_SHORT_BINSTRING = 'U',
  OP_UNICODE = 'V', OP_BINUNICODE = 'X', OP_APPEND = 'a', OP_BUILD = 'b',
  OP_GLOBAL = 'c', OP_DICT = 'd', OP_EMPTY_DICT = '}', OP_APPENDS = 'e',
  OP_GET = 'g', OP_BINGET = 'h', OP_INST = 'i', OP_LONG_BINGET = 'j', OP_LIST = 'l',
  OP_EMPTY_LIST = ']', OP_OBJ = 'o', OP_PUT = 'p', OP_BINPUT = 'q',
  OP_LONG_BINPUT = 'r', OP_SETITEM = 's', OP_TUPLE = 't', OP_EMPTY_TUPLE = ')',
  OP_SETITEMS = 'u', OP_BINFLOAT = 'G',
  OP_PROTO = 0x80, OP_NEWOBJ = 0x81, OP_EXT1 = 0x82, OP_EXT2 = 0x83, OP_EXT4 = 0x84,
  OP_TUPLE1 = 0x85, OP_TUPLE2 = 0x86, OP_TUPLE3 = 0x87, OP_NEWTRUE = 0x88,
  OP_NEWFALSE = 0x89, OP_LONG1 = 0x8a, OP_LONG4 = 0x8b,
  OP_BINBYTES = 'B', OP_SHORT_BINBYTES = 'C',
  OP_SHORT_BINUNICODE = 0x8c, OP_BINUNICODE8 = 0x8d, OP_BINBYTES8 = 0x8e,
  OP_EMPTY_SET = 0x8f, OP_ADDITEMS = 0x90, OP_FROZENSET = 0x91, OP_NEWOBJ_EX = 0x92,
  OP_STACK_GLOBAL = 0x93, OP_MEMOIZE = 0x94, OP_FRAME = 0x95,
  OP_BYTEARRAY8 = 0x96, OP_NEXT_BUFFER = 0x97, OP_READONLY_BUFFER = 0x98
};

#define HIGHEST_PROTOCOL 5

static const char *const opnames[256] = {
  [OP_MARK] = "MARK", [OP_STOP] = "STOP", [OP_POP] = "POP", [OP_POP_MARK] = "POP_MARK",
  [OP_DUP] = "DUP", [OP_FLOAT] = "FLOAT", [OP_INT] = "INT", [OP_BININT] = "BININT",
  [OP_BININT1] = "BININT1", [OP_LONG] = "LONG", [OP_BININT2] = "BININT2",
  [OP_NONE] = "NONE", [OP_PERSID] = "PERSID", [OP_BINPERSID] = "BINPERSID",
  [OP_REDUCE] = "REDUCE", [OP_STRING] = "STRING", [OP_BINSTRING] = "BINSTRING",
  [OP_SHORT_BINSTRING] = "SHORT_BINSTRING", [OP_UNICODE] = "UNICODE",
  [OP_BINUNICODE] = "BINUNICODE", [OP_APPEND] = "APPEND", [OP_BUILD] = "BUILD",
  [OP_GLOBAL] = "GLOBAL", [OP_DICT] = "DICT", [OP_EMPTY_DICT] = "EMPTY_DICT",
  [OP_APPENDS] = "APPENDS", [OP_GET] = "GET", [OP_BINGET] = "BINGET", [OP_INST] = "INST",
  [OP_LONG_BINGET] = "LONG_BINGET", [OP_LIST] = "LIST", [OP_EMPTY_LIST] = "EMPTY_LIST",
  [OP_OBJ] = "OBJ", [OP_PUT] = "PUT", [OP_BINPUT] = "BINPUT",
  [OP_LONG_BINPUT] = "LONG_BINPUT", [OP_SETITEM] = "SETITEM", [OP_TUPLE] = "TUPLE",
  [OP_EMPTY_TUPLE] = "EMPTY_TUPLE", [OP_SETITEMS] = "SETITEMS", [OP_BINFLOAT] = "BINFLOAT",
  [OP_PROTO] = "PROTO", [OP_NEWOBJ] = "NEWOBJ", [OP_EXT1] = "EXT1", [OP_EXT2] = "EXT2",
  [OP_EXT4] = "EXT4", [OP_TUPLE1] = "TUPLE1", [OP_TUPLE2] = "TUPLE2",
  [OP_TUPLE3] = "TUPLE3", [OP_NEWTRUE] = "NEWTRUE", [OP_NEWFALSE] = "NEWFALSE",
  [OP_LONG1] = "LONG1", [OP_LONG4] = "LONG4", [OP_BINBYTES] = "BINBYTES",
  [OP_SHORT_BINBYTES] = "SHORT_BINBYTES", [OP_SHORT_BINUNICODE] = "SHORT_BINUNICODE",
  [OP_BINUNICODE8] = "BINUNICODE8", [OP_BINBYTES8] = "BINBYTES8",
  [OP_EMPTY_SET] = "EMPTY_SET", [OP_ADDITEMS] = "ADDITEMS", [OP_FROZENSET] = "FROZENSET",
  [OP_NEWOBJ_EX] = "NEWOBJ_EX", [OP_STACK_GLOBAL] = "STACK_GLOBAL",
  [OP_MEMOIZE] = "MEMOIZE", [OP_FRAME] = "FRAME", [OP_BYTEARRAY8] = "BYTEARRAY8",
  [OP_NEXT_BUFFER] = "NEXT_BUFFER", [OP_READONLY_BUFFER] = "READONLY_BUFFER",
};

const char *gpuplan__pickle_opname(int op) {
  if (op < 0 || op > 255 || !opnames[op]) return "unknown";
  return opnames[op];
}

/* Why an opcode that exists is refused; NULL for the ones we run. */
static const char *refusal(int op) {
  switch (op) {
  case OP_GLOBAL: case OP_STACK_GLOBAL: return "imports code";
  case OP_INST: return "imports and calls code";
  case OP_EXT1: case OP_EXT2: case OP_EXT4:
    return "imports code (copyreg extension registry)";
  case OP_REDUCE: case OP_OBJ: case OP_NEWOBJ: case OP_NEWOBJ_EX: return "calls code";
  case OP_BUILD: return "calls code (__setstate__)";
  case OP_PERSID: case OP_BINPERSID: return "needs a persistent_load hook";
  case OP_NEXT_BUFFER: case OP_READONLY_BUFFER: return "needs out-of-band buffers";
  default: return NULL;
  }
}

/* --- the machine ---------------------------------------------------------- */

/* Recent integers (a snapshot's sizes, addresses and streams recur): up to
 * INT_CACHE, a slot per 128 bytes of input. */
#define INT_CACHE 1024
typedef struct int_seen {
  gpuplan__pv *v;
  int64_t i;
} int_seen;

/* Runs of memo references the skip machine read: where, how many bytes
 * and opcodes. */
#define RUN_WAYS 8
#define RUN_HEAD 16
#define RUN_SCAN 4096 /* how far the first APPENDS byte is looked for */
/* frames_batch: smaller inputs' runs are walked, the cache neither made nor
 * looked in.  Chosen between the traces measured: linear-grad (22 KB) is
 * 0.3 us (3%) faster without it; cs336-small (2.5 MB) took 1.6 times as
 * long when the first 128 bytes of each run were walked before the cache
 * was looked in.  No input between 22 KB and the smallest cs336 trace
 * (495 KB) was measured. */
#define RUN_CACHE_MIN ((uint64_t)64 << 10)
typedef struct run_seen {
  uint64_t off; /* its bytes: in the input (whole), or in the run store (moves) */
  size_t len, cnt;
  uint64_t head; /* a fingerprint of the first RUN_HEAD bytes */
} run_seen;

/* The skip machine's stand-ins: SKIPPED values whose u.i says what they
 * stand for.  LZ_STR: a memoized string, built when wanted (moff).
 * LZ_DECODED: a dict or list decoded (decode_value), which, unlike the
 * others, no opcode may change. */
enum { LZ_SCALAR, LZ_LIST, LZ_TUPLE, LZ_DICT, LZ_STR, LZ_DECODED, LZ_KINDS };

/* Decoding: levels of records (a segment's blocks: 2), and the schemas a
 * key's tag can name. */
#define DLEVELS 2
#define DSCHEMAS 8
#define KT_PAIRS 16
#define DCHUNK_SHIFT 6 /* level 0's records come in chunks of 64 */
#define DCHUNK ((size_t)1 << DCHUNK_SHIFT)

typedef struct loader {
  gpuplan_ctx *ctx;
  gpuplan__arena *arena;
  const unsigned char *buf;
  size_t len, pos;
  size_t at;          /* offset of the opcode being run */
  int op;
  gpuplan__pv **stack;
  size_t sp, scap;
  size_t *marks;      /* stack positions of open MARKs */
  size_t nmarks, mcap;
  gpuplan__pv **memo; /* memo[i]: set when mbits says so */
  size_t memo_cap, memo_len;
  int memo_sparse;    /* an entry was set out of turn (a PUT's index not
                       * memo_len); until then the entries set are exactly
                       * [0, memo_len), as MEMOIZE and picklers' PUTs number
                       * them, and a GET's index is checked against memo_len */
  size_t pushes;
  gpuplan__pickle_limits lim;
  int protocol;
  int dirty;          /* heights are stale: check_shape must run */
  uint32_t maxd;      /* lim.max_depth, clamped */
  uint64_t *mbits;    /* bit i: memo[i] is set */
  int_seen *ints;     /* nints (a power of two), made at the first integer */
  size_t nints;
  size_t ints_made;   /* integers made since the cache was (int_value) */
  int ints_failed;    /* out of memory for them: go without */
  run_seen *runs;     /* nruns (RUN_WAYS per bucket), made at the first use */
  unsigned char *run_next; /* per bucket: the way replaced next */
  size_t nruns;
  int runs_failed;    /* out of memory for them: go without */
  unsigned char *rstore; /* the bytes of the runs remembered, where the window moves on */
  size_t rstore_len, rstore_cap;
  unsigned char *bump; /* lalloc's current region of the arena */
  size_t bump_left, bump_next;
  char point;         /* the C library's decimal point, '\0' until needed */
  gpuplan__pv *none, *yes, *no;
  /* Skipping (gpuplan__pickle_load_skip; see skip_value). */
  const char *const *skip; /* keys whose values are not built; NULL: none */
  size_t nskip, skiplen[GPUPLAN__PICKLE_MAX_SKIP];
  int skipping;       /* the skip machine may run (not on the second pass) */
  int skipped_any;    /* it ran */
  size_t nskipped;    /* pairs left out */
  gpuplan__pv lazy[LZ_KINDS]; /* stand-ins for values the skip machine did not build */
  uint32_t *moff;     /* memo[i] == &lazy[LZ_STR]: offset of the opcode that pushed it */
  size_t moff_cap;
  size_t str_at, str_end; /* the skip machine's last unbuilt string: its opcode, its end */
  size_t str_stored;  /* moves: where store holds it (SIZE_MAX: not yet) */
  /* Reading in a window (gpuplan__pickle_load_reader): buf holds the
   * input's bytes [base, base + len), and every position (pos, at,
   * str_at, str_end) is relative to it; fill() moves the window
   * on.  rd NULL: buf is the whole input, base 0. */
  const gpuplan__pickle_reader *rd;
  unsigned char *win;
  size_t wcap, ahead;
  uint64_t base;
  int eof;            /* rd: nothing more to read */
  int moves;          /* rd, and the input larger than the first window: the
                       * window moves on, so what the memo and the run cache
                       * point at is copied (store, rstore); else the first
                       * fill reads the input whole and nothing moves (base
                       * stays 0), and they point into buf as without rd */
  uint64_t total;     /* the input's length (rd: its stated size) */
  unsigned char *store; /* moves: the opcodes of the strings LZ_STR memo entries stand for */
  size_t store_len, store_cap;
  /* Decoding (gpuplan__pickle_load_decode; see decode_value). */
  const gpuplan__pickle_decode *decode;
  size_t ndecode, declen[GPUPLAN__PICKLE_MAX_DECODE];
  /* The records of the list being decoded: at level 0 in chunks of
   * DCHUNK from the arena (rchunk, rnchunk of rcchunk), at level 1 in
   * rbuf (of rcap fields), copied to the arena after. */
  gpuplan__pfield **rchunk;
  size_t rnchunk, rcchunk;
  gpuplan__pfield *rbuf;
  size_t rcap;
  struct dkt {      /* per level and place in a dict: the GET its key was last, and the field */
    uint64_t pat, mask;
    const gpuplan__pv *key;
    uint64_t gen;     /* memo_gen then: while it holds, the entry still holds key */
    unsigned w;
    int k;
    /* ... and the new str its key was last, memoized (a str of at most 13
     * bytes: its opcode, length, bytes and MEMOIZE in 16), by its bytes,
     * and the field: sw the str opcode's length (0: none) */
    uint64_t spat[2], smask[2];
    unsigned sw;
    int sk;
  } kt[DLEVELS][KT_PAIRS];
  uint64_t memo_gen; /* memo entries replaced (a PUT to an index set before) */
  const gpuplan__pickle_schema *dsch[DSCHEMAS]; /* the schemas met, which KEY_TAG names */
  size_t dnames[DSCHEMAS][GPUPLAN__PICKLE_MAX_FIELDS]; /* ... their names' lengths */
  size_t ndsch;
} loader;

/* The stand-ins: SKIPPED values whose u.i says what they stand for. */

/* Returned by the loader's functions when a stand-in would reach the
 * result: the load starts again without skipping (never an error). */
#define RESTART 1

/* A str value's seen: it is one of the keys to skip; one of the keys to
 * decode (DECODE_IDX: which); and, for decoding, the field it is of the
 * schema last looked up at each level (KEY_TAG). */
#define SKIPKEY 1u
#define DECODEKEY 2u
#define KEYFLAGS (SKIPKEY | DECODEKEY)
#define DECODE_IDX(seen) (((seen) >> 2) & 7u)
#define KEY_TAG_SHIFT(lvl) (8 + 12 * (lvl))

static void say(loader *l, const char *fmt, ...) GPUPLAN_PRINTF(2, 3);

static void say(loader *l, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  gpuplan__error(l->ctx, GPUPLAN_EINVAL, "pickle: offset %llu: %s", (unsigned long long)(l->base + l->at), msg);
}

/* The loader's few hottest helpers, inlined where the compiler allows. */
/* COLD: a function kept out of its callers' hot loops. */
#if defined(__GNUC__) || defined(__clang__)
#  define HOT static inline __attribute__((always_inline))
#  define COLD static __attribute__((noinline))
#else
#  define HOT static inline
#  define COLD static
#endif

/* Forward any non-zero code: errors and RESTART. */
#define TRY(expr)                  \
  do {                             \
    int try_rc_ = (expr);          \
    if (try_rc_) return try_rc_;   \
  } while (0)

/* Set the message and give GPUPLAN_EINVAL, as a constant that static
 * analysers can follow through the callers' checks. */
#define fail(l, ...) (say((l), __VA_ARGS__), GPUPLAN_EINVAL)

static int truncated(loader *l) {
  return fail(l, "truncated in %s", gpuplan__pickle_opname(l->op));
}

/* --- the window (gpuplan__pickle_load_reader) ------------------------------ */

#define WINDOW ((size_t)256 << 10)      /* the window's starting size */
#define WINDOW_AHEAD ((size_t)16 << 10) /* bytes kept ahead of the opcode being run */
#define MEMO_FIRST_MAX ((size_t)1 << 22)  /* the most memo entries sized from the input */
#define STORE_FIRST_MAX ((size_t)64 << 20) /* the most bytes of store sized from the input */

static int fill_slow(loader *l, uint64_t need);

/* Make need bytes from pos on readable, or all the input has left. */
HOT int fill(loader *l, uint64_t need) {
  return l->rd && !l->eof && need > (uint64_t)(l->len - l->pos) ? fill_slow(l, need) : 0;
}

/* The input's bytes from pos to its end, as far as they are known. */
static uint64_t left_input(const loader *l) {
  if (!l->rd || l->eof) return l->len - l->pos;
  return l->rd->size - (l->base + l->pos); /* not at the end: base + len < size */
}

/* Consume n bytes of argument. */
static int take(loader *l, uint64_t n, const unsigned char **out) {
  TRY(fill(l, n));
  if (n > (uint64_t)(l->len - l->pos)) {
    if (n > 255)
      return fail(l, "truncated in %s (length %llu, %zu bytes left)",
                  gpuplan__pickle_opname(l->op), (unsigned long long)n, l->len - l->pos);
    return truncated(l);
  }
  *out = l->buf + l->pos;
  l->pos += (size_t)n;
  return 0;
}

/* A text argument: the bytes up to the next newline, which is consumed. */
static int line(loader *l, const unsigned char **out, size_t *n) {
  const unsigned char *s, *nl;
  for (;;) {
    s = l->buf + l->pos;
    nl = memchr(s, '\n', l->len - l->pos);
    if (nl || !l->rd || l->eof) break;
    TRY(fill_slow(l, (uint64_t)(l->len - l->pos) + 1));
  }
  if (!nl) return fail(l, "truncated in %s (no newline)", gpuplan__pickle_opname(l->op));
  *out = s;
  *n = (size_t)(nl - s);
  l->pos += *n + 1;
  return 0;
}

/* Little-endian loads: one unaligned load where the compiler knows the
 * byte order (the skip machine's loop runs on them). */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint32_t le32(const unsigned char *s) {
  uint32_t v;
  memcpy(&v, s, sizeof v);
  return v;
}

static inline uint64_t le64(const unsigned char *s) {
  uint64_t v;
  memcpy(&v, s, sizeof v);
  return v;
}
#else
static inline uint32_t le32(const unsigned char *s) {
  return (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
}

static inline uint64_t le64(const unsigned char *s) {
  return (uint64_t)le32(s) | (uint64_t)le32(s + 4) << 32;
}
#endif

static int64_t to_signed(uint64_t u) {
  return u <= INT64_MAX ? (int64_t)u : -(int64_t)~u - 1;
}

/* LONG1's integer of w <= 8 bytes at p, where 8 bytes can be read. */
static inline int64_t long1(const unsigned char *p, size_t w) {
  unsigned sh;
  uint64_t u, sign;
  if (w == 0) return 0;
  /* the w low bytes, sign-extended: (u ^ sign) - sign, sign its top bit */
  sh = 64u - 8u * (unsigned)w;
  u = le64(p) << sh >> sh;
  sign = (uint64_t)1 << (63 - sh);
  return to_signed((u ^ sign) - sign);
}

/* Whether the opcode c PUTs (or is a FRAME, which may come before one). */
static inline int dput_op(int c) {
  /* MEMOIZE and FRAME, BINPUT and LONG_BINPUT are neighbours */
  return (c & ~1) == OP_MEMOIZE || (unsigned)(c - OP_BINPUT) < 2u;
}

static int nomem(loader *l) {
  gpuplan__nomem(l->ctx);
  return GPUPLAN_ENOMEM;
}

/* Grow a context-allocated array to hold at least need elements. */
static int grow(loader *l, void **arr, size_t *cap, size_t need, size_t elem) {
  size_t c = *cap ? *cap : 64;
  void *p;
  while (c < need) c = c > SIZE_MAX / 2 ? need : c * 2;
  if (c > SIZE_MAX / elem) return nomem(l);
  p = gpuplan__realloc(l->ctx, *arr, c * elem);
  if (!p) return nomem(l);
  *arr = p;
  *cap = c;
  return 0;
}

/* Move the window on: drop what lies before the opcode being run (and
 * before the last unbuilt string, while a PUT may still memoize it), then
 * read until the window is full, growing it to hold need bytes from pos. */
static int fill_slow(loader *l, uint64_t need) {
  const gpuplan__pickle_reader *rd = l->rd;
  size_t keep = l->at < l->pos ? l->at : l->pos, chunk;
  uint64_t left = rd->size > l->base + l->pos ? rd->size - (l->base + l->pos) : 0;
  if (need > left) need = left;
  if (l->str_end != SIZE_MAX) {
    if (l->str_end < keep) l->str_end = SIZE_MAX; /* no PUT can take it now */
    else if (l->str_at < keep) keep = l->str_at;
  }
  if (keep) {
    memmove(l->win, l->win + keep, l->len - keep);
    l->len -= keep;
    l->pos -= keep;
    l->at -= keep;
    l->base += keep;
    if (l->str_end != SIZE_MAX) {
      l->str_at -= keep;
      l->str_end -= keep;
    }
  }
  if (need > (uint64_t)(l->wcap - l->pos)) {
    size_t cap = l->wcap > SIZE_MAX / 2 ? SIZE_MAX : 2 * l->wcap;
    void *w;
    if (need > (uint64_t)(SIZE_MAX - l->pos)) return nomem(l);
    if (cap < l->pos + (size_t)need) cap = l->pos + (size_t)need;
    if (!(w = gpuplan__realloc(l->ctx, l->win, cap))) return nomem(l);
    l->win = w;
    l->buf = w;
    l->wcap = cap;
  }
  chunk = rd->chunk ? rd->chunk : l->wcap;
  while (!l->eof && l->len < l->wcap) {
    uint64_t from = l->base + l->len;
    size_t room = l->wcap - l->len, got = 0;
    if (from >= rd->size) {
      l->eof = 1;
      break;
    }
    if (room > chunk) room = chunk;
    if (room > rd->size - from) room = (size_t)(rd->size - from);
    TRY(rd->read(rd->ud, l->ctx, from, l->win + l->len, room, &got));
    if (got == 0 || NEVER(got > room)) l->eof = 1; /* the end came sooner than the size said */
    else l->len += got;
  }
  if (l->base + l->len >= rd->size) l->eof = 1;
  return 0;
}

HOT int push(loader *l, gpuplan__pv *v) {
  if (l->pushes >= l->lim.max_items)
    return fail(l, "more than %zu values; limit exceeded", l->lim.max_items);
  if (l->sp == l->scap) {
    void *s = l->stack;
    TRY(grow(l, &s, &l->scap, l->sp + 1, sizeof *l->stack));
    l->stack = s;
  }
  l->pushes++;
  l->stack[l->sp++] = v;
  return 0;
}

/* Values on the stack above the innermost MARK. */
HOT size_t avail(const loader *l) {
  return l->sp - (l->nmarks ? l->marks[l->nmarks - 1] : 0);
}

static int underflow(loader *l) {
  return fail(l, "stack underflow in %s", gpuplan__pickle_opname(l->op));
}

static int need_items(loader *l, size_t n) {
  return avail(l) < n ? underflow(l) : 0;
}

/* Close the innermost MARK: the items it opened are stack[*k .. sp). */
static int pop_mark(loader *l, size_t *k) {
  if (l->nmarks == 0) return fail(l, "%s without MARK", gpuplan__pickle_opname(l->op));
  *k = l->marks[--l->nmarks];
  return 0;
}

/* --- values --------------------------------------------------------------- */

/* Everything a load builds comes from a few large regions of the arena,
 * carved 8 bytes aligned (the arena would round every block up to
 * max_align_t): the first sized from the input, each next one twice the
 * last, so that a load makes a handful of allocations, and an allocator
 * that keeps what it was given back (glibc's dynamic thresholds) serves
 * the next load from memory it already has instead of new pages. */

#define LALIGN 8
#define REGION_MIN ((size_t)16384)
#define REGION_MAX ((size_t)64 << 20)
_Static_assert(_Alignof(gpuplan__pv) <= LALIGN && _Alignof(gpuplan__pv *) <= LALIGN,
               "lalloc's alignment fits the values");

static void *lalloc(loader *l, size_t size) {
  void *p;
  if (size > SIZE_MAX - (LALIGN - 1)) return NULL;
  size = (size + LALIGN - 1) & ~(size_t)(LALIGN - 1);
  if (size > l->bump_left) {
    size_t n = l->bump_next;
    if (size > n / 4) return gpuplan__arena_alloc(l->arena, size); /* large: a block of its own */
    l->bump = gpuplan__arena_alloc(l->arena, n);
    if (!l->bump) {
      l->bump_left = 0;
      return NULL;
    }
    l->bump_left = n;
    if (n < REGION_MAX) l->bump_next = 2 * n;
  }
  p = l->bump;
  l->bump += size;
  l->bump_left -= size;
  return p;
}

/* Give back the end of the last block lalloc gave (p, of size bytes), so
 * that it keeps only keep bytes; a block of its own keeps all. */
static void lalloc_trim(loader *l, void *p, size_t size, size_t keep) {
  size = (size + LALIGN - 1) & ~(size_t)(LALIGN - 1);
  keep = (keep + LALIGN - 1) & ~(size_t)(LALIGN - 1);
  if ((unsigned char *)p + size == l->bump && keep <= size) {
    l->bump -= size - keep;
    l->bump_left += size - keep;
  }
}

HOT gpuplan__pv *newv(loader *l, gpuplan__pv_type t, size_t extra) {
  gpuplan__pv *v;
  if (extra > SIZE_MAX - sizeof *v) return NULL;
  if (!(v = lalloc(l, sizeof *v + extra))) return NULL;
  memset(v, 0, sizeof *v);
  v->type = t;
  return v;
}

/*
 * Shape tracking.  While loading, a container's seen holds its height (1 for
 * an empty one) and the EMBEDDED bit once it is another container's child.
 * Picklers fill a container before anything holds it, so adding children to
 * a container without a parent keeps every height exact and cannot close a
 * cycle, unless the child is the container itself.  The other cases (a
 * container changed after it got a parent, or given itself) mark the load
 * dirty, and check_shape decides after STOP.
 */
#define EMBEDDED 0x80000000u
#define MAX_HEIGHT 0x1ffffff0u /* below check_shape's ONPATH and DONE */

/* Value types as bits: those a container's new child needs looked at
 * for (containers, and the skip machine's stand-ins). */
#define PV_BIT(t) (1u << (t))
#define ADOPT_BITS                                                                          \
  (PV_BIT(GPUPLAN__PV_LIST) | PV_BIT(GPUPLAN__PV_TUPLE) | PV_BIT(GPUPLAN__PV_DICT) | \
   PV_BIT(GPUPLAN__PV_SKIPPED))

static int is_container(const gpuplan__pv *v) {
  return v->type == GPUPLAN__PV_LIST || v->type == GPUPLAN__PV_TUPLE ||
         v->type == GPUPLAN__PV_DICT;
}

static int deep(loader *l) {
  return fail(l, "containers nested deeper than %zu levels; limit exceeded", l->lim.max_depth);
}

static gpuplan__pv *new_container(loader *l, gpuplan__pv_type t) {
  gpuplan__pv *v = newv(l, t, 0);
  if (!v) return NULL;
  v->seen = 1;
  return v;
}

/* Container c takes items[0..n) as children. */
static int adopt(loader *l, gpuplan__pv *c, gpuplan__pv *const *items, size_t n) {
  uint32_t h = c->seen & ~EMBEDDED;
  size_t i;
  if (c->seen & EMBEDDED) l->dirty = 1;
  for (i = 0; i < n; i++) {
    gpuplan__pv *v = items[i];
    if (!is_container(v)) {
      if (v->type == GPUPLAN__PV_SKIPPED) return RESTART; /* a stand-in */
      continue;
    }
    if (v == c) l->dirty = 1;
    else if ((v->seen & ~EMBEDDED) >= h) h = (v->seen & ~EMBEDDED) + 1;
    v->seen |= EMBEDDED;
  }
  if (l->dirty) return 0;
  if (h > l->maxd) return deep(l);
  c->seen = (c->seen & EMBEDDED) | h;
  return 0;
}

/* The integer cache's slot for i (l->ints made). */
HOT int_seen *int_slot(const loader *l, int64_t i) {
  return &l->ints[(size_t)(((uint64_t)i * 0x9E3779B97F4A7C15ull) >> 40) & (l->nints - 1)];
}

/* An integer value: the cache's when it holds i, else a new one (NULL when
 * out of memory). */
static gpuplan__pv *int_value(loader *l, int64_t i) {
  int_seen *c = NULL;
  gpuplan__pv *v;
  if ((!l->ints || l->ints_made > 2 * l->nints) && !l->ints_failed) {
    /* Made small (most of a snapshot's integers are decoded into records,
     * never made), then four times larger each time it has made twice as
     * many values as it has slots, up to INT_CACHE or a slot per 128 bytes
     * of input. */
    size_t n = l->ints ? 4 * l->nints : 16, most = 16;
    while (most < INT_CACHE && most * 128 < l->total) most *= 2;
    if (n > most) n = most;
    if (!l->ints || n > l->nints) {
      int_seen *t = gpuplan__calloc(l->ctx, n, sizeof *l->ints);
      if (t) {
        gpuplan__free(l->ctx, l->ints);
        l->ints = t;
        l->nints = n;
      } else if (!l->ints) {
        l->ints_failed = 1; /* only costs memory */
      }
    }
    l->ints_made = 0;
  }
  if (l->ints) {
    c = int_slot(l, i);
    if (c->v && c->i == i) return c->v;
  }
  if (!(v = newv(l, GPUPLAN__PV_INT, 0))) return NULL;
  v->u.i = i;
  l->ints_made++;
  if (c) {
    c->v = v;
    c->i = i;
  }
  return v;
}

HOT int push_int(loader *l, int64_t i) {
  gpuplan__pv *v = int_value(l, i);
  if (!v) return nomem(l);
  return push(l, v);
}

static int push_float(loader *l, double f) {
  gpuplan__pv *v = newv(l, GPUPLAN__PV_FLOAT, 0);
  if (!v) return nomem(l);
  v->u.f = f;
  return push(l, v);
}

static int skip_value(loader *l);

/* Push a new str: a key to skip is marked, and where it is a dict's key
 * the value after it is skipped. */
static int maybe_skip(loader *l, const gpuplan__pv *v);

static void mark_key(const loader *l, gpuplan__pv *v) {
  size_t i;
  for (i = 0; i < l->nskip; i++)
    if (l->skiplen[i] == v->u.str.len && memcmp(l->skip[i], v->u.str.s, v->u.str.len) == 0) {
      v->seen = SKIPKEY;
      return;
    }
  for (i = 0; i < l->ndecode; i++)
    if (l->declen[i] == v->u.str.len && memcmp(l->decode[i].key, v->u.str.s, v->u.str.len) == 0) {
      v->seen = DECODEKEY | (uint32_t)i << 2;
      return;
    }
}

static int push_str(loader *l, gpuplan__pv *v) {
  mark_key(l, v);
  TRY(push(l, v));
  return maybe_skip(l, v);
}

/* A new STR or BYTES holding a copy of s[0..n); NULL when out of memory. */
static gpuplan__pv *new_bytes(loader *l, gpuplan__pv_type t, const unsigned char *s, size_t n) {
  gpuplan__pv *v = newv(l, t, n + 1);
  char *d;
  if (!v) return NULL;
  d = (char *)(v + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  v->u.str.s = d;
  v->u.str.len = n;
  if (t == GPUPLAN__PV_STR) mark_key(l, v);
  return v;
}

static int push_bytes(loader *l, gpuplan__pv_type t, const unsigned char *s, size_t n) {
  gpuplan__pv *v = new_bytes(l, t, s, n);
  if (!v) return nomem(l);
  TRY(push(l, v));
  return t == GPUPLAN__PV_STR && (v->seen & KEYFLAGS) ? maybe_skip(l, v) : 0;
}

/* A LIST or TUPLE holding stack[k .. sp), which it replaces. */
static int push_seq(loader *l, gpuplan__pv_type t, size_t k) {
  size_t n = l->sp - k;
  gpuplan__pv *v = new_container(l, t);
  if (!v) return nomem(l);
  TRY(adopt(l, v, l->stack + k, n));
  if (n) {
    if (n > SIZE_MAX / sizeof *v->u.seq.items) return nomem(l);
    v->u.seq.items = lalloc(l, n * sizeof *v->u.seq.items);
    if (!v->u.seq.items) return nomem(l);
    memcpy(v->u.seq.items, l->stack + k, n * sizeof *v->u.seq.items);
    v->u.seq.n = v->u.seq.cap = n;
  }
  l->sp = k;
  return push(l, v);
}

/* Append stack[k .. sp) to the list (or set) at stack[k - 1]. */
static int extend(loader *l, size_t k) {
  gpuplan__pv *list, **items;
  size_t n = l->sp - k, need, cap;
  if (k == 0 || k <= (l->nmarks ? l->marks[l->nmarks - 1] : 0)) return underflow(l);
  list = l->stack[k - 1];
  if (list->type != GPUPLAN__PV_LIST)
    return fail(l, "%s onto a value that is not a list", gpuplan__pickle_opname(l->op));
  TRY(adopt(l, list, l->stack + k, n));
  if (list->u.seq.cap - list->u.seq.n < n) {
    /* Exact for the first batch, which is usually the only one. */
    need = list->u.seq.n + n;
    cap = list->u.seq.cap > SIZE_MAX / 2 ? SIZE_MAX : list->u.seq.cap * 2;
    if (cap < need) cap = need;
    if (cap > SIZE_MAX / sizeof *items) return nomem(l);
    items = lalloc(l, cap * sizeof *items);
    if (!items) return nomem(l);
    if (list->u.seq.n) memcpy(items, list->u.seq.items, list->u.seq.n * sizeof *items);
    list->u.seq.items = items;
    list->u.seq.cap = cap;
  }
  if (n) memcpy(list->u.seq.items + list->u.seq.n, l->stack + k, n * sizeof *items);
  list->u.seq.n += n;
  l->sp = k;
  return 0;
}

/* Add the key/value pairs stack[k .. sp) to the dict at stack[k - 1]. */
static int set_items(loader *l, size_t k) {
  gpuplan__pv *d, **block, **keys, **vals, **fresh;
  gpuplan__pv *const *const st = l->stack + k;
  size_t n = l->sp - k, i, need, cap, w;
  uint32_t h;
  int dirty;
  if (n % 2) return fail(l, "odd number of items for %s", gpuplan__pickle_opname(l->op));
  n /= 2;
  if (k == 0 || k <= (l->nmarks ? l->marks[l->nmarks - 1] : 0)) return underflow(l);
  d = l->stack[k - 1];
  if (d->type != GPUPLAN__PV_DICT)
    return fail(l, "%s onto a value that is not a dict", gpuplan__pickle_opname(l->op));
  if (n == 0) {
    l->sp = k;
    return 0;
  }
  /* Room for every pair (those of keys to skip are left out below,
   * whether their values were built, on a pass without skipping, or not;
   * the room they do not use is given back). */
  fresh = NULL;
  if (d->u.dict.cap - d->u.dict.n < n) {
    need = d->u.dict.n + n;
    cap = d->u.dict.cap > SIZE_MAX / 2 ? SIZE_MAX : d->u.dict.cap * 2;
    if (cap < need) cap = need;
    if (cap > SIZE_MAX / 2 / sizeof *block) return nomem(l);
    block = lalloc(l, 2 * cap * sizeof *block);
    if (!block) return nomem(l);
    if (d->u.dict.n) {
      memcpy(block, d->u.dict.keys, d->u.dict.n * sizeof *block);
      memcpy(block + cap, d->u.dict.vals, d->u.dict.n * sizeof *block);
    }
    d->u.dict.keys = block;
    d->u.dict.vals = block + cap;
    d->u.dict.cap = cap;
    if (d->u.dict.n == 0 && cap == n) fresh = block; /* sized for these pairs only */
  }
  /* The pairs, adopted, in the same pass that leaves out those of keys
   * to skip. */
  keys = d->u.dict.keys + d->u.dict.n;
  vals = d->u.dict.vals + d->u.dict.n;
  h = d->seen & ~EMBEDDED;
  dirty = (d->seen & EMBEDDED) != 0;
  for (i = w = 0; i < n; i++) {
    gpuplan__pv *const key = st[2 * i], *const val = st[2 * i + 1];
    const unsigned kt = key->type, vt = val->type;
    if (kt == GPUPLAN__PV_STR && (key->seen & SKIPKEY) && l->skip) {
      l->nskipped++;
      continue;
    }
    if ((PV_BIT(kt) | PV_BIT(vt)) & ADOPT_BITS) {
      /* (most pairs are scalars, which need nothing here) */
#define ADOPT1(v)                                                        \
  do {                                                                   \
    if (is_container(v)) {                                               \
      if ((v) == d) dirty = 1;                                           \
      else if (((v)->seen & ~EMBEDDED) >= h) h = ((v)->seen & ~EMBEDDED) + 1; \
      (v)->seen |= EMBEDDED;                                             \
    } else if ((v)->type == GPUPLAN__PV_SKIPPED) {                       \
      return RESTART; /* a stand-in */                                   \
    }                                                                    \
  } while (0)
      ADOPT1(key);
      ADOPT1(val);
#undef ADOPT1
    }
    keys[w] = key;
    vals[w] = val;
    w++;
  }
  if (dirty) l->dirty = 1;
  if (!l->dirty) {
    if (h > l->maxd) return deep(l);
    d->seen = (d->seen & EMBEDDED) | h;
  }
  if (fresh && w < n) {
    /* A new dict's arrays, cut to the pairs kept: the values move down
     * behind the keys, and the arena takes back the rest. */
    memmove(fresh + w, fresh + n, w * sizeof *fresh);
    d->u.dict.vals = fresh + w;
    d->u.dict.cap = w;
    lalloc_trim(l, fresh, 2 * n * sizeof *fresh, 2 * w * sizeof *fresh);
  }
  d->u.dict.n += w;
  l->sp = k;
  return 0;
}

/* --- the memo ------------------------------------------------------------- */

HOT int memo_has(const loader *l, uint64_t idx) {
  return idx < l->memo_cap && ((l->mbits[idx / 64] >> (idx % 64)) & 1u);
}

/* Where the last unbuilt string's opcode would be found by build_lazy_str:
 * in buf, or (moves) in store, where it is copied at its first PUT. */
static size_t lazy_where(const loader *l) {
  if (!l->moves) return l->str_at;
  return l->str_stored != SIZE_MAX ? l->str_stored : l->store_len;
}

/* Whether top, PUT at at, is an unbuilt string to keep as one (the skip
 * machine's string just pushed, whose opcode can be found again). */
HOT int memo_lazy(const loader *l, const gpuplan__pv *top, size_t at) {
  return top == &l->lazy[LZ_SCALAR] && at == l->str_end && lazy_where(l) <= UINT32_MAX;
}

/* Whether memo_set can record entry idx without growing anything: the
 * memo, and for an unbuilt string the stand-ins' offsets and the store. */
HOT int memo_ready(const loader *l, uint64_t idx, int lazy) {
  return idx < l->memo_cap &&
         (!lazy || (l->moff && l->moff_cap >= l->memo_cap &&
                    (!l->moves || l->str_stored != SIZE_MAX || l->store_cap - l->store_len >= l->str_end - l->str_at)));
}

/* Record top as memo entry idx, where memo_ready says there is room.
 * lazy (memo_lazy): an unbuilt string, built from its opcode if wanted
 * outside (memo_get), the opcode copied to store where the window moves
 * on; after: where its PUT ends (a second PUT of it may follow). */
HOT void memo_set(loader *l, uint64_t idx, gpuplan__pv *top, int lazy, size_t after) {
  uint64_t *w = &l->mbits[idx / 64], bit = (uint64_t)1 << (idx % 64);
  if (!(*w & bit)) {
    if (idx != l->memo_len) l->memo_sparse = 1;
    l->memo_len++;
  } else {
    l->memo_gen++; /* (an entry replaced: see struct dkt) */
  }
  *w |= bit;
  if (lazy) {
    if (l->moves && l->str_stored == SIZE_MAX) {
      memcpy(l->store + l->store_len, l->buf + l->str_at, l->str_end - l->str_at);
      l->str_stored = l->store_len;
      l->store_len += l->str_end - l->str_at;
    }
    l->moff[idx] = (uint32_t)(l->moves ? l->str_stored : l->str_at);
    l->memo[idx] = &l->lazy[LZ_STR];
    l->str_end = after;
    return;
  }
  /* A stand-in for a string fetched from the memo: its opcode is unknown
   * here, so the new entry cannot be built if wanted (memo_get restarts). */
  l->memo[idx] = top == &l->lazy[LZ_STR] ? &l->lazy[LZ_SCALAR] : top;
}

static int memo_put(loader *l, uint64_t idx) {
  gpuplan__pv *top;
  int lazy;
  if (l->sp == 0 || avail(l) == 0) return underflow(l);
  /* Picklers number memo entries 0, 1, 2, ... and each entry costs at least
   * two bytes of input, so a larger index is malformed; refusing it keeps a
   * hostile index from sizing the memo. */
  if (idx >= l->total) return fail(l, "memo index %llu out of range", (unsigned long long)idx);
  top = l->stack[l->sp - 1];
  lazy = memo_lazy(l, top, l->at);
  if (idx >= l->memo_cap) {
    size_t old = l->memo_cap, cap = l->memo_cap;
    void *m = l->memo, *b = l->mbits;
    /* Not cleared: mbits says which entries are set. */
    /* First sized from the input (a torch snapshot memoizes about once
     * every 70 bytes), so that a large one is not copied while it doubles. */
    size_t want = old == 0 && l->total / 64 > idx + 1 ? (size_t)(l->total / 64 < MEMO_FIRST_MAX ? l->total / 64 : MEMO_FIRST_MAX) : (size_t)idx + 1;
    if (want < (size_t)idx + 1) want = (size_t)idx + 1;
    TRY(grow(l, &m, &cap, want, sizeof *l->memo));
    l->memo = m;
    if (!(b = gpuplan__realloc(l->ctx, b, (cap + 63) / 64 * sizeof *l->mbits))) return nomem(l);
    l->mbits = b;
    memset(l->mbits + (old + 63) / 64, 0, ((cap + 63) / 64 - (old + 63) / 64) * sizeof *l->mbits);
    l->memo_cap = cap;
  }
  if (lazy && l->moves && l->str_stored == SIZE_MAX && l->store_cap - l->store_len < l->str_end - l->str_at) {
    /* The window moves on: the string's opcode is kept in store. */
    size_t n = l->str_end - l->str_at;
    void *m = l->store;
    /* First sized from the input (a snapshot's unbuilt frame strings
     * are about a sixth of it). */
    size_t want = l->store_cap == 0 && l->total / 8 > n ? (size_t)(l->total / 8 < STORE_FIRST_MAX ? l->total / 8 : STORE_FIRST_MAX) : n;
    if (want < l->store_len + n) want = l->store_len + n;
    TRY(grow(l, &m, &l->store_cap, want, 1));
    l->store = m;
  }
  if (lazy && l->moff_cap < l->memo_cap) {
    void *m = l->moff;
    TRY(grow(l, &m, &l->moff_cap, l->memo_cap, sizeof *l->moff));
    l->moff = m;
  }
  memo_set(l, idx, top, lazy, l->pos);
  return 0;
}

/* Build the string a LZ_STR memo entry stands for, from its opcode at at,
 * which the skip machine has run (so it fits the input). */
static int build_lazy_str(loader *l, size_t at, gpuplan__pv **out) {
  const unsigned char *b = l->moves ? l->store + at : l->buf + at;
  size_t left = (l->moves ? l->store_len : l->len) - at, hdr;
  uint64_t n;
  gpuplan__pv_type t = GPUPLAN__PV_STR;
  switch (b[0]) {
  case OP_SHORT_BINBYTES: t = GPUPLAN__PV_BYTES; /* fall through */
  case OP_SHORT_BINUNICODE: case OP_SHORT_BINSTRING:
    hdr = 2;
    break;
  case OP_BINBYTES: t = GPUPLAN__PV_BYTES; /* fall through */
  case OP_BINUNICODE: case OP_BINSTRING:
    hdr = 5;
    break;
  case OP_BINBYTES8: case OP_BYTEARRAY8: t = GPUPLAN__PV_BYTES; /* fall through */
  case OP_BINUNICODE8:
    hdr = 9;
    break;
  default: hdr = 0;
  }
  if (NEVER(hdr == 0 || left < hdr)) return gpuplan__error(l->ctx, GPUPLAN_ERROR, "pickle: bad memo stand-in");
  n = hdr == 2 ? b[1] : hdr == 5 ? le32(b + 1) : le64(b + 1);
  if (NEVER(n > left - hdr)) return gpuplan__error(l->ctx, GPUPLAN_ERROR, "pickle: bad memo stand-in");
  if (!(*out = new_bytes(l, t, b + hdr, (size_t)n))) return nomem(l);
  return 0;
}

HOT int memo_get(loader *l, uint64_t idx) {
  gpuplan__pv *v;
  if (!memo_has(l, idx)) return fail(l, "memo key %llu not found", (unsigned long long)idx);
  v = l->memo[idx];
  if (v == &l->lazy[LZ_STR]) {
    TRY(build_lazy_str(l, l->moff[idx], &v));
    l->memo[idx] = v;
  }
  /* A stand-in the skip machine memoized, wanted outside it. */
  if (v->type == GPUPLAN__PV_SKIPPED) return RESTART;
  TRY(push(l, v));
  return v->type == GPUPLAN__PV_STR && (v->seen & KEYFLAGS) ? maybe_skip(l, v) : 0;
}

/* --- skipping ---------------------------------------------------------------
 *
 * When a key to skip is pushed as a key of a dict being filled (after the
 * MARK of its SETITEMS, at an even position), skip_value runs the opcodes
 * that build the value after it on a machine that builds nothing: the
 * same stack, marks and memo, holding stand-ins (lazy[], typed as list,
 * dict, tuple or scalar so that APPENDS and SETITEMS keep their checks)
 * instead of new values, and real values fetched from the memo as they are.
 * It runs every opcode through the checks the loader has; an opcode that
 * would fail there, or change a real value, ends the load with RESTART
 * (or the error), and the input is loaded again without skipping, which
 * then gives the loader's own result or message.
 *
 * Where the value ends is a guess, and only a matter of speed: the
 * machine is the stack machine, so the stack holds exactly what the loader
 * would have, with stand-ins for what was not built.  The guess is the
 * shape picklers write: the value is complete when, at its level, the next
 * opcode pushes a scalar that no APPEND or TUPLE2 then takes (the next
 * key), or reaches below it (SETITEMS).  A stand-in that reaches the
 * result other than as the value of a skipped key (adopt), or a memo
 * entry holding one that is wanted outside (memo_get), restarts.
 */

static int decode_value(loader *l, const gpuplan__pickle_decode *d);

static int maybe_skip(loader *l, const gpuplan__pv *v) {
  size_t m;
  if (!(v->seen & KEYFLAGS) || !l->skipping || l->nmarks == 0) return 0;
  m = l->marks[l->nmarks - 1];
  if (m == 0 || l->stack[m - 1]->type != GPUPLAN__PV_DICT || (l->sp - 1 - m) % 2) return 0;
  if (v->seen & DECODEKEY) /* a key of the top-level dict only */
    return l->nmarks == 1 && m == 1 ? decode_value(l, &l->decode[DECODE_IDX(v->seen)]) : 0;
  return skip_value(l);
}

/* The length of the opcode at pos when it pushes one scalar by itself,
 * else 0 (also when it does not fit the input: the loader then says why). */
static size_t scalar_len(const loader *l, size_t pos) {
  const unsigned char *b = l->buf + pos;
  size_t left = l->len - pos;
  uint64_t n;
  if (left == 0) return 0;
  switch (b[0]) {
  case OP_NONE: case OP_NEWTRUE: case OP_NEWFALSE: case OP_EMPTY_TUPLE: return 1;
  case OP_BININT1: case OP_BINGET: n = 2; break;
  case OP_BININT2: n = 3; break;
  case OP_BININT: case OP_LONG_BINGET: n = 5; break;
  case OP_BINFLOAT: n = 9; break;
  case OP_SHORT_BINUNICODE: case OP_SHORT_BINBYTES: case OP_SHORT_BINSTRING: case OP_LONG1:
    if (left < 2) return 0;
    n = 2 + (uint64_t)b[1];
    break;
  case OP_BINUNICODE: case OP_BINBYTES: case OP_BINSTRING: case OP_LONG4:
    if (left < 5) return 0;
    n = 5 + (uint64_t)le32(b + 1);
    break;
  case OP_BINUNICODE8: case OP_BINBYTES8:
    if (left < 9) return 0;
    n = le64(b + 1);
    if (n > left - 9) return 0;
    n += 9;
    break;
  default: return 0;
  }
  return n <= left ? (size_t)n : 0;
}

/* At the level of the skipped value, the opcode at pos pushes a scalar:
 * whether the value goes on (the scalar is appended to it, or the two make
 * a tuple) rather than the dict's next key coming. */
static int value_goes_on(const loader *l, size_t pos) {
  size_t n = scalar_len(l, pos), q = pos + n;
  if (!n) return 0;
  while (q < l->len) {
    switch (l->buf[q]) {
    case OP_MEMOIZE: q += 1; continue;
    case OP_BINPUT: q += 2; continue;
    case OP_LONG_BINPUT: q += 5; continue;
    case OP_FRAME: q += 9; continue;
    case OP_APPEND: case OP_TUPLE2: return 1;
    default: return 0;
    }
  }
  return 0;
}

/* The skip machine's guess that the value it skips, on the stack at its
 * level, is complete at the opcode op at pos: op neither changes nor may
 * begin to change it (a PUT, a new container or MARK, DUP, POP, TUPLE1),
 * nor pushes a scalar that the value takes (value_goes_on). */
static int value_ends(const loader *l, int op) {
  switch (op) {
  case OP_MEMOIZE: case OP_BINPUT: case OP_LONG_BINPUT: case OP_FRAME: case OP_PROTO:
  case OP_EMPTY_LIST: case OP_EMPTY_SET: case OP_EMPTY_DICT: case OP_MARK:
  case OP_DUP: case OP_POP: case OP_TUPLE1:
    return 0;
  default:
    return !value_goes_on(l, l->pos);
  }
}

/* The skip machine's memory of runs, sized by the input (a bucket per 16
 * KiB, a power of two from 8 to 256); 0 when there is no memory for it,
 * which only costs time. */
static int make_runs(loader *l) {
  size_t buckets = 8;
  void *m;
  if (l->runs_failed) return 0;
  while (buckets < 256 && buckets * 16384 < l->total) buckets *= 2;
  m = gpuplan__calloc(l->ctx, 1, buckets * RUN_WAYS * sizeof *l->runs + buckets);
  if (!m) {
    l->runs_failed = 1;
    return 0;
  }
  l->runs = m;
  l->run_next = (unsigned char *)(l->runs + buckets * RUN_WAYS);
  l->nruns = buckets * RUN_WAYS;
  return 1;
}

/* Room to remember a run of n bytes: always where the input stays whole;
 * where the window moves on, in the run store, up to an eighth of the
 * input (1 MiB at least, 16 MiB at most).  0 when there is none, which
 * only costs time. */
#define RSTORE_MIN ((size_t)1 << 20)
#define RSTORE_MAX ((size_t)16 << 20)
static int run_keep(loader *l, size_t n) {
  size_t most = l->total / 8 < RSTORE_MIN ? RSTORE_MIN : l->total / 8 > RSTORE_MAX ? RSTORE_MAX : (size_t)(l->total / 8);
  if (!l->moves) return 1;
  if (n > most - l->rstore_len || l->rstore_len > most) return 0;
  if (l->rstore_cap - l->rstore_len < n) {
    size_t cap = l->rstore_cap ? 2 * l->rstore_cap : 16384;
    void *m;
    while (cap - l->rstore_len < n) cap *= 2;
    if (cap > most) cap = most;
    if (!(m = gpuplan__realloc(l->ctx, l->rstore, cap))) return 0;
    l->rstore = m;
    l->rstore_cap = cap;
  }
  return 1;
}

/* A fingerprint of the d bytes at p (d >= RUN_HEAD; else of the first
 * RUN_HEAD bytes): their length, their last 8 bytes and 8 of every 24.
 * Runs of one program share their outer frames and often their last
 * ones: a fingerprint of the ends alone puts many runs in one bucket,
 * where they evict each other; every byte costs more than the misses. */
#define RUN_STRIDE 24
static uint64_t run_hash(const unsigned char *p, size_t d) {
  uint64_t h = (uint64_t)d * 0x100000001b3ull;
  size_t i;
  if (d < RUN_HEAD) return h ^ le64(p) ^ le64(p + 8) * 0x9E3779B97F4A7C15ull;
  for (i = 0; i + 8 <= d; i += RUN_STRIDE) h = (h ^ le64(p + i)) * 0x9E3779B97F4A7C15ull;
  return (h ^ le64(p + d - 8)) * 0xff51afd7ed558ccdull;
}

static int lazy_is(const loader *l, const gpuplan__pv *v, int kind) {
  return v == &l->lazy[kind];
}

/* Push a stand-in or a real value. */
#define SPUSH(v)                                                            \
  do {                                                                      \
    gpuplan__pv *sv_ = (v);                                                 \
    if (l->pushes >= l->lim.max_items) return RESTART;                      \
    if (l->sp == l->scap) {                                                 \
      void *st_ = l->stack;                                                 \
      TRY(grow(l, &st_, &l->scap, l->sp + 1, sizeof *l->stack));            \
      l->stack = st_;                                                       \
    }                                                                       \
    l->pushes++;                                                            \
    l->stack[l->sp++] = sv_;                                                \
  } while (0)

/* For the hot loops (skip_hot, run_fast): the pushes allowed before
 * looking again, room on the stack and below the values limit, from sp
 * and pushes as they hold them (pops give none back there). */
HOT size_t push_room(const loader *l, size_t sp, size_t pushes) {
  size_t stack = l->scap - sp, limit = l->lim.max_items - pushes;
  return stack < limit ? stack : limit;
}

/* Room for n memo entries now, without growing anything: the memo, and
 * where some are unbuilt strs, of b bytes of opcodes in all, the last at
 * at (b 0: none), the stand-ins' offsets and (moves) the store, with offsets
 * that fit 32 bits (lazy_where): memo_ready's conditions, for each. */
HOT int memo_room(const loader *l, size_t n, size_t b, size_t at) {
  if (l->memo_len + n > l->memo_cap || l->memo_len + n > l->total) return 0;
  if (!b) return 1;
  if (!l->moff || l->moff_cap < l->memo_cap) return 0;
  return l->moves ? l->store_cap - l->store_len >= b && l->store_len + b <= UINT32_MAX : at <= UINT32_MAX;
}

/* A new stack frame's dict at pos, the form torch pickles one in:
 * EMPTY_DICT, its MEMOIZE, MARK, up to FRAME_PAIRS pairs (a key that is a
 * memo reference; a str and its MEMOIZE, a str, a memo reference or a
 * BININT1/BININT2/BININT, with no other PUT after it), SETITEMS.  Returns
 * the pairs (0: not of that form, or a memo entry or the store might have
 * to grow for it, which skip_hot's MEMOIZE case leaves to memo_put) and
 * fills f with where its strs lie, for skip_hot to run it in one step as
 * its cases run it opcode by opcode. */
#define FRAME_PAIRS 4 /* torch writes three (filename, line, name: every snapshot here); one more spare */
typedef struct frame_form {
  size_t end;                      /* after its SETITEMS */
  size_t nstr, str_at[FRAME_PAIRS], str_end[FRAME_PAIRS];
  unsigned char str_memo[FRAME_PAIRS]; /* the str is MEMOIZEd */
} frame_form;

static size_t frame_dict(const loader *l, size_t pos, frame_form *f) {
  const unsigned char *const buf = l->buf;
  const size_t len = l->len;
  size_t p = pos + 3, pairs = 0, nmemo = 1, sbytes = 0, idx;
  if (len - pos < 16 || buf[pos + 1] != OP_MEMOIZE || buf[pos + 2] != OP_MARK) return 0;
  f->nstr = 0;
  for (;;) {
    if (len - p < 8) return 0;
    if (buf[p] == OP_SETITEMS) break;
    if (pairs == FRAME_PAIRS) return 0;
    /* the key */
    if (buf[p] == OP_BINGET) idx = buf[p + 1], p += 2;
    else if (buf[p] == OP_LONG_BINGET) idx = le32(buf + p + 1), p += 5;
    else return 0;
    if (!memo_has(l, idx) || len - p < 8) return 0;
    /* its value */
    switch (buf[p]) {
    case OP_SHORT_BINUNICODE: {
      const size_t n = 2 + (size_t)buf[p + 1];
      if (n >= len - p) return 0;
      f->str_at[f->nstr] = p;
      p += n;
      f->str_end[f->nstr] = p;
      f->str_memo[f->nstr] = buf[p] == OP_MEMOIZE;
      if (buf[p] == OP_MEMOIZE) p++, nmemo++, sbytes += n;
      f->nstr++;
      break;
    }
    case OP_BINGET: idx = buf[p + 1], p += 2; goto ref;
    case OP_LONG_BINGET: idx = le32(buf + p + 1), p += 5;
    ref:
      if (!memo_has(l, idx)) return 0;
      break;
    case OP_BININT1: p += 2; break;
    case OP_BININT2: p += 3; break;
    case OP_BININT: p += 5; break;
    default: return 0;
    }
    if (p >= len || dput_op(buf[p])) return 0;
    pairs++;
  }
  if (!memo_room(l, nmemo, sbytes, p)) return 0;
  f->end = p + 1;
  return pairs;
}

/* The skip machine's common opcodes (those a frame's dict and a frames
 * list are made of), run with the machine's state in locals, inside the
 * skipped value's own marks.  Each does exactly what skip_value's loop
 * does with it; at the first opcode that needs more (references among a
 * list's items, which may be a run the run cache knows; the window's end,
 * room for the stack or the marks, a check that fails, any other opcode)
 * the state is stored back and that loop takes the opcode.  Returns 0, or
 * an error from memo_put. */
static int skip_hot(loader *l, size_t base, size_t m0) {
  const unsigned char *const buf = l->buf;
  const size_t len = l->len;
  gpuplan__pv **const stack = l->stack;
  gpuplan__pv *const scalar = &l->lazy[LZ_SCALAR], *const lzlist = &l->lazy[LZ_LIST],
              *const lzdict = &l->lazy[LZ_DICT];
  size_t *const marks = l->marks;
  const size_t mcap = l->mcap;
  size_t pos = l->pos, sp = l->sp, nmarks = l->nmarks, pushes = l->pushes;
  size_t room = push_room(l, sp, pushes);
  while (nmarks > m0 && len - pos >= 16) {
    size_t n, k, idx;
    switch (buf[pos]) {
    case OP_BINGET:
      idx = buf[pos + 1];
      n = 2;
      goto get;
    case OP_LONG_BINGET:
      idx = le32(buf + pos + 1);
      n = 5;
    get:
      /* Items of a list: maybe a run skip_value knows. */
      if (stack[marks[nmarks - 1] - 1] == lzlist || !room || !memo_has(l, idx)) goto out;
      stack[sp++] = l->memo[idx];
      pushes++, room--;
      pos += n;
      break;
    case OP_MARK:
      if (nmarks == mcap) goto out;
      marks[nmarks++] = sp;
      pos++;
      break;
    case OP_BININT1: n = 2; goto scalar;
    case OP_BININT2: n = 3; goto scalar;
    case OP_BININT: n = 5;
    scalar:
      if (!room) goto out;
      stack[sp++] = scalar;
      pushes++, room--;
      pos += n;
      break;
    case OP_SHORT_BINUNICODE:
      n = 2 + (size_t)buf[pos + 1];
      goto str;
    case OP_BINUNICODE:
      n = le32(buf + pos + 1);
      if (n > len - pos - 5) goto out;
      n += 5;
    str:
      if (!room || n > len - pos) goto out;
      stack[sp++] = scalar;
      pushes++, room--;
      l->str_at = pos;
      pos += n;
      l->str_end = pos;
      l->str_stored = SIZE_MAX;
      break;
    case OP_EMPTY_DICT: {
      /* A new frame's dict: its opcodes as the cases below run them (the
       * dict pushed and memoized, MARK, its pairs pushed, each MEMOIZEd
       * str recorded as the MEMOIZE case records it, SETITEMS), in one. */
      frame_form f;
      size_t pairs, j;
      if (nmarks < mcap && room >= 1 + 2 * FRAME_PAIRS && (pairs = frame_dict(l, pos, &f))) {
        stack[sp++] = lzdict;
        memo_set(l, l->memo_len, lzdict, 0, pos + 2);
        for (j = 0; j < f.nstr; j++) {
          l->str_at = f.str_at[j];
          l->str_end = f.str_end[j];
          l->str_stored = SIZE_MAX;
          if (f.str_memo[j]) memo_set(l, l->memo_len, scalar, memo_lazy(l, scalar, f.str_end[j]), f.str_end[j] + 1);
        }
        pushes += 1 + 2 * pairs, room -= 1 + 2 * pairs;
        pos = f.end;
        break;
      }
    }
      /* fall through */
    case OP_EMPTY_LIST:
      if (!room) goto out;
      stack[sp++] = buf[pos] == OP_EMPTY_LIST ? lzlist : lzdict;
      pushes++, room--;
      pos++;
      break;
    case OP_MEMOIZE: {
      gpuplan__pv *const top = stack[sp - 1];
      int lazy;
      idx = l->memo_len;
      if (sp == marks[nmarks - 1] || idx >= l->total) goto out;
      lazy = memo_lazy(l, top, pos);
      if (memo_ready(l, idx, lazy)) {
        memo_set(l, idx, top, lazy, pos + 1);
      } else {
        /* memo_put grows what is short (its state stored first) */
        int rc;
        l->at = pos;
        l->op = OP_MEMOIZE;
        l->pos = pos + 1;
        l->sp = sp;
        l->nmarks = nmarks;
        if ((rc = memo_put(l, idx))) return rc;
      }
      pos++;
      break;
    }
    case OP_APPENDS:
    case OP_SETITEMS:
      k = marks[nmarks - 1];
      if (k <= (nmarks - 1 > m0 ? marks[nmarks - 2] : base)) goto out;
      if (buf[pos] == OP_SETITEMS ? (sp - k) % 2 || stack[k - 1] != lzdict : stack[k - 1] != lzlist) goto out;
      nmarks--;
      sp = k;
      pos++;
      break;
    default:
      goto out;
    }
  }
out:
  l->pos = l->at = pos;
  l->sp = sp;
  l->nmarks = nmarks;
  l->pushes = pushes;
  return 0;
}

/* The run cache's place for the run at pos: its fingerprint, the bucket,
 * and whether the cache is there to be used (the run long enough). */
typedef struct run_key {
  uint64_t head;
  size_t bucket;
  int ok;
} run_key;

/* A run of memo references at pos (pos + RUN_HEAD <= len) that the run
 * cache knows: its references' count, and where it ends (*end); 0 when it
 * is not known (k then says where to remember it, run_remember).  Equal
 * bytes, followed by an APPENDS as they were, are the same opcodes, and
 * their memo entries are still set (entries are replaced, never unset).
 * The fingerprint is of the bytes up to the first APPENDS byte (run_hash). */
static size_t run_lookup(loader *l, size_t pos, size_t *end, run_key *k) {
  const unsigned char *const buf = l->buf;
  const size_t len = l->len;
  const run_seen *b;
  size_t w, span = len - pos < RUN_SCAN ? len - pos : RUN_SCAN, d;
  const unsigned char *e;
  k->ok = 0;
  if (!l->runs && !make_runs(l)) return 0;
  e = memchr(buf + pos, OP_APPENDS, span);
  d = e ? (size_t)(e - (buf + pos)) : 0;
  k->head = run_hash(buf + pos, d);
  k->bucket = (size_t)((k->head * 0x9E3779B97F4A7C15ull) >> 40) & (l->nruns / RUN_WAYS - 1);
  k->ok = 1;
  b = &l->runs[k->bucket * RUN_WAYS];
  for (w = 0; w < RUN_WAYS; w++) {
    const run_seen *c = &b[w];
    if (c->len && c->head == k->head && c->len < len - pos &&
        (buf[pos + c->len] == OP_APPENDS || buf[pos + c->len] == OP_ADDITEMS) &&
        memcmp(buf + pos, (l->moves ? l->rstore : buf) + c->off, c->len) == 0) {
      *end = pos + c->len;
      return c->cnt;
    }
  }
  return 0;
}

/* Remember the run [start, end) of cnt references (all of them set), that
 * run_lookup did not know, under k, where it is long enough and ends in
 * APPENDS (or ADDITEMS) and there is room to keep its bytes. */
static void run_remember(loader *l, const run_key *k, size_t start, size_t end, size_t cnt) {
  run_seen *rs;
  if (!k->ok || end - start < RUN_HEAD || end >= l->len ||
      (l->buf[end] != OP_APPENDS && l->buf[end] != OP_ADDITEMS) || !run_keep(l, end - start))
    return;
  rs = &l->runs[k->bucket * RUN_WAYS + l->run_next[k->bucket]];
  l->run_next[k->bucket] = (unsigned char)((l->run_next[k->bucket] + 1) % RUN_WAYS);
  rs->head = k->head;
  rs->len = end - start;
  if (l->moves) {
    /* (the window will move on: the run's bytes are kept) */
    memcpy(l->rstore + l->rstore_len, l->buf + start, rs->len);
    rs->off = l->rstore_len;
    l->rstore_len += rs->len;
  } else {
    rs->off = start;
  }
  rs->cnt = cnt;
}

/* The memo references from pos on (BINGETs and LONG_BINGETs) whose
 * entries are set: how many, and where they end (*end).  With the memo
 * dense (memo_sparse 0) four BINGETs at a time (their opcodes in the even
 * bytes of 8, their indices in the odd), each index below memo_len
 * (always, from 256 entries on); else one at a time.  It stops at the
 * first reference at or after stop. */
HOT size_t refs_walk(const loader *l, size_t pos, size_t stop, size_t *end) {
  const unsigned char *const buf = l->buf;
  const size_t len = l->len;
  size_t cnt = 0;
  if (!l->memo_sparse) {
    const size_t ml = l->memo_len;
    while (pos < stop) {
      uint32_t wide;
      size_t idx;
      if (pos + 8 <= len) {
        const uint64_t w = le64(buf + pos);
        if ((w & 0x00ff00ff00ff00ffull) == 0x0068006800680068ull &&
            (ml > 255 || (((w >> 8) & 0xff) < ml && ((w >> 24) & 0xff) < ml && ((w >> 40) & 0xff) < ml &&
                          (w >> 56) < ml))) {
          pos += 8;
          cnt += 4;
          continue;
        }
      }
      if (pos + 5 > len || (buf[pos] | 2u) != OP_LONG_BINGET) break;
      wide = (buf[pos] >> 1) & 1u;
      idx = le32(buf + pos + 1) & (0xffu | (0u - wide));
      if (idx >= ml) break;
      pos += 2 + 3 * (size_t)wide;
      cnt++;
    }
  } else {
    const uint64_t *const bits = l->mbits;
    const size_t mcap = l->memo_cap;
    /* Branch-free: BINGET and LONG_BINGET differ in bit 1 only, and the 4
     * bytes after either can be read (pos + 5 <= len). */
    while (pos < stop && pos + 5 <= len && (buf[pos] | 2u) == OP_LONG_BINGET) {
      uint32_t wide = (buf[pos] >> 1) & 1u;
      size_t idx = le32(buf + pos + 1) & (0xffu | (0u - wide));
      if (idx >= mcap || !((bits[idx / 64] >> (idx % 64)) & 1u)) break;
      pos += 2 + 3 * (size_t)wide;
      cnt++;
    }
  }
  *end = pos;
  return cnt;
}

/* The run of memo references from pos (at a BINGET or LONG_BINGET inside
 * an open MARK): how many, each with its memo entry set, and where it
 * ends (*end).  Inside a stand-in list, a run read before (a program's
 * steps repeat its stack frames) is known by its bytes (run_lookup); a new
 * run is remembered (run_remember). */
static size_t ref_run(loader *l, size_t *end) {
  const size_t pos = l->pos;
  size_t cnt;
  run_key k = {0, 0, 0};
  if (pos + RUN_HEAD <= l->len && lazy_is(l, l->stack[l->marks[l->nmarks - 1] - 1], LZ_LIST) &&
      (cnt = run_lookup(l, pos, end, &k)))
    return cnt;
  cnt = refs_walk(l, pos, SIZE_MAX, end);
  run_remember(l, &k, pos, *end, cnt);
  return cnt;
}

/* Push the first cnt references of the run at pos (ref_run found them all
 * set; the stack has room for them), as the skip machine pushes memo
 * references, and count them. */
static void push_refs(loader *l, size_t cnt) {
  const unsigned char *const buf = l->buf;
  gpuplan__pv **const stack = l->stack, **const memo = l->memo;
  size_t pos = l->pos, sp = l->sp, i;
  for (i = 0; i < cnt; i++) {
    size_t wide = (buf[pos] >> 1) & 1u, idx = wide ? le32(buf + pos + 1) : buf[pos + 1];
    stack[sp++] = memo[idx];
    pos += 2 + 3 * wide;
  }
  l->pos = pos;
  l->sp = sp;
  l->pushes += cnt;
}

/* Called with the key on top: the value is built at stack[base]. */
static int skip_value(loader *l);

/* skip_value of a value whose building began: stack[base] is its slot,
 * and m0 the marks open below it. */
static int skip_from(loader *l, const size_t base, const size_t m0) {
  const unsigned char *a;
  gpuplan__pv *const scalar = &l->lazy[LZ_SCALAR];
  l->skipped_any = 1;
  for (;;) {
    size_t floor, k;
    uint64_t n;
    int op;
    TRY(fill(l, l->ahead));
    if (l->nmarks > m0) {
      TRY(skip_hot(l, base, m0));
      TRY(fill(l, l->ahead));
    }
    if (l->nmarks > m0 && l->pos < l->len && (l->buf[l->pos] | 2u) == OP_LONG_BINGET) {
      /* A run of memo references ('h' BINGET, 'j' LONG_BINGET: a frames
       * list's items, most of a torch snapshot), with their checks.  When
       * an APPENDS onto a stand-in list takes them all, they are counted,
       * not pushed; otherwise pushed as below. */
      const unsigned char *const buf = l->buf;
      size_t pos, cnt = ref_run(l, &pos), left = l->lim.max_items - l->pushes;
      if (cnt && cnt <= left && pos < l->len && (buf[pos] == OP_APPENDS || buf[pos] == OP_ADDITEMS)) {
        size_t mk = l->marks[l->nmarks - 1], below = l->nmarks - 1 > m0 ? l->marks[l->nmarks - 2] : base;
        if (mk > below && lazy_is(l, l->stack[mk - 1], LZ_LIST)) {
          l->pushes += cnt;
          l->nmarks--;
          l->sp = mk;
          l->pos = pos + 1;
          continue;
        }
      }
      {
        size_t room = l->scap - l->sp, most = room < left ? room : left;
        push_refs(l, cnt < most ? cnt : most);
      }
    }
    if (l->pos >= l->len) return 0; /* the loader says it is truncated */

    op = l->buf[l->pos];
    /* The lowest stack slot the opcode may take: the innermost mark of
     * the value's own, else the value's slot (below it lies the key). */
    floor = l->nmarks > m0 ? l->marks[l->nmarks - 1] : base;
    if (l->nmarks == m0 && l->sp == base + 1) {
      /* The value is on the stack, complete unless what follows takes it. */
      if (value_ends(l, op)) {
        l->str_end = SIZE_MAX;
        return 0;
      }
    }
    l->at = l->pos;
    l->op = op;
    l->pos++;
#define NEED(j)                                                  \
  do {                                                           \
    if (l->sp < floor + (j)) {                                   \
      if (l->nmarks == m0) goto leave;                           \
      return RESTART;                                            \
    }                                                            \
  } while (0)
#define INNER_MARK()                                             \
  do {                                                           \
    if (l->nmarks == m0) goto leave;                             \
    k = l->marks[l->nmarks - 1];                                 \
  } while (0)
    switch (op) {
    case OP_PROTO:
      TRY(take(l, 1, &a));
      if (a[0] > HIGHEST_PROTOCOL) return RESTART;
      l->protocol = a[0];
      break;
    case OP_FRAME:
      TRY(take(l, 8, &a));
      if (le64(a) > left_input(l)) return RESTART;
      break;
    case OP_MARK:
      if (l->nmarks == l->mcap) {
        void *m = l->marks;
        TRY(grow(l, &m, &l->mcap, l->nmarks + 1, sizeof *l->marks));
        l->marks = m;
      }
      l->marks[l->nmarks++] = l->sp;
      break;
    case OP_POP:
      if (l->sp > floor) l->sp--;
      else if (l->nmarks > m0) l->nmarks--;
      else goto leave;
      break;
    case OP_POP_MARK:
      INNER_MARK();
      l->nmarks--;
      l->sp = k;
      break;
    case OP_DUP:
      if (l->sp == 0 || (l->nmarks > m0 && l->sp == floor)) return RESTART;
      SPUSH(l->stack[l->sp - 1]);
      break;

    case OP_NONE: SPUSH(l->none); break;
    case OP_NEWTRUE: SPUSH(l->yes); break;
    case OP_NEWFALSE: SPUSH(l->no); break;
    case OP_BININT: TRY(take(l, 4, &a)); SPUSH(scalar); break;
    case OP_BININT1: TRY(take(l, 1, &a)); SPUSH(scalar); break;
    case OP_BININT2: TRY(take(l, 2, &a)); SPUSH(scalar); break;
    case OP_BINFLOAT: TRY(take(l, 8, &a)); SPUSH(scalar); break;
    case OP_LONG1:
    case OP_LONG4: {
      size_t i;
      if (op == OP_LONG1) {
        TRY(take(l, 1, &a));
        n = a[0];
      } else {
        TRY(take(l, 4, &a));
        if ((int32_t)le32(a) < 0) return RESTART;
        n = le32(a);
      }
      TRY(take(l, n, &a));
      if (n > 8) { /* as push_long: wider than 64 bits is refused */
        unsigned char fill = (a[n - 1] & 0x80) ? 0xff : 0x00;
        for (i = 8; i < n; i++)
          if (a[i] != fill) return RESTART;
        if (fill && !(a[7] & 0x80)) return RESTART;
      }
      SPUSH(scalar);
      break;
    }
    case OP_BINSTRING:
      TRY(take(l, 4, &a));
      if ((int32_t)le32(a) < 0) return RESTART;
      n = le32(a);
      goto counted;
    case OP_SHORT_BINSTRING: case OP_SHORT_BINUNICODE: case OP_SHORT_BINBYTES:
      TRY(take(l, 1, &a));
      n = a[0];
      goto counted;
    case OP_BINUNICODE: case OP_BINBYTES:
      TRY(take(l, 4, &a));
      n = le32(a);
      goto counted;
    case OP_BINUNICODE8: case OP_BINBYTES8: case OP_BYTEARRAY8:
      TRY(take(l, 8, &a));
      n = le64(a);
    counted:
      TRY(take(l, n, &a));
      SPUSH(scalar);
      /* Strings are shared far apart (the file's first '' may be a frame's
       * name, its next the allocator settings' conf): memo_put remembers
       * where this one is when it is memoized next. */
      l->str_at = l->at;
      l->str_end = l->pos;
      l->str_stored = SIZE_MAX;
      break;

    case OP_EMPTY_LIST: case OP_EMPTY_SET: SPUSH(&l->lazy[LZ_LIST]); break;
    case OP_EMPTY_DICT: SPUSH(&l->lazy[LZ_DICT]); break;
    case OP_EMPTY_TUPLE: SPUSH(&l->lazy[LZ_TUPLE]); break;
    case OP_TUPLE1: case OP_TUPLE2: case OP_TUPLE3:
      NEED((size_t)(op - OP_TUPLE1 + 1));
      l->sp -= (size_t)(op - OP_TUPLE1 + 1);
      SPUSH(&l->lazy[LZ_TUPLE]);
      break;
    case OP_TUPLE:
    case OP_LIST:
    case OP_FROZENSET:
    case OP_DICT:
      INNER_MARK();
      if (op == OP_DICT && (l->sp - k) % 2) return RESTART;
      l->nmarks--;
      l->sp = k;
      SPUSH(&l->lazy[op == OP_TUPLE ? LZ_TUPLE : op == OP_DICT ? LZ_DICT : LZ_LIST]);
      break;
    case OP_APPEND:
      NEED(2);
      if (!lazy_is(l, l->stack[l->sp - 2], LZ_LIST)) return RESTART;
      l->sp--;
      break;
    case OP_SETITEM:
      NEED(3);
      if (!lazy_is(l, l->stack[l->sp - 3], LZ_DICT)) return RESTART;
      l->sp -= 2;
      break;
    case OP_APPENDS:
    case OP_ADDITEMS:
    case OP_SETITEMS: {
      size_t below;
      INNER_MARK();
      below = l->nmarks - 1 > m0 ? l->marks[l->nmarks - 2] : base;
      if (k <= below) {
        if (l->nmarks - 1 == m0) goto leave; /* onto the key */
        return RESTART;
      }
      if (op == OP_SETITEMS ? (l->sp - k) % 2 || !lazy_is(l, l->stack[k - 1], LZ_DICT)
                            : !lazy_is(l, l->stack[k - 1], LZ_LIST))
        return RESTART;
      l->nmarks--;
      l->sp = k;
      break;
    }

    case OP_BINPUT:
      TRY(take(l, 1, &a));
      TRY(memo_put(l, a[0]));
      break;
    case OP_LONG_BINPUT:
      TRY(take(l, 4, &a));
      TRY(memo_put(l, le32(a)));
      break;
    case OP_MEMOIZE:
      TRY(memo_put(l, l->memo_len));
      break;
    case OP_BINGET:
    case OP_LONG_BINGET:
      if (op == OP_BINGET) {
        TRY(take(l, 1, &a));
        n = a[0];
      } else {
        TRY(take(l, 4, &a));
        n = le32(a);
      }
      if (!memo_has(l, n)) return RESTART;
      SPUSH(l->memo[n]);
      break;

    default:
      /* STOP, the text opcodes of protocols 0 and 1, the refused ones:
       * the loader's (a key to skip is looked for at protocol 2 and up). */
      goto leave;
    }
    continue;
  leave:
    l->pos = l->at;
    l->str_end = SIZE_MAX;
    return 0;
#undef NEED
#undef INNER_MARK
  }
}

static int skip_value(loader *l) { return skip_from(l, l->sp, l->nmarks); }

#undef SPUSH

/* --- decoding (gpuplan__pickle_load_decode) ---------------------------------
 *
 * The value of a key to decode (a list of dicts, or of lists of them) is
 * read by a parser of the shape picklers give such a list: EMPTY_LIST and
 * its PUT, then batches of items (MARK ... APPENDS, or one item and
 * APPEND), each item EMPTY_DICT and its PUT, MARK, pairs, SETITEMS.  It
 * runs every opcode as the machine would (the memo, the values count,
 * FRAME's check) but keeps, of each dict, only the fields its schema names,
 * in a record; the values of other keys go to the skip machine.  Dicts and
 * lists are memoized as stand-ins.  At anything else it returns RESTART,
 * and the load is repeated with neither skipping nor decoding; errors the
 * machine would give are its own then (skipped_any).
 */

#define FK_OTHER (-1) /* a key the schema does not name */
#define FK_SKIP (-2)  /* a key to skip */

/* Count a pushed value, as push does (RESTART: the machine says it). */
#define DCOUNT()                                          \
  do {                                                    \
    if (l->pushes >= l->lim.max_items) return RESTART;    \
    l->pushes++;                                          \
  } while (0)

/* n bytes readable from pos (RESTART when the input ends before). */
static int dneed(loader *l, size_t n) {
  if (l->len - l->pos >= n) return 0;
  l->at = l->pos;
  TRY(fill(l, n));
  return l->len - l->pos >= n ? 0 : RESTART;
}

/* The next opcode, past FRAMEs (checked as the machine checks them), with
 * 16 bytes readable from it unless the input ends sooner. */
static int dop_slow(loader *l, int *op) {
  for (;;) {
    if (l->len - l->pos < 16) {
      l->at = l->pos;
      TRY(fill(l, l->ahead));
      if (l->pos >= l->len) return RESTART;
    }
    if (l->buf[l->pos] != OP_FRAME) break;
    TRY(dneed(l, 9));
    l->pos += 9;
    if (le64(l->buf + l->pos - 8) > left_input(l)) return RESTART;
  }
  *op = l->buf[l->pos];
  return 0;
}

/* dop, its usual case inline: 16 bytes readable and no FRAME. */
HOT int dop(loader *l, int *op) {
  if (l->len - l->pos >= 16 && l->buf[l->pos] != OP_FRAME) {
    *op = l->buf[l->pos];
    return 0;
  }
  return dop_slow(l, op);
}

/* Room for n more values on the stack. */
static int droom(loader *l, size_t n) {
  void *st;
  if (l->scap - l->sp >= n) return 0;
  st = l->stack;
  TRY(grow(l, &st, &l->scap, l->sp + n, sizeof *l->stack));
  l->stack = st;
  return 0;
}

/* The PUTs after a value, top, as the machine runs them. */
static int dput(loader *l, gpuplan__pv *top) {
  for (;;) {
    uint64_t idx;
    size_t n;
    int op, rc;
    TRY(dop(l, &op));
    if (op == OP_MEMOIZE) {
      idx = l->memo_len;
      n = 1;
    } else if (op == OP_BINPUT || op == OP_LONG_BINPUT) {
      n = op == OP_BINPUT ? 2 : 5;
      TRY(dneed(l, n));
      idx = n == 2 ? l->buf[l->pos + 1] : le32(l->buf + l->pos + 1);
    } else {
      return 0;
    }
    TRY(droom(l, 1));
    l->stack[l->sp++] = top;
    l->at = l->pos;
    l->op = op;
    l->pos += n;
    rc = memo_put(l, idx);
    l->sp--;
    if (rc) return rc;
  }
}

/* The integer (or bool) the opcode op at b, left bytes readable from it,
 * pushes: 1 and its length, or 0 when it pushes none (or one wider than
 * 64 bits). */
HOT int int_at(const unsigned char *b, size_t left, int op, int64_t *iv, size_t *len) {
  switch (op) {
  case OP_BININT1:
    if (left < 2) return 0;
    *iv = b[1], *len = 2;
    return 1;
  case OP_BININT2:
    if (left < 3) return 0;
    *iv = b[1] | b[2] << 8, *len = 3;
    return 1;
  case OP_BININT:
    if (left < 5) return 0;
    *iv = (int32_t)le32(b + 1), *len = 5;
    return 1;
  case OP_NEWTRUE: *iv = 1, *len = 1; return 1;
  case OP_NEWFALSE: *iv = 0, *len = 1; return 1;
  case OP_LONG1: {
    size_t w = left >= 2 ? b[1] : 9, i;
    uint64_t u = 0;
    if (w > 8 || left < 2 + w) return 0;
    for (i = 0; i < w; i++) u |= (uint64_t)b[2 + i] << (8 * i);
    if (w && w < 8 && ((u >> (8 * w - 1)) & 1u)) u |= ~(uint64_t)0 << (8 * w); /* sign-extended */
    *iv = to_signed(u);
    *len = 2 + w;
    return 1;
  }
  default: return 0;
  }
}

/* int_at of the opcode at pos. */
HOT int dint(const loader *l, int op, int64_t *iv, size_t *len) {
  return int_at(l->buf + l->pos, l->len - l->pos, op, iv, len);
}

/* A value fetched from the memo (GET at pos), pushed as the machine would
 * (RESTART for a stand-in). */
static int dget(loader *l, int op, gpuplan__pv **out) {
  gpuplan__pv *v;
  size_t n = op == OP_BINGET ? 2 : 5;
  uint64_t idx;
  TRY(dneed(l, n));
  idx = n == 2 ? l->buf[l->pos + 1] : le32(l->buf + l->pos + 1);
  if (!memo_has(l, idx)) return RESTART;
  v = l->memo[idx];
  if (v == &l->lazy[LZ_STR]) {
    TRY(build_lazy_str(l, l->moff[idx], &v));
    l->memo[idx] = v;
  }
  if (v->type == GPUPLAN__PV_SKIPPED) return RESTART;
  DCOUNT();
  l->pos += n;
  *out = v;
  return 0;
}

/* A str at pos (a new one, or fetched from the memo), pushed as the
 * machine would (its PUTs are the caller's); RESTART for anything else. */
static int dstr(loader *l, int op, gpuplan__pv **out) {
  gpuplan__pv *v;
  size_t n, hdr;
  if (op == OP_BINGET || op == OP_LONG_BINGET) {
    TRY(dget(l, op, &v));
    if (v->type != GPUPLAN__PV_STR) return RESTART;
    *out = v;
    return 0;
  }
  if (op == OP_SHORT_BINUNICODE) hdr = 2;
  else if (op == OP_BINUNICODE) hdr = 5;
  else return RESTART;
  TRY(dneed(l, hdr));
  n = hdr == 2 ? l->buf[l->pos + 1] : le32(l->buf + l->pos + 1);
  if (n > SIZE_MAX - hdr) return RESTART;
  TRY(dneed(l, hdr + n));
  if (!(v = new_bytes(l, GPUPLAN__PV_STR, l->buf + l->pos + hdr, n))) return nomem(l);
  DCOUNT();
  l->pos += hdr + n;
  *out = v;
  return 0;
}

/* A field's value of the forms a snapshot's have (see pickle.h), pushed
 * and PUT as the machine would. */
static int dvalue(loader *l, int op, gpuplan__pv **out) {
  gpuplan__pv *v;
  int64_t a, b;
  size_t n;
  if (op == OP_NONE || op == OP_NEWTRUE || op == OP_NEWFALSE) {
    v = op == OP_NONE ? l->none : op == OP_NEWTRUE ? l->yes : l->no;
    DCOUNT();
    l->pos++;
  } else if (dint(l, op, &a, &n)) {
    int op2;
    DCOUNT();
    l->pos += n;
    TRY(dop(l, &op2));
    if (op2 != OP_NEWTRUE && op2 != OP_NEWFALSE && dint(l, op2, &b, &n) && l->pos + n < l->len &&
        l->buf[l->pos + n] == OP_TUPLE2) {
      /* a pair of integers (segment_pool_id) */
      gpuplan__pv **items, *t;
      DCOUNT();
      DCOUNT();
      l->pos += n + 1;
      if (!(items = lalloc(l, 2 * sizeof *items)) || !(items[0] = int_value(l, a)) ||
          !(items[1] = int_value(l, b)) || !(t = new_container(l, GPUPLAN__PV_TUPLE)))
        return nomem(l);
      t->u.seq.items = items;
      t->u.seq.n = t->u.seq.cap = 2;
      v = t;
    } else if (!(v = int_value(l, a))) {
      return nomem(l);
    }
  } else if (op == OP_BINGET || op == OP_LONG_BINGET) {
    TRY(dget(l, op, &v));
  } else {
    TRY(dstr(l, op, &v));
  }
  TRY(dput(l, v));
  *out = v;
  return 0;
}

/* The PUTs after a str not built, which ends at pos (str_at, str_end set):
 * the usual one MEMOIZE recorded here, as memo_put would. */
static int dput_str(loader *l) {
  if (l->buf[l->pos] == OP_MEMOIZE && l->memo_len < l->total && l->pos + 1 < l->len && !dput_op(l->buf[l->pos + 1]) &&
      memo_lazy(l, &l->lazy[LZ_SCALAR], l->pos) && memo_ready(l, l->memo_len, 1)) {
    memo_set(l, l->memo_len, &l->lazy[LZ_SCALAR], 1, l->pos + 1);
    l->pos++;
  } else {
    TRY(dput(l, &l->lazy[LZ_SCALAR]));
  }
  l->str_end = SIZE_MAX;
  return 0;
}

/* frames_batch's memo, kept in locals while it runs: the entries set
 * (ml; the memo dense, [0, ml)) and (moves) the store's length, with what
 * memo_ready would look at, read once. */
typedef struct fb_memo {
  size_t ml, sl;
  size_t room;             /* entries below it can be set: memo_cap, and no
                            * index at or past the input's size (memo_put) */
  size_t sroom;            /* ... as unbuilt strings: room, or 0 without moff
                            * for every entry or offsets that fit 32 bits */
  uint64_t *bits;          /* (set for the new entries when the batch is run) */
  gpuplan__pv **memo;
  uint32_t *moff;
} fb_memo;

/* Set the bits of entries [from, to) in bits. */
static void memo_bits_set(uint64_t *bits, size_t from, size_t to) {
  if (from >= to) return;
  if (from / 64 == (to - 1) / 64) {
    bits[from / 64] |= (~(uint64_t)0 >> (64 - (to - from))) << (from % 64);
    return;
  }
  bits[from / 64] |= ~(uint64_t)0 << (from % 64);
  for (from = from / 64 + 1; from < (to - 1) / 64; from++) bits[from] = ~(uint64_t)0;
  bits[(to - 1) / 64] |= ~(uint64_t)0 >> (63 - (to - 1) % 64);
}

/* One scalar of a frames list's batch at p, run as the skip machine runs
 * it: a memo reference (an index below ml), a BININT1/BININT2/BININT, or a
 * str and, after it, its MEMOIZE as memo_put keeps one (an unbuilt string,
 * its opcode found again if a GET wants it: memo_lazy, memo_ready,
 * memo_set).  Returns the bytes it took, 0 at anything else or where
 * memo_put would grow something (the caller rolls back). */
HOT size_t fb_scalar(loader *l, fb_memo *m, const unsigned char *buf, size_t p, size_t lim) {
  size_t n;
  switch (buf[p]) {
  case OP_BINGET: return buf[p + 1] < m->ml ? 2 : 0;
  case OP_LONG_BINGET: return le32(buf + p + 1) < m->ml ? 5 : 0;
  case OP_BININT1: n = 2; break;
  case OP_BININT2: n = 3; break;
  case OP_BININT: n = 5; break;
  case OP_SHORT_BINUNICODE:
    n = 2 + (size_t)buf[p + 1];
    goto str;
  case OP_BINUNICODE:
    n = le32(buf + p + 1);
    if (n > lim - p || lim - p - n < 5) return 0;
    n += 5;
  str:
    if (n > lim - p) return 0;
    if (buf[p + n] == OP_MEMOIZE) {
      /* lazy where its opcode's offset fits 32 bits, in buf or the store */
      const size_t at = l->moves ? m->sl : p;
      if (m->ml >= m->sroom) return 0;
      if (l->moves) {
        if (l->store_cap - m->sl < n || m->sl > UINT32_MAX) return 0;
        memcpy(l->store + m->sl, buf + p, n);
        m->sl += n;
      }
      m->memo[m->ml] = &l->lazy[LZ_STR];
      m->moff[m->ml] = (uint32_t)at;
      m->ml++;
      n++;
    }
    return n;
  default: return 0;
  }
  return dput_op(buf[p + n]) ? 0 : n;
}

/* Whether one of the 8 bytes of w is a or b. */
HOT int has_byte(uint64_t w, unsigned a, unsigned b) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  const uint64_t x = w ^ (ones * a), y = w ^ (ones * b);
  return (((x - ones) & ~x) | ((y - ones) & ~y)) & highs ? 1 : 0;
}

/* Whether the run of references at p (16 bytes readable) is likely long:
 * no new frame (EMPTY_DICT) and no APPENDS in its next 16 bytes (or indices
 * with those bytes), worth looking for in the run cache before a walk. */
HOT int run_looks_long(const unsigned char *buf, size_t p) {
  return !has_byte(le64(buf + p), OP_EMPTY_DICT, OP_APPENDS) && !has_byte(le64(buf + p + 8), OP_EMPTY_DICT, OP_APPENDS);
}

/* A run of references at p in a frames list's batch (p + 16 <= len): how
 * many, and where it ends (*end); 0 at an entry not set.  Walked, and
 * looked for in the run cache where it may pay: in an input of
 * RUN_CACHE_MIN or more, first when it looks long (run_looks_long), else
 * once RUN_HEAD bytes of it are walked.  k->ok: it was looked for and not
 * found, and may be remembered (run_remember) once its batch is run. */
static size_t fb_run(loader *l, size_t p, size_t *end, run_key *k) {
  const unsigned char *const buf = l->buf;
  size_t cnt, c2, e2;
  k->ok = 0;
  if (l->total < RUN_CACHE_MIN) return refs_walk(l, p, SIZE_MAX, end);
  if (run_looks_long(buf, p)) {
    if ((cnt = run_lookup(l, p, end, k))) {
      k->ok = 0;
      return cnt;
    }
    return refs_walk(l, p, SIZE_MAX, end);
  }
  /* (a run shorter than RUN_HEAD is never remembered: no use looking) */
  cnt = refs_walk(l, p, p + RUN_HEAD, end);
  if (!cnt || *end < p + RUN_HEAD || (buf[*end] | 2u) != OP_LONG_BINGET) return cnt;
  if ((c2 = run_lookup(l, p, &e2, k))) {
    k->ok = 0;
    *end = e2;
    return c2;
  }
  return cnt + refs_walk(l, *end, SIZE_MAX, end);
}

/* A batch of a frames list's items at l->pos, MARK, items, APPENDS (or one
 * item and APPEND), run in one loop where the skip machine would run it
 * opcode by opcode, with the memo dense (memo_sparse 0) and the list the
 * stand-in on top: each item a memo reference or a new frame's dict
 * (EMPTY_DICT, its MEMOIZE, MARK, pairs of fb_scalar's, SETITEMS), counted
 * as the machine counts its pushes, the dicts and the MEMOIZEd strs put in
 * the memo as it puts them.  Nothing is pushed: APPENDS takes the items
 * off the stack again.  Returns 1 when it ran a batch; 0, with everything
 * as it was, at anything else (another opcode, the window's end, room the
 * memo or the store would have to grow, the values limit), where the
 * machine goes on. */
COLD int frames_batch(loader *l) {
  const unsigned char *const buf = l->buf;
  const size_t lim = l->len - 16; /* (the loop reads up to 16 bytes ahead) */
  const size_t pos = l->pos, ml0 = l->memo_len;
  const int single = buf[pos] != OP_MARK;
  size_t p = pos + !single, pushes = 0, n, i, nrem = 0;
  fb_memo m;
  struct {
    run_key k;
    size_t start, end, cnt;
  } rem[4]; /* runs to remember when the batch is run */
  if (l->len - pos < 16 || pos > lim) return 0;
  m.ml = ml0;
  m.sl = l->store_len;
  m.room = l->total < l->memo_cap ? (size_t)l->total : l->memo_cap;
  m.sroom = l->moff && l->moff_cap >= l->memo_cap && (l->moves || l->len <= UINT32_MAX) ? m.room : 0;
  m.bits = l->mbits;
  m.memo = l->memo;
  m.moff = l->moff;
  for (;;) {
    if (p > lim) goto undo;
    if (buf[p] == (single ? OP_APPEND : OP_APPENDS) && (p > pos + !single)) break;
    if (single && p > pos) goto undo;
    if ((buf[p] | 2u) == OP_LONG_BINGET) {
      /* A run of references (fb_run), remembered in the run cache when
       * the batch is run. */
      size_t end, cnt;
      run_key k;
      if (single) {
        if (!(n = fb_scalar(l, &m, buf, p, lim))) goto undo;
        p += n;
        pushes++;
        continue;
      }
      l->memo_len = m.ml; /* (what refs_walk checks against) */
      if (!(cnt = fb_run(l, p, &end, &k))) goto undo;
      if (k.ok && nrem < sizeof rem / sizeof rem[0]) {
        rem[nrem].k = k;
        rem[nrem].start = p;
        rem[nrem].end = end;
        rem[nrem].cnt = cnt;
        nrem++;
      }
      p = end;
      pushes += cnt;
    } else if (buf[p] == OP_EMPTY_DICT && buf[p + 1] == OP_MEMOIZE && buf[p + 2] == OP_MARK) {
      size_t q, pairs = 0;
      if (m.ml >= m.room) goto undo;
      m.memo[m.ml++] = &l->lazy[LZ_DICT];
      q = p + 3;
      while (buf[q] != OP_SETITEMS) {
        /* (the key a BINGET, as torch pickles all but the first frame's) */
        if (q > lim) goto undo;
        if (buf[q] == OP_BINGET && buf[q + 1] < m.ml) q += 2;
        else if (!(n = fb_scalar(l, &m, buf, q, lim))) goto undo;
        else q += n;
        if (q > lim || !(n = fb_scalar(l, &m, buf, q, lim))) goto undo;
        q += n;
        pairs++;
      }
      pushes += 1 + 2 * pairs;
      p = q + 1;
    } else {
      goto undo;
    }
  }
  if (pushes > l->lim.max_items - l->pushes) goto undo;
  memo_bits_set(m.bits, ml0, m.ml);
  l->memo_len = m.ml;
  l->store_len = m.sl;
  for (i = 0; i < nrem; i++) run_remember(l, &rem[i].k, rem[i].start, rem[i].end, rem[i].cnt);
  l->pushes += pushes;
  l->pos = p + 1;
  l->at = p;
  l->str_end = SIZE_MAX;
  return 1;
undo:
  l->memo_len = ml0;
  return 0;
}

/* The value of a key the schema does not keep (or a key to skip): an
 * integer, or (a key to skip) a memo reference ending the dict, here;
 * anything else on the skip machine. */
static int dskip(loader *l, gpuplan__pv *key, int skipkey, int op) {
  int64_t iv;
  size_t n, base, m0;
  int rc;
  if (dint(l, op, &iv, &n) && l->pos + n < l->len && !dput_op(l->buf[l->pos + n])) {
    DCOUNT();
    l->pos += n;
    return 0;
  }
  if ((op == OP_BINGET || op == OP_LONG_BINGET) && skipkey) {
    n = op == OP_BINGET ? 2 : 5;
    if (l->len - l->pos > n && l->buf[l->pos + n] == OP_SETITEMS &&
        memo_has(l, n == 2 ? l->buf[l->pos + 1] : le32(l->buf + l->pos + 1))) {
      DCOUNT();
      l->pos += n;
      l->str_end = SIZE_MAX;
      return 0;
    }
  }
  if (op == OP_SHORT_BINUNICODE || op == OP_BINUNICODE) {
    /* A str, not built: memoized as the skip machine memoizes one (built
     * if a GET wants it). */
    size_t hdr = op == OP_SHORT_BINUNICODE ? 2 : 5;
    TRY(dneed(l, hdr));
    n = hdr == 2 ? l->buf[l->pos + 1] : le32(l->buf + l->pos + 1);
    if (n > SIZE_MAX - hdr - 1) return RESTART;
    TRY(dneed(l, hdr + n + 1));
    DCOUNT();
    l->str_at = l->pos;
    l->pos += hdr + n;
    l->str_end = l->pos;
    l->str_stored = SIZE_MAX;
    TRY(dput_str(l));
    return 0;
  }
  TRY(droom(l, 2));
  l->stack[l->sp++] = key;
  base = l->sp;
  m0 = l->nmarks;
  l->at = l->pos;
  if (op == OP_EMPTY_LIST && skipkey && !l->memo_sparse) {
    /* A frames list: EMPTY_LIST and its MEMOIZE as the machine runs them,
     * then its batches (frames_batch), and the machine from where they
     * stop (the list complete, or an opcode of another form). */
    TRY(fill(l, l->ahead));
    if (l->len - l->pos >= 16 && l->buf[l->pos + 1] == OP_MEMOIZE && l->memo_len < l->total &&
        memo_ready(l, l->memo_len, 0) && l->pushes < l->lim.max_items) {
      l->stack[l->sp++] = &l->lazy[LZ_LIST];
      l->pushes++;
      memo_set(l, l->memo_len, &l->lazy[LZ_LIST], 0, 0);
      l->pos += 2;
      l->at = l->pos;
      {
        /* The most common list of all in a large snapshot: one batch, a
         * long run of references the run cache knows (a stack met before),
         * the dict's last value; counted at once, as frames_batch and the
         * machine would count it.  (Anything else goes on to frames_batch,
         * which looks no further than this for such a run.) */
        const unsigned char *const b = l->buf;
        const size_t q = l->pos + 1;
        size_t cnt, end;
        run_key k;
        if (l->total >= RUN_CACHE_MIN && b[l->pos] == OP_MARK && l->len - q >= 16 &&
            (b[q] | 2u) == OP_LONG_BINGET && run_looks_long(b, q) && (cnt = run_lookup(l, q, &end, &k)) &&
            l->len - end >= 2 && b[end] == OP_APPENDS && b[end + 1] == OP_SETITEMS &&
            cnt <= l->lim.max_items - l->pushes) {
          l->pushes += cnt;
          l->pos = end + 1;
          l->sp = base - 1;
          l->str_end = SIZE_MAX;
          return 0;
        }
      }
      for (;;) {
        TRY(fill(l, l->ahead));
        if (l->pos >= l->len) break;
        if (value_ends(l, l->buf[l->pos])) {
          /* The list is complete (as skip_from finds it: the next key or
           * the dict's SETITEMS follows). */
          l->sp = base - 1;
          l->str_end = SIZE_MAX;
          return 0;
        }
        if (!frames_batch(l)) break;
      }
    }
  } else if (op == OP_EMPTY_LIST && skipkey) {
    /* A frames list as the skip machine runs it (EMPTY_LIST, its PUT,
     * MARK), and where its items are one run of references ending in
     * APPENDS, that run counted; otherwise the skip machine goes on from
     * where this stops. */
    TRY(fill(l, l->ahead));
    if (l->len - l->pos >= 16 && l->buf[l->pos + 1] == OP_MEMOIZE && l->buf[l->pos + 2] == OP_MARK &&
        l->memo_len < l->memo_cap && l->memo_len < l->total && l->nmarks < l->mcap &&
        l->pushes < l->lim.max_items) {
      size_t end, cnt;
      l->stack[l->sp++] = &l->lazy[LZ_LIST];
      l->pushes++;
      memo_set(l, l->memo_len, &l->lazy[LZ_LIST], 0, 0);
      l->marks[l->nmarks++] = l->sp;
      l->pos += 3;
      if ((l->buf[l->pos] | 2u) == OP_LONG_BINGET && (cnt = ref_run(l, &end)) &&
          cnt <= l->lim.max_items - l->pushes) {
        if (end + 1 < l->len && l->buf[end] == OP_APPENDS && l->buf[end + 1] == OP_SETITEMS) {
          l->pushes += cnt;
          l->nmarks--;
          l->sp = base - 1;
          l->pos = end + 1;
          l->str_end = SIZE_MAX;
          return 0;
        }
        /* The run's references pushed (a new frame comes after them), so
         * that the skip machine does not read the run again. */
        if (l->scap - l->sp >= cnt) push_refs(l, cnt);
      }
    }
  }
  rc = skip_from(l, base, m0);
  if (rc) return rc;
  if (l->sp != base + 1 || l->nmarks != m0) return RESTART;
  l->sp = base - 1;
  return 0;
}

/* The slot of schema sc among those met (DSCHEMAS: no room, no tags). */
static size_t dschema(loader *l, const gpuplan__pickle_schema *sc) {
  size_t i;
  for (i = 0; i < l->ndsch; i++)
    if (l->dsch[i] == sc) return i;
  if (i == DSCHEMAS) return DSCHEMAS;
  l->dsch[i] = sc;
  for (i = 0; sc->names[i]; i++) l->dnames[l->ndsch][i] = strlen(sc->names[i]);
  return l->ndsch++;
}

/* The field of schema slot sl (sc) that key is (FK_OTHER: none; FK_SKIP:
 * a key to skip), remembered in the key's tag for its level: 12 bits, the
 * slot | 8 and the field + 2. */
HOT int dfield(loader *l, size_t lvl, size_t sl, const gpuplan__pickle_schema *sc, gpuplan__pv *key) {
  const unsigned sh = KEY_TAG_SHIFT(lvl);
  uint32_t t = (key->seen >> sh) & 0xfffu;
  size_t i;
  int f = FK_OTHER;
  if (t >> 4 == (8u | (uint32_t)sl)) return (int)(t & 15u) - 2;
  if (key->seen & SKIPKEY) {
    f = FK_SKIP;
  } else {
    for (i = 0; sc->names[i]; i++)
      if ((sl < DSCHEMAS ? l->dnames[sl][i] : strlen(sc->names[i])) == key->u.str.len &&
          memcmp(sc->names[i], key->u.str.s, key->u.str.len) == 0)
        f = (int)i;
  }
  if (sl < DSCHEMAS)
    key->seen = (key->seen & ~(0xfffu << sh)) | ((8u | (uint32_t)sl) << 4 | (uint32_t)(f + 2)) << sh;
  return f;
}

/* The field of schema slot sl (sc) that the str s[0..n) is, as dfield. */
static int dfield_at(const loader *l, size_t sl, const gpuplan__pickle_schema *sc, const unsigned char *s, size_t n) {
  size_t i;
  int f = FK_OTHER;
  for (i = 0; i < l->nskip; i++)
    if (l->skiplen[i] == n && memcmp(l->skip[i], s, n) == 0) return FK_SKIP;
  for (i = 0; sc->names[i]; i++)
    if ((sl < DSCHEMAS ? l->dnames[sl][i] : strlen(sc->names[i])) == n && memcmp(sc->names[i], s, n) == 0)
      f = (int)i;
  return f;
}

static int dlist(loader *l, const gpuplan__pickle_schema *sc, size_t lvl, gpuplan__pv **out);

/* memo_room for n unbuilt strs, none of their entries set before (an
 * entry replaced would change memo_gen under drec_fast's templates). */
static int lazy_room(const loader *l, size_t n, size_t b, size_t at) {
  size_t i;
  for (i = 0; i < n; i++)
    if (memo_has(l, l->memo_len + i)) return 0;
  return memo_room(l, n, b, at);
}

/* Memoize the str whose opcode is at [s, e), its MEMOIZE at e, unbuilt, as
 * dput_str does (lazy_room said there is room). */
static void memo_str(loader *l, size_t s, size_t e) {
  l->str_at = s;
  l->str_end = e;
  l->str_stored = SIZE_MAX;
  memo_set(l, l->memo_len, &l->lazy[LZ_SCALAR], 1, e + 1);
}

/* drec_fast's pair whose key at pos is the new str of the place's template
 * t (a key torch pickles anew in every dict: an annotation's "stage" and
 * "name"), memoized, and its value an integer (or bool) as dint reads one, or
 * (a key not kept) a new str, memoized or not, with no other PUT after
 * either: run, and the position after it returned; 0 (nothing changed)
 * for any other pair. */
static size_t dfast_str(loader *l, const struct dkt *t, size_t pos, const unsigned char *kinds, gpuplan__pfield *f,
                        size_t *nskip) {
  const unsigned char *const buf = l->buf;
  const size_t len = l->len, p = pos + t->sw + 1;
  const int k = t->sk;
  size_t w, vs = 0, sbytes = t->sw;
  int64_t iv = 0;
  if (dput_op(buf[p])) return 0;
  if (buf[p] == OP_SHORT_BINUNICODE) {
    if (k >= 0) return 0;
    w = 2 + (size_t)buf[p + 1];
    if (w + 2 > len - p) return 0; /* (the str, a PUT, the next opcode) */
    if (buf[p + w] == OP_MEMOIZE) {
      if (dput_op(buf[p + w + 1])) return 0;
      vs = p;
      sbytes += w;
    }
  } else if (!int_at(buf + p, len - p, buf[p], &iv, &w) || dput_op(buf[p + w]) ||
             (k >= 0 && kinds[k] != GPUPLAN__PF_INT)) {
    return 0; /* (drec_fast's 32 bytes hold an integer and the opcode after it) */
  }
  if (!lazy_room(l, vs ? 2 : 1, sbytes, vs ? vs : pos)) return 0;
  memo_str(l, pos, pos + t->sw);
  if (vs) memo_str(l, vs, vs + w++);
  if (k >= 0) {
    f[k].v = &gpuplan__pf_int;
    f[k].i = iv;
  } else if (k == FK_SKIP) {
    (*nskip)++;
  }
  return p + w;
}

/* The pairs at pos of a dict of level lvl (after its MARK, f its record)
 * that repeat, place by place, what the pairs of the dicts before it were:
 * each key the GET whose bytes the place's template holds (still the same
 * memo entry: memo_gen), and its value an integer for a field of kind INT
 * or a key not kept, a memo reference for a field of kind VALUE, or (a key
 * to skip) a memo reference ending the dict, with no PUT after either;
 * or (dfast_str) each key the new str, memoized, that the place's key was
 * last, as torch pickles an annotation's keys.
 * They are run here with only the checks these need: the values count
 * once (two a pair), 32 bytes left for each pair (its key at most 5, or
 * 16 as a new str with its MEMOIZE, its value 10, the next opcode and the
 * 8 bytes a template compare reads; a new str's value is checked against
 * the window's end itself; else the window's end is near: drecord's
 * helpers), and any other opcode, a PUT included, ends the
 * run at the start of its pair, which drecord then runs as before (the
 * pair is read again from its key: nothing of it was kept).  Returns the
 * pairs run; l->pos is after them.  The value forms are those drecord's
 * loop takes fast, written again here on purpose: one helper for both
 * cost 1.4% more instructions on ctx256's load + replay, 2.2% with
 * drecord calling it too, and drec_fast called again after each slow
 * pair instead of drecord's own fast forms cost 0.6-3.5% (ctx256 1.8%). */
static size_t drec_fast(loader *l, const gpuplan__pickle_schema *sc, size_t lvl, gpuplan__pfield *f) {
  const unsigned char *const buf = l->buf;
  const unsigned char *const kinds = sc->kinds;
  const struct dkt *const kt = l->kt[lvl];
  const uint64_t gen = l->memo_gen;
  const size_t lim = l->len > 32 ? l->len - 32 : 0, room = (l->lim.max_items - l->pushes) / 2;
  const size_t np = room < KT_PAIRS ? room : KT_PAIRS;
  size_t pos = l->pos, pi, nskip = 0;
  for (pi = 0; pi < np; pi++) {
    const struct dkt *const t = &kt[pi];
    const size_t p0 = pos;
    size_t w, idx;
    int64_t iv;
    int k;
    if (pos >= lim) break;
    if (!t->w || t->gen != gen || (le64(buf + pos) & t->mask) != t->pat) {
      size_t after;
      if (t->sw && (le64(buf + pos) & t->smask[0]) == t->spat[0] && (le64(buf + pos + 8) & t->smask[1]) == t->spat[1] &&
          (after = dfast_str(l, t, pos, kinds, f, &nskip)) != 0) {
        pos = after;
        continue;
      }
      break;
    }
    pos += t->w;
    k = t->k;
    switch (buf[pos]) {
    case OP_BININT1: iv = buf[pos + 1], w = 2; goto integer;
    case OP_BININT2: iv = buf[pos + 1] | buf[pos + 2] << 8, w = 3; goto integer;
    case OP_BININT: iv = (int32_t)le32(buf + pos + 1), w = 5; goto integer;
    case OP_LONG1:
      if (buf[pos + 1] > 8) goto bail;
      iv = long1(buf + pos + 2, buf[pos + 1]), w = 2 + (size_t)buf[pos + 1];
    integer:
      if (dput_op(buf[pos + w])) goto bail;
      if (k >= 0) {
        if (kinds[k] != GPUPLAN__PF_INT) goto bail;
        f[k].v = &gpuplan__pf_int;
        f[k].i = iv;
      } else if (k == FK_SKIP) {
        nskip++;
      }
      pos += w;
      continue;
    case OP_BINGET: w = 2, idx = buf[pos + 1]; break;
    case OP_LONG_BINGET: w = 5, idx = le32(buf + pos + 1); break;
    default: goto bail;
    }
    /* a memo reference */
    if (!memo_has(l, idx) || dput_op(buf[pos + w])) goto bail;
    if (k >= 0) {
      const gpuplan__pv *v = l->memo[idx];
      if (kinds[k] != GPUPLAN__PF_VALUE || v->type == GPUPLAN__PV_SKIPPED) goto bail;
      f[k].v = v;
      f[k].i = 0;
    } else if (k == FK_SKIP && buf[pos + w] == OP_SETITEMS) {
      nskip++;
    } else {
      goto bail;
    }
    pos += w;
    continue;
  bail:
    pos = p0;
    break;
  }
  if (pi) {
    l->pushes += 2 * pi;
    l->nskipped += nskip;
    l->pos = pos;
    l->str_end = SIZE_MAX;
  }
  return pi;
}

/* A dict at pos (EMPTY_DICT), as record *n of level lvl.  The common
 * opcodes (its PUT and MARK, memo references as keys and values, integers
 * without PUTs, a key to skip holding a memo reference that ends the dict)
 * run here with the position in a local; any other one goes to the
 * helpers above, which run it as the machine would. */
static int drecord(loader *l, const gpuplan__pickle_schema *sc, size_t sl, size_t nf, size_t lvl, size_t *n) {
  const unsigned char *buf = l->buf;
  size_t len = l->len, pos = l->pos, pi;
  gpuplan__pfield *f;
  int op, near;
#define SYNC() (l->pos = pos)
#define LOAD() (buf = l->buf, len = l->len, pos = l->pos)
/* The next opcode; near: fewer than 16 bytes are left from it (the
 * input's end), where only the helpers, which look at every length, run. */
#define NEXT()                                                  \
  do {                                                          \
    near = 0;                                                   \
    if (len - pos < 16 || buf[pos] == OP_FRAME) {               \
      SYNC();                                                   \
      TRY(dop(l, &op));                                         \
      LOAD();                                                   \
      near = len - pos < 16;                                    \
    }                                                           \
    op = buf[pos];                                              \
  } while (0)
  DCOUNT();
  if (len - pos >= 16 && buf[pos + 1] == OP_MEMOIZE && buf[pos + 2] == OP_MARK && l->memo_len < l->memo_cap &&
      l->memo_len < l->total) {
    memo_set(l, l->memo_len, &l->lazy[LZ_DECODED], 0, 0);
    pos += 3;
  } else {
    l->pos = pos + 1;
    TRY(dput(l, &l->lazy[LZ_DECODED]));
    TRY(dop(l, &op));
    if (op != OP_MARK) return RESTART;
    l->pos++;
    LOAD();
  }
  if (lvl == 0) {
    if (*n % DCHUNK == 0) {
      /* a new chunk, and room for it in the table */
      if (l->rnchunk == l->rcchunk) {
        size_t cap = l->rcchunk ? 2 * l->rcchunk : 8;
        gpuplan__pfield **t = lalloc(l, cap * sizeof *t);
        if (!t) return nomem(l);
        if (l->rnchunk) memcpy(t, l->rchunk, l->rnchunk * sizeof *t);
        l->rchunk = t;
        l->rcchunk = cap;
      }
      if (!(l->rchunk[l->rnchunk] = lalloc(l, DCHUNK * nf * sizeof *f))) return nomem(l);
      l->rnchunk++;
    }
    f = l->rchunk[*n / DCHUNK] + (*n % DCHUNK) * nf;
  } else {
    if (l->rcap - *n * nf < nf) {
      void *m = l->rbuf;
      TRY(grow(l, &m, &l->rcap, (*n + 1) * nf, sizeof *l->rbuf));
      l->rbuf = m;
    }
    f = l->rbuf + *n * nf;
  }
  memset(f, 0, nf * sizeof *f);
  /* the pairs that repeat the dicts' before it, then the rest */
  SYNC();
  pi = drec_fast(l, sc, lvl, f);
  LOAD();
  for (;; pi++) {
    gpuplan__pv *key, *v;
    size_t w, idx;
    int64_t iv;
    int k, kind;
    struct dkt *t = pi < KT_PAIRS ? &l->kt[lvl][pi] : NULL;
    NEXT();
    if (op == OP_SETITEMS) {
      pos++;
      break;
    }
    /* the key: most often the GET the key at this place was last */
    if (near) {
      goto slow_key;
    } else if (t && t->w && (le64(buf + pos) & t->mask) == t->pat && t->gen == l->memo_gen &&
               !dput_op(buf[pos + t->w])) {
      if (l->pushes >= l->lim.max_items) return RESTART;
      l->pushes++;
      pos += t->w;
      key = (gpuplan__pv *)t->key;
      k = t->k;
    } else if ((op | 2) == OP_LONG_BINGET) {
      w = op == OP_BINGET ? 2 : 5;
      idx = w == 2 ? buf[pos + 1] : le32(buf + pos + 1);
      if (!memo_has(l, idx) || (key = l->memo[idx])->type != GPUPLAN__PV_STR || dput_op(buf[pos + w]))
        goto slow_key;
      if (l->pushes >= l->lim.max_items) return RESTART;
      l->pushes++;
      k = dfield(l, lvl, sl, sc, key);
      if (t) {
        t->mask = w == 2 ? 0xffffu : 0xffffffffffull;
        t->pat = le64(buf + pos) & t->mask;
        t->w = (unsigned)w;
        t->gen = l->memo_gen;
        t->key = key;
        t->k = k;
      }
      pos += w;
    } else if (op == OP_SHORT_BINUNICODE && (w = 2 + (size_t)buf[pos + 1]) < len - pos) {
      /* a new str: compared where it lies, memoized unbuilt; the place's
       * template of a new str (drec_fast) where it fits one */
      k = dfield_at(l, sl, sc, buf + pos + 2, w - 2);
      if (t && w < 16 && buf[pos + w] == OP_MEMOIZE) {
        const unsigned nb = (unsigned)w + 1;
        t->smask[0] = nb >= 8 ? ~0ull : (1ull << (8 * nb)) - 1;
        t->smask[1] = nb <= 8 ? 0 : nb >= 16 ? ~0ull : (1ull << (8 * (nb - 8))) - 1;
        t->spat[0] = le64(buf + pos) & t->smask[0];
        t->spat[1] = le64(buf + pos + 8) & t->smask[1];
        t->sw = (unsigned)w;
        t->sk = k;
      }
      if (l->pushes >= l->lim.max_items) return RESTART;
      l->pushes++;
      key = &l->lazy[LZ_SCALAR];
      l->str_at = pos;
      pos += w;
      l->str_end = pos;
      l->str_stored = SIZE_MAX;
      SYNC();
      TRY(dput_str(l));
      LOAD();
    } else {
    slow_key:
      SYNC();
      TRY(dstr(l, op, &key));
      TRY(dput(l, key));
      LOAD();
      k = dfield(l, lvl, sl, sc, key);
    }
    NEXT();
    /* its value */
    if (k < 0) {
      if (k == FK_SKIP) l->nskipped++;
      w = 0;
      if (near) w = 0;
      else if (op == OP_BININT1) w = 2;
      else if (op == OP_BININT) w = 5;
      else if (op == OP_LONG1 && buf[pos + 1] <= 8) w = 2 + (size_t)buf[pos + 1];
      else if (k == FK_SKIP && (op | 2) == OP_LONG_BINGET) {
        /* (a frames list met before) */
        size_t e = op == OP_BINGET ? 2 : 5;
        if (buf[pos + e] == OP_SETITEMS && memo_has(l, e == 2 ? buf[pos + 1] : le32(buf + pos + 1))) {
          if (l->pushes >= l->lim.max_items) return RESTART;
          l->pushes++;
          pos += e;
          l->str_end = SIZE_MAX;
          continue;
        }
      }
      if (w && !dput_op(buf[pos + w])) {
        if (l->pushes >= l->lim.max_items) return RESTART;
        l->pushes++;
        pos += w;
        continue;
      }
      SYNC();
      TRY(dskip(l, key, k == FK_SKIP, op));
      LOAD();
      continue;
    }
    kind = sc->kinds[k];
    if (near) {
      /* (the helpers below) */
    } else if (kind == GPUPLAN__PF_INT) {
      w = 0;
      if (op == OP_BININT1) iv = buf[pos + 1], w = 2;
      else if (op == OP_BININT2) iv = buf[pos + 1] | buf[pos + 2] << 8, w = 3;
      else if (op == OP_BININT) iv = (int32_t)le32(buf + pos + 1), w = 5;
      else if (op == OP_LONG1 && buf[pos + 1] <= 8) iv = long1(buf + pos + 2, buf[pos + 1]), w = 2 + (size_t)buf[pos + 1];
      if (w && !dput_op(buf[pos + w])) {
        if (l->pushes >= l->lim.max_items) return RESTART;
        l->pushes++;
        pos += w;
        f[k].v = &gpuplan__pf_int;
        f[k].i = iv;
        continue;
      }
    } else if (kind == GPUPLAN__PF_VALUE && (op | 2) == OP_LONG_BINGET) {
      w = op == OP_BINGET ? 2 : 5;
      idx = w == 2 ? buf[pos + 1] : le32(buf + pos + 1);
      if (memo_has(l, idx) && (v = l->memo[idx])->type != GPUPLAN__PV_SKIPPED && !dput_op(buf[pos + w])) {
        if (l->pushes >= l->lim.max_items) return RESTART;
        l->pushes++;
        pos += w;
        f[k].v = v;
        f[k].i = 0;
        continue;
      }
    }
    SYNC();
    switch (kind) {
    case GPUPLAN__PF_INT:
      if (dint(l, op, &iv, &w)) {
        DCOUNT();
        l->pos += w;
        f[k].v = &gpuplan__pf_int;
        f[k].i = iv;
        if (l->pos < l->len && dput_op(l->buf[l->pos])) {
          /* memoized: the value itself, as the machine builds it */
          v = op == OP_NEWTRUE ? l->yes : op == OP_NEWFALSE ? l->no : int_value(l, iv);
          if (!v) return nomem(l);
          TRY(dput(l, v));
        }
        break;
      }
      /* not an integer: the value as it is */
      /* fall through */
    case GPUPLAN__PF_VALUE:
      TRY(dvalue(l, op, &v));
      f[k].v = v;
      f[k].i = 0;
      break;
    case GPUPLAN__PF_RECORDS:
      if (lvl + 1 >= DLEVELS || !sc->sub || !sc->sub[k]) return RESTART;
      TRY(dlist(l, sc->sub[k], lvl + 1, &v));
      f[k].v = v;
      f[k].i = 0;
      break;
    default: return RESTART;
    }
    LOAD();
  }
  SYNC();
  (*n)++;
  return 0;
#undef SYNC
#undef LOAD
#undef NEXT
}

/* A list of dicts at pos, as a RECORDS of level lvl. */
static int dlist(loader *l, const gpuplan__pickle_schema *sc, size_t lvl, gpuplan__pv **out) {
  size_t nf = 0, n = 0, sl = dschema(l, sc);
  const size_t fsize = sizeof(gpuplan__pfield);
  gpuplan__pv *v;
  int op;
  while (sc->names[nf]) nf++;
  TRY(dop(l, &op));
  if (op != OP_EMPTY_LIST || nf == 0) return RESTART;
  DCOUNT();
  l->pos++;
  TRY(dput(l, &l->lazy[LZ_DECODED]));
  for (;;) {
    TRY(dop(l, &op));
    if (op == OP_MARK) {
      l->pos++;
      for (;;) {
        TRY(dop(l, &op));
        if (op == OP_APPENDS) break;
        if (op != OP_EMPTY_DICT) return RESTART;
        TRY(drecord(l, sc, sl, nf, lvl, &n));
      }
      l->pos++;
    } else if (op == OP_EMPTY_DICT) {
      TRY(drecord(l, sc, sl, nf, lvl, &n));
      TRY(dop(l, &op));
      if (op != OP_APPEND) return RESTART;
      l->pos++;
    } else {
      break;
    }
  }
  if (!(v = newv(l, GPUPLAN__PV_RECORDS, 0))) return nomem(l);
  if (lvl == 0) {
    /* the chunks as they are; the next list at this level starts anew */
    v->u.rec.chunk = l->rchunk;
    v->u.rec.shift = DCHUNK_SHIFT;
    l->rchunk = NULL;
    l->rnchunk = l->rcchunk = 0;
  } else {
    /* one chunk, copied to the arena */
    gpuplan__pfield **t = lalloc(l, sizeof *t);
    if (!t || n > SIZE_MAX / nf / fsize) return nomem(l);
    t[0] = NULL;
    if (n && !(t[0] = lalloc(l, n * nf * fsize))) return nomem(l);
    if (n) memcpy(t[0], l->rbuf, n * nf * fsize);
    v->u.rec.chunk = t;
    v->u.rec.shift = (unsigned)(8 * sizeof(size_t) - 1);
  }
  v->u.rec.n = n;
  v->u.rec.nf = nf;
  *out = v;
  return 0;
}

/* A list of lists of dicts at pos, as a LIST of RECORDS. */
static int dlists(loader *l, const gpuplan__pickle_schema *sc, gpuplan__pv **out) {
  gpuplan__pv **items = NULL, *v, *list;
  size_t n = 0, cap = 0;
  int op, rc = 0;
  TRY(dop(l, &op));
  if (op != OP_EMPTY_LIST) return RESTART;
  DCOUNT();
  l->pos++;
  TRY(dput(l, &l->lazy[LZ_DECODED]));
  for (;;) {
    int single;
    if ((rc = dop(l, &op))) goto done;
    if (op != OP_MARK && op != OP_EMPTY_LIST) break;
    single = op == OP_EMPTY_LIST;
    if (!single) l->pos++;
    for (;;) {
      if ((rc = dop(l, &op))) goto done;
      if (!single && op == OP_APPENDS) break;
      if (op != OP_EMPTY_LIST) {
        rc = RESTART;
        goto done;
      }
      if ((rc = dlist(l, sc, 0, &v))) goto done;
      if (n == cap) {
        void *m = items;
        if ((rc = grow(l, &m, &cap, n + 1, sizeof *items))) goto done;
        items = m;
      }
      items[n++] = v;
      if (single) {
        if ((rc = dop(l, &op))) goto done;
        if (op != OP_APPEND) rc = RESTART;
        break;
      }
    }
    if (rc) goto done;
    l->pos++; /* APPENDS or APPEND */
  }
  if (!(list = new_container(l, GPUPLAN__PV_LIST)) || (n && !(list->u.seq.items = lalloc(l, n * sizeof *items)))) {
    rc = nomem(l);
    goto done;
  }
  if (n) memcpy(list->u.seq.items, items, n * sizeof *items);
  list->u.seq.n = list->u.seq.cap = n;
  *out = list;
done:
  gpuplan__free(l->ctx, items);
  return rc;
}

/* Called with a key to decode on top, at a key's place in the top-level
 * dict: its PUTs, then its value decoded, pushed (0 without decoding:
 * limits too tight for a decoded value's nesting to be the machine's). */
static int decode_value(loader *l, const gpuplan__pickle_decode *d) {
  gpuplan__pv *v;
  if (l->lim.max_depth < 16) return 0;
  l->skipped_any = 1;
  memset(l->kt, 0, sizeof l->kt); /* (another schema at level 0) */
  TRY(dput(l, l->stack[l->sp - 1]));
  TRY(d->lists == 2 ? dlists(l, d->schema, &v) : dlist(l, d->schema, 0, &v));
  TRY(droom(l, 1));
  l->stack[l->sp++] = v;
  l->at = l->pos;
  l->str_end = SIZE_MAX;
  return 0;
}

#undef DCOUNT

/* --- text arguments (protocol 0) ------------------------------------------- */

static int is_space(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* A decimal integer with optional sign and surrounding blanks, from -2^63
 * to 2^64 - 1 (kept modulo 2^64, as for LONG1).  Returns 0, -1 when s is
 * not a number, or 1 when it is out of that range. */
static int parse_dec(const unsigned char *s, size_t n, int64_t *out) {
  size_t i = 0;
  int neg = 0, digits = 0;
  uint64_t u = 0, lim;
  while (i < n && is_space(s[i])) i++;
  if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  lim = neg ? (uint64_t)INT64_MAX + 1 : UINT64_MAX;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (u > (lim - d) / 10) {
      while (i < n && s[i] >= '0' && s[i] <= '9') i++;
      while (i < n && is_space(s[i])) i++;
      return i == n ? 1 : -1;
    }
    u = u * 10 + d;
  }
  while (i < n && is_space(s[i])) i++;
  if (!digits || i != n) return -1;
  *out = neg ? (u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u) : to_signed(u);
  return 0;
}

/* The start of a text argument for a message, printable ASCII only: the
 * message may reach a terminal, and the bytes come from the file. */
static const char *quote(const unsigned char *s, size_t n, char out[48]) {
  size_t i, m = n > 40 ? 40 : n;
  for (i = 0; i < m; i++) out[i] = s[i] >= 0x20 && s[i] < 0x7f ? (char)s[i] : '?';
  if (m < n) {
    memcpy(out + m, "...", 3);
    m += 3;
  }
  out[m] = '\0';
  return out;
}

static int text_int(loader *l, const unsigned char *s, size_t n, int64_t *out) {
  char q[48];
  int rc = parse_dec(s, n, out);
  if (rc > 0) return fail(l, "%s: integer too large", gpuplan__pickle_opname(l->op));
  if (rc < 0)
    return fail(l, "%s: bad integer '%s'", gpuplan__pickle_opname(l->op), quote(s, n, q));
  return 0;
}

static int text_index(loader *l, uint64_t *idx) {
  const unsigned char *s;
  size_t n;
  int64_t v;
  TRY(line(l, &s, &n));
  TRY(text_int(l, s, n, &v));
  if (v < 0) return fail(l, "negative memo index in %s", gpuplan__pickle_opname(l->op));
  *idx = (uint64_t)v;
  return 0;
}

static int load_text_float(loader *l) {
  const unsigned char *s;
  size_t n, i;
  char tmp[256], q[48], *end;
  double f;
  TRY(line(l, &s, &n));
  if (n == 0 || n >= sizeof tmp) return fail(l, "FLOAT: bad length %zu", n);
  /* strtod follows the locale's decimal point; pickles always use '.'.
   * The point is found by printing, which reads the locale without
   * keeping any state of our own. */
  if (!l->point) {
    char probe[8];
    snprintf(probe, sizeof probe, "%.1f", 0.5);
    l->point = probe[1];
  }
  for (i = 0; i < n; i++) {
    char c = (char)s[i];
    if (c == 'x' || c == 'X' || c == '\0' || c == '(' || c == ',') goto bad;
    tmp[i] = c == '.' ? l->point : c;
  }
  tmp[n] = '\0';
  f = strtod(tmp, &end);
  if (end == tmp) goto bad;
  while (*end && is_space((unsigned char)*end)) end++;
  if (*end) goto bad;
  return push_float(l, f);
bad:
  return fail(l, "FLOAT: bad number '%s'", quote(s, n, q));
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* STRING: a quoted Python 2 str literal, decoded as codecs.escape_decode. */
static int load_text_string(loader *l) {
  const unsigned char *s;
  size_t n, i, o = 0;
  gpuplan__pv *v;
  char *d;
  TRY(line(l, &s, &n));
  while (n > 0 && is_space(s[n - 1])) n--; /* Python 2's repr never ends in blanks */
  if (n < 2 || s[0] != s[n - 1] || (s[0] != '\'' && s[0] != '"'))
    return fail(l, "the STRING opcode argument must be quoted");
  s++;
  n -= 2;
  v = newv(l, GPUPLAN__PV_STR, n + 1);
  if (!v) return nomem(l);
  d = (char *)(v + 1);
  for (i = 0; i < n;) {
    int c = s[i++], e;
    if (c != '\\') {
      d[o++] = (char)c;
      continue;
    }
    if (i == n) return fail(l, "STRING: trailing \\ in string");
    e = s[i++];
    switch (e) {
    case '\\': case '\'': case '"': d[o++] = (char)e; break;
    case 'a': d[o++] = '\a'; break;
    case 'b': d[o++] = '\b'; break;
    case 'f': d[o++] = '\f'; break;
    case 'n': d[o++] = '\n'; break;
    case 'r': d[o++] = '\r'; break;
    case 't': d[o++] = '\t'; break;
    case 'v': d[o++] = '\v'; break;
    case 'x': {
      int h1 = i < n ? hexval(s[i]) : -1, h2 = i + 1 < n ? hexval(s[i + 1]) : -1;
      if (h1 < 0 || h2 < 0) return fail(l, "STRING: invalid \\x escape");
      d[o++] = (char)(h1 * 16 + h2);
      i += 2;
      break;
    }
    default:
      if (e >= '0' && e <= '7') {
        int val = e - '0', k;
        for (k = 0; k < 2 && i < n && s[i] >= '0' && s[i] <= '7'; k++)
          val = val * 8 + (s[i++] - '0');
        d[o++] = (char)(val & 0xff);
      } else {
        d[o++] = '\\';
        d[o++] = (char)e;
      }
    }
  }
  d[o] = '\0';
  v->u.str.s = d;
  v->u.str.len = o;
  return push_str(l, v);
}

static size_t put_utf8(char *d, uint32_t cp) {
  if (cp < 0x80) {
    d[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    d[0] = (char)(0xc0 | cp >> 6);
    d[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) { /* lone surrogates pass through, as surrogatepass would */
    d[0] = (char)(0xe0 | cp >> 12);
    d[1] = (char)(0x80 | (cp >> 6 & 0x3f));
    d[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  d[0] = (char)(0xf0 | cp >> 18);
  d[1] = (char)(0x80 | (cp >> 12 & 0x3f));
  d[2] = (char)(0x80 | (cp >> 6 & 0x3f));
  d[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* UNICODE: raw-unicode-escape (latin-1 plus \uXXXX and \UXXXXXXXX), to UTF-8.
 * Every input byte becomes at most two output bytes. */
static int load_text_unicode(loader *l) {
  const unsigned char *s;
  size_t n, i, o = 0;
  gpuplan__pv *v;
  char *d;
  TRY(line(l, &s, &n));
  if (n > (SIZE_MAX - 1) / 2) return nomem(l);
  v = newv(l, GPUPLAN__PV_STR, 2 * n + 1);
  if (!v) return nomem(l);
  d = (char *)(v + 1);
  for (i = 0; i < n;) {
    int c = s[i++];
    if (c != '\\' || i == n) {
      o += put_utf8(d + o, (uint32_t)c);
      continue;
    }
    c = s[i++];
    if (c == 'u' || c == 'U') {
      size_t k, count = c == 'u' ? 4 : 8;
      uint32_t cp = 0;
      for (k = 0; k < count; k++) {
        int h = i + k < n ? hexval(s[i + k]) : -1;
        if (h < 0) return fail(l, "UNICODE: truncated \\%c escape", c);
        cp = cp << 4 | (uint32_t)h;
      }
      if (cp > 0x10ffff) return fail(l, "UNICODE: \\U%08lx out of range", (unsigned long)cp);
      i += count;
      o += put_utf8(d + o, cp);
    } else {
      d[o++] = '\\';
      o += put_utf8(d + o, (uint32_t)c);
    }
  }
  d[o] = '\0';
  v->u.str.s = d;
  v->u.str.len = o;
  return push_str(l, v);
}

/* LONG1/LONG4: little-endian two's complement of any length. */
static int push_long(loader *l, const unsigned char *s, size_t n) {
  uint64_t u = 0;
  size_t i, m = n < 8 ? n : 8;
  if (n > 8) {
    /* Longer than 8 bytes fits only if the extra bytes are sign fill: a
     * negative number must then reach bit 63; a non-negative one may be up
     * to 2^64 - 1 and is kept modulo 2^64 (see pickle.h). */
    unsigned char fill = (s[n - 1] & 0x80) ? 0xff : 0x00;
    for (i = 8; i < n; i++)
      if (s[i] != fill) goto big;
    if (fill && !(s[7] & 0x80)) goto big;
  }
  for (i = 0; i < m; i++) u |= (uint64_t)s[i] << (8 * i);
  if (m > 0 && m < 8 && (s[m - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * m);
  return push_int(l, to_signed(u));
big:
  return fail(l, "%s: integer too large (%zu bytes)", gpuplan__pickle_opname(l->op), n);
}

/* --- the loop ------------------------------------------------------------- */

static int step(loader *l, int *stop) {
  const unsigned char *a = NULL;
  size_t n, k = 0;
  uint64_t len;
  int64_t iv;
  gpuplan__pv *v;
  const char *why;

  l->at = l->pos;
  l->op = l->buf[l->pos++];
  switch (l->op) {
  case OP_PROTO:
    TRY(take(l, 1, &a));
    if (a[0] > HIGHEST_PROTOCOL) return fail(l, "unsupported pickle protocol %d", a[0]);
    l->protocol = a[0];
    return 0;
  case OP_FRAME:
    /* Frames only group opcodes for buffered reading; check and skip. */
    TRY(take(l, 8, &a));
    len = le64(a);
    if (len > left_input(l))
      return fail(l, "truncated in FRAME (length %llu, %llu bytes left)", (unsigned long long)len,
                  (unsigned long long)left_input(l));
    return 0;
  case OP_STOP:
    if (l->nmarks) return fail(l, "STOP with an open MARK");
    if (l->sp != 1) return fail(l, "STOP with %zu values on the stack (expected 1)", l->sp);
    if (l->stack[0]->type == GPUPLAN__PV_SKIPPED) return RESTART; /* a stand-in */
    *stop = 1;
    return 0;

  case OP_MARK:
    if (l->nmarks == l->mcap) {
      void *m = l->marks;
      TRY(grow(l, &m, &l->mcap, l->nmarks + 1, sizeof *l->marks));
      l->marks = m;
    }
    l->marks[l->nmarks++] = l->sp;
    return 0;
  case OP_POP:
    if (avail(l)) l->sp--;
    else if (l->nmarks) l->nmarks--;   /* Python pops a MARK when nothing is above it */
    else return underflow(l);
    return 0;
  case OP_POP_MARK:
    TRY(pop_mark(l, &k));
    l->sp = k;
    return 0;
  case OP_DUP:
    TRY(need_items(l, 1));
    return push(l, l->stack[l->sp - 1]);

  case OP_NONE: return push(l, l->none);
  case OP_NEWTRUE: return push(l, l->yes);
  case OP_NEWFALSE: return push(l, l->no);
  case OP_INT:
    TRY(line(l, &a, &n));
    if (n == 2 && a[0] == '0' && (a[1] == '0' || a[1] == '1')) /* I01, I00: bools */
      return push(l, a[1] == '1' ? l->yes : l->no);
    TRY(text_int(l, a, n, &iv));
    return push_int(l, iv);
  case OP_LONG:
    TRY(line(l, &a, &n));
    if (n > 0 && a[n - 1] == 'L') n--;
    TRY(text_int(l, a, n, &iv));
    return push_int(l, iv);
  case OP_BININT:
    TRY(take(l, 4, &a));
    return push_int(l, (int32_t)le32(a));
  case OP_BININT1:
    TRY(take(l, 1, &a));
    return push_int(l, a[0]);
  case OP_BININT2:
    TRY(take(l, 2, &a));
    return push_int(l, a[0] | a[1] << 8);
  case OP_LONG1:
    TRY(take(l, 1, &a));
    n = a[0];
    TRY(take(l, n, &a));
    return push_long(l, a, n);
  case OP_LONG4:
    TRY(take(l, 4, &a));
    iv = (int32_t)le32(a);
    if (iv < 0) return fail(l, "LONG4: negative byte count");
    TRY(take(l, (uint64_t)iv, &a));
    return push_long(l, a, (size_t)iv);
  case OP_FLOAT: return load_text_float(l);
  case OP_BINFLOAT: {
    uint64_t bits;
    double f;
    size_t i;
    TRY(take(l, 8, &a));
    for (bits = 0, i = 0; i < 8; i++) bits = bits << 8 | a[i];
    memcpy(&f, &bits, sizeof f);
    return push_float(l, f);
  }

  case OP_STRING: return load_text_string(l);
  case OP_UNICODE: return load_text_unicode(l);
  case OP_BINSTRING:
    TRY(take(l, 4, &a));
    iv = (int32_t)le32(a);
    if (iv < 0) return fail(l, "BINSTRING: negative byte count");
    TRY(take(l, (uint64_t)iv, &a));
    return push_bytes(l, GPUPLAN__PV_STR, a, (size_t)iv);
  case OP_SHORT_BINSTRING:
  case OP_SHORT_BINUNICODE:
  case OP_SHORT_BINBYTES:
    TRY(take(l, 1, &a));
    len = a[0];
    goto counted;
  case OP_BINUNICODE:
  case OP_BINBYTES:
    TRY(take(l, 4, &a));
    len = le32(a);
    goto counted;
  case OP_BINUNICODE8:
  case OP_BINBYTES8:
  case OP_BYTEARRAY8:
    TRY(take(l, 8, &a));
    len = le64(a);
  counted:
    TRY(take(l, len, &a));
    return push_bytes(l,
                      l->op == OP_SHORT_BINBYTES || l->op == OP_BINBYTES ||
                              l->op == OP_BINBYTES8 || l->op == OP_BYTEARRAY8
                          ? GPUPLAN__PV_BYTES
                          : GPUPLAN__PV_STR,
                      a, (size_t)len);

  case OP_EMPTY_LIST:
  case OP_EMPTY_SET:
    if (!(v = new_container(l, GPUPLAN__PV_LIST))) return nomem(l);
    return push(l, v);
  case OP_EMPTY_DICT:
    if (!(v = new_container(l, GPUPLAN__PV_DICT))) return nomem(l);
    return push(l, v);
  case OP_EMPTY_TUPLE:
    return push_seq(l, GPUPLAN__PV_TUPLE, l->sp);
  case OP_TUPLE1:
  case OP_TUPLE2:
  case OP_TUPLE3:
    n = (size_t)(l->op - OP_TUPLE1 + 1);
    TRY(need_items(l, n));
    return push_seq(l, GPUPLAN__PV_TUPLE, l->sp - n);
  case OP_TUPLE:
    TRY(pop_mark(l, &k));
    return push_seq(l, GPUPLAN__PV_TUPLE, k);
  case OP_LIST:
  case OP_FROZENSET:
    TRY(pop_mark(l, &k));
    return push_seq(l, GPUPLAN__PV_LIST, k);
  case OP_DICT:
    TRY(pop_mark(l, &k));
    if ((l->sp - k) % 2) return fail(l, "odd number of items for DICT");
    if (!(v = new_container(l, GPUPLAN__PV_DICT))) return nomem(l);
    /* Build it in place: the dict goes below its items, then SETITEMS. */
    TRY(push(l, v));
    memmove(l->stack + k + 1, l->stack + k, (l->sp - 1 - k) * sizeof *l->stack);
    l->stack[k] = v;
    return set_items(l, k + 1);
  case OP_APPEND:
    TRY(need_items(l, 2));
    return extend(l, l->sp - 1);
  case OP_APPENDS:
  case OP_ADDITEMS:
    TRY(pop_mark(l, &k));
    return extend(l, k);
  case OP_SETITEM:
    TRY(need_items(l, 3));
    return set_items(l, l->sp - 2);
  case OP_SETITEMS:
    TRY(pop_mark(l, &k));
    return set_items(l, k);

  case OP_PUT:
    TRY(text_index(l, &len));
    return memo_put(l, len);
  case OP_BINPUT:
    TRY(take(l, 1, &a));
    return memo_put(l, a[0]);
  case OP_LONG_BINPUT:
    TRY(take(l, 4, &a));
    return memo_put(l, le32(a));
  case OP_MEMOIZE:
    return memo_put(l, l->memo_len);
  case OP_GET:
    TRY(text_index(l, &len));
    return memo_get(l, len);
  case OP_BINGET:
    TRY(take(l, 1, &a));
    return memo_get(l, a[0]);
  case OP_LONG_BINGET:
    TRY(take(l, 4, &a));
    return memo_get(l, le32(a));

  default:
    why = refusal(l->op);
    if (why) return fail(l, "opcode %s (0x%02x) %s; refused", opnames[l->op], l->op, why);
    return fail(l, "unknown opcode 0x%02x; refused", l->op);
  }
}

/* The loader's common opcodes (those of a snapshot's dicts of scalars),
 * with the machine's state in locals.  Each does what step does with it;
 * at the first opcode that needs more (the window's end, room on the
 * stack or for the marks or memo, a value the memo holds that is a
 * stand-in or a key to skip, a check that fails, any other opcode) the
 * state is stored back and step takes it.  Calls that may run the skip
 * machine (which moves the window and may grow the stack) store the
 * state before and read it again after. */
static int run_fast(loader *l) {
  for (;;) {
    const unsigned char *const buf = l->buf;
    const size_t len = l->len;
    gpuplan__pv **const stack = l->stack;
    size_t pos = l->pos, sp = l->sp, pushes = l->pushes, n, idx;
    int64_t iv;
    size_t room = push_room(l, sp, pushes);
    gpuplan__pv *v;
    for (;;) {
      if (len - pos < 16) goto out;
      switch (buf[pos]) {
      case OP_BINGET:
        idx = buf[pos + 1];
        n = 2;
        goto get;
      case OP_LONG_BINGET:
        idx = le32(buf + pos + 1);
        n = 5;
      get:
        if (!room || !memo_has(l, idx)) goto out;
        v = l->memo[idx];
        /* stand-ins, and keys to skip (their value comes next): step's */
        if (v->type == GPUPLAN__PV_SKIPPED || (v->seen & KEYFLAGS && v->type == GPUPLAN__PV_STR)) goto out;
        pos += n;
        goto push;
      case OP_MEMOIZE:
        idx = l->memo_len;
        n = 1;
        goto put;
      case OP_BINPUT:
        idx = buf[pos + 1];
        n = 2;
        goto put;
      case OP_LONG_BINPUT:
        idx = le32(buf + pos + 1);
        n = 5;
      put:
        if (sp <= (l->nmarks ? l->marks[l->nmarks - 1] : 0) || idx >= l->memo_cap || idx >= l->total ||
            stack[sp - 1]->type == GPUPLAN__PV_SKIPPED)
          goto out;
        memo_set(l, idx, stack[sp - 1], 0, 0); /* a built value: not an unbuilt string */
        pos += n;
        break;
      case OP_MARK:
        if (l->nmarks == l->mcap) goto out;
        l->marks[l->nmarks++] = sp;
        pos++;
        break;
      case OP_BININT1:
        iv = buf[pos + 1];
        n = 2;
        goto integer;
      case OP_BININT2:
        iv = buf[pos + 1] | buf[pos + 2] << 8;
        n = 3;
        goto integer;
      case OP_BININT:
        iv = (int32_t)le32(buf + pos + 1);
        n = 5;
        goto integer;
      case OP_LONG1:
        /* At most 8 bytes, which can be read at once (len - pos >= 16). */
        if (buf[pos + 1] > 8) goto out;
        iv = long1(buf + pos + 2, buf[pos + 1]);
        n = 2 + (size_t)buf[pos + 1];
      integer:
        if (!room) goto out;
        if (l->ints) {
          const int_seen *c = int_slot(l, iv);
          v = c->v && c->i == iv ? c->v : NULL;
        } else {
          v = NULL;
        }
        if (!v && !(v = int_value(l, iv))) return nomem(l); /* (made there, or a new value) */
        pos += n;
        goto push;
      case OP_NEWFALSE:
      case OP_NEWTRUE:
      case OP_NONE:
        if (!room) goto out;
        v = buf[pos] == OP_NONE ? l->none : buf[pos] == OP_NEWTRUE ? l->yes : l->no;
        pos++;
        goto push;
      case OP_EMPTY_DICT:
      case OP_EMPTY_LIST:
        if (!room) goto out;
        if (!(v = new_container(l, buf[pos] == OP_EMPTY_DICT ? GPUPLAN__PV_DICT : GPUPLAN__PV_LIST)))
          return nomem(l);
        pos++;
        goto push;
      case OP_SETITEMS:
      case OP_APPENDS:
        if (l->nmarks == 0) goto out;
        l->at = pos;
        l->op = buf[pos];
        l->pos = pos + 1;
        l->sp = sp;
        l->pushes = pushes;
        n = l->marks[--l->nmarks];
        TRY(buf[pos] == OP_SETITEMS ? set_items(l, n) : extend(l, n));
        goto again;
      case OP_SHORT_BINUNICODE:
        n = buf[pos + 1];
        if (len - pos - 2 < n || !room) goto out;
        l->at = pos;
        l->op = buf[pos];
        l->pos = pos + 2 + n;
        l->sp = sp;
        l->pushes = pushes;
        TRY(push_bytes(l, GPUPLAN__PV_STR, buf + pos + 2, n));
        goto again; /* a key to skip may have moved the window on */
      default:
        goto out;
      }
      continue;
    push: /* room was looked at */
      stack[sp++] = v;
      pushes++, room--;
    }
  again:
    continue;
  out:
    l->pos = l->at = pos;
    l->sp = sp;
    l->pushes = pushes;
    return 0;
  }
}

/* --- the shape check ------------------------------------------------------ */

typedef struct frame {
  gpuplan__pv *v;
  size_t i, n;  /* next child, children */
  uint32_t h;   /* the tallest child so far */
} frame;

static gpuplan__pv *child(const gpuplan__pv *v, size_t i) {
  if (v->type == GPUPLAN__PV_DICT) return (i & 1) ? v->u.dict.vals[i >> 1] : v->u.dict.keys[i >> 1];
  return v->u.seq.items[i];
}

static size_t children(const gpuplan__pv *v) {
  return v->type == GPUPLAN__PV_DICT ? 2 * v->u.dict.n : v->u.seq.n;
}

/*
 * For a dirty load: refuse cycles and nesting deeper than max_depth, in one
 * depth-first pass that visits each container once.  seen (the load's
 * heights, all below ONPATH and DONE) becomes ONPATH while the container is
 * on the path, and DONE | its height after.
 */
#define ONPATH 0x40000000u
#define DONE 0x20000000u

static int check_shape(loader *l, gpuplan__pv *root) {
  frame *fr = NULL;
  size_t nf = 0, cap = 0;
  uint32_t maxd = l->maxd;
  int rc = 0;
  if (!is_container(root)) return 0;
  if (maxd == 0) goto too_deep;
  for (;;) {
    gpuplan__pv *v;
    if (nf == 0 || fr[nf - 1].i == fr[nf - 1].n) {
      uint32_t h;
      if (nf == 0) {
        if (root->seen & (ONPATH | DONE)) break;
        v = root;
      } else {
        h = fr[nf - 1].h + 1;
        if (h > maxd) goto too_deep;
        fr[--nf].v->seen = DONE | h;
        if (nf && h > fr[nf - 1].h) fr[nf - 1].h = h;
        continue;
      }
    } else {
      v = child(fr[nf - 1].v, fr[nf - 1].i++);
      if (!is_container(v)) continue;
      if (v->seen & ONPATH) {
        gpuplan__error(l->ctx, GPUPLAN_EINVAL,
                       "pickle: a %s contains itself (recursive structure); refused",
                       v->type == GPUPLAN__PV_DICT   ? "dict"
                       : v->type == GPUPLAN__PV_LIST ? "list"
                                                     : "tuple");
        rc = GPUPLAN_EINVAL;
        goto done;
      }
      if (v->seen & DONE) {
        if ((v->seen & ~DONE) > fr[nf - 1].h) fr[nf - 1].h = v->seen & ~DONE;
        continue;
      }
      if (nf >= maxd) goto too_deep;
    }
    if (nf == cap) {
      void *f = fr;
      rc = grow(l, &f, &cap, nf + 1, sizeof *fr);
      if (rc) goto done;
      fr = f;
    }
    v->seen = ONPATH;
    fr[nf].v = v;
    fr[nf].i = 0;
    fr[nf].n = children(v);
    fr[nf].h = 0;
    nf++;
  }
  goto done;
too_deep:
  gpuplan__error(l->ctx, GPUPLAN_EINVAL,
                 "pickle: containers nested deeper than %zu levels; limit exceeded",
                 l->lim.max_depth);
  rc = GPUPLAN_EINVAL;
done:
  gpuplan__free(l->ctx, fr);
  return rc;
}

/* --- entry points ---------------------------------------------------------- */

gpuplan__pickle_limits gpuplan__pickle_default_limits(void) {
  gpuplan__pickle_limits lim = GPUPLAN__PICKLE_LIMITS_INIT;
#if defined(GPUPLAN_TESTING)
  const char *v = getenv("GPUPLAN_TEST_PICKLE_MAX_ITEMS");
  if (v && atol(v) > 0) lim.max_items = (size_t)atol(v);
#endif
  return lim;
}

/* One pass over the input.  *again: it ended in a way a pass without
 * skipping may end otherwise (RESTART, or an error after skipping). */
static int load_once(gpuplan_ctx *ctx, const void *buf, size_t len, const gpuplan__pickle_reader *rd,
                     const gpuplan__pickle_limits *lim, const char *const *skip,
                     const gpuplan__pickle_decode *decode, int skipping, gpuplan__pickle *p,
                     const gpuplan__pv **root, int *again) {
  loader l;
  gpuplan__pv *single;
  int rc = 0, stop = 0, i;

  memset(&l, 0, sizeof l);
  l.ctx = ctx;
  l.arena = &p->arena;
  l.lim = *lim;
  l.str_stored = SIZE_MAX;
  gpuplan__arena_init(&p->arena, ctx);
  if (rd) {
    uint64_t w = rd->window ? rd->window : WINDOW;
    l.rd = rd;
    l.total = rd->size;
    l.ahead = rd->ahead ? rd->ahead : WINDOW_AHEAD;
    if (w > rd->size) w = rd->size ? rd->size : 1;
    if (!(l.win = gpuplan__malloc(ctx, (size_t)w))) {
      rc = nomem(&l);
      goto done;
    }
    l.wcap = (size_t)w;
    l.buf = l.win;
    l.moves = l.total > l.wcap;
  } else {
    l.buf = buf;
    l.len = len;
    l.total = len;
  }
  /* The values of a snapshot take about as many bytes as its pickle (a
   * region no larger than the input, of which only what is used is
   * touched); where lists are decoded, a third of it or less (records
   * and values of 2.7b 35%, ctx256 33%, small 29%; newest-format, whose
   * frames' strings are new, 102%).  The next regions double, so a first
   * of a sixteenth reaches that in three (7/16), with less untouched
   * room than a first of a quarter (ctx256's peak 2.8 MB, not 2.3) and
   * the same instructions. */
  {
    uint64_t first = skipping && decode ? l.total / 16 : l.total;
    l.bump_next = first < REGION_MIN ? REGION_MIN : first > REGION_MAX / 4 ? REGION_MAX / 4 : (size_t)first;
  }
  l.maxd = l.lim.max_depth > MAX_HEIGHT ? MAX_HEIGHT : (uint32_t)l.lim.max_depth;
  l.skip = skip;
  while (skip && skip[l.nskip] && l.nskip < GPUPLAN__PICKLE_MAX_SKIP) {
    l.skiplen[l.nskip] = strlen(skip[l.nskip]);
    l.nskip++;
  }
  if (skipping && decode) {
    l.decode = decode;
    while (decode[l.ndecode].key && l.ndecode < GPUPLAN__PICKLE_MAX_DECODE) {
      l.declen[l.ndecode] = strlen(decode[l.ndecode].key);
      l.ndecode++;
    }
  }
  l.skipping = (skip || l.ndecode) && skipping;
  l.str_end = SIZE_MAX;
  for (i = 0; i < LZ_KINDS; i++) {
    l.lazy[i].type = GPUPLAN__PV_SKIPPED;
    l.lazy[i].u.i = i;
  }

  single = lalloc(&l, 3 * sizeof *single);
  if (!single) {
    rc = nomem(&l);
    goto done;
  }
  memset(single, 0, 3 * sizeof *single);
  /* The stack always exists, so that stack + k is never arithmetic on NULL. */
  {
    void *st = NULL;
    rc = grow(&l, &st, &l.scap, 1, sizeof *l.stack);
    if (rc) goto done;
    l.stack = st;
  }
  l.none = &single[0];
  l.none->type = GPUPLAN__PV_NONE;
  l.yes = &single[1];
  l.yes->type = GPUPLAN__PV_BOOL;
  l.yes->u.b = 1;
  l.no = &single[2];
  l.no->type = GPUPLAN__PV_BOOL;

  while (!stop) {
    if ((rc = fill(&l, l.ahead))) break;
    if ((rc = run_fast(&l))) break;
    if ((rc = fill(&l, l.ahead))) break;
    if (l.pos >= l.len) {
      l.at = l.pos;
      rc = fail(&l, "truncated before STOP");
      break;
    }
    rc = step(&l, &stop);
    if (rc) break;
  }
  if (!rc && l.dirty) {
    rc = check_shape(&l, l.stack[0]);
  } else if (!rc && is_container(l.stack[0]) && (l.stack[0]->seen & ~EMBEDDED) > l.maxd) {
    rc = deep(&l);
  }

done:
  *again = rc == RESTART || (rc == GPUPLAN_EINVAL && l.skipped_any);
  if (!rc) {
    *root = l.stack[0];
    p->ctx = ctx;
    p->protocol = l.protocol;
    p->values = l.pushes;
    p->skipped = l.nskipped;
    gpuplan__ctx_ref(ctx);
    gpuplan__clear(ctx);
  } else {
    gpuplan__arena_free(&p->arena);
  }
  gpuplan__free(ctx, l.stack);
  gpuplan__free(ctx, l.marks);
  gpuplan__free(ctx, l.memo);
  gpuplan__free(ctx, l.mbits);
  gpuplan__free(ctx, l.moff);
  gpuplan__free(ctx, l.runs);
  gpuplan__free(ctx, l.rstore);
  gpuplan__free(ctx, l.ints);
  gpuplan__free(ctx, l.win);
  gpuplan__free(ctx, l.store);
  gpuplan__free(ctx, l.rbuf);
  return rc;
}

static int load_any(gpuplan_ctx *ctx, const void *buf, size_t len, const gpuplan__pickle_reader *rd,
                    const gpuplan__pickle_limits *limits, const char *const *skip,
                    const gpuplan__pickle_decode *decode, gpuplan__pickle *p, const gpuplan__pv **root) {
  gpuplan__pickle_limits lim = limits ? *limits : gpuplan__pickle_default_limits();
  size_t nskip = 0, nd = 0;
  int rc, again = 0;

  if (root) *root = NULL;
  if (p) memset(p, 0, sizeof *p);
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!p || !root || (!rd && !buf && len) || (rd && !rd->read))
    return gpuplan__error(ctx, GPUPLAN_EMISUSE, "pickle: p, root and buf (or a reader's read) must not be NULL");
  while (skip && skip[nskip]) nskip++;
  if (nskip > GPUPLAN__PICKLE_MAX_SKIP)
    return gpuplan__error(ctx, GPUPLAN_EMISUSE, "pickle: more than %d keys to skip",
                          GPUPLAN__PICKLE_MAX_SKIP);
  for (; decode && decode[nd].key; nd++) {
    size_t nf = 0, k;
    const gpuplan__pickle_schema *sc = decode[nd].schema;
    if (nd == GPUPLAN__PICKLE_MAX_DECODE || (decode[nd].lists != 1 && decode[nd].lists != 2) || !sc)
      return gpuplan__error(ctx, GPUPLAN_EMISUSE, "pickle: decode entry %zu is malformed", nd);
    while (sc->names[nf]) nf++;
    if (nf == 0 || nf > GPUPLAN__PICKLE_MAX_FIELDS)
      return gpuplan__error(ctx, GPUPLAN_EMISUSE, "pickle: decode entry %zu: 1 to %d fields", nd,
                            GPUPLAN__PICKLE_MAX_FIELDS);
    for (k = 0; k < nf; k++)
      if (sc->kinds[k] == GPUPLAN__PF_RECORDS && (!sc->sub || !sc->sub[k]))
        return gpuplan__error(ctx, GPUPLAN_EMISUSE, "pickle: decode entry %zu: field %zu has no schema", nd, k);
  }
  rc = load_once(ctx, buf, len, rd, &lim, nskip ? skip : NULL, nd ? decode : NULL, 1, p, root, &again);
  if (again) {
    /* Skipping could not keep the result exact (or an error may read
     * otherwise without it): load again, building every value. */
    memset(p, 0, sizeof *p);
    rc = load_once(ctx, buf, len, rd, &lim, nskip ? skip : NULL, NULL, 0, p, root, &again);
    if (NEVER(rc == RESTART)) rc = gpuplan__error(ctx, GPUPLAN_ERROR, "pickle: a stand-in without skipping");
    p->reparsed = 1;
  }
  return rc;
}

int gpuplan__pickle_load_skip(gpuplan_ctx *ctx, const void *buf, size_t len,
                              const gpuplan__pickle_limits *limits, const char *const *skip,
                              gpuplan__pickle *p, const gpuplan__pv **root) {
  return load_any(ctx, buf, len, NULL, limits, skip, NULL, p, root);
}

int gpuplan__pickle_load_decode(gpuplan_ctx *ctx, const void *buf, size_t len,
                                const gpuplan__pickle_reader *rd, const gpuplan__pickle_limits *limits,
                                const char *const *skip, const gpuplan__pickle_decode *decode,
                                gpuplan__pickle *p, const gpuplan__pv **root) {
  return load_any(ctx, rd ? NULL : buf, rd ? 0 : len, rd, limits, skip, decode, p, root);
}

const gpuplan__pv gpuplan__pf_int = {GPUPLAN__PV_INT, 0, {0}};

int gpuplan__pickle_load_reader(gpuplan_ctx *ctx, const gpuplan__pickle_reader *rd,
                                const gpuplan__pickle_limits *limits, const char *const *skip,
                                gpuplan__pickle *p, const gpuplan__pv **root) {
  if (!rd) {
    if (root) *root = NULL;
    if (p) memset(p, 0, sizeof *p);
    return ctx ? gpuplan__error(ctx, GPUPLAN_EMISUSE, "pickle: NULL reader") : GPUPLAN_EMISUSE;
  }
  return load_any(ctx, NULL, 0, rd, limits, skip, NULL, p, root);
}

int gpuplan__pickle_load_ex(gpuplan_ctx *ctx, const void *buf, size_t len,
                            const gpuplan__pickle_limits *limits, gpuplan__pickle *p,
                            const gpuplan__pv **root) {
  return gpuplan__pickle_load_skip(ctx, buf, len, limits, NULL, p, root);
}

int gpuplan__pickle_load(gpuplan_ctx *ctx, const void *buf, size_t len, gpuplan__pickle *p,
                         const gpuplan__pv **root) {
  return gpuplan__pickle_load_ex(ctx, buf, len, NULL, p, root);
}

void gpuplan__pickle_free(gpuplan__pickle *p) {
  gpuplan_ctx *ctx;
  if (!p || !p->ctx) return;
  ctx = p->ctx;
  gpuplan__arena_free(&p->arena);
  p->ctx = NULL;
  gpuplan__ctx_unref(ctx);
}

/* --- helpers --------------------------------------------------------------- */

const gpuplan__pv *gpuplan__pv_get(const gpuplan__pv *dict, const char *key) {
  size_t i, n;
  if (!dict || !key || dict->type != GPUPLAN__PV_DICT) return NULL;
  n = strlen(key);
  for (i = dict->u.dict.n; i-- > 0;) {
    const gpuplan__pv *k = dict->u.dict.keys[i];
    if (k->type == GPUPLAN__PV_STR && k->u.str.len == n && memcmp(k->u.str.s, key, n) == 0)
      return dict->u.dict.vals[i];
  }
  return NULL;
}

int gpuplan__pv_int(const gpuplan__pv *v, int64_t *out) {
  if (!v || !out) return -1;
  if (v->type == GPUPLAN__PV_INT) *out = v->u.i;
  else if (v->type == GPUPLAN__PV_BOOL) *out = v->u.b;
  else return -1;
  return 0;
}

const char *gpuplan__pv_str(const gpuplan__pv *v) {
  return v && v->type == GPUPLAN__PV_STR ? v->u.str.s : NULL;
}

/*
 * pickle.h: a reader for Python pickles of plain data only, enough for the
 * files torch.cuda.memory._dump_snapshot() writes.  Not installed.
 *
 * It understands every opcode that pickle protocols 0-5 emit for None, bool,
 * int, float, str, bytes, bytearray, list, tuple, dict, set and frozenset,
 * and refuses, with the opcode's name and byte offset, every opcode that
 * imports or calls code (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
 * NEWOBJ, NEWOBJ_EX, EXT1/2/4), needs a hook (PERSID, BINPERSID,
 * NEXT_BUFFER, READONLY_BUFFER) or is unknown.  Loading never runs code.
 *
 * Values live in the gpuplan__pickle's arena and are never freed one by one,
 * so a memo entry that the file references many times is one shared value.
 * A successful load returns a tree or a DAG: a container that contains
 * itself, directly or not, is refused, so consumers may walk the result
 * recursively, to at most max_depth levels of containers.
 *
 * A load may be told to skip some dict keys (torch's "frames", most of a
 * snapshot's bytes): their pairs are left out of every dict, and their
 * values are not built.  The opcodes that would build them still run,
 * through the same checks (refused opcodes, truncation, the memo, the
 * stack, the values limit), on stand-ins instead of values; when a
 * stand-in could reach the result (a memo reference from outside, a
 * pickle that changes a value it did not build), the input is loaded again
 * without skipping, so that skipping changes neither the rest of the
 * result nor an error.
 */
#ifndef GPUPLAN_REPLAY_PICKLE_H
#define GPUPLAN_REPLAY_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "common/internal.h"

typedef enum {
  GPUPLAN__PV_NONE,
  GPUPLAN__PV_BOOL,
  GPUPLAN__PV_INT,
  GPUPLAN__PV_FLOAT,
  GPUPLAN__PV_STR,    /* str; also protocol 0-2 STRING/BINSTRING (Python 2 str) */
  GPUPLAN__PV_BYTES,  /* bytes and bytearray */
  GPUPLAN__PV_LIST,   /* list; also set and frozenset, in file order */
  GPUPLAN__PV_TUPLE,
  GPUPLAN__PV_DICT,
  GPUPLAN__PV_SKIPPED, /* the loader's stand-in for a value it skips; never in a result */
  GPUPLAN__PV_RECORDS  /* a list of dicts decoded as records (gpuplan__pickle_load_decode) */
} gpuplan__pv_type;

typedef struct gpuplan__pv gpuplan__pv;

/* A field of a decoded record: v NULL when the dict has no such key;
 * &gpuplan__pf_int when it holds the integer i (or a bool, as 0 or 1);
 * else the value, as a load without decoding builds it. */
typedef struct gpuplan__pfield {
  const gpuplan__pv *v;
  int64_t i;
} gpuplan__pfield;

struct gpuplan__pv {
  gpuplan__pv_type type;
  uint32_t seen;  /* the loader's own bookkeeping (shape check); ignore it */
  union {
    int b;
    /* INT: -2^63 .. 2^64 - 1.  Values from 2^63 up are kept modulo 2^64
     * (read them as (uint64_t)i): torch writes a frame's unknown line as
     * 2^64 - 1.  Anything wider is refused as "integer too large". */
    int64_t i;
    double f;
    /* STR and BYTES: s[len] == '\0'; s may contain NULs and, for STR,
     * whatever bytes the file holds (UTF-8 is not validated). */
    struct { const char *s; size_t len; } str;
    struct { gpuplan__pv **items; size_t n, cap; } seq;  /* LIST, TUPLE */
    /* DICT: pairs in file order.  Keys are not deduplicated: a later
     * SETITEM with an equal key appends a second pair, and
     * gpuplan__pv_get returns the last one, as Python would. */
    struct { gpuplan__pv **keys, **vals; size_t n, cap; } dict;
    /* RECORDS: n records of nf fields each, in chunks of 2^shift records
     * (gpuplan__pv_record), each record's fields in the order of the
     * schema's names. */
    struct { gpuplan__pfield *const *chunk; size_t n, nf; unsigned shift; } rec;
  } u;
};

/* The loaded document.  Everything a load returns lives in arena. */
typedef struct gpuplan__pickle {
  gpuplan__arena arena;
  gpuplan_ctx *ctx;   /* non-NULL while the pickle holds values (and a ctx reference) */
  int protocol;       /* the PROTO opcode's argument; 0 when there was none */
  size_t values;      /* values pushed while loading (memo references included),
                         skipped ones too: the same count as a load without skipping */
  size_t skipped;     /* pairs left out of dicts (keys to skip) */
  int reparsed;       /* skipping was abandoned and the input loaded again without it */
} gpuplan__pickle;

typedef struct gpuplan__pickle_limits {
  size_t max_depth;   /* levels of nested containers in the result */
  size_t max_items;   /* values pushed while loading, memo references included */
} gpuplan__pickle_limits;

#define GPUPLAN__PICKLE_LIMITS_INIT {200, 50000000}

/* The limits a load without explicit ones applies, and that gpuplan's own
 * snapshot writer keeps to (export.c): GPUPLAN__PICKLE_LIMITS_INIT, or in
 * GPUPLAN_TESTING builds max_items from GPUPLAN_TEST_PICKLE_MAX_ITEMS, so
 * that a test can reach the limit with a small file. */
gpuplan__pickle_limits gpuplan__pickle_default_limits(void);

/*
 * Parse buf[0..len) into *root.  p need not be initialised; after the call,
 * whether it succeeded or not, release it with gpuplan__pickle_free.  The
 * values *root reaches stay valid until then.  Bytes after STOP are ignored.
 *
 * @return GPUPLAN_OK; GPUPLAN_EINVAL for a malformed or refused pickle, with
 *         a message "pickle: offset N: ..." ("pickle: ..." for a cycle found
 *         after STOP); GPUPLAN_ENOMEM; GPUPLAN_EMISUSE for NULL arguments.
 * @errors any  @threads ctx
 */
int gpuplan__pickle_load(gpuplan_ctx *ctx, const void *buf, size_t len, gpuplan__pickle *p,
                         const gpuplan__pv **root);

/* The same with explicit limits (NULL: GPUPLAN__PICKLE_LIMITS_INIT). */
int gpuplan__pickle_load_ex(gpuplan_ctx *ctx, const void *buf, size_t len,
                            const gpuplan__pickle_limits *limits, gpuplan__pickle *p,
                            const gpuplan__pv **root);

/*
 * The same, leaving out of every dict the pairs whose key is a str in skip
 * (a NULL-terminated list of at most GPUPLAN__PICKLE_MAX_SKIP; NULL: none)
 * and, where the pickle allows it, not building their values.  The rest of
 * the result, the values count and the errors are those of
 * gpuplan__pickle_load_ex, but for the shape check: a value left out is
 * not part of the result, so a cycle or nesting deeper than max_depth
 * through it is not refused (or another one is named) unless the load had
 * to be repeated without skipping (p->reparsed).
 */
#define GPUPLAN__PICKLE_MAX_SKIP 8
int gpuplan__pickle_load_skip(gpuplan_ctx *ctx, const void *buf, size_t len,
                              const gpuplan__pickle_limits *limits, const char *const *skip,
                              gpuplan__pickle *p, const gpuplan__pv **root);

/*
 * An input read in pieces (a file), so that a load holds a window of it
 * instead of all of it: read fills dst[0..n) with the input's bytes from
 * offset off, sets *got (0 only at the end of the input) and returns
 * GPUPLAN_OK, or an error it has set on ctx.  size: the input's length as
 * far as it is known (a file's size); nothing past it is read, and the end
 * may come sooner (a file being rewritten), which reads as truncation.
 * window, ahead, chunk: the window's starting size, the bytes kept ahead of
 * the opcode being run, the most asked of one read (0: 256 KiB, 64 KiB,
 * the window); tests make them tiny to reach every boundary.
 */
typedef struct gpuplan__pickle_reader {
  int (*read)(void *ud, gpuplan_ctx *ctx, uint64_t off, void *dst, size_t n, size_t *got);
  void *ud;
  uint64_t size;
  size_t window, ahead, chunk;
} gpuplan__pickle_reader;

/*
 * gpuplan__pickle_load_skip of the input rd reads: the same result, values
 * count and errors (offsets are the input's), but for where skipping gives
 * up (a stand-in's value, a guess at where a skipped value ends): the
 * window may make it give up where the whole input would not, which can
 * only change what the shape check names (see gpuplan__pickle_load_skip).
 * Memory: the window (about ahead bytes more than the largest opcode) and
 * the strings the skip machine memoized without building, instead of the
 * whole input.  A repeated load (p->reparsed) reads the input again.
 */
int gpuplan__pickle_load_reader(gpuplan_ctx *ctx, const gpuplan__pickle_reader *rd,
                                const gpuplan__pickle_limits *limits, const char *const *skip,
                                gpuplan__pickle *p, const gpuplan__pv **root);

/*
 * Decoding: a consumer that reads a few fields of thousands of dicts (a
 * snapshot's trace events, segments and blocks) can have them decoded
 * straight from the opcodes into records, instead of built as dicts of
 * values: each decode entry names a key of the top-level dict whose value
 * is a list of such dicts (lists 1) or a list of lists of them (lists 2),
 * and the schema of the fields read.  That value then loads as a RECORDS
 * (lists 1) or a LIST of RECORDS (lists 2).
 *
 * A field of kind INT that holds an integer or a bool is kept as one
 * (gpuplan__pfield); anything else it holds, and a field of kind VALUE, is
 * the value a load without decoding builds (a str, None, a bool, an
 * integer, a tuple of two integers, or one fetched from the memo);
 * RECORDS: a list of dicts of the sub-schema, itself decoded (one level).
 * Keys the schema does not name are skipped as keys to skip are (their
 * values not built), and so are the keys to skip.
 *
 * Anything else (a record that is not a dict of str keys written by MARK
 * ... SETITEMS, a memo reference to one, a value of a form not above, a
 * list written otherwise than picklers write lists, a decoded value or one
 * of its dicts wanted outside it through the memo) makes the load repeat
 * without skipping or decoding (p->reparsed), where those keys hold
 * ordinary lists of dicts: consumers take both.  Decoding changes neither
 * the values count, nor the rest of the result, nor an error, but as
 * skipping does: values not built are not shape-checked.  Limits below
 * max_depth 16 decode nothing.
 */
#define GPUPLAN__PICKLE_MAX_FIELDS 12
#define GPUPLAN__PICKLE_MAX_DECODE 4
enum { GPUPLAN__PF_INT = 1, GPUPLAN__PF_VALUE, GPUPLAN__PF_RECORDS };
typedef struct gpuplan__pickle_schema {
  const char *const *names;   /* NULL-terminated, at most GPUPLAN__PICKLE_MAX_FIELDS */
  const unsigned char *kinds; /* GPUPLAN__PF_* of each */
  const struct gpuplan__pickle_schema *const *sub; /* RECORDS fields' schemas (others NULL); NULL: none */
} gpuplan__pickle_schema;
typedef struct gpuplan__pickle_decode {
  const char *key; /* NULL ends the array (at most GPUPLAN__PICKLE_MAX_DECODE entries) */
  int lists;       /* 1 or 2 */
  const gpuplan__pickle_schema *schema;
} gpuplan__pickle_decode;

/* The marker of an integer field (gpuplan__pfield). */
extern const gpuplan__pv gpuplan__pf_int;

/*
 * gpuplan__pickle_load_skip of buf[0..len), or (rd non-NULL)
 * gpuplan__pickle_load_reader of rd, decoding the values of decode's keys
 * (see above; NULL: none).
 *
 * @return as those; also GPUPLAN_EMISUSE for a decode table that cannot be
 *         right ("pickle: decode entry N ...": lists not 1 or 2, no schema,
 *         no fields or more than GPUPLAN__PICKLE_MAX_FIELDS, a RECORDS
 *         field without its schema, more than GPUPLAN__PICKLE_MAX_DECODE
 *         entries).  The records, like every value, live until
 *         gpuplan__pickle_free.
 * @errors any  @threads ctx
 */
int gpuplan__pickle_load_decode(gpuplan_ctx *ctx, const void *buf, size_t len,
                                const gpuplan__pickle_reader *rd, const gpuplan__pickle_limits *limits,
                                const char *const *skip, const gpuplan__pickle_decode *decode,
                                gpuplan__pickle *p, const gpuplan__pv **root);

/* The fields of record r (< v->u.rec.n) of the RECORDS v. */
static inline const gpuplan__pfield *gpuplan__pv_record(const gpuplan__pv *v, size_t r) {
  return v->u.rec.chunk[r >> v->u.rec.shift] + (r & (((size_t)1 << v->u.rec.shift) - 1)) * v->u.rec.nf;
}

/* Field f as a value: f->v, or for an integer *tmp made to hold it. */
static inline const gpuplan__pv *gpuplan__pf_value(const gpuplan__pfield *f, gpuplan__pv *tmp) {
  if (f->v != &gpuplan__pf_int) return f->v;
  tmp->type = GPUPLAN__PV_INT;
  tmp->seen = 0;
  tmp->u.i = f->i;
  return tmp;
}

/* Free every value of p.  Accepts NULL and a pickle whose load failed. */
void gpuplan__pickle_free(gpuplan__pickle *p);

/* The name of opcode op ("BINUNICODE"), or "unknown". */
const char *gpuplan__pickle_opname(int op);

/* --- helpers for consumers --------------------------------------------- */

/* The value of the last pair of dict whose key is the str key; NULL when
 * dict is NULL, not a dict, or has no such key. */
const gpuplan__pv *gpuplan__pv_get(const gpuplan__pv *dict, const char *key);

/* *out = the value of an INT or BOOL; returns 0, or -1 (and leaves *out
 * alone) for NULL or any other type. */
int gpuplan__pv_int(const gpuplan__pv *v, int64_t *out);

/* The bytes of a STR (NUL-terminated); NULL for NULL or any other type. */
const char *gpuplan__pv_str(const gpuplan__pv *v);

#endif /* GPUPLAN_REPLAY_PICKLE_H */

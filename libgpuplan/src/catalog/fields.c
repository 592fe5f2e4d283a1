/* fields.c: descriptors of the record structs, and what each column may
 * hold.  The catalog loader, the CLI and the bindings all render records from
 * these, so a new column is added in one place.  Field names equal the SQL
 * column names.
 *
 * Every field carries a check (review H2, L8).  A catalog file is data from
 * outside: its numbers feed divisions and sums in the memory and performance
 * models, so each is refused on load, with the table, row and column named,
 * unless it has the right type and lies in a range no real part leaves.  The
 * bounds are generous (a thousand times past today's parts) but they keep
 * every product the models form inside 64 bits, and their lower ends catch
 * unit slips (a bandwidth typed in GB/s, a rate in TFLOP/s). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "catalog/catalog_int.h"

/* The checks, as {min, max, flags}. */
#define TEXT_REQ {0, 0, GPUPLAN__CK_REQUIRED}
#define TEXT_OPT {0, 0, 0}
#define INT_REQ(lo, hi) {lo, hi, GPUPLAN__CK_REQUIRED | GPUPLAN__CK_INTEGRAL}
#define INT_OPT(lo, hi) {lo, hi, GPUPLAN__CK_INTEGRAL}
#define NUM_REQ(lo, hi) {lo, hi, GPUPLAN__CK_REQUIRED}
#define NUM_OPT(lo, hi) {lo, hi, 0}

#define BYTES_MAX 1125899906842624.0 /* 2^50: a pebibyte per device */
#define RATE_MIN 1e6                 /* FLOP/s and bytes/s */
#define FLOPS_MAX 1e18
#define BW_MAX 1e15

/* X(name, type, unit, check) for every column, in struct order. */
#define GPU_FIELDS(X)                                                 \
  X(id, STRING, "", TEXT_REQ)                                         \
  X(name, STRING, "", TEXT_REQ)                                       \
  X(vendor, STRING, "", TEXT_REQ)                                     \
  X(architecture, STRING, "", TEXT_REQ)                               \
  X(chip, STRING, "", TEXT_OPT)                                       \
  X(compute_capability, STRING, "", TEXT_OPT)                         \
  X(form_factor, STRING, "", TEXT_OPT)                                \
  X(sm_count, REAL, "count", INT_OPT(1, 1e6))                         \
  X(cuda_cores, REAL, "count", INT_OPT(1, 1e9))                       \
  X(tensor_cores, REAL, "count", INT_OPT(0, 1e8))                     \
  X(memory_gb, REAL, "GB (marketed)", NUM_REQ(1e-3, 1e6))             \
  X(memory_bytes, UINT, "bytes", INT_REQ(1048576, BYTES_MAX))         \
  X(memory_type, STRING, "", TEXT_OPT)                                \
  X(mem_bw_bytes_s, REAL, "bytes/s", NUM_REQ(RATE_MIN, BW_MAX))       \
  X(l2_bytes, REAL, "bytes", INT_OPT(0, BYTES_MAX))                   \
  X(fp64_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))         \
  X(fp64_tensor_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))  \
  X(fp32_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))         \
  X(tf32_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))         \
  X(bf16_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))         \
  X(fp16_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))         \
  X(fp8_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))          \
  X(int8_ops, REAL, "OP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))             \
  X(fp4_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))          \
  X(nvlink_gen, REAL, "", INT_OPT(1, 100))                            \
  X(nvlink_bw_bytes_s, REAL, "bytes/s", NUM_OPT(RATE_MIN, BW_MAX))    \
  X(pcie_gen, REAL, "", INT_OPT(1, 100))                              \
  X(tdp_w, REAL, "W", NUM_OPT(1, 1e6))                                \
  X(boost_clock_mhz, REAL, "MHz", NUM_OPT(1, 1e5))                    \
  X(tensor_clock_mhz, REAL, "MHz", NUM_OPT(1, 1e5))                   \
  X(slowdown_temp_c, REAL, "C", NUM_OPT(0, 1000))                     \
  X(matmul_bf16_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))  \
  X(matmul_fp8_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))   \
  X(context_bytes, UINT, "bytes", INT_REQ(0, BYTES_MAX))              \
  X(source, STRING, "", TEXT_REQ)                                     \
  X(note, STRING, "", TEXT_OPT)                                       \
  X(unverified, STRING, "", TEXT_OPT)

#define FABRIC_FIELDS(X)                                              \
  X(id, STRING, "", TEXT_REQ)                                         \
  X(name, STRING, "", TEXT_REQ)                                       \
  X(kind, STRING, "", TEXT_REQ)                                       \
  X(scope, STRING, "", TEXT_REQ)                                      \
  X(generation, STRING, "", TEXT_OPT)                                 \
  X(bw_bytes_s, REAL, "bytes/s", NUM_REQ(RATE_MIN, BW_MAX))           \
  X(latency_s, REAL, "s", NUM_REQ(0, 1))                              \
  X(source, STRING, "", TEXT_REQ)                                     \
  X(note, STRING, "", TEXT_OPT)

#define NODE_FIELDS(X)                                                \
  X(id, STRING, "", TEXT_REQ)                                         \
  X(name, STRING, "", TEXT_REQ)                                       \
  X(provider, STRING, "", TEXT_REQ)                                   \
  X(gpu_id, STRING, "", TEXT_OPT)                                     \
  X(gpu_count, INT, "count", INT_REQ(0, 65536))                       \
  X(gpu_fraction, REAL, "", NUM_REQ(1e-3, 1))                         \
  X(gpu_memory_bytes, UINT, "bytes", INT_OPT(0, BYTES_MAX))           \
  X(intra_fabric_id, STRING, "", TEXT_OPT)                            \
  X(inter_fabric_id, STRING, "", TEXT_OPT)                            \
  X(nic_count, REAL, "count", INT_OPT(1, 65536))                      \
  X(nic_bw_bytes_s, REAL, "bytes/s", NUM_OPT(RATE_MIN, BW_MAX))       \
  X(rail_optimized, REAL, "", INT_OPT(0, 1))                          \
  X(vcpus, INT, "count", INT_REQ(0, 1048576))                         \
  X(cpu, STRING, "", TEXT_OPT)                                        \
  X(cpu_fp32_flops, REAL, "FLOP/s", NUM_OPT(RATE_MIN, FLOPS_MAX))     \
  X(ram_bytes, REAL, "bytes", INT_OPT(0, 1152921504606846976.0))      \
  X(price_per_hour, REAL, "currency/h", NUM_OPT(0, 1e7))              \
  X(currency, STRING, "", TEXT_OPT)                                   \
  X(price_region, STRING, "", TEXT_OPT)                               \
  X(price_date, STRING, "", TEXT_OPT)                                 \
  X(source, STRING, "", TEXT_REQ)                                     \
  X(note, STRING, "", TEXT_OPT)

#define MODEL_FIELDS(X)                                               \
  X(id, STRING, "", TEXT_REQ)                                         \
  X(name, STRING, "", TEXT_REQ)                                       \
  X(family, STRING, "", TEXT_REQ)                                     \
  X(arch, STRING, "", TEXT_REQ)                                       \
  X(params, REAL, "count", NUM_REQ(1, 1e15))                          \
  X(layers, INT, "count", INT_REQ(1, 65536))                          \
  X(hidden, INT, "", INT_REQ(1, 1048576))                             \
  X(heads, INT, "count", INT_REQ(1, 65536))                           \
  X(kv_heads, INT, "count", INT_REQ(1, 65536))                        \
  X(head_dim, INT, "", INT_REQ(1, 65536))                             \
  X(ffn_hidden, INT, "", INT_REQ(1, 16777216))                        \
  X(ffn_type, STRING, "", TEXT_REQ)                                   \
  X(vocab, INT, "tokens", INT_REQ(1, 16777216))                       \
  X(seq_len, INT, "tokens", INT_REQ(1, 1073741824))                   \
  X(max_seq_len, REAL, "tokens", INT_OPT(1, 17179869184.0))           \
  X(tied_embeddings, BOOL, "", INT_REQ(0, 1))                         \
  X(position, STRING, "", TEXT_REQ)                                   \
  X(norm, STRING, "", TEXT_REQ)                                       \
  X(linear_bias, BOOL, "", INT_REQ(0, 1))                             \
  X(experts, INT, "count", INT_REQ(1, 65536))                         \
  X(top_k, INT, "count", INT_REQ(1, 65536))                           \
  X(source, STRING, "", TEXT_REQ)                                     \
  X(note, STRING, "", TEXT_OPT)

/* The check is passed on as __VA_ARGS__: once expanded it holds commas. */
#define FIELD(T, name, type, unit, ...) \
  {#name, GPUPLAN_FIELD_##type, offsetof(T, name), unit},
#define GPU_F(n, t, u, ...) FIELD(gpuplan_gpu, n, t, u, __VA_ARGS__)
#define FABRIC_F(n, t, u, ...) FIELD(gpuplan_fabric, n, t, u, __VA_ARGS__)
#define NODE_F(n, t, u, ...) FIELD(gpuplan_node, n, t, u, __VA_ARGS__)
#define MODEL_F(n, t, u, ...) FIELD(gpuplan_model, n, t, u, __VA_ARGS__)
#define ANY_C(n, t, u, ...) __VA_ARGS__,

static const gpuplan_field gpu_fields[] = {GPU_FIELDS(GPU_F)};
static const gpuplan_field fabric_fields[] = {FABRIC_FIELDS(FABRIC_F)};
static const gpuplan_field node_fields[] = {NODE_FIELDS(NODE_F)};
static const gpuplan_field model_fields[] = {MODEL_FIELDS(MODEL_F)};

static const gpuplan__check gpu_checks[] = {GPU_FIELDS(ANY_C)};
static const gpuplan__check fabric_checks[] = {FABRIC_FIELDS(ANY_C)};
static const gpuplan__check node_checks[] = {NODE_FIELDS(ANY_C)};
static const gpuplan__check model_checks[] = {MODEL_FIELDS(ANY_C)};

#define N(a) (sizeof(a) / sizeof((a)[0]))

const gpuplan__kind_info gpuplan__kinds[GPUPLAN_KIND_COUNT] = {
  {"gpu", "GPU", "gpu", gpu_fields, gpu_checks, N(gpu_fields), sizeof(gpuplan_gpu)},
  {"fabric", "fabric", "fabric", fabric_fields, fabric_checks, N(fabric_fields),
   sizeof(gpuplan_fabric)},
  {"node", "node", "node", node_fields, node_checks, N(node_fields), sizeof(gpuplan_node)},
  {"model", "model", "model", model_fields, model_checks, N(model_fields),
   sizeof(gpuplan_model)},
};

const gpuplan_field *gpuplan_kind_fields(gpuplan_kind kind, size_t *count_out) {
  if ((unsigned)kind >= GPUPLAN_KIND_COUNT) {
    if (count_out) *count_out = 0;
    return NULL;
  }
  if (count_out) *count_out = gpuplan__kinds[kind].nfields;
  return gpuplan__kinds[kind].fields;
}

const char *gpuplan_kind_name(gpuplan_kind kind) {
  if ((unsigned)kind >= GPUPLAN_KIND_COUNT) return NULL;
  return gpuplan__kinds[kind].name;
}

static const char *type_name(int t) {
  switch (t) {
  case SQLITE_INTEGER: return "an integer";
  case SQLITE_FLOAT: return "a real";
  case SQLITE_TEXT: return "text";
  case SQLITE_BLOB: return "a blob";
  default: return "NULL";
  }
}

int gpuplan__field_check(const gpuplan_field *f, const gpuplan__check *ck,
                         sqlite3_stmt *st, int col, char *why, size_t cap) {
  int t = sqlite3_column_type(st, col);
  double v;
  if (t == SQLITE_NULL) {
    if (!(ck->flags & GPUPLAN__CK_REQUIRED)) return 0;
    snprintf(why, cap, "is NULL, but a value is required");
    return 1;
  }
  if (f->type == GPUPLAN_FIELD_STRING) {
    if (t != SQLITE_BLOB) return 0;
    snprintf(why, cap, "is a blob, not text");
    return 1;
  }
  if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) {
    if (t == SQLITE_TEXT) {
      /* Quote a little of it, controls made harmless for a terminal. */
      const unsigned char *txt = sqlite3_column_text(st, col);
      char head[41];
      size_t i;
      for (i = 0; txt && txt[i] && i < sizeof head - 1; i++)
        head[i] = txt[i] < 0x20 || txt[i] == 0x7f ? '?' : (char)txt[i];
      head[i] = '\0';
      snprintf(why, cap, "is text ('%s'), not a number", head);
    } else {
      snprintf(why, cap, "is %s, not a number", type_name(t));
    }
    return 1;
  }
  if (t == SQLITE_INTEGER) {
    /* The bounds are exact doubles; rounding moves a 64-bit integer by less
     * than one part in 2^52, which no bound is that close to caring about. */
    v = (double)sqlite3_column_int64(st, col);
  } else {
    v = sqlite3_column_double(st, col);
  }
  if ((ck->flags & GPUPLAN__CK_INTEGRAL) && t == SQLITE_FLOAT && v != floor(v)) {
    snprintf(why, cap, "= %.17g is not a whole number (allowed: an integer from %.17g to %.17g)",
             v, ck->min, ck->max);
    return 1;
  }
  if (!(v >= ck->min && v <= ck->max)) {
    const char *unit = strcmp(f->unit, "count") ? f->unit : "";
    if (t == SQLITE_INTEGER)
      snprintf(why, cap, "= %lld is out of range (allowed: %.17g to %.17g%s%s)",
               (long long)sqlite3_column_int64(st, col), ck->min, ck->max,
               unit[0] ? " " : "", unit);
    else
      snprintf(why, cap, "= %.17g is out of range (allowed: %.17g to %.17g%s%s)", v,
               ck->min, ck->max, unit[0] ? " " : "", unit);
    return 1;
  }
  return 0;
}

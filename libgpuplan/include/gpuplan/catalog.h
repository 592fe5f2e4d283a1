/*
 * gpuplan/catalog.h: the hardware and model catalog.
 *
 * A catalog is a SQLite database of GPU SKUs, fabrics, nodes/VMs and models,
 * each row with its source.  The default catalog is compiled into the
 * library as a prebuilt SQLite image and const records, made from catalog/'s
 * SQL at build time, so it works with no file anywhere and opens in tens of
 * microseconds.  A user file can be opened instead of it, or layered over it
 * (user rows override default rows with the same id, and add new ones).
 *
 * When a catalog is opened its rows are read once into memory; every lookup
 * and record below is served from that snapshot, so lookups do no I/O and
 * records are plain, immutable values.  Writes (gpuplan_catalog_import) go to
 * the file in one transaction and then refresh the snapshot.
 *
 * Units are SI and appear in every field name: _bytes, _bytes_s (bytes per
 * second, decimal), _flops (FLOP/s, dense), _w, _mhz, _s.  An unknown or
 * unpublished real-valued field is NaN (JSON null); an unknown string is
 * NULL.  Nothing unknown is ever filled in by guess.
 */
#ifndef GPUPLAN_CATALOG_H
#define GPUPLAN_CATALOG_H

#include "common.h"
#include "ctx.h"

GPUPLAN_BEGIN_DECLS

/** Opaque catalog handle. */
typedef struct gpuplan_catalog gpuplan_catalog;

/** The kinds of catalog record. */
typedef enum gpuplan_kind {
  GPUPLAN_KIND_GPU = 0,
  GPUPLAN_KIND_FABRIC = 1,
  GPUPLAN_KIND_NODE = 2,
  GPUPLAN_KIND_MODEL = 3
} gpuplan_kind;

/** Number of record kinds. */
#define GPUPLAN_KIND_COUNT 4

/** A GPU SKU.  Borrowed from the catalog; valid while the catalog lives. */
typedef struct gpuplan_gpu {
  const char *id;                 /**< canonical id, e.g. "h100-sxm5-80gb" */
  const char *name;               /**< display name, e.g. "H100 SXM5 80GB" */
  const char *vendor;
  const char *architecture;       /**< "Hopper" */
  const char *chip;               /**< "GH100" */
  const char *compute_capability; /**< "9.0" */
  const char *form_factor;
  double sm_count;
  double cuda_cores;
  double tensor_cores;
  double memory_gb;               /**< the marketed figure (80, 141) */
  uint64_t memory_bytes;          /**< device memory */
  const char *memory_type;
  double mem_bw_bytes_s;          /**< peak DRAM bandwidth */
  double l2_bytes;
  double fp64_flops;
  double fp64_tensor_flops;
  double fp32_flops;
  double tf32_flops;              /**< dense tensor-core rates from here on */
  double bf16_flops;
  double fp16_flops;
  double fp8_flops;
  double int8_ops;
  double fp4_flops;
  double nvlink_gen;              /**< NaN: no NVLink */
  double nvlink_bw_bytes_s;       /**< per GPU, both directions added */
  double pcie_gen;
  double tdp_w;
  double boost_clock_mhz;
  double tensor_clock_mhz;        /**< clock that reproduces the tensor peak */
  double slowdown_temp_c;
  double matmul_bf16_flops;       /**< best measured sustained BF16 GEMM */
  double matmul_fp8_flops;        /**< best measured sustained FP8 GEMM */
  uint64_t context_bytes;         /**< device memory the CUDA context takes */
  const char *source;
  const char *note;               /**< conflicts between sources, caveats */
  const char *unverified;         /**< fields recalled, not re-read at source */
} gpuplan_gpu;

/** An interconnect class.  Borrowed from the catalog. */
typedef struct gpuplan_fabric {
  const char *id;          /**< "nvlink4", "ib-ndr", "pcie5" */
  const char *name;
  const char *kind;        /**< nvlink|nvswitch|nvl72|pcie|infiniband|roce|ethernet */
  const char *scope;       /**< "intra" (inside a node) or "inter" */
  const char *generation;
  double bw_bytes_s;       /**< per GPU (intra) or per port (inter), one direction */
  double latency_s;
  const char *source;
  const char *note;
} gpuplan_fabric;

/** A node or cloud VM size.  Borrowed from the catalog. */
typedef struct gpuplan_node {
  const char *id;             /**< "standard_nd96asr_v4" */
  const char *name;           /**< "Standard_ND96asr_v4" */
  const char *provider;
  const char *gpu_id;         /**< NULL for a CPU-only size */
  int64_t gpu_count;          /**< devices the node sees */
  double gpu_fraction;        /**< share of each physical GPU (1/6 for a vGPU slice) */
  uint64_t gpu_memory_bytes;  /**< per visible device; the SKU's unless partitioned */
  const char *intra_fabric_id;
  const char *inter_fabric_id;
  double nic_count;
  double nic_bw_bytes_s;      /**< per NIC, one direction */
  double rail_optimized;      /**< 1, 0 or NaN (unknown) */
  int64_t vcpus;
  const char *cpu;
  double cpu_fp32_flops;      /**< whole node, vector FP32 peak */
  double ram_bytes;
  double price_per_hour;      /**< NaN when no price was found */
  const char *currency;
  const char *price_region;
  const char *price_date;
  const char *source;
  const char *note;
} gpuplan_node;

/** A transformer model.  Borrowed from the catalog. */
typedef struct gpuplan_model {
  const char *id;           /**< "llama-2-7b" */
  const char *name;
  const char *family;
  const char *arch;         /**< decoder|encoder|encoder-decoder */
  double params;            /**< published parameter count */
  int64_t layers;
  int64_t hidden;
  int64_t heads;
  int64_t kv_heads;         /**< < heads with GQA/MQA */
  int64_t head_dim;
  int64_t ffn_hidden;
  const char *ffn_type;     /**< gelu|swiglu|relu|geglu */
  int64_t vocab;
  int64_t seq_len;          /**< training context length */
  double max_seq_len;       /**< longest supported context; NaN if unstated */
  int tied_embeddings;
  const char *position;     /**< learned|rope|alibi|relative */
  const char *norm;         /**< layernorm|rmsnorm */
  int linear_bias;
  int64_t experts;          /**< 1 for dense models */
  int64_t top_k;
  const char *source;
  const char *note;
} gpuplan_model;

/** Flags for gpuplan_catalog_open(). */
enum gpuplan_catalog_flags {
  /** Open the file read-only; gpuplan_catalog_import() then fails. */
  GPUPLAN_CATALOG_READONLY = 1 << 0,
  /** Create the file (with the current schema, no rows) if it is missing. */
  GPUPLAN_CATALOG_CREATE = 1 << 1,
  /** Layer the file over the embedded default catalog instead of replacing it. */
  GPUPLAN_CATALOG_LAYER = 1 << 2
};

/**
 * Open the embedded default catalog (the prebuilt image, deserialized
 * read-only in place; its records are const data of the library).
 *
 * @param[out] out  the catalog, owned by the caller, freed with
 *                  gpuplan_catalog_free(); NULL on failure.
 * @return GPUPLAN_OK, GPUPLAN_ENOMEM, GPUPLAN_ECATALOG.
 * @errors nomem  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_catalog_open_default(gpuplan_ctx *ctx,
                                             gpuplan_catalog **out);

/**
 * Open a catalog file, alone or layered over the default (flags).
 *
 * A file whose schema is older than this library is migrated forward in one
 * transaction (unless READONLY, which is then an error); a newer schema is
 * refused.  A file that is not a gpuplan catalog (not SQLite, truncated,
 * corrupt, missing tables) is refused with a message naming the file and
 * the problem.
 *
 * @param path   file name (UTF-8).
 * @param flags  a combination of gpuplan_catalog_flags.
 * @param[out] out  the catalog, owned by the caller; NULL on failure.
 * @return GPUPLAN_OK; GPUPLAN_ENOTFOUND (missing file without CREATE);
 *         GPUPLAN_ECATALOG (not a catalog, corrupt, newer schema; the SQLite
 *         code is in gpuplan_errdetail); GPUPLAN_EIO (cannot read/create);
 *         GPUPLAN_EINVAL (bad flags); GPUPLAN_ENOMEM.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_catalog_open(gpuplan_ctx *ctx, const char *path,
                                     unsigned flags, gpuplan_catalog **out);

/**
 * Close a catalog.  Accepts NULL.  Records borrowed from it become invalid.
 * Error-preserving.
 * @errors none  @threads ctx  @since 0.1.0
 */
GPUPLAN_API void gpuplan_catalog_free(gpuplan_catalog *cat);

/**
 * Schema version of the catalog's database (PRAGMA user_version).
 * @errors none  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_catalog_schema_version(const gpuplan_catalog *cat);

/** The schema version this library writes and reads. @errors none @threads any @since 0.1.0 */
GPUPLAN_API int gpuplan_catalog_schema_latest(void);

/**
 * Run SQL statements (INSERT/UPDATE/DELETE on the catalog tables only) in one
 * transaction against the writable file, then refresh the snapshot.  On any
 * failure the transaction is rolled back and the snapshot is unchanged.
 * Statements that touch anything but gpu, fabric, node, model, alias and
 * catalog_info (ATTACH, PRAGMA, CREATE, ...) are refused.
 *
 * Records borrowed before the call are invalid after a successful import.
 *
 * @return GPUPLAN_OK; GPUPLAN_EUNSUPPORTED (default catalog or READONLY file);
 *         GPUPLAN_ECATALOG (SQL error, constraint violation: the message
 *         quotes SQLite's); GPUPLAN_ENOMEM.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_catalog_import(gpuplan_catalog *cat, const char *sql);

/**
 * Number of records of a kind in the snapshot.
 * @errors none  @threads ctx  @since 0.1.0
 */
GPUPLAN_API size_t gpuplan_catalog_count(const gpuplan_catalog *cat,
                                         gpuplan_kind kind);

/**
 * Record i (0-based, in id order) of a kind, as a pointer to the matching
 * struct (gpuplan_gpu, gpuplan_fabric, gpuplan_node or gpuplan_model).
 * Borrowed; valid while the catalog lives and until the next import.
 * @return NULL when i is out of range or kind is unknown.
 * @errors none  @threads ctx  @since 0.1.0
 */
GPUPLAN_API const void *gpuplan_catalog_at(const gpuplan_catalog *cat,
                                           gpuplan_kind kind, size_t i);

/**
 * Find a record by id, display name or alias.  Matching ignores case and the
 * separators ' ', '-', '_', '.', and "/".  If no key matches exactly, every
 * word of the query must begin a word of a key ("H100 SXM" finds
 * "H100 SXM5 80GB"); exactly one such record is a hit.
 *
 * @param name  what the user typed.
 * @param[out] out  the record (borrowed, as gpuplan_catalog_at()).
 * @return GPUPLAN_OK; GPUPLAN_EAMBIGUOUS (several records match: the message
 *         lists them); GPUPLAN_ENOTFOUND (the message suggests the nearest
 *         names); GPUPLAN_EINVAL (NULL or empty name, unknown kind).
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_catalog_find(gpuplan_catalog *cat, gpuplan_kind kind,
                                     const char *name, const void **out);

/** Typed gpuplan_catalog_find() for GPUs.  @errors any  @threads ctx  @since 0.1.0 */
GPUPLAN_API int gpuplan_catalog_gpu(gpuplan_catalog *cat, const char *name,
                                    const gpuplan_gpu **out);
/** Typed gpuplan_catalog_find() for fabrics.  @errors any  @threads ctx  @since 0.1.0 */
GPUPLAN_API int gpuplan_catalog_fabric(gpuplan_catalog *cat, const char *name,
                                       const gpuplan_fabric **out);
/** Typed gpuplan_catalog_find() for nodes.  @errors any  @threads ctx  @since 0.1.0 */
GPUPLAN_API int gpuplan_catalog_node(gpuplan_catalog *cat, const char *name,
                                     const gpuplan_node **out);
/** Typed gpuplan_catalog_find() for models.  @errors any  @threads ctx  @since 0.1.0 */
GPUPLAN_API int gpuplan_catalog_model(gpuplan_catalog *cat, const char *name,
                                      const gpuplan_model **out);

/**
 * Name of a kind: "gpu", "fabric", "node", "model"; NULL if unknown.
 * @errors none  @threads any  @since 0.1.0
 */
GPUPLAN_API const char *gpuplan_kind_name(gpuplan_kind kind);

/** Type of a record field, for generic rendering. */
typedef enum gpuplan_field_type {
  GPUPLAN_FIELD_STRING = 0, /**< const char *, NULL = unknown */
  GPUPLAN_FIELD_INT = 1,    /**< int64_t */
  GPUPLAN_FIELD_UINT = 2,   /**< uint64_t, 0 = unknown where stated */
  GPUPLAN_FIELD_REAL = 3,   /**< double, NaN = unknown */
  GPUPLAN_FIELD_BOOL = 4    /**< int, 0 or 1 */
} gpuplan_field_type;

/** One field of a record struct: lets CLIs and bindings render any record. */
typedef struct gpuplan_field {
  const char *name;        /**< as in the struct and the JSON output */
  gpuplan_field_type type;
  size_t offset;           /**< offsetof() in the record struct */
  const char *unit;        /**< "bytes", "bytes/s", "FLOP/s", ... or "" */
} gpuplan_field;

/**
 * The fields of a kind's record struct, in declaration order.
 * @param[out] count_out  number of fields.
 * @return a static array, or NULL (count 0) for an unknown kind.
 * @errors none  @threads any  @since 0.1.0
 */
GPUPLAN_API const gpuplan_field *gpuplan_kind_fields(gpuplan_kind kind,
                                                     size_t *count_out);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_CATALOG_H */

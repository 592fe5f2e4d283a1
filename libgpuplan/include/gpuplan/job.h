/*
 * gpuplan/job.h: a job, set by name, run as a command, answered by a document.
 *
 * This is the simple API, and the one every front end uses: the CLI's flags,
 * the Python keyword arguments and the Lua table fields are the names of one
 * option table (gpuplan_job_option()), so a job means the same thing
 * wherever it is written.
 *
 *     gpuplan_job *job;
 *     gpuplan_doc *doc;
 *     gpuplan_job_new(ctx, cat, &job);
 *     gpuplan_job_set(job, "model", "llama-2-13b");
 *     gpuplan_job_set(job, "gpu", "a100-80gb");
 *     gpuplan_job_set(job, "gpus", "8");
 *     gpuplan_job_set(job, "fsdp", "full");
 *     if (gpuplan_job_run(job, "plan", &doc) == GPUPLAN_OK) {
 *       puts(gpuplan_doc_json(doc, GPUPLAN_JSON_PRETTY, NULL));
 *       gpuplan_doc_free(doc);
 *     }
 *     gpuplan_job_free(job);
 *
 * Resolution (model by name, size or shape; GPU or node; GPU count and
 * layout; conventions and defaults) happens in gpuplan_job_run(), in one
 * place, and the document says what was resolved and which defaults applied.
 */
#ifndef GPUPLAN_JOB_H
#define GPUPLAN_JOB_H

#include "common.h"
#include "ctx.h"
#include "catalog.h"
#include "doc.h"

GPUPLAN_BEGIN_DECLS

/** A job (opaque). */
typedef struct gpuplan_job gpuplan_job;

/** Types of job options. */
typedef enum gpuplan_opt_type {
  GPUPLAN_OPT_INT = 0,  /**< an integer in [min, max] */
  GPUPLAN_OPT_REAL,     /**< a finite real in [min, max] */
  GPUPLAN_OPT_BOOL,     /**< true/false, yes/no, 1/0, on/off */
  GPUPLAN_OPT_ENUM,     /**< one of choices ("a|b|c") */
  GPUPLAN_OPT_STRING,   /**< text (a name, a path, a configuration string) */
  GPUPLAN_OPT_BYTES,    /**< a size: a number in the option's unit (MiB) or "2GiB", "512MiB", "100MB", "1024B" */
  GPUPLAN_OPT_LIST      /**< repeatable text: each set appends ("--fault thermal@3 --fault ecc") */
} gpuplan_opt_type;

/** Bits of gpuplan_option_info.flags. */
#define GPUPLAN_OPTF_POSITIONAL 1u   /**< the CLI's first positional argument (MODEL, FILE, MESSAGE) */
#define GPUPLAN_OPTF_VALUE_FLAGS 2u  /**< each choice is also a CLI flag (--train, --infer) */
#define GPUPLAN_OPTF_CLI_ONLY 4u     /**< only meaningful on a terminal (progress bars) */

/** One option of the table (static storage). */
typedef struct gpuplan_option_info {
  const char *name;      /**< Python keyword / Lua field / gpuplan_job_set() name: "micro_batch" */
  const char *flag;      /**< CLI long flag without dashes: "micro-batch" (BOOL: also "no-<flag>") */
  gpuplan_opt_type type;
  const char *unit;      /**< "", "sequences", "tokens", "MiB", "s", "Gb/s", ... */
  double min, max;       /**< allowed range (INT, REAL, BYTES in bytes) */
  const char *choices;   /**< ENUM: "full|grad-op|hybrid"; NULL otherwise */
  const char *default_text; /**< what applies when unset, in words: "1", "the model's", ... */
  const char *help;      /**< one line */
  unsigned commands;     /**< bit i: gpuplan_command_name(i) takes it */
  unsigned flags;        /**< GPUPLAN_OPTF_* */
  const char *group;     /**< heading in help and docs: "hardware", "training", ... */
} gpuplan_option_info;

/**
 * The i-th option of the table, NULL past the last.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API const gpuplan_option_info *gpuplan_job_option(size_t i);

/**
 * The option with this name or CLI flag (without dashes; "no-flash" finds
 * "flash_attention"), or NULL.  *negated (if not NULL) is set for "no-" flags.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API const gpuplan_option_info *gpuplan_job_option_find(const char *name, int *negated);

/**
 * The i-th command ("plan", "perf", "search", "simulate", "replay",
 * "explain-oom", "smi", "topo", "doctor", "validate", "catalog", "version"),
 * NULL past the last; and its one-line description.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API const char *gpuplan_command_name(size_t i);
GPUPLAN_API const char *gpuplan_command_help(size_t i);
/** The index of a command by name, or -1. @errors none @threads any @since 0.2.0 */
GPUPLAN_API int gpuplan_command_find(const char *name);

/**
 * Create a job on a catalog.  The job keeps ctx and cat alive (both must
 * outlive it).
 * @errors GPUPLAN_ENOMEM, GPUPLAN_EMISUSE  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_job_new(gpuplan_ctx *ctx, gpuplan_catalog *cat, gpuplan_job **out);

/** Free a job; NULL is a no-op. @errors none @threads ctx @since 0.2.0 */
GPUPLAN_API void gpuplan_job_free(gpuplan_job *job);

/** Unset every option. @errors none @threads ctx @since 0.2.0 */
GPUPLAN_API void gpuplan_job_reset(gpuplan_job *job);

/**
 * Set an option by name from text, as a CLI flag or a configuration file
 * gives it.  The value is parsed strictly (the whole text; no leading
 * spaces; integers in decimal; finite reals; enum names case-insensitive).
 * @return GPUPLAN_OK; GPUPLAN_ENOTFOUND for an unknown name (the message
 *         suggests the nearest); GPUPLAN_EINVAL for a bad value, with a
 *         message naming the option and its allowed range or choices.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_job_set(gpuplan_job *job, const char *name, const char *value);

/**
 * Typed setters, for bindings: an integer, a real, a boolean.  An integer
 * sets INT, REAL, BOOL (0/1) and BYTES (in the option's unit) options; a
 * real sets REAL options, and INT ones when integral.
 * @return as gpuplan_job_set().
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_job_set_int(gpuplan_job *job, const char *name, int64_t value);
GPUPLAN_API int gpuplan_job_set_real(gpuplan_job *job, const char *name, double value);
GPUPLAN_API int gpuplan_job_set_bool(gpuplan_job *job, const char *name, int value);

/**
 * Set an option from a bytes value (may contain NUL: refused, naming the option).
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_job_set_text(gpuplan_job *job, const char *name, const char *value, size_t len);

/** Unset one option (back to its default). @errors GPUPLAN_ENOTFOUND @threads ctx @since 0.2.0 */
GPUPLAN_API int gpuplan_job_unset(gpuplan_job *job, const char *name);

/**
 * A progress callback for long commands (search): return non-zero to stop
 * (the command then fails with GPUPLAN_EINTERRUPTED).  NULL to remove.
 * The callback runs on the thread that runs the command.
 * @errors none  @threads ctx  @since 0.2.0
 */
typedef int (*gpuplan_job_progress_fn)(void *payload, uint64_t done, uint64_t total);
GPUPLAN_API void gpuplan_job_set_progress(gpuplan_job *job, gpuplan_job_progress_fn fn, void *payload);

/**
 * Run a command on the job's options and build its result document.
 * Options the command does not take are an error naming them (so a typo
 * never passes silently).
 * @param command  a gpuplan_command_name().
 * @param[out] out  the document, owned by the caller (gpuplan_doc_free).
 * @return GPUPLAN_OK; GPUPLAN_EINVAL (a bad or contradictory option, named),
 *         GPUPLAN_ENOTFOUND (a name not in the catalog, or a file),
 *         GPUPLAN_EAMBIGUOUS, GPUPLAN_EUNSUPPORTED, GPUPLAN_EIO, GPUPLAN_ENOMEM.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_job_run(gpuplan_job *job, const char *command, gpuplan_doc **out);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_JOB_H */

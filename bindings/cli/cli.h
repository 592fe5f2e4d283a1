/* cli.h: shared pieces of the gpuplan command. */
#ifndef GPUPLAN_CLI_H
#define GPUPLAN_CLI_H

#include <stdio.h>

#include "gpuplan.h"
#include "gpuplan/backend.h"
#include "gpuplan/mock.h"

/* Exit codes. */
#define EXIT_OK 0
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

typedef enum { FMT_TABLE, FMT_JSON, FMT_CSV } cli_format;

/* What every command gets: global options, and a lazily opened catalog. */
typedef struct cli {
  const char *prog;
  const char *catalog_path;  /* --catalog FILE: use this file instead */
  const char *layer_path;    /* --layer FILE: layer this file over the default */
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_job *job;          /* the job being parsed/run (cli_run) */
  gpuplan_job_progress_fn progress; /* set by commands that show progress */
  double started;            /* monotonic seconds when the command started */
  int (*status)(const gpuplan_doc *doc); /* the exit code a document gives (plan --check) */
} cli;

/* Print "gpuplan: message" on stderr and return code. */
int cli_fail(cli *c, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Report a library failure (message from the context); returns EXIT_RUNTIME. */
int cli_lib_fail(cli *c, int rc);
/* Open the catalog the global options select; 0 or an exit code. */
int cli_catalog(cli *c);
/* True when arg is -h or --help. */
int cli_is_help(const char *arg);

/* --- output ------------------------------------------------------------- */

/* JSON string literal, escaped. */
void json_str(FILE *f, const char *s);
/* JSON number, or null for NaN/inf. */
void json_num(FILE *f, double v);
/* One catalog record as a JSON object, all fields, raw SI units. */
void json_record(FILE *f, gpuplan_kind kind, const void *rec, int indent);
/* CSV header and rows of a kind, all fields. */
void csv_header(FILE *f, gpuplan_kind kind);
void csv_record(FILE *f, gpuplan_kind kind, const void *rec);

/* An aligned text table: add cells row by row, then print. */
typedef struct table table;
table *table_new(int ncols);
void table_cell(table *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Column alignment: 'l' or 'r'. */
void table_align(table *t, int col, char how);
void table_print(table *t, FILE *f);
void table_free(table *t);

/* --- the job API front end (args.c) -------------------------------------- */

typedef struct cli_out {
  cli_format format;
  int help;
} cli_out;

/* A command's own arguments (nvidia-smi style): return how many argv
 * entries from i it consumed (0: not its own), or -exit_code. */
typedef int (*cli_extra_fn)(cli *c, void *payload, int argc, char **argv, int i);
/* Render a document as text; returns the exit code. */
typedef int (*cli_render_fn)(cli *c, gpuplan_doc *doc);

/* Map a library status to an exit code (EINVAL, ENOTFOUND, EAMBIGUOUS: 2). */
int cli_exit_code(int rc);
/* Report a job failure: "cmd: message", with cli_exit_code's code. */
int cli_job_fail(cli *c, const char *cmd, int rc);

/* Pass this process's PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF to the
 * job (options env_alloc_conf, env_cuda_alloc_conf); the library decides,
 * by the torch release, which one applies.  0, or the exit code. */
int cli_pass_alloc_env(cli *c, const char *cmd);
/* Set the job's options from argv (argv[0] is the command). */
int cli_parse(cli *c, int cmd, int argc, char **argv, gpuplan_job *job, cli_out *out, cli_extra_fn extra,
              void *payload);
/* A command's help, generated from the option table. */
void cli_help(int cmd, const char *usage, const char *about, FILE *f);
/* Write a document as JSON or CSV. */
int cli_emit(cli *c, const char *cmd, gpuplan_doc *doc, cli_format fmt);
/* Parse, run and render one command of the job API. */
int cli_run(cli *c, int cmd, int argc, char **argv, const char *usage, const char *about, cli_render_fn render,
            cli_extra_fn extra, void *payload);

/* Reading documents (render_*.c). */
const gpuplan_value *dv(const gpuplan_value *v, const char *path);
/* The memory_stats object of a replay or simulate document, when present:
 * torch.cuda.memory_stats()'s keys and values, one a line, under title. */
void print_memory_stats(const gpuplan_value *r, const char *title);
double dnum(const gpuplan_value *v, const char *path);   /* NaN when null or absent */
int64_t dint(const gpuplan_value *v, const char *path);
const char *dstr(const gpuplan_value *v, const char *path); /* "" when null */
int dbool(const gpuplan_value *v, const char *path);
int disnull(const gpuplan_value *v, const char *path);
/* Text from a catalog or a file, safe for a terminal: C0/C1 controls and
 * DEL written as \xNN.  Writes into buf (cap bytes) and returns it. */
const char *term_safe(const char *s, char *buf, size_t cap);
/* Monotonic seconds. */
double cli_now(void);

/* Commands. */
int cmd_catalog(cli *c, int argc, char **argv);
int cmd_plan(cli *c, int argc, char **argv);
int cmd_replay(cli *c, int argc, char **argv);
int cmd_simulate(cli *c, int argc, char **argv);
int cmd_explain(cli *c, int argc, char **argv);
int cmd_validate(cli *c, int argc, char **argv);
int cmd_perf(cli *c, int argc, char **argv);
int cmd_search(cli *c, int argc, char **argv);
int cmd_topo(cli *c, int argc, char **argv);
int cmd_smi(cli *c, int argc, char **argv);
int cmd_doctor(cli *c, int argc, char **argv);

#endif

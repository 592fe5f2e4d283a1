/* cli.h: shared pieces of the gpuplan command. */
#ifndef GPUPLAN_CLI_H
#define GPUPLAN_CLI_H

#include <stdio.h>

#include "gpuplan.h"
#include "gpuplan/sim.h"

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

/* cmd_validate.c: gpuplan validate FILE.csv: the library's validate
 * command (predicted vs measured throughput of published training runs),
 * rendered as text from its document.  No rule lives here. */
#include <math.h>
#include <string.h>

#include "cli.h"

static const char validate_about[] =
    "For every training_throughput row of a CSV in the format of\n"
    "data/reference/training_runs_calibration.csv, rebuild the run as it was\n"
    "run (model shape; framework; layout with its sharding, interleaving and\n"
    "recompute; precision; the cluster's GPUs per node, NICs and fabrics from\n"
    "the row), check that it fits in memory, predict tokens/s with gpuplan's\n"
    "performance model and compare with the measured tokens/s (tokens_per_s,\n"
    "step_time_s, or the source's TFLOP/s with its own FLOP formula).  Prints\n"
    "every row, the median, p90 and worst |error|, and the breakdowns by\n"
    "framework, SKU, layout family and data-parallel width.  A row that does\n"
    "not fit as modelled is a model error (reported, not scored); a row is\n"
    "skipped only when the source lacks data the model needs, with the reason.\n";

static const char *pct(double v, char *buf, size_t cap) {
  if (!isfinite(v)) snprintf(buf, cap, "-");
  else snprintf(buf, cap, "%+.1f%%", 100 * v);
  return buf;
}

static void groups(const gpuplan_value *by, const char *key, const char *title) {
  const gpuplan_value *g = dv(by, key);
  size_t i, n = gpuplan_value_count(g);
  table *t;
  char a[32], b[32], c[32];
  if (!n) return;
  printf("\nby %s:\n", title);
  t = table_new(6);
  table_cell(t, "%s", "GROUP");
  table_cell(t, "%s", "ROWS");
  table_cell(t, "%s", "MEDIAN |ERR|");
  table_cell(t, "%s", "BIAS");
  table_cell(t, "%s", "WORST");
  table_cell(t, "%s", "");
  for (i = 0; i < n; i++) {
    const gpuplan_value *x = gpuplan_value_at(g, i);
    table_cell(t, "%s", dstr(x, "key"));
    table_cell(t, "%lld", (long long)dint(x, "rows"));
    table_cell(t, "%.1f%%", 100 * dnum(x, "median_abs_error"));
    table_cell(t, "%s", pct(dnum(x, "median_error"), a, sizeof a));
    table_cell(t, "%s", pct(dnum(x, "worst_error"), b, sizeof b));
    table_cell(t, "%s", disnull(x, "worst_id") ? "" : dstr(x, "worst_id"));
  }
  (void)c;
  table_align(t, 1, 'r');
  table_align(t, 2, 'r');
  table_align(t, 3, 'r');
  table_align(t, 4, 'r');
  table_print(t, stdout);
  table_free(t);
}

static int render_validate(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc), *rows = dv(r, "rows");
  size_t i, n = gpuplan_value_count(rows);
  char e[32], name[64];
  (void)c;
  printf("%-6s %-26s %-10s %-16s %5s %-14s %-12s %11s %11s %7s  %s\n", "ID", "MODEL", "FRAMEWORK", "GPU", "GPUS",
         "TP.PP.CP.DP", "SHARDING", "MEASURED", "PREDICTED", "ERROR", "MFU (pred)");
  for (i = 0; i < n; i++) {
    const gpuplan_value *x = gpuplan_value_at(rows, i);
    const char *st = dstr(x, "status");
    term_safe(dstr(x, "model"), name, sizeof name);
    if (strcmp(st, "skipped") == 0) {
      printf("%-6s %-26.26s skipped: %s\n", dstr(x, "id"), name, dstr(x, "reason"));
      continue;
    }
    printf("%-6s %-26.26s %-10s %-16s %5lld %-14s %-12s %11.0f %11.0f %7s  %.1f%%", dstr(x, "id"), name,
           dstr(x, "framework"), dstr(x, "gpu"), (long long)dint(x, "gpus"), dstr(x, "layout"), dstr(x, "dp_mode"),
           dnum(x, "measured_tokens_per_s"), dnum(x, "predicted_tokens_per_s"),
           pct(strcmp(st, "scored") == 0 ? dnum(x, "error") : dnum(x, "unscored_error"), e, sizeof e),
           100 * dnum(x, "predicted_mfu"));
    if (strcmp(st, "scored") != 0) printf("  MODEL ERROR, not scored: %s", dstr(x, "reason"));
    printf("\n");
  }
  printf("\n%lld training_throughput rows: %lld scored, %lld skipped (no data; reasons above), %lld model errors "
         "(not scored)\n",
         (long long)dint(r, "rows_total"), (long long)dint(r, "rows_scored"), (long long)dint(r, "rows_skipped"),
         (long long)dint(r, "rows_model_error"));
  if (dint(r, "rows_scored") > 0) {
    char w[32], b[32];
    printf("median |error| %.1f%%, p90 %.1f%%, worst %s (%s), median bias %s\n", 100 * dnum(r, "median_abs_error"),
           100 * dnum(r, "p90_abs_error"), pct(dnum(r, "worst_error"), w, sizeof w), dstr(r, "worst_id"),
           pct(dnum(r, "median_error"), b, sizeof b));
    groups(dv(r, "by"), "framework", "framework");
    groups(dv(r, "by"), "gpu", "GPU");
    groups(dv(r, "by"), "family", "layout family");
    groups(dv(r, "by"), "dp_width", "data-parallel width");
    groups(dv(r, "by"), "framework_gpu", "framework x GPU");
  }
  return EXIT_OK;
}

int cmd_validate(cli *c, int argc, char **argv) {
  return cli_run(c, gpuplan_command_find("validate"), argc, argv,
                 "usage: gpuplan validate FILE.csv [--rows ID,...] [--constants NAME=VALUE,...] [--json|--csv]",
                 validate_about, render_validate, NULL, NULL);
}

/* cmd_catalog.c: gpuplan catalog gpus|nodes|models|fabrics|show|info: the
 * library's catalog command (gpuplan_job_run), rendered from its document;
 * catalog init and import, which write files, call the catalog API here. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char catalog_usage[] =
    "usage: gpuplan catalog gpus|nodes|models|fabrics [--json | --csv]\n"
    "       gpuplan catalog show NAME [--kind gpu|node|model|fabric] [--json]\n"
    "       gpuplan catalog info [--json]\n"
    "       gpuplan catalog init FILE\n"
    "       gpuplan catalog import FILE ROWS.sql";

static const char catalog_about[] =
    "List the catalog's GPU SKUs, nodes/VMs, models and fabrics as aligned\n"
    "tables (human units), or as JSON / CSV with every column in SI units\n"
    "(bytes, bytes/s, FLOP/s; null or empty = not published).\n"
    "\n"
    "  show NAME  one record by id, name or alias, case-insensitive\n"
    "             ('H100 SXM', 'a100-80gb', 'nd96asr_v4'); an ambiguous name\n"
    "             lists the candidates, an unknown one suggests the nearest.\n"
    "  info       schema version, row counts and data provenance.\n"
    "  init FILE  create an empty user catalog to layer over the default.\n"
    "  import FILE ROWS.sql\n"
    "             run INSERT/UPDATE/DELETE statements against FILE (layered\n"
    "             over the default, so rows may reference default SKUs) in\n"
    "             one transaction; nothing is written if any row is bad.\n";

static const char *plural[GPUPLAN_KIND_COUNT] = {"gpus", "fabrics", "nodes", "models"};

/* Human-unit cells for the tables; '-' for unknown (null). */
static void cell_scaled(table *t, const gpuplan_value *r, const char *key, double scale, const char *fmt) {
  double v = dnum(r, key);
  if (isfinite(v)) table_cell(t, fmt, v / scale);
  else table_cell(t, "-");
}

static void cell_str(table *t, const gpuplan_value *r, const char *key) {
  table_cell(t, "%s", disnull(r, key) ? "-" : dstr(r, key));
}

static void cell_int(table *t, const gpuplan_value *r, const char *key) {
  table_cell(t, "%lld", (long long)dint(r, key));
}

static void list_table(cli *c, const char *kind, const gpuplan_value *rows) {
  size_t i, n = gpuplan_value_count(rows);
  table *t = NULL;
  if (strcmp(kind, "gpu") == 0) {
    t = table_new(11);
    table_cell(t, "ID"); table_cell(t, "NAME"); table_cell(t, "ARCH");
    table_cell(t, "CC"); table_cell(t, "MEM GB"); table_cell(t, "HBM TB/s");
    table_cell(t, "BF16 TF"); table_cell(t, "FP16 TF"); table_cell(t, "FP8 TF");
    table_cell(t, "NVLINK GB/s"); table_cell(t, "TDP W");
    for (i = 0; i < n; i++) {
      const gpuplan_value *g = gpuplan_value_at(rows, i);
      cell_str(t, g, "id"); cell_str(t, g, "name"); cell_str(t, g, "architecture");
      cell_str(t, g, "compute_capability");
      table_cell(t, "%g", dnum(g, "memory_gb"));
      cell_scaled(t, g, "mem_bw_bytes_s", 1e12, "%.3g");
      cell_scaled(t, g, "bf16_flops", 1e12, "%.4g");
      cell_scaled(t, g, "fp16_flops", 1e12, "%.4g");
      cell_scaled(t, g, "fp8_flops", 1e12, "%.4g");
      cell_scaled(t, g, "nvlink_bw_bytes_s", 1e9, "%.0f");
      cell_scaled(t, g, "tdp_w", 1, "%.0f");
    }
    for (i = 4; i < 11; i++) table_align(t, (int)i, 'r');
  } else if (strcmp(kind, "node") == 0) {
    t = table_new(9);
    table_cell(t, "ID"); table_cell(t, "PROVIDER"); table_cell(t, "GPUS");
    table_cell(t, "GPU"); table_cell(t, "GPU MEM GB"); table_cell(t, "INTRA");
    table_cell(t, "SCALE-OUT"); table_cell(t, "VCPUS"); table_cell(t, "PRICE/H");
    for (i = 0; i < n; i++) {
      const gpuplan_value *d = gpuplan_value_at(rows, i);
      double frac = dnum(d, "gpu_fraction"), nics = dnum(d, "nic_count"), price = dnum(d, "price_per_hour");
      cell_str(t, d, "name"); cell_str(t, d, "provider");
      if (frac < 1 && frac > 0)
        table_cell(t, "%lld x 1/%.0f", (long long)dint(d, "gpu_count"), 1 / frac);
      else
        cell_int(t, d, "gpu_count");
      cell_str(t, d, "gpu_id");
      if (dint(d, "gpu_memory_bytes")) {
        table_cell(t, "%.0f", dnum(d, "gpu_memory_bytes") / 1073741824.0);
      } else {
        /* 0: the whole GPU's memory, as the GPU's own record gives it */
        const gpuplan_gpu *g = NULL;
        if (!disnull(d, "gpu_id") && gpuplan_catalog_gpu(c->cat, dstr(d, "gpu_id"), &g) == GPUPLAN_OK)
          table_cell(t, "%g", g->memory_gb);
        else
          table_cell(t, "-");
      }
      cell_str(t, d, "intra_fabric_id");
      if (!disnull(d, "inter_fabric_id") && isfinite(nics))
        table_cell(t, "%.0f x %s", nics, dstr(d, "inter_fabric_id"));
      else
        cell_str(t, d, "inter_fabric_id");
      cell_int(t, d, "vcpus");
      if (isfinite(price)) table_cell(t, "%.3f %s", price, dstr(d, "currency"));
      else table_cell(t, "-");
    }
    table_align(t, 2, 'r'); table_align(t, 4, 'r'); table_align(t, 7, 'r');
    table_align(t, 8, 'r');
  } else if (strcmp(kind, "model") == 0) {
    t = table_new(12);
    table_cell(t, "ID"); table_cell(t, "NAME"); table_cell(t, "PARAMS");
    table_cell(t, "LAYERS"); table_cell(t, "HIDDEN"); table_cell(t, "HEADS");
    table_cell(t, "KV"); table_cell(t, "FFN"); table_cell(t, "MLP");
    table_cell(t, "VOCAB"); table_cell(t, "SEQ"); table_cell(t, "EXPERTS");
    for (i = 0; i < n; i++) {
      const gpuplan_value *m = gpuplan_value_at(rows, i);
      double params = dnum(m, "params");
      cell_str(t, m, "id"); cell_str(t, m, "name");
      if (params >= 1e9) table_cell(t, "%.4gB", params / 1e9);
      else table_cell(t, "%.4gM", params / 1e6);
      cell_int(t, m, "layers"); cell_int(t, m, "hidden"); cell_int(t, m, "heads");
      cell_int(t, m, "kv_heads"); cell_int(t, m, "ffn_hidden"); cell_str(t, m, "ffn_type");
      cell_int(t, m, "vocab"); cell_int(t, m, "seq_len");
      if (dint(m, "experts") > 1)
        table_cell(t, "%lld top-%lld", (long long)dint(m, "experts"), (long long)dint(m, "top_k"));
      else table_cell(t, "-");
    }
    for (i = 2; i < 11; i++) if (i != 8) table_align(t, (int)i, 'r');
  } else {
    t = table_new(6);
    table_cell(t, "ID"); table_cell(t, "NAME"); table_cell(t, "KIND");
    table_cell(t, "SCOPE"); table_cell(t, "GB/s EACH WAY"); table_cell(t, "LATENCY us");
    for (i = 0; i < n; i++) {
      const gpuplan_value *f = gpuplan_value_at(rows, i);
      cell_str(t, f, "id"); cell_str(t, f, "name"); cell_str(t, f, "kind"); cell_str(t, f, "scope");
      cell_scaled(t, f, "bw_bytes_s", 1e9, "%.4g");
      cell_scaled(t, f, "latency_s", 1e-6, "%.3g");
    }
    table_align(t, 4, 'r'); table_align(t, 5, 'r');
  }
  table_print(t, stdout);
  table_free(t);
}

/* One record, field by field in the order and units of the kind's field
 * table. */
static void show_text(const char *kind_name, const gpuplan_value *rec) {
  size_t n, i;
  int k;
  const gpuplan_field *fd = NULL;
  table *t = table_new(2);
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
    if (strcmp(gpuplan_kind_name((gpuplan_kind)k), kind_name) == 0) fd = gpuplan_kind_fields((gpuplan_kind)k, &n);
  for (i = 0; fd && i < n; i++) {
    const char *u = fd[i].unit[0] && strcmp(fd[i].unit, "count") ? fd[i].unit : "";
    table_cell(t, "%s", fd[i].name);
    if (disnull(rec, fd[i].name)) {
      table_cell(t, "-");
      continue;
    }
    switch (fd[i].type) {
    case GPUPLAN_FIELD_STRING: table_cell(t, "%s", dstr(rec, fd[i].name)); break;
    case GPUPLAN_FIELD_INT:
    case GPUPLAN_FIELD_UINT:
      table_cell(t, "%lld%s%s", (long long)dint(rec, fd[i].name), *u ? " " : "", u);
      break;
    case GPUPLAN_FIELD_REAL: table_cell(t, "%.15g%s%s", dnum(rec, fd[i].name), *u ? " " : "", u); break;
    case GPUPLAN_FIELD_BOOL: table_cell(t, "%s", dbool(rec, fd[i].name) ? "yes" : "no"); break;
    }
  }
  table_print(t, stdout);
  table_free(t);
}

static int render_catalog(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc);
  const char *sub = dstr(r, "subcommand");
  if (strcmp(sub, "show") == 0) {
    char name[512];
    printf("%s %s\n\n", dstr(r, "kind"), term_safe(dstr(r, "record.id"), name, sizeof name));
    show_text(dstr(r, "kind"), dv(r, "record"));
  } else if (strcmp(sub, "info") == 0) {
    const gpuplan_value *i = dv(r, "info");
    char path[1024];
    int k;
    printf("catalog         %s%s\n", disnull(i, "path") ? "(built in)" : term_safe(dstr(i, "path"), path, sizeof path),
           dbool(i, "layered") ? " (layered over the built-in catalog)" : "");
    printf("schema version  %lld (this gpuplan: %lld)\n", (long long)dint(i, "schema_version"),
           (long long)dint(i, "schema_latest"));
    for (k = 0; k < GPUPLAN_KIND_COUNT; k++) {
      char key[32];
      snprintf(key, sizeof key, "counts.%s", plural[k]);
      printf("%-15s %lld\n", plural[k], (long long)dint(i, key));
    }
  } else {
    list_table(c, dstr(r, "kind"), dv(r, "rows"));
  }
  return EXIT_OK;
}

/* The CLI's subcommands besides the library's (init, import write files),
 * and the second bare argument: show's NAME. */
typedef struct catalog_args {
  int npos;
} catalog_args;

static int catalog_extra(cli *c, void *payload, int argc, char **argv, int i) {
  static const char *const subs[] = {"gpus", "nodes", "models", "fabrics", "show", "info"};
  catalog_args *ca = payload;
  const char *a = argv[i];
  int rc;
  size_t k;
  (void)argc;
  if (a[0] == '-' && a[1]) return 0;
  if (ca->npos++ == 0) {
    for (k = 0; k < sizeof subs / sizeof subs[0]; k++)
      if (strcmp(a, subs[k]) == 0) return 0; /* the positional option */
    return -cli_fail(c, EXIT_USAGE,
                     "catalog: unknown subcommand '%s' (gpus, nodes, models, fabrics, show, info, init, import)", a);
  }
  if (ca->npos > 2) return -cli_fail(c, EXIT_USAGE, "catalog: unexpected argument '%s'", a);
  if ((rc = gpuplan_job_set(c->job, "name", a))) return -cli_job_fail(c, "catalog", rc);
  return 1;
}

/*
 * The whole of an SQL file, NUL-terminated, or NULL.  Everything short of
 * the whole file is an error, said on stderr here (review M4): a failed
 * allocation used to return the part read so far, and a NUL byte ended the
 * SQL text there, both imported as if they were the file.  The caller adds
 * "cannot read the file" (the same "gpuplan: " prefix as cli_fail).
 */
static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t cap = 0, n = 0;
  if (!f) return NULL;
  for (;;) {
    size_t got;
    char *nul;
    if (cap - n < 4096) {
      size_t ncap = cap ? cap * 2 : 8192;
      char *nb = ncap > cap ? realloc(buf, ncap) : NULL;
      if (!nb) {
        fprintf(stderr, "gpuplan: %s: out of memory after %zu bytes; nothing "
                "imported\n", path, n);
        fclose(f);
        free(buf);
        return NULL;
      }
      buf = nb;
      cap = ncap;
    }
    got = fread(buf + n, 1, cap - n - 1, f);
    /* Stop at the first NUL rather than read the rest of, say, /dev/zero. */
    nul = got ? memchr(buf + n, '\0', got) : NULL;
    if (nul) {
      fprintf(stderr, "gpuplan: %s: byte %zu is NUL; SQL text cannot hold "
              "one, nothing imported\n", path, (size_t)(nul - buf));
      fclose(f);
      free(buf);
      return NULL;
    }
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    fclose(f);
    free(buf);
    return NULL;
  }
  fclose(f);
  buf[n] = '\0';
  *len = n;
  return buf;
}

static int cmd_init(cli *c, const char *path) {
  gpuplan_catalog *cat = NULL;
  FILE *f = fopen(path, "rb");
  int rc;
  if (f) {
    fclose(f);
    return cli_fail(c, EXIT_RUNTIME, "catalog %s: already exists", path);
  }
  rc = gpuplan_catalog_open(c->ctx, path, GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER, &cat);
  if (rc) return cli_lib_fail(c, rc);
  printf("created %s (schema %d, empty; layer it with --layer %s)\n", path,
         gpuplan_catalog_schema_version(cat), path);
  gpuplan_catalog_free(cat);
  return EXIT_OK;
}

static int cmd_import(cli *c, const char *path, const char *sqlfile) {
  gpuplan_catalog *cat = NULL;
  size_t len = 0;
  char *sql = read_file(sqlfile, &len);
  int rc, k;
  if (!sql) return cli_fail(c, EXIT_RUNTIME, "%s: cannot read the file", sqlfile);
  rc = gpuplan_catalog_open(c->ctx, path, GPUPLAN_CATALOG_LAYER, &cat);
  if (rc == GPUPLAN_OK) rc = gpuplan_catalog_import(cat, sql);
  free(sql);
  if (rc) {
    gpuplan_catalog_free(cat);
    return cli_lib_fail(c, rc);
  }
  printf("imported %s into %s; the layered catalog now has", sqlfile, path);
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
    printf("%s %zu %s", k ? "," : "", gpuplan_catalog_count(cat, (gpuplan_kind)k), plural[k]);
  printf("\n");
  gpuplan_catalog_free(cat);
  return EXIT_OK;
}

int cmd_catalog(cli *c, int argc, char **argv) {
  catalog_args ca = {0};
  if (argc < 2) {
    fprintf(stderr, "%s\n", catalog_usage);
    return EXIT_USAGE;
  }
  if (strcmp(argv[1], "init") == 0) {
    if (argc != 3) return cli_fail(c, EXIT_USAGE, "catalog init: needs one FILE");
    return cmd_init(c, argv[2]);
  }
  if (strcmp(argv[1], "import") == 0) {
    if (argc != 4) return cli_fail(c, EXIT_USAGE, "catalog import: needs FILE and ROWS.sql");
    return cmd_import(c, argv[2], argv[3]);
  }
  return cli_run(c, gpuplan_command_find("catalog"), argc, argv, catalog_usage, catalog_about, render_catalog,
                 catalog_extra, &ca);
}

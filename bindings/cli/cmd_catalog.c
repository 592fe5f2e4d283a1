/* cmd_catalog.c: gpuplan catalog gpus|nodes|models|fabrics|show|info|init|import */
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
    "       gpuplan catalog import FILE ROWS.sql\n"
    "\n"
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
    "             one transaction; nothing is written if any row is bad.\n"
    "\n"
    "options:\n"
    "  --json     one JSON document on stdout\n"
    "  --csv      CSV with a header row (lists only)\n"
    "  --kind K   restrict show to one kind\n";

static const char *plural[GPUPLAN_KIND_COUNT] = {"gpus", "fabrics", "nodes", "models"};

static int kind_of(const char *s, gpuplan_kind *out) {
  int k;
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++) {
    if (strcmp(s, plural[k]) == 0 || strcmp(s, gpuplan_kind_name((gpuplan_kind)k)) == 0) {
      *out = (gpuplan_kind)k;
      return 1;
    }
  }
  return 0;
}

/* Human-unit helpers for the tables; '-' for unknown. */
static void cell_scaled(table *t, double v, double scale, const char *fmt) {
  if (isfinite(v)) table_cell(t, fmt, v / scale);
  else table_cell(t, "-");
}

static void cell_str(table *t, const char *s) { table_cell(t, "%s", s ? s : "-"); }

static void list_table(cli *c, gpuplan_kind kind) {
  size_t i, n = gpuplan_catalog_count(c->cat, kind);
  table *t = NULL;
  switch (kind) {
  case GPUPLAN_KIND_GPU:
    t = table_new(11);
    table_cell(t, "ID"); table_cell(t, "NAME"); table_cell(t, "ARCH");
    table_cell(t, "CC"); table_cell(t, "MEM GB"); table_cell(t, "HBM TB/s");
    table_cell(t, "BF16 TF"); table_cell(t, "FP16 TF"); table_cell(t, "FP8 TF");
    table_cell(t, "NVLINK GB/s"); table_cell(t, "TDP W");
    for (i = 0; i < n; i++) {
      const gpuplan_gpu *g = gpuplan_catalog_at(c->cat, kind, i);
      cell_str(t, g->id); cell_str(t, g->name); cell_str(t, g->architecture);
      cell_str(t, g->compute_capability);
      table_cell(t, "%g", g->memory_gb);
      cell_scaled(t, g->mem_bw_bytes_s, 1e12, "%.3g");
      cell_scaled(t, g->bf16_flops, 1e12, "%.4g");
      cell_scaled(t, g->fp16_flops, 1e12, "%.4g");
      cell_scaled(t, g->fp8_flops, 1e12, "%.4g");
      cell_scaled(t, g->nvlink_bw_bytes_s, 1e9, "%.0f");
      cell_scaled(t, g->tdp_w, 1, "%.0f");
    }
    for (i = 4; i < 11; i++) table_align(t, (int)i, 'r');
    break;
  case GPUPLAN_KIND_NODE:
    t = table_new(9);
    table_cell(t, "ID"); table_cell(t, "PROVIDER"); table_cell(t, "GPUS");
    table_cell(t, "GPU"); table_cell(t, "GPU MEM GB"); table_cell(t, "INTRA");
    table_cell(t, "SCALE-OUT"); table_cell(t, "VCPUS"); table_cell(t, "PRICE/H");
    for (i = 0; i < n; i++) {
      const gpuplan_node *d = gpuplan_catalog_at(c->cat, kind, i);
      cell_str(t, d->name); cell_str(t, d->provider);
      if (d->gpu_fraction < 1 && d->gpu_fraction > 0)
        table_cell(t, "%lld x 1/%.0f", (long long)d->gpu_count, 1 / d->gpu_fraction);
      else
        table_cell(t, "%lld", (long long)d->gpu_count);
      cell_str(t, d->gpu_id);
      if (d->gpu_memory_bytes) {
        table_cell(t, "%.0f", (double)d->gpu_memory_bytes / 1073741824.0);
      } else {
        const gpuplan_gpu *g = NULL;
        if (d->gpu_id && gpuplan_catalog_gpu(c->cat, d->gpu_id, &g) == GPUPLAN_OK)
          table_cell(t, "%g", g->memory_gb);
        else
          table_cell(t, "-");
      }
      cell_str(t, d->intra_fabric_id);
      if (d->inter_fabric_id && isfinite(d->nic_count))
        table_cell(t, "%.0f x %s", d->nic_count, d->inter_fabric_id);
      else cell_str(t, d->inter_fabric_id);
      table_cell(t, "%lld", (long long)d->vcpus);
      if (isfinite(d->price_per_hour))
        table_cell(t, "%.3f %s", d->price_per_hour, d->currency ? d->currency : "");
      else table_cell(t, "-");
    }
    table_align(t, 2, 'r'); table_align(t, 4, 'r'); table_align(t, 7, 'r');
    table_align(t, 8, 'r');
    break;
  case GPUPLAN_KIND_MODEL:
    t = table_new(12);
    table_cell(t, "ID"); table_cell(t, "NAME"); table_cell(t, "PARAMS");
    table_cell(t, "LAYERS"); table_cell(t, "HIDDEN"); table_cell(t, "HEADS");
    table_cell(t, "KV"); table_cell(t, "FFN"); table_cell(t, "MLP");
    table_cell(t, "VOCAB"); table_cell(t, "SEQ"); table_cell(t, "EXPERTS");
    for (i = 0; i < n; i++) {
      const gpuplan_model *m = gpuplan_catalog_at(c->cat, kind, i);
      cell_str(t, m->id); cell_str(t, m->name);
      if (m->params >= 1e9) table_cell(t, "%.4gB", m->params / 1e9);
      else table_cell(t, "%.4gM", m->params / 1e6);
      table_cell(t, "%lld", (long long)m->layers);
      table_cell(t, "%lld", (long long)m->hidden);
      table_cell(t, "%lld", (long long)m->heads);
      table_cell(t, "%lld", (long long)m->kv_heads);
      table_cell(t, "%lld", (long long)m->ffn_hidden);
      cell_str(t, m->ffn_type);
      table_cell(t, "%lld", (long long)m->vocab);
      table_cell(t, "%lld", (long long)m->seq_len);
      if (m->experts > 1) table_cell(t, "%lld top-%lld", (long long)m->experts, (long long)m->top_k);
      else table_cell(t, "-");
    }
    for (i = 2; i < 11; i++) if (i != 8) table_align(t, (int)i, 'r');
    break;
  case GPUPLAN_KIND_FABRIC:
    t = table_new(6);
    table_cell(t, "ID"); table_cell(t, "NAME"); table_cell(t, "KIND");
    table_cell(t, "SCOPE"); table_cell(t, "GB/s EACH WAY"); table_cell(t, "LATENCY us");
    for (i = 0; i < n; i++) {
      const gpuplan_fabric *f = gpuplan_catalog_at(c->cat, kind, i);
      cell_str(t, f->id); cell_str(t, f->name); cell_str(t, f->kind); cell_str(t, f->scope);
      cell_scaled(t, f->bw_bytes_s, 1e9, "%.4g");
      cell_scaled(t, f->latency_s, 1e-6, "%.3g");
    }
    table_align(t, 4, 'r'); table_align(t, 5, 'r');
    break;
  }
  table_print(t, stdout);
  table_free(t);
}

static int cmd_list(cli *c, gpuplan_kind kind, cli_format fmt) {
  size_t i, n;
  int rc = cli_catalog(c);
  if (rc) return rc;
  n = gpuplan_catalog_count(c->cat, kind);
  if (fmt == FMT_JSON) {
    printf("[");
    for (i = 0; i < n; i++) {
      printf("%s\n  ", i ? "," : "");
      json_record(stdout, kind, gpuplan_catalog_at(c->cat, kind, i), 2);
    }
    printf("\n]\n");
  } else if (fmt == FMT_CSV) {
    csv_header(stdout, kind);
    for (i = 0; i < n; i++) csv_record(stdout, kind, gpuplan_catalog_at(c->cat, kind, i));
  } else {
    list_table(c, kind);
  }
  return EXIT_OK;
}

static void show_text(gpuplan_kind kind, const void *rec) {
  size_t n, i;
  const gpuplan_field *fd = gpuplan_kind_fields(kind, &n);
  table *t = table_new(2);
  for (i = 0; i < n; i++) {
    const char *p = (const char *)rec + fd[i].offset;
    const char *u = fd[i].unit[0] && strcmp(fd[i].unit, "count") ? fd[i].unit : "";
    table_cell(t, "%s", fd[i].name);
    switch (fd[i].type) {
    case GPUPLAN_FIELD_STRING:
      table_cell(t, "%s", *(const char *const *)p ? *(const char *const *)p : "-");
      break;
    case GPUPLAN_FIELD_INT:
      table_cell(t, "%lld%s%s", (long long)*(const int64_t *)p, *u ? " " : "", u);
      break;
    case GPUPLAN_FIELD_UINT:
      table_cell(t, "%llu%s%s", (unsigned long long)*(const uint64_t *)p, *u ? " " : "", u);
      break;
    case GPUPLAN_FIELD_REAL:
      if (isfinite(*(const double *)p))
        table_cell(t, "%.15g%s%s", *(const double *)p, *u ? " " : "", u);
      else
        table_cell(t, "-");
      break;
    case GPUPLAN_FIELD_BOOL: table_cell(t, "%s", *(const int *)p ? "yes" : "no"); break;
    }
  }
  table_print(t, stdout);
  table_free(t);
}

static int cmd_show(cli *c, const char *name, int kind_given, gpuplan_kind kind,
                    cli_format fmt) {
  const void *rec = NULL, *found = NULL;
  gpuplan_kind found_kind = GPUPLAN_KIND_GPU;
  char msgs[GPUPLAN_KIND_COUNT][1024];
  int codes[GPUPLAN_KIND_COUNT], k, nfound = 0, rc = cli_catalog(c);
  if (rc) return rc;

  for (k = 0; k < GPUPLAN_KIND_COUNT; k++) {
    codes[k] = GPUPLAN_ENOTFOUND;
    msgs[k][0] = '\0';
    if (kind_given && (gpuplan_kind)k != kind) continue;
    codes[k] = gpuplan_catalog_find(c->cat, (gpuplan_kind)k, name, &rec);
    if (codes[k] == GPUPLAN_OK) {
      found = rec;
      found_kind = (gpuplan_kind)k;
      nfound++;
    } else {
      snprintf(msgs[k], sizeof msgs[k], "%s", gpuplan_errmsg(c->ctx));
    }
  }
  /* A hit in one kind does not hide an ambiguity in another: "h100" is
   * ambiguous among GPUs even though one node name contains it. */
  for (k = 0; k < GPUPLAN_KIND_COUNT && nfound > 0; k++)
    if (codes[k] == GPUPLAN_EAMBIGUOUS)
      return cli_fail(c, EXIT_RUNTIME, "%s; also a %s: %s (use --kind)", msgs[k],
                      gpuplan_kind_name(found_kind), *(const char *const *)found);
  if (nfound > 1)
    return cli_fail(c, EXIT_RUNTIME,
                    "name '%s' matches records of several kinds; add --kind gpu|node|model|fabric",
                    name);
  if (nfound == 0) {
    /* Prefer an ambiguity, then a suggestion, then a plain miss. */
    for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
      if (codes[k] == GPUPLAN_EAMBIGUOUS) return cli_fail(c, EXIT_RUNTIME, "%s", msgs[k]);
    for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
      if (codes[k] == GPUPLAN_ENOTFOUND && strstr(msgs[k], "did you mean"))
        return cli_fail(c, EXIT_RUNTIME, "%s", msgs[k]);
    for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
      if (codes[k] != GPUPLAN_ENOTFOUND && msgs[k][0])
        return cli_fail(c, EXIT_RUNTIME, "%s", msgs[k]);
    if (kind_given) return cli_fail(c, EXIT_RUNTIME, "%s", msgs[kind]);
    return cli_fail(c, EXIT_RUNTIME,
                    "unknown name '%s': no GPU, node, model or fabric matches "
                    "(see gpuplan catalog gpus|nodes|models|fabrics)", name);
  }
  if (fmt == FMT_JSON) {
    printf("{\n  \"kind\": \"%s\",\n  \"record\": ", gpuplan_kind_name(found_kind));
    json_record(stdout, found_kind, found, 2);
    printf("\n}\n");
  } else {
    printf("%s %s\n\n", gpuplan_kind_name(found_kind), *(const char *const *)found);
    show_text(found_kind, found);
  }
  return EXIT_OK;
}

static int cmd_info(cli *c, cli_format fmt) {
  int k, rc = cli_catalog(c);
  const char *src = c->catalog_path ? c->catalog_path
                    : c->layer_path ? c->layer_path : "(built in)";
  if (rc) return rc;
  if (fmt == FMT_JSON) {
    printf("{\n  \"catalog\": ");
    json_str(stdout, src);
    printf(",\n  \"layered\": %s,\n  \"schema_version\": %d,\n  \"counts\": {",
           c->layer_path ? "true" : "false", gpuplan_catalog_schema_version(c->cat));
    for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
      printf("%s\"%s\": %zu", k ? ", " : "", plural[k],
             gpuplan_catalog_count(c->cat, (gpuplan_kind)k));
    printf("}\n}\n");
    return EXIT_OK;
  }
  printf("catalog         %s%s\n", src, c->layer_path ? " (layered over the built-in catalog)" : "");
  printf("schema version  %d (this gpuplan: %d)\n", gpuplan_catalog_schema_version(c->cat),
         gpuplan_catalog_schema_latest());
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
    printf("%-15s %zu\n", plural[k], gpuplan_catalog_count(c->cat, (gpuplan_kind)k));
  return EXIT_OK;
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
  cli_format fmt = FMT_TABLE;
  const char *pos[3] = {NULL, NULL, NULL};
  int npos = 0, i, kind_given = 0;
  gpuplan_kind kind = GPUPLAN_KIND_GPU;

  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      fputs(catalog_usage, stdout);
      return EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      fmt = FMT_JSON;
    } else if (strcmp(a, "--csv") == 0) {
      fmt = FMT_CSV;
    } else if (strcmp(a, "--kind") == 0) {
      if (i + 1 >= argc) return cli_fail(c, EXIT_USAGE, "catalog: --kind needs a value");
      if (!kind_of(argv[++i], &kind))
        return cli_fail(c, EXIT_USAGE,
                        "catalog: --kind '%s' is not one of gpu, node, model, fabric", argv[i]);
      kind_given = 1;
    } else if (a[0] == '-' && a[1]) {
      return cli_fail(c, EXIT_USAGE, "catalog: unknown option '%s'", a);
    } else if (npos < 3) {
      pos[npos++] = a;
    } else {
      return cli_fail(c, EXIT_USAGE, "catalog: unexpected argument '%s'", a);
    }
  }
  if (npos == 0) {
    fputs(catalog_usage, stderr);
    return EXIT_USAGE;
  }
  if (strcmp(pos[0], "show") == 0) {
    if (npos != 2)
      return cli_fail(c, EXIT_USAGE, "catalog show: needs exactly one NAME");
    if (fmt == FMT_CSV) return cli_fail(c, EXIT_USAGE, "catalog show: --csv applies to lists");
    return cmd_show(c, pos[1], kind_given, kind, fmt);
  }
  if (strcmp(pos[0], "info") == 0) {
    if (npos != 1) return cli_fail(c, EXIT_USAGE, "catalog info: takes no arguments");
    return cmd_info(c, fmt);
  }
  if (strcmp(pos[0], "init") == 0) {
    if (npos != 2) return cli_fail(c, EXIT_USAGE, "catalog init: needs one FILE");
    return cmd_init(c, pos[1]);
  }
  if (strcmp(pos[0], "import") == 0) {
    if (npos != 3) return cli_fail(c, EXIT_USAGE, "catalog import: needs FILE and ROWS.sql");
    return cmd_import(c, pos[1], pos[2]);
  }
  if (kind_of(pos[0], &kind)) {
    if (npos != 1)
      return cli_fail(c, EXIT_USAGE, "catalog %s: unexpected argument '%s'", pos[0], pos[1]);
    if (kind_given) return cli_fail(c, EXIT_USAGE, "catalog: --kind applies to show");
    return cmd_list(c, kind, fmt);
  }
  return cli_fail(c, EXIT_USAGE,
                  "catalog: unknown subcommand '%s' (gpus, nodes, models, fabrics, "
                  "show, info, init, import)", pos[0]);
}

/*
 * cmd_tools.c: the version and catalog commands (replay: cmd_replay.c,
 * explain-oom: cmd_explain.c).
 *
 * A catalog record is written from its kind's field table (catalog/fields.c,
 * gpuplan_kind_fields()), the one description of a record: every field, in
 * SI units, null where the catalog has no figure.  Lists are the document's
 * table ("rows", CSV), one record is "record", info is "info".
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "catalog/catalog_int.h"
#include "job/tools_int.h"

int gpuplan__cmd_version(gpuplan_job *job, gpuplan_doc **out) {
  gpuplan__docb *b = gpuplan__doc_begin(job->ctx, "version");
  if (!b) return gpuplan_errcode(job->ctx);
  gpuplan__doc_str(b, "version", gpuplan_version_string());
  gpuplan__doc_int(b, "catalog_schema", gpuplan_catalog_schema_latest());
  return gpuplan__doc_finish(b, out);
}

/* --- catalog ---------------------------------------------------------------- */

static const char *const plural[GPUPLAN_KIND_COUNT] = {"gpus", "fabrics", "nodes", "models"};

/* One record as an object (key) or array element (key NULL). */
static void put_record(gpuplan__docb *b, const char *key, gpuplan_kind kind, const void *rec) {
  size_t n, i;
  const gpuplan_field *fd = gpuplan_kind_fields(kind, &n);
  gpuplan__doc_obj(b, key);
  for (i = 0; i < n; i++) {
    const char *p = (const char *)rec + fd[i].offset;
    switch (fd[i].type) {
    case GPUPLAN_FIELD_STRING: gpuplan__doc_str(b, fd[i].name, *(const char *const *)p); break;
    case GPUPLAN_FIELD_INT: gpuplan__doc_int(b, fd[i].name, *(const int64_t *)p); break;
    case GPUPLAN_FIELD_UINT: gpuplan__doc_uint(b, fd[i].name, *(const uint64_t *)p); break;
    case GPUPLAN_FIELD_REAL: gpuplan__doc_real(b, fd[i].name, *(const double *)p); break; /* NaN: null */
    case GPUPLAN_FIELD_BOOL: gpuplan__doc_bool(b, fd[i].name, *(const int *)p); break;
    }
  }
  gpuplan__doc_end(b);
}

/* The record a name denotes, among every kind or one.  A hit in one kind
 * does not hide an ambiguity in another ("h100" is ambiguous among GPUs
 * even though one node's name contains it). */
static int find_any(gpuplan_job *j, const char *name, int only, gpuplan_kind *kind_out, const void **rec_out) {
  char msgs[GPUPLAN_KIND_COUNT][GPUPLAN_ERRMSG_MAX];
  int codes[GPUPLAN_KIND_COUNT], k, nfound = 0;
  const void *found = NULL, *rec;
  gpuplan_kind found_kind = GPUPLAN_KIND_GPU;
  const gpuplan_option_info *on = TOPT(T_NAME);
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++) {
    codes[k] = GPUPLAN_ENOTFOUND;
    msgs[k][0] = '\0';
    if (only >= 0 && k != only) continue;
    codes[k] = gpuplan_catalog_find(j->cat, (gpuplan_kind)k, name, &rec);
    if (codes[k] == GPUPLAN_OK) {
      found = rec;
      found_kind = (gpuplan_kind)k;
      nfound++;
    } else {
      snprintf(msgs[k], sizeof msgs[k], "%s", gpuplan_errmsg(j->cat->ctx)); /* the catalog's context */
    }
  }
  for (k = 0; k < GPUPLAN_KIND_COUNT && nfound > 0; k++)
    if (codes[k] == GPUPLAN_EAMBIGUOUS)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EAMBIGUOUS, on, "%s; also a %s: %s (set kind to say which)", msgs[k],
                                gpuplan_kind_name(found_kind), *(const char *const *)found);
  if (nfound > 1)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EAMBIGUOUS, on,
                              "'%s' names records of several kinds; set kind to gpu, node, model or fabric", name);
  if (nfound == 1) {
    *kind_out = found_kind;
    *rec_out = found;
    return GPUPLAN_OK;
  }
  /* Prefer an ambiguity, then a suggestion, then any other error, then a plain miss. */
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
    if (codes[k] == GPUPLAN_EAMBIGUOUS) return gpuplan__opt_error(j->ctx, codes[k], on, "%s", msgs[k]);
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
    if (codes[k] == GPUPLAN_ENOTFOUND && strstr(msgs[k], "did you mean"))
      return gpuplan__opt_error(j->ctx, codes[k], on, "%s", msgs[k]);
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
    if (codes[k] != GPUPLAN_ENOTFOUND && msgs[k][0]) return gpuplan__opt_error(j->ctx, codes[k], on, "%s", msgs[k]);
  if (only >= 0) return gpuplan__opt_error(j->ctx, GPUPLAN_ENOTFOUND, on, "%s", msgs[only]);
  return gpuplan__opt_error(j->ctx, GPUPLAN_ENOTFOUND, on,
                            "unknown name '%s': no GPU, node, model or fabric matches "
                            "(see catalog gpus, nodes, models, fabrics)", name);
}

int gpuplan__cmd_catalog(gpuplan_job *j, gpuplan_doc **out) {
  static const char *const subs[] = {"gpus", "nodes", "models", "fabrics", "show", "info"};
  static const gpuplan_kind list_kind[] = {GPUPLAN_KIND_GPU, GPUPLAN_KIND_NODE, GPUPLAN_KIND_MODEL,
                                           GPUPLAN_KIND_FABRIC};
  const char *name = gpuplan__job_str(j, TOPT(T_NAME), NULL);
  int64_t sub = gpuplan__job_int(j, TOPT(T_SUBCOMMAND), -1);
  int only = gpuplan__job_isset(j, TOPT(T_KIND)) ? (int)gpuplan__job_int(j, TOPT(T_KIND), 0) : -1;
  gpuplan__docb *b;
  if (sub < 0)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, TOPT(T_SUBCOMMAND),
                              "catalog needs one of gpus, nodes, models, fabrics, show, info");
  if (sub != GPUPLAN__CAT_SHOW && name)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, TOPT(T_NAME), "catalog %s takes no name (show does)",
                              subs[sub]);
  if (sub != GPUPLAN__CAT_SHOW && only >= 0)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, TOPT(T_KIND), "applies to catalog show, not %s", subs[sub]);
  if (sub == GPUPLAN__CAT_SHOW) {
    gpuplan_kind kind;
    const void *rec;
    if (!name || !*name)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, TOPT(T_NAME), "catalog show needs a NAME (an id, name or alias)");
    GPUPLAN_TRY(find_any(j, name, only, &kind, &rec));
    if (!(b = gpuplan__doc_begin(j->ctx, "catalog"))) return gpuplan_errcode(j->ctx);
    gpuplan__doc_str(b, "subcommand", "show");
    gpuplan__doc_str(b, "kind", gpuplan_kind_name(kind));
    put_record(b, "record", kind, rec);
    return gpuplan__doc_finish(b, out);
  }
  if (!(b = gpuplan__doc_begin(j->ctx, "catalog"))) return gpuplan_errcode(j->ctx);
  gpuplan__doc_str(b, "subcommand", subs[sub]);
  if (sub == GPUPLAN__CAT_INFO) {
    int k;
    gpuplan__doc_obj(b, "info");
    gpuplan__doc_str(b, "path", j->cat->is_default ? NULL : j->cat->path);
    gpuplan__doc_bool(b, "layered", j->cat->layered);
    gpuplan__doc_int(b, "schema_version", gpuplan_catalog_schema_version(j->cat));
    gpuplan__doc_int(b, "schema_latest", gpuplan_catalog_schema_latest());
    gpuplan__doc_obj(b, "counts");
    for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
      gpuplan__doc_uint(b, plural[k], gpuplan_catalog_count(j->cat, (gpuplan_kind)k));
    gpuplan__doc_end(b);
    gpuplan__doc_end(b);
  } else {
    gpuplan_kind kind = list_kind[sub];
    size_t i, n = gpuplan_catalog_count(j->cat, kind);
    gpuplan__doc_str(b, "kind", gpuplan_kind_name(kind));
    gpuplan__doc_arr(b, "rows");
    for (i = 0; i < n; i++) put_record(b, NULL, kind, gpuplan_catalog_at(j->cat, kind, i));
    gpuplan__doc_end(b);
  }
  return gpuplan__doc_finish(b, out);
}

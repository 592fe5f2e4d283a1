#define _POSIX_C_SOURCE 200809L
/*
 * fuzz_job.c: libFuzzer target for the job API's parsers: option names and
 * values (the one option table every front end uses), model names and sizes
 * (name lookup), and Hugging Face config.json files (the model resolver).
 *
 * Input: lines "name=value"; a line "!command" runs the command on the
 * options so far (plan when none is given); an input that starts with '{'
 * is a config.json, written to a temporary file and planned as the model.
 * Every call must return a status code (any), and a document only on
 * success; nothing may leak or crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuplan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct counter {
  long long blocks;
} counter;

static void *counting(void *ud, void *ptr, size_t osize, size_t nsize) {
  counter *c = ud;
  void *p;
  (void)osize;
  if (nsize == 0) {
    if (ptr) c->blocks--;
    free(ptr);
    return NULL;
  }
  p = realloc(ptr, nsize);
  if (p && !ptr) c->blocks++;
  return p;
}

static void run(gpuplan_job *job, const char *cmd) {
  gpuplan_doc *doc = NULL;
  int rc = gpuplan_job_run(job, cmd, &doc);
  if (rc == GPUPLAN_OK) {
    if (!doc || !gpuplan_doc_json(doc, 0, NULL) || !gpuplan_doc_schema(doc)) abort();
  } else if (doc) {
    abort();
  }
  gpuplan_doc_free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gpuplan_ctx_options co = GPUPLAN_CTX_OPTIONS_INIT;
  gpuplan_ctx *ctx = NULL;
  gpuplan_catalog *cat = NULL;
  gpuplan_job *job = NULL;
  counter c = {0};
  char *text, *line, *save = NULL;
  int ran = 0;
  if (size > 65536) return 0;
  co.allocator.fn = counting;
  co.allocator.ud = &c;
  if (gpuplan_ctx_new(&ctx, &co) || gpuplan_catalog_open_default(ctx, &cat) || gpuplan_job_new(ctx, cat, &job))
    abort();
  if (size && data[0] == '{') {
    char path[64];
    FILE *f;
    snprintf(path, sizeof path, "/tmp/fuzz_job_%d.json", (int)getpid());
    if ((f = fopen(path, "wb"))) {
      fwrite(data, 1, size, f);
      fclose(f);
      if (gpuplan_job_set(job, "model", path) == GPUPLAN_OK && gpuplan_job_set(job, "gpu", "a100-80gb") == GPUPLAN_OK)
        run(job, "plan");
      remove(path);
    }
    ran = 1;
  } else {
    text = malloc(size + 1);
    if (!text) abort();
    memcpy(text, data, size);
    text[size] = 0;
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      char *eq = strchr(line, '=');
      if (line[0] == '!') {
        run(job, line + 1);
        ran = 1;
      } else if (eq) {
        *eq = 0;
        (void)gpuplan_job_set(job, line, eq + 1);
      } else {
        (void)gpuplan_job_unset(job, line);
      }
    }
    free(text);
    if (!ran) run(job, "plan");
  }
  gpuplan_job_free(job);
  gpuplan_catalog_free(cat);
  gpuplan_ctx_free(ctx);
  if (c.blocks != 0) abort();
  return 0;
}

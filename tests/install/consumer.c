#include <gpuplan.h>
#include <stdio.h>

int main(void) {
  gpuplan_ctx *ctx = NULL;
  gpuplan_catalog *cat = NULL;
  const gpuplan_gpu *g = NULL;
  int rc;
  if (gpuplan_version_number() != GPUPLAN_VERSION_NUMBER) return 1;
  if (gpuplan_ctx_new(&ctx, NULL) != GPUPLAN_OK) return 1;
  rc = gpuplan_catalog_open_default(ctx, &cat);
  if (rc == GPUPLAN_OK) rc = gpuplan_catalog_gpu(cat, "H100 SXM", &g);
  if (rc == GPUPLAN_OK) printf("%s %.0f\n", g->id, g->bf16_flops / 1e12);
  else fprintf(stderr, "%s\n", gpuplan_errmsg(ctx));
  gpuplan_catalog_free(cat);
  gpuplan_ctx_free(ctx);
  return rc == GPUPLAN_OK ? 0 : 1;
}

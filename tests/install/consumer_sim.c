/* A consumer of the mock GPU, built against an installed or packaged gpuplan
 * through `pkg-config --cflags --libs gpuplan-sim` (tests/install/package.sh)
 * and through find_package(gpuplan COMPONENTS sim) (tests/install/run.sh). */
#include <gpuplan.h>
#include <gpuplan/mock.h>
#include <stdio.h>

int main(void) {
  gpuplan_ctx *ctx = NULL;
  gpuplan_mock *mock = NULL;
  gpuplan_mock_memory m;
  int dev = -1, rc;
  if (gpuplan_ctx_new(&ctx, NULL) != GPUPLAN_OK) return 1;
  rc = gpuplan_mock_new(ctx, &mock);
  if (rc == GPUPLAN_OK)
    rc = gpuplan_mock_add_device(mock, "test card", 8ull << 30, 300ull << 20, &dev);
  if (rc == GPUPLAN_OK) rc = gpuplan_mock_memory_info(mock, dev, &m);
  if (rc == GPUPLAN_OK)
    printf("mock %d device(s), %s, %llu MiB free\n", gpuplan_mock_count(mock), m.name,
           (unsigned long long)(m.free >> 20));
  else
    fprintf(stderr, "%s\n", gpuplan_errmsg(ctx));
  gpuplan_mock_free(mock);
  gpuplan_ctx_free(ctx);
  return rc == GPUPLAN_OK ? 0 : 1;
}

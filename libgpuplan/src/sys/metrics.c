/* metrics.c: placeholder, replaced below. */
#include "common/internal.h"
#include "gpuplan/backend.h"
int gpuplan_devices_metrics(gpuplan_ctx *ctx, const gpuplan_doc *smi, const gpuplan_doc *doctor, char **text_out,
                            size_t *len_out) {
  (void)smi; (void)doctor; (void)text_out; (void)len_out;
  return gpuplan__error(ctx, GPUPLAN_EUNSUPPORTED, "metrics: not yet");
}

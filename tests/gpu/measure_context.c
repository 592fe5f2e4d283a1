/*
 * measure_context.c: measure what the CUDA context itself takes on a real
 * device, with the driver API loaded at run time (no CUDA at build time).
 * Prints one JSON line per device: name, total memory, free memory before
 * and after creating a primary context, and the difference.  Used to put
 * measured context_bytes into the catalog (tests/gpu/README).
 *
 *   cc -std=c11 -O2 measure_context.c -ldl -o measure_context && ./measure_context
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;

int main(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuDriverGetVersion)(int *);
  int n = 0, i, ver = 0;
  if (!h) {
    fprintf(stderr, "no libcuda.so.1: %s\n", dlerror());
    return 1;
  }
#define SYM(name, v) *(void **)(&name) = dlsym(h, v)
  SYM(cuInit, "cuInit");
  SYM(cuDeviceGetCount, "cuDeviceGetCount");
  SYM(cuDeviceGet, "cuDeviceGet");
  SYM(cuDeviceGetName, "cuDeviceGetName");
  SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
  SYM(cuMemGetInfo, "cuMemGetInfo_v2");
  SYM(cuDriverGetVersion, "cuDriverGetVersion");
  if (cuInit(0) != 0 || cuDeviceGetCount(&n) != 0) {
    fprintf(stderr, "cuInit failed\n");
    return 1;
  }
  cuDriverGetVersion(&ver);
  for (i = 0; i < n; i++) {
    CUdevice d;
    CUcontext c;
    char name[256];
    size_t total = 0, freeb = 0, tot2 = 0;
    cuDeviceGet(&d, i);
    cuDeviceGetName(name, sizeof name, d);
    cuDeviceTotalMem(&total, d);
    if (cuDevicePrimaryCtxRetain(&c, d) != 0 || cuCtxSetCurrent(c) != 0) {
      fprintf(stderr, "context on device %d failed\n", i);
      return 1;
    }
    cuMemGetInfo(&freeb, &tot2);
    printf("{\"device\": %d, \"name\": \"%s\", \"driver\": %d, \"total_bytes\": %zu, "
           "\"free_with_context_bytes\": %zu, \"used_with_context_bytes\": %zu, "
           "\"lazy_loading\": \"%s\"}\n",
           i, name, ver, total, freeb, tot2 - freeb,
           getenv("CUDA_MODULE_LOADING") ? getenv("CUDA_MODULE_LOADING") : "(default)");
    cuDevicePrimaryCtxRelease(d);
  }
  return 0;
}

/*
 * measure_context.c: measure, on a real device, what the catalog cannot
 * know from datasheets: the memory the CUDA context itself takes, the
 * driver's allocation granularity, and the total NVML reports, with the
 * driver API and NVML loaded at run time (no CUDA at build time).
 *
 * For each device, NVML's used memory before and after the primary
 * context is created gives the context's size (nothing else of this
 * process is on the device yet; other processes' memory cancels out); a
 * 1-byte cuMemAlloc and the change in cuMemGetInfo's free memory give the
 * granularity cudaMalloc pays (and cuMemGetAllocationGranularity, where the
 * driver has it, the VMM minimum).  Prints one JSON line per device; check.sh
 * turns them into a catalog patch.
 *
 *   cc -std=c11 -O2 measure_context.c -ldl -o measure_context && ./measure_context
 * GPUPLAN_LIBCUDA and GPUPLAN_LIBNVML name other libraries (the fakes).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef struct { unsigned long long total, free, used; } nvml_memory;
/* CUmemAllocationProp: type, requestedHandleTypes, location {type, id}, win32 handle, allocFlags */
typedef struct {
  int type, handle_types;
  struct { int type, id; } location;
  void *win32;
  unsigned char flags[8];
} cu_alloc_prop;

static void *lib(const char *env, const char *dflt) {
  const char *p = getenv(env);
  return dlopen(p && *p ? p : dflt, RTLD_NOW | RTLD_LOCAL);
}

int main(void) {
  void *h = lib("GPUPLAN_LIBCUDA", "libcuda.so.1"), *nv = lib("GPUPLAN_LIBNVML", "libnvidia-ml.so.1");
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuMemGetAllocationGranularity)(size_t *, const cu_alloc_prop *, int) = NULL;
  int (*nvmlInit)(void) = NULL;
  int (*nvmlDeviceGetHandleByIndex)(unsigned, void **) = NULL;
  int (*nvmlDeviceGetMemoryInfo)(void *, nvml_memory *) = NULL;
  int (*nvmlSystemGetDriverVersion)(char *, unsigned) = NULL;
  int n = 0, i, ver = 0, have_nvml = 0;
  char drv[64] = "";
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
  SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
  SYM(cuMemGetInfo, "cuMemGetInfo_v2");
  SYM(cuMemAlloc, "cuMemAlloc_v2");
  SYM(cuMemFree, "cuMemFree_v2");
  SYM(cuDriverGetVersion, "cuDriverGetVersion");
  SYM(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity"); /* optional: CUDA 10.2+ */
#undef SYM
  if (!cuInit || !cuDeviceGetCount || !cuMemAlloc || !cuMemGetInfo) {
    fprintf(stderr, "the driver lacks an entry point this needs\n");
    return 1;
  }
  if (nv) {
    *(void **)(&nvmlInit) = dlsym(nv, "nvmlInit_v2");
    *(void **)(&nvmlDeviceGetHandleByIndex) = dlsym(nv, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)(&nvmlDeviceGetMemoryInfo) = dlsym(nv, "nvmlDeviceGetMemoryInfo");
    *(void **)(&nvmlSystemGetDriverVersion) = dlsym(nv, "nvmlSystemGetDriverVersion");
    have_nvml = nvmlInit && nvmlDeviceGetHandleByIndex && nvmlDeviceGetMemoryInfo && nvmlInit() == 0;
    if (have_nvml && nvmlSystemGetDriverVersion) nvmlSystemGetDriverVersion(drv, sizeof drv);
  }
  if (cuInit(0) != 0 || cuDeviceGetCount(&n) != 0) {
    fprintf(stderr, "cuInit failed\n");
    return 1;
  }
  cuDriverGetVersion(&ver);
  for (i = 0; i < n; i++) {
    CUdevice d;
    CUcontext c;
    char name[256];
    size_t total = 0, freeb = 0, tot2 = 0, free_after = 0, vmm = 0;
    long long nv_before = -1, nv_after = -1, nv_total = -1;
    int ccmaj = 0, ccmin = 0;
    void *nh = NULL;
    CUdeviceptr p = 0;
    cuDeviceGet(&d, i);
    cuDeviceGetName(name, sizeof name, d);
    cuDeviceTotalMem(&total, d);
    if (cuDeviceGetAttribute) {
      cuDeviceGetAttribute(&ccmaj, 75, d); /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
      cuDeviceGetAttribute(&ccmin, 76, d);
    }
    if (have_nvml && nvmlDeviceGetHandleByIndex((unsigned)i, &nh) == 0) {
      nvml_memory m;
      if (nvmlDeviceGetMemoryInfo(nh, &m) == 0) {
        nv_before = (long long)m.used;
        nv_total = (long long)m.total;
      }
    }
    if (cuDevicePrimaryCtxRetain(&c, d) != 0 || cuCtxSetCurrent(c) != 0) {
      fprintf(stderr, "context on device %d failed\n", i);
      return 1;
    }
    cuMemGetInfo(&freeb, &tot2);
    if (nh) {
      nvml_memory m;
      if (nvmlDeviceGetMemoryInfo(nh, &m) == 0) nv_after = (long long)m.used;
    }
    /* what one byte costs: the driver's granularity for cudaMalloc */
    if (cuMemAlloc(&p, 1) == 0) {
      cuMemGetInfo(&free_after, &tot2);
      cuMemFree(p);
    }
    if (cuMemGetAllocationGranularity) {
      cu_alloc_prop prop;
      memset(&prop, 0, sizeof prop);
      prop.type = 1;          /* CU_MEM_ALLOCATION_TYPE_PINNED */
      prop.location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE */
      prop.location.id = d;
      if (cuMemGetAllocationGranularity(&vmm, &prop, 0) != 0) vmm = 0; /* _MINIMUM */
    }
    printf("{\"device\": %d, \"name\": \"%s\", \"compute_capability\": \"%d.%d\", \"cuda_driver\": %d, "
           "\"driver_version\": \"%s\", \"total_bytes\": %zu, \"nvml_total_bytes\": %lld, "
           "\"free_with_context_bytes\": %zu, \"used_with_context_bytes\": %zu, "
           "\"context_bytes\": %lld, \"malloc_granularity_bytes\": %lld, \"vmm_granularity_bytes\": %zu, "
           "\"lazy_loading\": \"%s\"}\n",
           i, name, ccmaj, ccmin, ver, drv, total, nv_total, freeb, tot2 - freeb,
           nv_before >= 0 && nv_after >= 0 ? nv_after - nv_before : -1LL,
           free_after ? (long long)freeb - (long long)free_after : -1LL, vmm,
           getenv("CUDA_MODULE_LOADING") ? getenv("CUDA_MODULE_LOADING") : "(default)");
    cuDevicePrimaryCtxRelease(d);
  }
  return 0;
}

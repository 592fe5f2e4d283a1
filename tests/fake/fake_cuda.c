/*
 * fake_cuda.c: a stand-in libcuda.so.1 for hardware-free tests of the CUDA
 * backend.  It implements every driver entry point the backend uses (see
 * libgpuplan/src/sys/backend.c) over a pretend device, and its failure
 * modes come from the environment:
 *
 *   FAKE_CUDA_MODE     ok (default), nodevice, olddriver, mismatch, ecc, oom
 *   FAKE_CUDA_DEVICES  number of devices (default 1)
 *   FAKE_CUDA_NAME     device name (default "NVIDIA A100-SXM4-40GB")
 *   FAKE_CUDA_MIB      device memory in MiB (default 40960)
 *   FAKE_CUDA_USED_MIB memory other processes hold (default 0)
 *
 * fake_cuda_live() reports live allocations and retained contexts, so
 * tests can check that the backend frees everything.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

enum { OK = 0, E_INVALID_VALUE = 1, E_OOM = 2, E_NOT_INITIALIZED = 3, E_INSUFFICIENT_DRIVER = 35,
       E_INVALID_DEVICE = 101, E_NO_DEVICE = 100, E_ECC = 214, E_MISMATCH = 803 };

#define MAXLIVE 4096
static int initialised;
static int retained[16];
static int current = -1;
static struct { CUdeviceptr p; size_t n; int dev; } live[MAXLIVE];
static unsigned long long next_ptr = 0x7f0000000000ull;

static const char *mode(void) {
  const char *m = getenv("FAKE_CUDA_MODE");
  return m ? m : "ok";
}
static int ndev(void) {
  const char *s = getenv("FAKE_CUDA_DEVICES");
  int n = s ? atoi(s) : 1;
  return n < 0 ? 0 : n > 16 ? 16 : n;
}
static size_t total_bytes(void) {
  const char *s = getenv("FAKE_CUDA_MIB");
  return (size_t)(s ? atoll(s) : 40960) << 20;
}
static size_t others(void) {
  const char *s = getenv("FAKE_CUDA_USED_MIB");
  return (size_t)(s ? atoll(s) : 0) << 20;
}
static size_t used_by(int dev) {
  size_t u = 0;
  int i;
  for (i = 0; i < MAXLIVE; i++)
    if (live[i].p && live[i].dev == dev) u += live[i].n;
  return u;
}
static const size_t context_bytes = (size_t)500 << 20;

API int fake_cuda_live(void) {
  int i, n = 0;
  for (i = 0; i < MAXLIVE; i++) n += live[i].p != 0;
  for (i = 0; i < 16; i++) n += retained[i];
  return n;
}

API CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case OK: *s = "CUDA_SUCCESS"; break;
  case E_OOM: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case E_NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
  case E_INSUFFICIENT_DRIVER: *s = "CUDA_ERROR_INSUFFICIENT_DRIVER"; break;
  case E_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
  case E_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
  case E_ECC: *s = "CUDA_ERROR_ECC_UNCORRECTABLE"; break;
  case E_MISMATCH: *s = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"; break;
  default: *s = NULL; return E_INVALID_VALUE;
  }
  return OK;
}

API CUresult cuInit(unsigned flags) {
  if (flags) return E_INVALID_VALUE;
  if (!strcmp(mode(), "nodevice")) return E_NO_DEVICE;
  if (!strcmp(mode(), "olddriver")) return E_INSUFFICIENT_DRIVER;
  if (!strcmp(mode(), "mismatch")) return E_MISMATCH;
  initialised = 1;
  return OK;
}

API CUresult cuDriverGetVersion(int *v) {
  *v = !strcmp(mode(), "olddriver") ? 11040 : 12040;
  return OK;
}

#define NEED_INIT() do { if (!initialised) return E_NOT_INITIALIZED; } while (0)
#define NEED_DEV(d) do { if ((d) < 0 || (d) >= ndev()) return E_INVALID_DEVICE; } while (0)

API CUresult cuDeviceGetCount(int *n) { NEED_INIT(); *n = ndev(); return OK; }
API CUresult cuDeviceGet(CUdevice *d, int i) { NEED_INIT(); NEED_DEV(i); *d = i; return OK; }

API CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  const char *n = getenv("FAKE_CUDA_NAME");
  NEED_INIT(); NEED_DEV(d);
  snprintf(name, (size_t)len, "%s", n ? n : "NVIDIA A100-SXM4-40GB");
  return OK;
}

API CUresult cuDeviceGetUuid_v2(unsigned char *u, CUdevice d) {
  int i;
  NEED_INIT(); NEED_DEV(d);
  for (i = 0; i < 16; i++) u[i] = (unsigned char)(0x10 * d + i);
  return OK;
}

API CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { NEED_INIT(); NEED_DEV(d); *b = total_bytes(); return OK; }

API CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
  NEED_INIT(); NEED_DEV(d);
  switch (attr) {
  case 13: *v = 1410000; break;  /* clock, kHz */
  case 16: *v = 108; break;      /* SMs */
  case 33: *v = 0x07 + d; break; /* PCI bus */
  case 34: *v = 0; break;
  case 36: *v = 1215000; break;  /* memory clock, kHz */
  case 50: *v = 0; break;
  case 75: *v = 8; break;
  case 76: *v = 0; break;
  default: return E_INVALID_VALUE;
  }
  return OK;
}

API CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  NEED_INIT(); NEED_DEV(d);
  retained[d]++;
  *c = (CUcontext)(uintptr_t)(0x1000 + d);
  return OK;
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  NEED_INIT(); NEED_DEV(d);
  if (!retained[d]) return E_INVALID_VALUE;
  retained[d]--;
  return OK;
}

API CUresult cuCtxSetCurrent(CUcontext c) {
  int d = (int)((uintptr_t)c - 0x1000);
  NEED_INIT();
  if (d < 0 || d >= ndev() || !retained[d]) return E_INVALID_VALUE;
  current = d;
  return OK;
}

API CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total) {
  size_t used;
  NEED_INIT();
  if (current < 0) return E_INVALID_VALUE;
  used = context_bytes + others() + used_by(current);
  *total = total_bytes();
  *free_b = used > *total ? 0 : *total - used;
  return OK;
}

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  size_t f, t;
  int i;
  NEED_INIT();
  if (current < 0) return E_INVALID_VALUE;
  if (!strcmp(mode(), "ecc")) return E_ECC;
  cuMemGetInfo_v2(&f, &t);
  if (!strcmp(mode(), "oom") || n > f) return E_OOM;
  for (i = 0; i < MAXLIVE; i++)
    if (!live[i].p) {
      live[i].p = next_ptr;
      live[i].n = n;
      live[i].dev = current;
      next_ptr += (n + 0x1fffff) & ~(size_t)0x1fffff;
      *p = live[i].p;
      return OK;
    }
  return E_OOM;
}

API CUresult cuMemFree_v2(CUdeviceptr p) {
  int i;
  NEED_INIT();
  for (i = 0; i < MAXLIVE; i++)
    if (live[i].p == p) {
      live[i].p = 0;
      return OK;
    }
  return E_INVALID_VALUE;
}

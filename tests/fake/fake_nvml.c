/*
 * fake_nvml.c: a stand-in libnvidia-ml.so.1 for hardware-free tests of the
 * CUDA backend's telemetry: every NVML entry point the backend uses, over
 * the devices of fake_cuda.c (same PCI bus ids), with values from the
 * environment:
 *
 *   FAKE_NVML_MODE      ok (default) or initfail
 *   FAKE_NVML_TEMP      temperature, C [42]         FAKE_NVML_POWER_W  [72]
 *   FAKE_NVML_UTIL      GPU-Util % [94]             FAKE_NVML_CLOCK    SM MHz [1410]
 *   FAKE_NVML_PSTATE    [0]                         FAKE_NVML_THROTTLE bits [0]
 *   FAKE_NVML_ECC       uncorrected volatile [0]    FAKE_NVML_NVLINK_UP links up of 12 [12]
 *   FAKE_CUDA_DEVICES   as fake_cuda.c [1]
 *
 * and the optional entry points nvidia-smi -q reads (the backend works
 * without them, as with an older NVML):
 *
 *   FAKE_NVML_FAN       fan % (unset: not supported, a passive card)
 *   FAKE_NVML_PROCS     compute processes "PID:MiB,PID:MiB" [none]
 *   FAKE_NVML_REMAPPED  uncorrectable remapped rows [0]; pending when > 0
 *   FAKE_NVML_OLD       1: none of the optional entry points (dlsym fails
 *                       only for real libraries; here they answer
 *                       NOT_SUPPORTED)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
typedef struct { unsigned gpu, memory; } nvmlUtilization_t;

enum { OK = 0, E_UNINIT = 1, E_INVALID = 2, E_NOT_SUPPORTED = 3, E_NOT_FOUND = 6, E_UNKNOWN = 999 };

static int inited;

static long env(const char *k, long dflt) {
  const char *v = getenv(k);
  return v ? atol(v) : dflt;
}
static int ndev(void) { return (int)env("FAKE_CUDA_DEVICES", 1); }
static int index_of(nvmlDevice_t h) {
  long d = (long)((uintptr_t)h - 0x2000);
  return d >= 0 && d < ndev() ? (int)d : -1;
}
#define DEV(h) do { if (!inited) return E_UNINIT; if (index_of(h) < 0) return E_INVALID; } while (0)

API const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
  case OK: return "Success";
  case E_UNINIT: return "Uninitialized";
  case E_INVALID: return "Invalid Argument";
  case E_NOT_SUPPORTED: return "Not Supported";
  case E_NOT_FOUND: return "Not Found";
  default: return "Unknown Error";
  }
}
API nvmlReturn_t nvmlInit_v2(void) {
  const char *m = getenv("FAKE_NVML_MODE");
  if (m && !strcmp(m, "initfail")) return E_UNKNOWN;
  inited++;
  return OK;
}
API nvmlReturn_t nvmlShutdown(void) {
  if (!inited) return E_UNINIT;
  inited--;
  return OK;
}
API nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned n) {
  if (!inited) return E_UNINIT;
  snprintf(v, n, "550.54.15");
  return OK;
}
API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *h) {
  int d;
  if (!inited) return E_UNINIT;
  for (d = 0; d < ndev(); d++) {
    char want[32];
    snprintf(want, sizeof want, "00000000:%02X:00.0", 0x07 + d);
    if (!strcmp(bus, want)) {
      *h = (nvmlDevice_t)(uintptr_t)(0x2000 + d);
      return OK;
    }
  }
  return E_NOT_FOUND;
}
API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned *t) {
  DEV(h);
  if (sensor != 0) return E_INVALID;
  *t = (unsigned)env("FAKE_NVML_TEMP", 42);
  return OK;
}
API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned *mw) { DEV(h); *mw = (unsigned)env("FAKE_NVML_POWER_W", 72) * 1000; return OK; }
API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned *mw) { DEV(h); *mw = 400000; return OK; }
API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u) {
  DEV(h);
  u->gpu = (unsigned)env("FAKE_NVML_UTIL", 94);
  u->memory = u->gpu * 6 / 10;
  return OK;
}
API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned *mhz) {
  DEV(h);
  if (type != 1) return E_NOT_SUPPORTED;
  *mhz = (unsigned)env("FAKE_NVML_CLOCK", 1410);
  return OK;
}
API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, int type, unsigned *mhz) {
  DEV(h);
  if (type != 1) return E_NOT_SUPPORTED;
  *mhz = 1410;
  return OK;
}
API nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t h, int *p) { DEV(h); *p = (int)env("FAKE_NVML_PSTATE", 0); return OK; }
API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long *r) {
  DEV(h);
  *r = (unsigned long long)env("FAKE_NVML_THROTTLE", 0);
  return OK;
}
API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t h, int type, int counter, unsigned long long *n) {
  DEV(h);
  if (counter != 0 && counter != 1) return E_INVALID;
  *n = type == 1 ? (unsigned long long)env("FAKE_NVML_ECC", 0) : 0;
  return OK;
}
API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t h, unsigned link, int *active) {
  DEV(h);
  if (link >= 12) return E_INVALID; /* an A100: 12 links */
  *active = (long)link < env("FAKE_NVML_NVLINK_UP", 12);
  return OK;
}

/* --- optional entry points ---------------------------------------------------- */

static int old(void) { return env("FAKE_NVML_OLD", 0) != 0; }
#define OPT(h) do { DEV(h); if (old()) return E_NOT_SUPPORTED; } while (0)

API nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t h, unsigned *s) {
  OPT(h);
  if (!getenv("FAKE_NVML_FAN")) return E_NOT_SUPPORTED;
  *s = (unsigned)env("FAKE_NVML_FAN", 0);
  return OK;
}
API nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t h, unsigned *g) { OPT(h); *g = 4; return OK; }
API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t h, unsigned *g) { OPT(h); *g = 4; return OK; }
API nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t h, unsigned *w) { OPT(h); *w = 16; return OK; }
API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t h, unsigned *w) { OPT(h); *w = 16; return OK; }
API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t h, int *m) { OPT(h); *m = 1; return OK; }
API nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t h, int *cur, int *pend) { OPT(h); *cur = *pend = 1; return OK; }
API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t h, int *m) { OPT(h); *m = 0; return OK; }
API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned *cur, unsigned *pend) { OPT(h); *cur = *pend = 0; return OK; }
API nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t h, char *s, unsigned n) {
  OPT(h);
  snprintf(s, n, "132402%07d", index_of(h) + 1);
  return OK;
}
API nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t h, char *s, unsigned n) {
  OPT(h);
  snprintf(s, n, "92.00.19.00.01");
  return OK;
}
API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t h, unsigned *c, unsigned *u, unsigned *p, unsigned *f) {
  OPT(h);
  *c = 0;
  *u = (unsigned)env("FAKE_NVML_REMAPPED", 0);
  *p = *u > 0;
  *f = 0;
  return OK;
}
API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *mj) {
  OPT(h);
  *mj = 123456789ull;
  return OK;
}
API nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t h, int type, unsigned *t) {
  OPT(h);
  if (type != 0 && type != 1) return E_NOT_SUPPORTED;
  *t = type == 0 ? 92 : 89;
  return OK;
}
typedef struct { unsigned long long total, free, used; } fake_bar1;
API nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t h, fake_bar1 *b) {
  OPT(h);
  b->total = 65536ull << 20;
  b->used = 2ull << 20;
  b->free = b->total - b->used;
  return OK;
}
/* nvmlProcessInfo_t of NVML 12 (pid, usedGpuMemory, gpuInstanceId, computeInstanceId) */
typedef struct { unsigned pid; unsigned long long used; unsigned gi, ci; } fake_proc;
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned *count, fake_proc *out) {
  const char *s = getenv("FAKE_NVML_PROCS");
  unsigned n = 0;
  OPT(h);
  while (s && *s) {
    unsigned pid = 0, mib = 0;
    if (sscanf(s, "%u:%u", &pid, &mib) != 2) break;
    if (n < *count) {
      out[n].pid = pid;
      out[n].used = (unsigned long long)mib << 20;
      out[n].gi = out[n].ci = 0xFFFFFFFFu;
    }
    n++;
    s = strchr(s, ',');
    if (s) s++;
  }
  if (n > *count) {
    *count = n;
    return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  }
  *count = n;
  return OK;
}
API nvmlReturn_t nvmlSystemGetProcessName(unsigned pid, char *name, unsigned n) {
  if (!inited) return E_UNINIT;
  snprintf(name, n, "/usr/bin/python3");
  (void)pid;
  return OK;
}

API nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t h, unsigned link, unsigned *v) {
  OPT(h);
  if (link >= 12) return E_INVALID;
  *v = 3; /* A100: NVLink 3 */
  return OK;
}
API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *h) {
  if (!inited) return E_UNINIT;
  if ((int)i >= ndev()) return E_INVALID;
  *h = (nvmlDevice_t)(uintptr_t)(0x2000 + i);
  return OK;
}
typedef struct { unsigned long long total, free, used; } fake_memory;
API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, fake_memory *m) {
  DEV(h);
  m->total = (unsigned long long)env("FAKE_CUDA_MIB", 40960) << 20;
  m->used = (unsigned long long)env("FAKE_CUDA_USED_MIB", 0) << 20;
  m->free = m->total - m->used;
  return OK;
}

API int fake_nvml_inited(void) { return inited; }

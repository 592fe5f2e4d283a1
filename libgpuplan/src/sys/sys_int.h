/*
 * sys_int.h: what the device commands (job/cmd_devices.c, job/cmd_doctor.c)
 * share with the device backends: CUDA and framework compatibility facts
 * (compat.c).  Not installed.
 */
#ifndef GPUPLAN_SYS_INT_H
#define GPUPLAN_SYS_INT_H

#include <stddef.h>

/* A driver version "535.161.08" as {535, 161, 8}; 0 when s is not one. */
int gpuplan__driver_parse(const char *s, int v[3]);
/* <0, 0, >0 as a is older, the same, newer than b. */
int gpuplan__driver_cmp(const int a[3], const int b[3]);

/* The oldest driver that runs CUDA `cuda_major`.x applications through
 * minor-version compatibility ("525.60.13" for 12), or NULL. */
const char *gpuplan__cuda_mvc_floor(int cuda_major);

/* The driver branch a toolkit (12040 = 12.4) first shipped with (550), or 0. */
int gpuplan__cuda_driver_branch(int cuda_version);

/* The oldest driver branch that supports GPUs of compute capability
 * major.minor (570 for Blackwell), the newest one that still does (580 for
 * Volta; 0: no end announced), and the CUDA range that compiles for it
 * (cuda_min..cuda_max, 0: open). */
typedef struct gpuplan__arch_support {
  int driver_min, driver_max;
  int cuda_min, cuda_max;
  const char *name; /* "Volta" */
} gpuplan__arch_support;
void gpuplan__arch_support_of(int cc_major, int cc_minor, gpuplan__arch_support *out);

/* Whether a PyTorch build for CUDA `cuda` (12080) of release `torch`
 * ("2.8", NULL: any) has kernels for compute capability major.minor. */
typedef struct gpuplan__arch_verdict {
  int known;            /* 0: no PyTorch wheels for this CUDA (a custom build) */
  int ok;               /* 1 runs, 0 no kernel image, -1 depends on the release */
  char archs[96];       /* the wheels' arch list, "7.5 8.0 8.6 9.0 10.0 12.0" */
  char via[32];         /* "sm_86" (the SASS that runs) or "PTX 12.0" */
  char releases[64];    /* with ok -1: the releases that have kernels, "2.8-2.9" */
  const char *source;   /* where the list comes from */
} gpuplan__arch_verdict;
void gpuplan__torch_arch_check(int cuda, const char *torch, int cc_major, int cc_minor, gpuplan__arch_verdict *out);

#endif /* GPUPLAN_SYS_INT_H */

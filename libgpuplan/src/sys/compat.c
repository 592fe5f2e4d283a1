/*
 * compat.c: which driver runs which CUDA runtime, and which PyTorch build
 * has kernels for which GPU.  These are the facts `gpuplan doctor` applies
 * and the mock's driver reports; each table names its source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuplan/backend.h"
#include "sys/sys_int.h"

int gpuplan__driver_parse(const char *s, int v[3]) {
  int k = 0;
  v[0] = v[1] = v[2] = 0;
  if (!s) return 0;
  for (;;) {
    long x = 0;
    int digits = 0;
    while (*s >= '0' && *s <= '9') {
      x = x * 10 + (*s - '0');
      if (x > 100000) return 0;
      s++;
      digits++;
    }
    if (!digits) return 0;
    v[k++] = (int)x;
    if (!*s) return k >= 2;
    if (*s != '.' || k == 3) return 0;
    s++;
  }
}

int gpuplan__driver_cmp(const int a[3], const int b[3]) {
  int k;
  for (k = 0; k < 3; k++)
    if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
  return 0;
}

/* The CUDA version each Linux driver branch reports (the toolkit it shipped
 * with): CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver
 * Versions" (docs.nvidia.com/cuda/cuda-toolkit-release-notes, table 3);
 * 565 reports 12.7, a version with no toolkit of its own. */
static const struct {
  int branch, cuda;
} branches[] = {
  {450, 11000}, {455, 11010}, {460, 11020}, {465, 11030}, {470, 11040}, {495, 11050},
  {510, 11060}, {515, 11070}, {520, 11080}, {525, 12000}, {530, 12010}, {535, 12020},
  {545, 12030}, {550, 12040}, {555, 12050}, {560, 12060}, {565, 12070}, {570, 12080},
  {575, 12090}, {580, 13000}, {590, 13010},
};
#define NBRANCH (sizeof branches / sizeof branches[0])

int gpuplan_driver_cuda_version(const char *driver_version) {
  int v[3];
  size_t i;
  int cuda = 0;
  if (!gpuplan__driver_parse(driver_version, v)) return 0;
  for (i = 0; i < NBRANCH; i++)
    if (v[0] >= branches[i].branch) cuda = branches[i].cuda;
  return cuda;
}

int gpuplan__cuda_driver_branch(int cuda_version) {
  size_t i;
  for (i = 0; i < NBRANCH; i++)
    if (branches[i].cuda >= cuda_version) return branches[i].branch;
  return 0;
}

/* Minor-version compatibility: an application built with any CUDA 12.x
 * runtime runs on a driver of 525.60.13 or later (11.x: 450.80.02; 13.x:
 * 580), with a limited feature set (PTX newer than the driver cannot be
 * JIT-compiled).  Source: CUDA Compatibility guide, "Minor Version
 * Compatibility", table 1 (docs.nvidia.com/deploy/cuda-compatibility). */
const char *gpuplan__cuda_mvc_floor(int cuda_major) {
  switch (cuda_major) {
  case 11: return "450.80.02";
  case 12: return "525.60.13";
  case 13: return "580.65.06";
  default: return NULL;
  }
}

/* Architectures: the first CUDA toolkit and driver branch that support
 * each, and the last ones that still do.  Sources: CUDA Toolkit release
 * notes (12.0 removed sm_35/sm_37; 13.0 removed offline compilation for
 * sm_50..sm_72, "Deprecated Architectures"), the data-center driver release
 * notes (Kepler's last branch is 470; 580 is the last for Maxwell, Pascal
 * and Volta; Blackwell needs 570).  Driver minima for Ada and Hopper are
 * the first branch of CUDA 11.8 (520), as the release notes list them. */
void gpuplan__arch_support_of(int cc_major, int cc_minor, gpuplan__arch_support *out) {
  memset(out, 0, sizeof *out);
  switch (cc_major) {
  case 3: *out = (gpuplan__arch_support){0, 470, 0, 11080, "Kepler"}; break;
  case 5: *out = (gpuplan__arch_support){0, 580, 0, 12090, "Maxwell"}; break;
  case 6: *out = (gpuplan__arch_support){0, 580, 0, 12090, "Pascal"}; break;
  case 7:
    if (cc_minor >= 5) *out = (gpuplan__arch_support){410, 0, 10000, 0, "Turing"};
    else *out = (gpuplan__arch_support){384, 580, 9000, 12090, "Volta"};
    break;
  case 8:
    if (cc_minor == 0) *out = (gpuplan__arch_support){450, 0, 11000, 0, "Ampere"};
    else if (cc_minor <= 7) *out = (gpuplan__arch_support){455, 0, 11010, 0, "Ampere"};
    else *out = (gpuplan__arch_support){520, 0, 11080, 0, "Ada Lovelace"};
    break;
  case 9: *out = (gpuplan__arch_support){520, 0, 11080, 0, "Hopper"}; break;
  case 10:
    if (cc_minor >= 3) *out = (gpuplan__arch_support){575, 0, 12090, 0, "Blackwell"};
    else *out = (gpuplan__arch_support){570, 0, 12080, 0, "Blackwell"};
    break;
  case 12: *out = (gpuplan__arch_support){570, 0, 12080, 0, "Blackwell"}; break;
  default: out->name = "unknown"; break;
  }
}

/* The architectures PyTorch's Linux x86 wheels carry kernels (SASS) for,
 * by CUDA variant and release: pytorch/pytorch RELEASE.md, "PyTorch CUDA
 * Support Matrix", and .ci/manywheel/build_cuda.sh (TORCH_CUDA_ARCH_LIST).
 * cu128 dropped Maxwell, Pascal and Volta in 2.7, took Volta back in 2.8
 * and 2.9 (pytorch/pytorch#157517) and dropped it again in 2.10
 * (pytorch/pytorch#172352); cu130 carries PTX for 12.0 as well.  Releases
 * are major*100+minor; torch_max 0 means "and later". */
static const struct {
  int cuda, torch_min, torch_max;
  const char *archs;
  int ptx; /* 120 = compute_120 PTX in the wheel, 0 none */
} wheels[] = {
  {11080, 200, 200, "3.7 5.0 6.0 7.0 7.5 8.0 8.6 9.0", 0},
  {11080, 201, 207, "5.0 6.0 7.0 7.5 8.0 8.6 9.0", 0},
  {12010, 201, 205, "5.0 6.0 7.0 7.5 8.0 8.6 9.0", 0},
  {12040, 204, 206, "5.0 6.0 7.0 7.5 8.0 8.6 9.0", 0},
  {12060, 206, 0, "5.0 6.0 7.0 7.5 8.0 8.6 9.0", 0},
  {12080, 207, 207, "7.5 8.0 8.6 9.0 10.0 12.0", 0},
  {12080, 208, 209, "7.0 7.5 8.0 8.6 9.0 10.0 12.0", 0},
  {12080, 210, 0, "7.5 8.0 8.6 9.0 10.0 12.0", 0},
  {12090, 208, 209, "7.0 7.5 8.0 8.6 9.0 10.0 12.0", 0},
  {13000, 209, 0, "7.5 8.0 8.6 9.0 10.0 12.0", 120},
};
#define NWHEEL (sizeof wheels / sizeof wheels[0])

static int torch_release(const char *s) {
  int a = 0, b = 0;
  if (!s || sscanf(s, "%d.%d", &a, &b) != 2 || a < 1 || b < 0 || b > 99) return -1;
  return a * 100 + b;
}

/* Does this list run on cc?  SASS for sm_XY runs on sm_XZ with Z >= Y (the
 * same major); PTX is JIT-compiled for any later architecture. */
static int runs_on(const char *archs, int ptx, int cc, char *via, size_t cap) {
  const char *p = archs;
  int best = -1;
  while (*p) {
    int a = 0, b = 0, n = 0;
    if (sscanf(p, "%d.%d%n", &a, &b, &n) != 2) break;
    if (a == cc / 10 && b <= cc % 10 && a * 10 + b > best) best = a * 10 + b;
    p += n;
    while (*p == ' ') p++;
  }
  if (best >= 0) {
    snprintf(via, cap, "sm_%d", best);
    return 1;
  }
  if (ptx && ptx <= cc) {
    snprintf(via, cap, "PTX %d.%d", ptx / 10, ptx % 10);
    return 1;
  }
  return 0;
}

void gpuplan__torch_arch_check(int cuda, const char *torch, int cc_major, int cc_minor, gpuplan__arch_verdict *out) {
  int rel = torch_release(torch), cc = cc_major * 10 + cc_minor;
  size_t i;
  int yes = 0, no = 0, lo = 0, hi = -1;
  char via[32] = "";
  memset(out, 0, sizeof *out);
  out->source = "pytorch/pytorch RELEASE.md (CUDA support matrix), .ci/manywheel/build_cuda.sh";
  for (i = 0; i < NWHEEL; i++) {
    char v[32];
    if (wheels[i].cuda != cuda) continue;
    if (rel >= 0 && (rel < wheels[i].torch_min || (wheels[i].torch_max && rel > wheels[i].torch_max))) continue;
    out->known = 1;
    snprintf(out->archs, sizeof out->archs, "%s", wheels[i].archs);
    if (runs_on(wheels[i].archs, wheels[i].ptx, cc, v, sizeof v)) {
      yes++;
      snprintf(via, sizeof via, "%s", v);
      if (!lo || wheels[i].torch_min < lo) lo = wheels[i].torch_min;
      if (hi != 0 && (wheels[i].torch_max == 0 || wheels[i].torch_max > hi)) hi = wheels[i].torch_max;
    } else {
      no++;
    }
  }
  if (!out->known) return;
  snprintf(out->via, sizeof out->via, "%s", via);
  out->ok = yes && !no ? 1 : !yes ? 0 : -1;
  if (out->ok < 0) {
    if (hi == 0) snprintf(out->releases, sizeof out->releases, "%d.%d and later", lo / 100, lo % 100);
    else if (lo == hi) snprintf(out->releases, sizeof out->releases, "%d.%d", lo / 100, lo % 100);
    else snprintf(out->releases, sizeof out->releases, "%d.%d-%d.%d", lo / 100, lo % 100, hi / 100, hi % 100);
  }
}

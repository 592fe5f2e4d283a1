/*
 * cmd_doctor.c: gpuplan doctor: an environment check whose findings are
 * data.  Each check runs once over the machine and reports GPUs that look
 * alike as one finding ("GPUs 0-7: ..."), with the fix and the commands
 * that show it (gpuplan smi with the same machine, and nvidia-smi).
 *
 * The driver/runtime rule is CUDA's minor-version compatibility: a CUDA
 * 12.x runtime runs on any driver of 525.60.13 or later (11.x: 450.80.02,
 * 13.x: 580), so only a newer major than the driver's, or a driver below
 * the floor, fails; the forward-compatibility package (cuda-compat-*) is
 * the way across majors on data-center GPUs.  Framework builds are checked
 * against the GPUs' architectures with the arch lists of PyTorch's wheels
 * (sys/compat.c names the sources).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/devices_int.h"
#include "sys/sys_int.h"

#define MIB 1048576.0
#define MAXF 48

typedef struct finding {
  const char *check, *level;
  int gpus[GPUPLAN__MAX_GPUS], ngpus;
  char msg[1200];
  char fix[900];
  char cmds[4][300];
  int ncmds;
} finding;

typedef struct report {
  finding *f;
  int n, fails, warns;
  char args[400]; /* the machine's smi arguments */
} report;

static finding *add(report *r, const char *check, const char *level) {
  finding *f;
  if (r->n == MAXF) return &r->f[MAXF - 1]; /* never: the checks are fewer */
  f = &r->f[r->n++];
  memset(f, 0, sizeof *f);
  f->check = check;
  f->level = level;
  if (!strcmp(level, "fail")) r->fails++;
  else if (!strcmp(level, "warn")) r->warns++;
  return f;
}

/* A command that shows the finding: smi arguments after `gpuplan smi`. */
static void cmd(report *r, finding *f, const char *smi_args) {
  if (f->ncmds == 4) return;
  snprintf(f->cmds[f->ncmds++], sizeof f->cmds[0], "%s", smi_args);
  (void)r;
}

/* dst = a + sep + b, cut at cap (no format: the parts are already text). */
static void join(char *dst, size_t cap, const char *a, const char *sep, const char *b) {
  const char *parts[3];
  size_t n = 0, k, len;
  parts[0] = a;
  parts[1] = sep;
  parts[2] = b;
  for (k = 0; k < 3; k++) {
    len = strlen(parts[k]);
    if (n + len >= cap) len = cap - 1 - n;
    memcpy(dst + n, parts[k], len);
    n += len;
  }
  dst[n] = '\0';
}

static void prefix_gpus(finding *f, const char *text) {
  char list[200];
  gpuplan__gpu_list(f->gpus, f->ngpus, list, sizeof list);
  join(f->msg, sizeof f->msg, list, ": ", text);
}

/* "83 C" or "83-85 C" */
static void range(char *buf, size_t cap, double lo, double hi, const char *fmt_one, const char *fmt_two) {
  if (floor(lo + 0.5) == floor(hi + 0.5)) snprintf(buf, cap, fmt_one, lo);
  else snprintf(buf, cap, fmt_two, lo, hi);
}

/* The step-time cost of losing NVLink, from the performance model: a
 * reference job (Llama-2-13B, tensor parallel across the node's GPUs, 256
 * sequences per step) with the SKU's NVLink vs with PCIe. */
static int nvlink_impact(gpuplan_job *job, const gpuplan_gpu *g, int ngpu, double *with_s, double *without_s,
                         int *tp_out) {
  const gpuplan_model *mdl;
  const gpuplan_fabric *pcie;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_cluster cl;
  gpuplan_perf a, b;
  char fab[16];
  int tp = ngpu >= 8 ? 8 : ngpu >= 4 ? 4 : ngpu >= 2 ? 2 : 1;
  if (tp < 2 || gpuplan_catalog_model(job->cat, "llama-2-13b", &mdl)) return -1;
  snprintf(fab, sizeof fab, "pcie%d", isfinite(g->pcie_gen) ? (int)g->pcie_gen : 4);
  if (gpuplan_catalog_fabric(job->cat, fab, &pcie)) return -1;
  o.tp = tp;
  o.sequence_parallel = 1;
  o.dp_mode = GPUPLAN_DP_ZERO1;
  if (gpuplan_cluster_default(job->ctx, job->cat, g, tp, tp, &cl)) return -1;
  if (gpuplan_perf_eval(job->ctx, mdl, &cl, &o, 256, 0, NULL, &a)) return -1;
  cl.intra_bw_bytes_s = pcie->bw_bytes_s;
  cl.intra_latency_s = pcie->latency_s;
  cl.intra_name = "pcie";
  if (gpuplan_perf_eval(job->ctx, mdl, &cl, &o, 256, 0, NULL, &b)) return -1;
  *with_s = a.step_s;
  *without_s = b.step_s;
  *tp_out = tp;
  return 0;
}

static int cc_of(const gpuplan__gpu_state *g) { return g->info.cc_major * 10 + g->info.cc_minor; }

/* The framework's CUDA against the driver's (minor-version compatibility). */
static void check_runtime(report *r, const gpuplan__machine *m, int rt, double rt_real) {
  int drv = m->drv.cuda_version, v[3], floor_v[3], have_v = gpuplan__driver_parse(m->driver_version, v);
  const char *floor_s = gpuplan__cuda_mvc_floor(rt / 1000);
  int branch = gpuplan__cuda_driver_branch(rt);
  finding *f;
  char dv[80];
  snprintf(dv, sizeof dv, "%s", have_v ? m->driver_version : "this driver");
  if (rt / 1000 > drv / 1000) {
    f = add(r, "cuda-runtime", "fail");
    snprintf(f->msg, sizeof f->msg,
             "the framework's CUDA runtime %.1f needs a CUDA %d driver (%d or later); %s supports CUDA %d.%d: "
             "\"CUDA driver version is insufficient for CUDA runtime version\"", rt_real, rt / 1000,
             branch ? branch : 0, dv, drv / 1000, drv % 1000 / 10);
    snprintf(f->fix, sizeof f->fix,
             "update the driver to branch %d or later; or, on data-center GPUs, install CUDA's forward-compatibility "
             "package (cuda-compat-%d-%d, with /usr/local/cuda/compat on LD_LIBRARY_PATH; NGC containers carry it); "
             "or use a framework build for CUDA %d.x (e.g. PyTorch cu126 or cu128 wheels)", branch ? branch : 0,
             rt / 1000, rt % 1000 / 10, drv / 1000);
    cmd(r, f, "");
    return;
  }
  if (rt > drv) {
    /* a newer minor of the same major: runs when the driver is past the floor */
    if (have_v && floor_s && gpuplan__driver_parse(floor_s, floor_v) && gpuplan__driver_cmp(v, floor_v) < 0) {
      f = add(r, "cuda-runtime", "fail");
      snprintf(f->msg, sizeof f->msg,
               "the framework's CUDA runtime %.1f runs on CUDA %d.x drivers of %s or later (minor-version "
               "compatibility); %s is older", rt_real, rt / 1000, floor_s, dv);
      snprintf(f->fix, sizeof f->fix, "update the driver to %s or later (branch %d for every CUDA %d.%d feature)",
               floor_s, branch, rt / 1000, rt % 1000 / 10);
      cmd(r, f, "");
      return;
    }
    f = add(r, "cuda-runtime", "ok");
    snprintf(f->msg, sizeof f->msg,
             "framework CUDA runtime %.1f on a CUDA %d.%d driver (%s): runs through CUDA's minor-version "
             "compatibility (CUDA %d.x needs a driver of %s or later)", rt_real, drv / 1000, drv % 1000 / 10, dv,
             rt / 1000, floor_s ? floor_s : "the same major");
    f = add(r, "cuda-runtime", "info");
    snprintf(f->msg, sizeof f->msg,
             "what needs a CUDA %d.%d driver (branch %d) does not work here: JIT compilation of PTX built with CUDA "
             "%d.%d (CUDA_ERROR_UNSUPPORTED_PTX_VERSION, e.g. from Triton or torch.compile with a newer ptxas) and "
             "APIs new in %d.%d; PyTorch's wheels ship compiled kernels and are not affected", rt / 1000,
             rt % 1000 / 10, branch, rt / 1000, rt % 1000 / 10, rt / 1000, rt % 1000 / 10);
    return;
  }
  f = add(r, "cuda-runtime", "ok");
  snprintf(f->msg, sizeof f->msg, "framework CUDA runtime %.1f <= driver's CUDA %d.%d", rt_real, drv / 1000,
           drv % 1000 / 10);
}

/* GPUs alike for the architecture checks: one compute capability. */
static int same_cc_groups(const gpuplan__machine *m, const gpuplan__gpu_state *gs, int *cc, int (*members)[64],
                          int *nmem) {
  int ng = 0, k, j;
  for (k = 0; k < m->nsel; k++) {
    int c = gs[k].info_ok ? cc_of(&gs[k]) : -1;
    if (c <= 0) continue;
    for (j = 0; j < ng && cc[j] != c; j++) {}
    if (j == ng) {
      cc[ng] = c;
      nmem[ng++] = 0;
    }
    members[j][nmem[j]++] = gs[k].index;
  }
  return ng;
}

static void check_arch(report *r, const gpuplan__machine *m, const gpuplan__gpu_state *gs, int rt, double rt_real,
                       const char *torch) {
  int cc[64], members[64][64], nmem[64], ng = same_cc_groups(m, gs, cc, members, nmem), k, v[3];
  int have_v = gpuplan__driver_parse(m->driver_version, v);
  for (k = 0; k < ng; k++) {
    gpuplan__arch_support as;
    gpuplan__arch_verdict av;
    finding *f;
    char text[1000];
    gpuplan__arch_support_of(cc[k] / 10, cc[k] % 10, &as);
    /* the driver branch and the architecture */
    if (have_v && ((as.driver_min && v[0] < as.driver_min) || (as.driver_max && v[0] > as.driver_max))) {
      f = add(r, "driver-gpu", "fail");
      memcpy(f->gpus, members[k], sizeof members[k]);
      f->ngpus = nmem[k];
      if (v[0] < as.driver_min)
        snprintf(text, sizeof text, "driver %s is older than %s GPUs (compute capability %d.%d) need (branch %d or "
                 "later): the driver does not drive them", m->driver_version, as.name, cc[k] / 10, cc[k] % 10,
                 as.driver_min);
      else
        snprintf(text, sizeof text, "driver %s no longer supports %s GPUs (compute capability %d.%d): branch %d is "
                 "the last that does", m->driver_version, as.name, cc[k] / 10, cc[k] % 10, as.driver_max);
      prefix_gpus(f, text);
      if (v[0] < as.driver_min)
        snprintf(f->fix, sizeof f->fix, "install a data-center driver of branch %d or later", as.driver_min);
      else
        snprintf(f->fix, sizeof f->fix, "install a driver of branch %d (the last for these GPUs), or move the job to "
                 "newer GPUs", as.driver_max);
      cmd(r, f, "-L");
    }
    /* the framework's kernels */
    gpuplan__torch_arch_check(rt, torch, cc[k] / 10, cc[k] % 10, &av);
    if (av.known && av.ok == 1) {
      f = add(r, "framework-arch", "ok");
      memcpy(f->gpus, members[k], sizeof members[k]);
      f->ngpus = nmem[k];
      snprintf(text, sizeof text, "PyTorch cu%d%d wheels%s%s carry kernels for compute capability %d.%d (%s)",
               rt / 1000, rt % 1000 / 10, torch ? " " : "", torch ? torch : "", cc[k] / 10, cc[k] % 10, av.via);
      prefix_gpus(f, text);
    } else if (av.known && av.ok < 0) {
      f = add(r, "framework-arch", "warn");
      memcpy(f->gpus, members[k], sizeof members[k]);
      f->ngpus = nmem[k];
      snprintf(text, sizeof text, "PyTorch cu%d%d wheels carry kernels for compute capability %d.%d (%s) only in "
               "releases %s: other releases fail with \"no kernel image is available for execution on the device\"",
               rt / 1000, rt % 1000 / 10, cc[k] / 10, cc[k] % 10, as.name, av.releases);
      prefix_gpus(f, text);
      snprintf(f->fix, sizeof f->fix, "check that python -c \"import torch; print(torch.__version__, "
               "torch.cuda.get_arch_list())\" lists sm_%d, or tell doctor the release (--torch X.Y)", cc[k]);
    } else if (av.known) {
      f = add(r, "framework-arch", "fail");
      memcpy(f->gpus, members[k], sizeof members[k]);
      f->ngpus = nmem[k];
      snprintf(text, sizeof text, "PyTorch cu%d%d wheels%s%s carry no kernels for compute capability %d.%d (%s); "
               "their arch list is %s: \"CUDA error: no kernel image is available for execution on the device\"",
               rt / 1000, rt % 1000 / 10, torch ? " " : "", torch ? torch : "", cc[k] / 10, cc[k] % 10, as.name,
               av.archs);
      prefix_gpus(f, text);
      if (cc[k] < 75)
        snprintf(f->fix, sizeof f->fix, "use the cu126 wheels (pip install torch --index-url "
                 "https://download.pytorch.org/whl/cu126), which still carry sm_50 to sm_90%s",
                 cc[k] == 70 ? ", or a 2.8-2.9 release of the cu128 wheels (they carry sm_70)" : "");
      else
        snprintf(f->fix, sizeof f->fix, "use wheels built for a newer CUDA (cu128 or later carry sm_100 and sm_120: "
                 "pip install torch --index-url https://download.pytorch.org/whl/cu128) and a driver of branch %d+",
                 as.driver_min);
    } else if ((as.cuda_min && rt < as.cuda_min) || (as.cuda_max && rt > as.cuda_max)) {
      f = add(r, "framework-arch", "fail");
      memcpy(f->gpus, members[k], sizeof members[k]);
      f->ngpus = nmem[k];
      if (rt < as.cuda_min)
        snprintf(text, sizeof text, "CUDA %.1f cannot build kernels for %s (compute capability %d.%d needs CUDA "
                 "%d.%d or later): a framework built with it has none", rt_real, as.name, cc[k] / 10, cc[k] % 10,
                 as.cuda_min / 1000, as.cuda_min % 1000 / 10);
      else
        snprintf(text, sizeof text, "CUDA %.1f dropped %s (compute capability %d.%d; CUDA %d.%d is the last to "
                 "build for it): a framework built with it has no kernels", rt_real, as.name, cc[k] / 10, cc[k] % 10,
                 as.cuda_max / 1000, as.cuda_max % 1000 / 10);
      prefix_gpus(f, text);
      snprintf(f->fix, sizeof f->fix, "use a framework build for CUDA %d.%d%s", (rt < as.cuda_min ? as.cuda_min : as.cuda_max) / 1000,
               (rt < as.cuda_min ? as.cuda_min : as.cuda_max) % 1000 / 10, rt < as.cuda_min ? " or later" : " or older");
    } else {
      f = add(r, "framework-arch", "info");
      memcpy(f->gpus, members[k], sizeof members[k]);
      f->ngpus = nmem[k];
      snprintf(text, sizeof text, "PyTorch publishes no wheels for CUDA %.1f: the build's arch list is not known "
               "here (CUDA %.1f can build for compute capability %d.%d)", rt_real, rt_real, cc[k] / 10, cc[k] % 10);
      prefix_gpus(f, text);
    }
  }
}

/* Group the GPUs for which pred holds into one finding. */
#define FOR_SEL(k) for (k = 0; k < m.nsel; k++)

int gpuplan__cmd_doctor(gpuplan_job *job, gpuplan_doc **out) {
  gpuplan_ctx *ctx = job->ctx;
  gpuplan__machine m;
  gpuplan__gpu_state *gs = NULL;
  report r;
  gpuplan__docb *b = NULL;
  double rt_real = gpuplan__job_real(job, DOPT(D_TORCH_CUDA), 12.1);
  const char *torch = gpuplan__job_str(job, DOPT(D_TORCH), NULL);
  int rt_major = (int)floor(rt_real + 1e-9), rt_minor = (int)floor((rt_real - rt_major) * 10 + 0.5), rt;
  int rc = GPUPLAN_OK, k, i;
  char text[1200];
  if (fabs(rt_real - (rt_major + rt_minor / 10.0)) > 1e-6 || rt_minor > 9)
    return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, DOPT(D_TORCH_CUDA), "%g is not a CUDA version X.Y (e.g. 12.4)",
                              rt_real);
  rt = rt_major * 1000 + rt_minor * 10;
  if (torch) {
    int a, c;
    char extra;
    if (sscanf(torch, "%d.%d%c", &a, &c, &extra) < 2 || a < 1 || c < 0)
      return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, DOPT(D_TORCH), "'%s' is not a release MAJOR.MINOR (e.g. 2.8)",
                                torch);
  }
  memset(&r, 0, sizeof r);
  GPUPLAN_TRY(gpuplan__machine_open(job, &m));
  r.f = gpuplan__calloc(ctx, MAXF, sizeof *r.f);
  gs = gpuplan__calloc(ctx, GPUPLAN__MAX_GPUS, sizeof *gs);
  if (!r.f || !gs) {
    rc = gpuplan__nomem(ctx);
    goto done;
  }
  gpuplan__machine_args(job, r.args, sizeof r.args);
  /* 1. the driver */
  if (!m.be || m.open_rc || !m.drv_ok) {
    finding *f = add(&r, "driver", "fail");
    snprintf(f->msg, sizeof f->msg, "no working NVIDIA driver: %s", m.open_msg[0] ? m.open_msg : gpuplan_errmsg(ctx));
    snprintf(f->fix, sizeof f->fix,
             "check the VM size has a GPU (ND/NC series), the NVIDIA driver VM extension or package is installed "
             "(lsmod | grep nvidia; dmesg | grep -i -e nvrm -e xid), reboot after a kernel update, reinstall the "
             "driver; in containers run with --gpus all (NVIDIA container toolkit)");
    cmd(&r, f, "");
  } else {
    finding *f = add(&r, "driver", "ok");
    if (m.driver_version[0])
      snprintf(f->msg, sizeof f->msg, "driver %s present (%s), supports CUDA up to %d.%d", m.driver_version,
               m.drv.library, m.drv.cuda_version / 1000, m.drv.cuda_version % 1000 / 10);
    else
      snprintf(f->msg, sizeof f->msg, "driver present (%s), supports CUDA up to %d.%d", m.drv.library,
               m.drv.cuda_version / 1000, m.drv.cuda_version % 1000 / 10);
    check_runtime(&r, &m, rt, rt_real);
    for (k = 0; k < m.nsel; k++) gpuplan__gpu_read(&m, m.sel[k], &gs[k]);
  }
  if (m.be && !m.open_rc && m.drv_ok) {
    /* 2. devices, alike ones together */
    int done_[GPUPLAN__MAX_GPUS] = {0};
    if (m.ndev < 1) {
      finding *f = add(&r, "devices", "fail");
      snprintf(f->msg, sizeof f->msg, "the driver sees no GPU");
      snprintf(f->fix, sizeof f->fix, "check CUDA_VISIBLE_DEVICES, that the GPU is passed to this container or VM "
               "(lspci | grep -i nvidia) and the VM size");
      cmd(&r, f, "-L");
    }
    FOR_SEL(k) {
      finding *f;
      const gpuplan__gpu_state *g = &gs[k];
      if (done_[k] || !g->info_ok) continue;
      f = add(&r, "devices", "ok");
      FOR_SEL(i) {
        const gpuplan__gpu_state *h = &gs[i];
        if (!done_[i] && h->info_ok && !strcmp(h->info.name, g->info.name) && h->info.total_bytes == g->info.total_bytes &&
            h->info.sku == g->info.sku) {
          done_[i] = 1;
          f->gpus[f->ngpus++] = h->index;
        }
      }
      snprintf(text, sizeof text, "%s, %.0f MiB, compute capability %d.%d%s%s", g->info.name,
               (double)g->info.total_bytes / MIB, g->info.cc_major, g->info.cc_minor, g->info.sku ? ", catalog " : "",
               g->info.sku ? g->info.sku->id : "");
      prefix_gpus(f, text);
    }
    /* 3. architectures: the driver's and the framework's */
    check_arch(&r, &m, gs, rt, rt_real, torch);
    /* 4. telemetry */
    FOR_SEL(k) if (!gs[k].tel_ok) break;
    if (k < m.nsel) {
      finding *f = add(&r, "telemetry", "warn");
      snprintf(f->msg, sizeof f->msg, "no telemetry (%s): ECC, NVLink and throttling not checked", gs[k].tel_err);
      snprintf(f->fix, sizeof f->fix, "install the NVIDIA driver's NVML (libnvidia-ml.so.1), part of every driver "
               "package (in containers: the NVIDIA container toolkit mounts it)");
    }
    /* 5. lost GPUs */
    {
      finding *f = NULL;
      FOR_SEL(k) if (gs[k].tel_ok && gs[k].t.lost) {
        if (!f) f = add(&r, "gpu-lost", "fail");
        f->gpus[f->ngpus++] = gs[k].index;
      }
      if (f) {
        prefix_gpus(f, "fell off the bus (Xid 79, \"GPU has fallen off the bus\"): the driver cannot reach it and "
                       "every process on it has failed");
        snprintf(f->fix, sizeof f->fix, "drain the node (scontrol update nodename=... state=drain); a reboot brings it "
                 "back for a while; if it recurs, check power, cooling and the PCIe riser, then replace the GPU (in "
                 "the cloud: a ticket for host replacement)");
        cmd(&r, f, "-L");
        cmd(&r, f, "--query-gpu=index,pci.bus_id,uuid --format=csv");
      }
    }
    /* 6. the framework has no kernels here (seen: the job's error) */
    {
      finding *f = NULL;
      const char *msg = NULL;
      FOR_SEL(k) {
        const gpuplan__gpu_state *g = &gs[k];
        if (g->has_job && g->job.message && strstr(g->job.message, "no kernel image")) {
          if (!f) f = add(&r, "framework-arch", "fail");
          f->gpus[f->ngpus++] = g->index;
          msg = g->job.message;
        }
      }
      if (f) {
        snprintf(text, sizeof text, "%s: the framework build in use has no kernels for compute capability %d.%d "
                 "(a custom build, or wheels for another CUDA than torch_cuda says)", msg, gs[0].info.cc_major,
                 gs[0].info.cc_minor);
        prefix_gpus(f, text);
        snprintf(f->fix, sizeof f->fix, "collect the three versions (nvidia-smi, nvcc --version, python -c \"import "
                 "torch; print(torch.version.cuda, torch.cuda.get_arch_list())\"); install a build whose arch list "
                 "includes sm_%d%d, or use a known-good NGC container (nvcr.io/nvidia/pytorch)", gs[0].info.cc_major,
                 gs[0].info.cc_minor);
        cmd(&r, f, "--query-gpu=index,name,compute_cap,driver_version --format=csv");
      }
    }
    /* 7. ECC */
    {
      finding *f = NULL;
      long long lo = 0, hi = 0;
      int ampere = 0, pending = 0;
      FOR_SEL(k) {
        const gpuplan__gpu_state *g = &gs[k];
        if (!g->tel_ok || g->t.lost || g->t.ecc_uncorrected <= 0) continue;
        if (!f) {
          f = add(&r, "ecc", "fail");
          lo = hi = g->t.ecc_uncorrected;
        }
        f->gpus[f->ngpus++] = g->index;
        if (g->t.ecc_uncorrected < lo) lo = g->t.ecc_uncorrected;
        if (g->t.ecc_uncorrected > hi) hi = g->t.ecc_uncorrected;
        if (g->t.remapped_uncorrectable >= 0) ampere = 1;
        if (g->t.remap_pending > 0 || g->t.retired_pending > 0) pending = 1;
      }
      if (f) {
        char n[48];
        if (lo == hi) snprintf(n, sizeof n, "%lld", lo);
        else snprintf(n, sizeof n, "%lld-%lld", lo, hi);
        snprintf(text, sizeof text, "%s uncorrected ECC errors (volatile)%s; jobs fail with \"RuntimeError: CUDA "
                 "error: uncorrectable ECC error encountered\"", n,
                 pending ? (ampere ? ", a row remapping pending" : ", a page retirement pending") : "");
        prefix_gpus(f, text);
        snprintf(f->fix, sizeof f->fix, "drain the node (scontrol update nodename=... state=drain); a GPU reset "
                 "applies the pending %s; if errors return, replace the GPU (in the cloud: a ticket for host "
                 "replacement); count on downtime", ampere ? "row remapping" : "page retirement");
        cmd(&r, f, "-q -d ECC");
        cmd(&r, f, ampere ? "--query-gpu=index,ecc.errors.uncorrected.volatile.total,remapped_rows.uncorrectable,"
                            "remapped_rows.pending --format=csv"
                          : "--query-gpu=index,ecc.errors.uncorrected.volatile.total,retired_pages.double_bit.count,"
                            "retired_pages.pending --format=csv");
      }
    }
    /* 8. NVLink */
    {
      finding *f = NULL;
      int links = 0;
      const gpuplan_gpu *sku = NULL;
      FOR_SEL(k) {
        const gpuplan__gpu_state *g = &gs[k];
        if (!g->tel_ok || g->t.lost || g->t.nvlink_links <= 0 || g->t.nvlink_up > 0) continue;
        if (!f) f = add(&r, "nvlink", "fail");
        f->gpus[f->ngpus++] = g->index;
        links = g->t.nvlink_links;
        sku = g->info.sku;
      }
      if (f) {
        double w, wo;
        int tp;
        snprintf(text, sizeof text, "NVLink not detected (0 of %d links up): topo -m shows a PCIe path, "
                 "tensor-parallel traffic goes over PCIe", links);
        prefix_gpus(f, text);
        snprintf(f->fix, sizeof f->fix, "check the VM series (ND has NVLink/NVSwitch, NC and NV do not) and the "
                 "fabric manager (systemctl status nvidia-fabricmanager) on NVSwitch systems; a GPU reset or reboot "
                 "retrains the links; keep tp within one NVLink domain (gpuplan topo --layout)");
        cmd(&r, f, "nvlink -s");
        cmd(&r, f, "topo -m");
        if (sku && nvlink_impact(job, sku, m.ndev, &w, &wo, &tp) == 0) {
          finding *c = add(&r, "nvlink", "info");
          snprintf(c->msg, sizeof c->msg, "the cost, by the performance model: Llama-2-13B with tp %d, 256 sequences "
                   "per step, %.2f s per step on NVLink, %.2f s on PCIe (%.0f%% slower)", tp, w, wo, 100 * (wo / w - 1));
        }
        gpuplan__clear(ctx);
      }
    }
    /* 9. thermal throttling */
    {
      finding *f = NULL;
      double tlo = 0, thi = 0, slo = 0, shi = 0, clo = 0, chi = 0;
      int maxc = 0, ps = 2;
      FOR_SEL(k) {
        const gpuplan__gpu_state *g = &gs[k];
        double slower;
        if (!g->tel_ok || g->t.lost || g->t.throttle <= 0 ||
            !(g->t.throttle & (GPUPLAN_THROTTLE_SW_THERMAL | GPUPLAN_THROTTLE_HW_SLOWDOWN | GPUPLAN_THROTTLE_HW_THERMAL)))
          continue;
        slower = g->t.sm_clock_mhz > 0 && g->t.max_sm_clock_mhz > 0
                     ? 100.0 * ((double)g->t.max_sm_clock_mhz / g->t.sm_clock_mhz - 1) : NAN;
        if (m.sim) {
          gpuplan_mock_telemetry st;
          gpuplan_mock_telemetry_read(m.sim, g->index, &st);
          slower = 100 * (1 / st.speed - 1);
        }
        if (!f) {
          f = add(&r, "thermal", "fail");
          tlo = thi = g->t.temperature_c;
          slo = shi = slower;
          clo = chi = g->t.sm_clock_mhz;
        }
        f->gpus[f->ngpus++] = g->index;
        tlo = fmin(tlo, g->t.temperature_c);
        thi = fmax(thi, g->t.temperature_c);
        slo = fmin(slo, slower);
        shi = fmax(shi, slower);
        clo = fmin(clo, g->t.sm_clock_mhz);
        chi = fmax(chi, g->t.sm_clock_mhz);
        maxc = g->t.max_sm_clock_mhz;
        ps = g->t.pstate;
      }
      if (f) {
        char tt[32], cc[32], ss[32];
        range(tt, sizeof tt, tlo, thi, "%.0f C", "%.0f-%.0f C");
        range(cc, sizeof cc, clo, chi, "%.0f", "%.0f-%.0f");
        if (isfinite(slo)) range(ss, sizeof ss, slo, shi, "%.0f%%", "%.0f-%.0f%%");
        else snprintf(ss, sizeof ss, "?%%");
        snprintf(text, sizeof text, "thermal throttling: %s, P%d, SM clock %s of %d MHz (steps %s slower)", tt, ps,
                 cc, maxc, ss);
        prefix_gpus(f, text);
        snprintf(f->fix, sizeof f->fix, "check inlet temperature, airflow and fans; in the cloud this is a ticket for "
                 "the provider; meanwhile drain the node from tightly coupled jobs (one slow GPU slows every rank)");
        cmd(&r, f, "-q -d TEMPERATURE,PERFORMANCE");
        cmd(&r, f, "dmon -s pc -c 10");
      }
    }
    /* 10. utilisation under a training load */
    {
      finding *f = NULL;
      double lo = 1, hi = 0;
      FOR_SEL(k) {
        const gpuplan__gpu_state *g = &gs[k];
        int training;
        if (!g->tel_ok || g->t.lost || !isfinite(g->t.gpu_util)) continue;
        if (m.sim) training = g->has_job && !strcmp(g->job.state, "training");
        else training = g->procs_ok && g->nprocs > 0;
        if (!training || g->t.gpu_util <= 0 || g->t.gpu_util >= 0.5) continue;
        if (!f) f = add(&r, "utilization", m.sim ? "fail" : "warn");
        f->gpus[f->ngpus++] = g->index;
        lo = fmin(lo, g->t.gpu_util);
        hi = fmax(hi, g->t.gpu_util);
      }
      if (f) {
        char u[32];
        range(u, sizeof u, 100 * lo, 100 * hi, "%.0f%%", "%.0f-%.0f%%");
        snprintf(text, sizeof text, "utilisation %s under a training load: the input pipeline starves the GPU%s", u,
                 m.sim ? "" : " (one sample: watch it with dmon before acting)");
        prefix_gpus(f, text);
        snprintf(f->fix, sizeof f->fix, "raise DataLoader num_workers, pin_memory=True, cache the dataset on local "
                 "NVMe, use a streaming format (WebDataset, MDS), prefetch; profile with torch.profiler to confirm");
        cmd(&r, f, "dmon -s u -c 10");
        cmd(&r, f, "pmon -s um -c 5");
      }
    }
    /* 11. memory held by other processes */
    {
      finding *f = NULL;
      double olo = 0, ohi = 0, total = 0;
      FOR_SEL(k) {
        const gpuplan__gpu_state *g = &gs[k];
        uint64_t others = 0;
        size_t p;
        int flag;
        if (!g->info_ok) continue;
        if (m.sim) {
          for (p = 0; p < g->nprocs; p++)
            if (g->procs[p].role == 2) others += g->procs[p].used_bytes;
          flag = others > g->total / 10;
        } else {
          others = g->used;
          flag = g->used > g->total / 10;
        }
        if (!flag) continue;
        if (!f) {
          f = add(&r, "memory", m.sim ? "fail" : "warn");
          olo = ohi = (double)others;
        }
        f->gpus[f->ngpus++] = g->index;
        olo = fmin(olo, (double)others);
        ohi = fmax(ohi, (double)others);
        total = (double)g->total;
      }
      if (f) {
        char o[48];
        range(o, sizeof o, olo / MIB, ohi / MIB, "%.0f MiB", "%.0f-%.0f MiB");
        if (m.sim)
          snprintf(text, sizeof text, "other processes hold %s of %.0f MiB: this job will hit CUDA out of memory", o,
                   total / MIB);
        else
          snprintf(text, sizeof text, "%s of %.0f MiB already in use before this job", o, total / MIB);
        prefix_gpus(f, text);
        snprintf(f->fix, sizeof f->fix, "find them and stop leftover ranks and notebook kernels; then size the job "
                 "with gpuplan plan (the fix ladder: micro-batch, checkpointing, ZeRO, bf16, bigger GPU)");
        cmd(&r, f, "--query-compute-apps=pid,process_name,used_memory --format=csv");
      }
    }
    /* 12. the simulated job ran out of memory */
    if (m.sim) {
      finding *f = NULL;
      const char *msg = NULL;
      FOR_SEL(k) {
        const gpuplan__gpu_state *g = &gs[k];
        if (!g->has_job || !g->job.message || !strstr(g->job.message, "out of memory")) continue;
        if (!f) f = add(&r, "job", "fail");
        f->gpus[f->ngpus++] = g->index;
        msg = g->job.message;
      }
      if (f) {
        snprintf(text, sizeof text, "the simulated job%s%s died: %s", m.job.model ? " training " : "",
                 m.job.model ? m.job.model : "", msg);
        prefix_gpus(f, text);
        snprintf(f->fix, sizeof f->fix, "free the GPU of other processes, or size the job with gpuplan plan (the fix "
                 "ladder: micro-batch, checkpointing, ZeRO-3/FSDP, bf16, a bigger GPU)");
        cmd(&r, f, "--query-compute-apps=pid,process_name,used_memory --format=csv");
      }
    }
  }
  /* the document */
  b = gpuplan__doc_begin(ctx, "doctor");
  if (!b) {
    rc = gpuplan_errcode(ctx);
    goto done;
  }
  gpuplan__doc_str(b, "target", m.sim ? "simulated GPUs" : "this machine");
  gpuplan__doc_str(b, "sim", gpuplan__job_str(job, DOPT(D_SIM), NULL));
  gpuplan__doc_str(b, "machine_args", r.args);
  gpuplan__doc_obj(b, "driver");
  gpuplan__doc_bool(b, "available", m.be && !m.open_rc && m.drv_ok);
  gpuplan__doc_str(b, "version", m.driver_version[0] ? m.driver_version : NULL);
  if (m.drv_ok) gpuplan__doc_strf(b, "cuda_version", "%d.%d", m.drv.cuda_version / 1000, m.drv.cuda_version % 1000 / 10);
  else gpuplan__doc_null(b, "cuda_version");
  gpuplan__doc_str(b, "library", m.drv_ok ? m.drv.library : NULL);
  gpuplan__doc_str(b, "error", m.open_rc ? m.open_msg : NULL);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "framework");
  gpuplan__doc_strf(b, "cuda", "%d.%d", rt / 1000, rt % 1000 / 10);
  gpuplan__doc_str(b, "torch", torch);
  {
    gpuplan__arch_verdict av;
    gpuplan__torch_arch_check(rt, torch, 8, 0, &av);
    if (av.known) {
      gpuplan__doc_strf(b, "wheel", "cu%d%d", rt / 1000, rt % 1000 / 10);
      gpuplan__doc_str(b, "arch_list", av.archs);
    } else {
      gpuplan__doc_null(b, "wheel");
      gpuplan__doc_null(b, "arch_list");
    }
  }
  gpuplan__doc_end(b);
  gpuplan__doc_arr(b, "gpus");
  FOR_SEL(k) {
    const gpuplan__gpu_state *g = &gs[k];
    if (!g->info_ok) continue;
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_int(b, "index", g->index);
    gpuplan__doc_str(b, "name", g->info.name);
    gpuplan__doc_str(b, "sku", g->info.sku ? g->info.sku->id : NULL);
    gpuplan__doc_strf(b, "compute_cap", "%d.%d", g->info.cc_major, g->info.cc_minor);
    gpuplan__doc_uint(b, "memory_bytes", g->info.total_bytes);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_arr(b, "findings");
  for (k = 0; k < r.n; k++) {
    const finding *f = &r.f[k];
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "check", f->check);
    gpuplan__doc_str(b, "level", f->level);
    gpuplan__doc_arr(b, "gpus");
    for (i = 0; i < f->ngpus; i++) gpuplan__doc_int(b, NULL, f->gpus[i]);
    gpuplan__doc_end(b);
    gpuplan__doc_str(b, "message", f->msg);
    gpuplan__doc_str(b, "fix", f->fix[0] ? f->fix : NULL);
    gpuplan__doc_arr(b, "commands");
    for (i = 0; i < f->ncmds; i++)
      gpuplan__doc_strf(b, NULL, "gpuplan smi%s%s%s%s", r.args[0] ? " " : "", r.args, f->cmds[i][0] ? " " : "",
                        f->cmds[i]);
    gpuplan__doc_end(b);
    gpuplan__doc_arr(b, "nvidia_smi");
    for (i = 0; i < f->ncmds; i++) gpuplan__doc_strf(b, NULL, "nvidia-smi%s%s", f->cmds[i][0] ? " " : "", f->cmds[i]);
    gpuplan__doc_end(b);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_int(b, "failures", r.fails);
  gpuplan__doc_int(b, "warnings", r.warns);
  gpuplan__doc_bool(b, "ok", r.fails == 0);
  rc = gpuplan__doc_finish(b, out);
  b = NULL;
done:
  gpuplan__doc_abort(b);
  gpuplan__free(ctx, r.f);
  gpuplan__free(ctx, gs);
  gpuplan__machine_close(&m);
  return rc;
}

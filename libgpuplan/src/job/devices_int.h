/*
 * devices_int.h: what the device commands (smi, topo: cmd_devices.c;
 * doctor: cmd_doctor.c) share: their options and the machine they read,
 * this one through the CUDA driver and NVML or mock GPUs running a
 * simulated job.  Not installed.
 */
#ifndef GPUPLAN_DEVICES_INT_H
#define GPUPLAN_DEVICES_INT_H

#include "gpuplan/backend.h"
#include "gpuplan/mock.h"
#include "job/job_int.h"

/* The options of opts_devices.c, by index. */
enum {
  D_SIM = 0, D_FAULT, D_LOAD, D_BUSY, D_MEM, D_DRIVER, D_JOB, D_STARTUP, D_CKPT_EVERY, D_CKPT_S, D_IDS,
  D_QUERY_GPU, D_QUERY_APPS, D_FORMAT, D_SAMPLES, D_INTERVAL, D_WALL_CLOCK, D_HOSTNAME,
  D_TORCH_CUDA, D_TORCH, D_LAYOUT, D_PCIE_ONLY,
  D_COUNT
};
#define DOPT(id) (&gpuplan__opts_devices.opts[id])

#define GPUPLAN__MAX_GPUS 64
#define GPUPLAN__MAX_PROCS 16

/* The machine a device command reads. */
typedef struct gpuplan__machine {
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_mock *sim;          /* NULL: this machine */
  gpuplan_backend *be;        /* NULL when the driver could not be opened */
  int open_rc;                /* why not (0: it opened) */
  char open_msg[700];
  int ndev;                   /* devices the driver sees */
  int drv_ok;
  gpuplan_driver_info drv;
  char driver_version[32];    /* "535.161.08", or "" when unknown */
  int nsel, sel[GPUPLAN__MAX_GPUS]; /* the GPUs selected (gpu_ids), in order */
  double seconds;             /* simulated time (mock) */
  /* the simulated job (job_model) */
  struct {
    const char *model;
    const char *model_id;      /* the catalog model trained */
    char resolved[512];        /* how the job's model was resolved, in words */
    char layout[96];
    double step_s;
    uint64_t bytes;
    int fits;
  } job;
} gpuplan__machine;

/* What one GPU says about itself now. */
typedef struct gpuplan__gpu_state {
  int index;
  int info_ok, tel_ok, procs_ok;
  gpuplan_device_info info;
  gpuplan_device_telemetry t;
  char tel_err[300];
  gpuplan_device_process procs[GPUPLAN__MAX_PROCS];
  size_t nprocs;
  uint64_t total, used, free;  /* as nvidia-smi counts them */
  int has_job;
  gpuplan_mock_job job;
} gpuplan__gpu_state;

/* Open the machine the job's options name (sim, fault, load, busy,
 * mem_fraction, mock_driver, job_model, ..., gpu_ids).  A driver that
 * cannot be opened is not an error (m->be NULL, m->open_rc and open_msg
 * say why); bad options are. */
int gpuplan__machine_open(gpuplan_job *job, gpuplan__machine *m);
void gpuplan__machine_close(gpuplan__machine *m);
/* Read GPU index i (a device index, not a position in sel). */
void gpuplan__gpu_read(gpuplan__machine *m, int i, gpuplan__gpu_state *g);
/* The arguments that rebuild this machine for a recommended command:
 * "--sim a100-80gb:2 --fault ecc@1", or "" for this machine. */
void gpuplan__machine_args(const gpuplan_job *job, char *buf, size_t cap);
/* "GPU 3", "GPUs 0-3,6" */
void gpuplan__gpu_list(const int *gpus, int n, char *buf, size_t cap);

#endif /* GPUPLAN_DEVICES_INT_H */

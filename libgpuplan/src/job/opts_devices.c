/*
 * opts_devices.c: options of smi, topo and doctor.  The order matches the
 * D_* enum of job/devices_int.h.  Every knob `gpuplan smi`, `gpuplan topo`
 * and `gpuplan doctor` have is here, so that Python and Lua can do what the
 * CLI does; nvidia-smi's own spellings (-i, -q, -L, --query-gpu=...,
 * dmon -c N) are the CLI's aliases for these.
 */
#include "job/devices_int.h"

#define DEV (C_SMI | C_DOCTOR)

static const gpuplan_option_info opts[] = {
  /* the machine: this one, or simulated GPUs */
  {"sim", "sim", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "this machine's GPUs",
   "simulated GPUs: SKU[:N] (e.g. a100-80gb:8), N in 1..64", DEV, 0, "devices"},
  {"fault", "fault", GPUPLAN_OPT_LIST, "", 0, 0, NULL, "none",
   "inject a fault, NAME[@GPU] (every GPU without @; repeatable): oom, cuda-mismatch, gpu-not-found, ecc, "
   "thermal, data-starvation, nvlink-down", DEV, 0, "devices"},
  {"load", "load", GPUPLAN_OPT_REAL, "s", 0, 1e6, NULL, "600",
   "simulated seconds of the training program before the view", DEV, 0, "devices"},
  {"busy", "busy", GPUPLAN_OPT_REAL, "1", 0, 1, NULL, "0.95",
   "fraction of the time the simulated GPUs are busy when fed", DEV, 0, "devices"},
  {"mem_fraction", "mem", GPUPLAN_OPT_REAL, "1", 0, 1, NULL, "0.87",
   "fraction of the free memory the simulated job's PyTorch cache holds (without job)", DEV, 0, "devices"},
  {"mock_driver", "driver", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "535.161.08",
   "the NVIDIA driver the simulated node runs (550.54.15, 570.86.15, ...): its CUDA version and nvidia-smi's "
   "layout follow", DEV, 0, "devices"},
  {"job_model", "job", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "none",
   "a model the simulated GPUs train (catalog id or size such as 7B): memory from the memory model, step "
   "time from the performance model, start-up and checkpoints over time", DEV, 0, "devices"},
  {"job_startup", "startup", GPUPLAN_OPT_REAL, "s", 0, 1e6, NULL, "60 with job",
   "seconds the simulated job takes to start (loading weights and data)", DEV, 0, "devices"},
  {"checkpoint_every", "checkpoint-every", GPUPLAN_OPT_REAL, "s", 0, 1e7, NULL, "1800 with job",
   "seconds of training between the simulated job's checkpoints (0: none)", DEV, 0, "devices"},
  {"checkpoint_seconds", "checkpoint-seconds", GPUPLAN_OPT_REAL, "s", 0, 1e6, NULL, "60 with job",
   "seconds a checkpoint takes (the GPUs wait on storage)", DEV, 0, "devices"},
  {"gpu_ids", "id", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "every GPU",
   "GPUs to show: indexes, UUIDs or PCI bus ids, comma-separated (nvidia-smi -i)", DEV, 0, "devices"},

  /* smi: what to read */
  {"query_gpu", "query-gpu", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "none",
   "nvidia-smi --query-gpu fields, comma-separated (rows: one per GPU)", C_SMI, 0, "smi"},
  {"query_compute_apps", "query-compute-apps", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "none",
   "nvidia-smi --query-compute-apps fields: pid, process_name, used_memory, gpu_uuid, ... (rows: one per "
   "process)", C_SMI, 0, "smi"},
  {"smi_format", "format", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "csv",
   "how query rows print: csv[,noheader][,nounits]", C_SMI, 0, "smi"},
  {"samples", "samples", GPUPLAN_OPT_INT, "samples", 1, 86400, NULL, "1",
   "samples to take (dmon -c N, pmon -c N): the document's samples", C_SMI, 0, "smi"},
  {"interval", "interval", GPUPLAN_OPT_REAL, "s", 0.001, 86400, NULL, "1",
   "seconds between samples (simulated on mock GPUs, waited on real ones)", C_SMI, 0, "smi"},
  {"wall_clock", "wall-clock", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "simulated GPUs: timestamps from this machine's clock (not reproducible) instead of simulated time",
   C_SMI, 0, "smi"},
  {"hostname", "hostname", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "this machine's name; gpuplan-mock",
   "the host name the document (and the exporter's Hostname label) carries", C_SMI, 0, "smi"},

  /* doctor: the framework */
  {"torch_cuda", "torch-cuda", GPUPLAN_OPT_REAL, "", 8, 99, NULL, "12.1",
   "the CUDA runtime the framework was built with (torch.version.cuda), X.Y", C_DOCTOR, 0, "framework"},
  {"torch_version", "torch", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "any release",
   "the PyTorch release (2.8): which GPU architectures its wheels carry", C_DOCTOR, 0, "framework"},

  /* topo */
  {"layout", "layout", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "none",
   "place the ranks of a layout TP,PP,DP[,CP] (Megatron order: tp fastest, then cp, dp, pp)", C_TOPO, 0,
   "layout"},
  {"pcie_only", "pcie-only", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "pretend NVLink is absent (the 'NVLink not detected' case)", C_TOPO, 0, "layout"},
};

const gpuplan__opt_table gpuplan__opts_devices = {opts, sizeof opts / sizeof opts[0]};

/* The enum and the table must agree. */
typedef char gpuplan__opts_devices_count_check[(sizeof opts / sizeof opts[0]) == D_COUNT ? 1 : -1];

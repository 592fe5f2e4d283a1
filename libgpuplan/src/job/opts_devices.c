/*
 * opts_devices.c: options of smi, topo and doctor.
 */
#include "job/job_int.h"

static const gpuplan_option_info opts[] = {
  {"sim", "sim", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "this machine's GPUs",
   "simulated GPUs: SKU[:N] (e.g. a100-80gb:8)", C_SMI | C_DOCTOR, 0, "devices"},
};

const gpuplan__opt_table gpuplan__opts_devices = {opts, sizeof opts / sizeof opts[0]};

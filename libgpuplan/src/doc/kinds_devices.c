/*
 * kinds_devices.c: field descriptions of smi, topo and doctor documents.
 */
#include "doc/doc_int.h"

const gpuplan__kind_desc *const gpuplan__kinds_devices[] = {NULL};

/*
 * kinds_validate.c: field description of validate documents.
 */
#include "doc/doc_int.h"

const gpuplan__kind_desc *const gpuplan__kinds_validate[] = {NULL};

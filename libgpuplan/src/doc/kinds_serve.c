/*
 * kinds_serve.c: field description of serve documents.
 */
#include "doc/doc_int.h"

const gpuplan__kind_desc *const gpuplan__kinds_serve[] = {NULL};

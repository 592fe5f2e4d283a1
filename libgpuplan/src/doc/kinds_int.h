/*
 * kinds_int.h: shorthands for writing field descriptions (kinds_*.c only):
 * the value types by one letter, and N(array) for "array, its length".
 */
#ifndef GPUPLAN_KINDS_INT_H
#define GPUPLAN_KINDS_INT_H

#include "doc/doc_int.h"

#define S GPUPLAN_VALUE_STRING
#define I GPUPLAN_VALUE_INT
#define R GPUPLAN_VALUE_REAL
#define B GPUPLAN_VALUE_BOOL
#define A GPUPLAN_VALUE_ARRAY
#define O GPUPLAN_VALUE_OBJECT
#define N(arr) arr, sizeof arr / sizeof arr[0]

#endif /* GPUPLAN_KINDS_INT_H */

/*
 * gpuplan.h: the umbrella header.  Includes every stable public header.
 */
#ifndef GPUPLAN_H
#define GPUPLAN_H

#include "gpuplan/version.h"
#include "gpuplan/common.h"
#include "gpuplan/errors.h"
#include "gpuplan/hostalloc.h"
#include "gpuplan/ctx.h"
#include "gpuplan/catalog.h"
#include "gpuplan/memory.h"
#include "gpuplan/cachealloc.h"
#include "gpuplan/replay.h"
#include "gpuplan/simulate.h"
#include "gpuplan/perf.h"
#include "gpuplan/doc.h"
#include "gpuplan/job.h"

#endif /* GPUPLAN_H */

/*
 * oom.c: reading PyTorch's OutOfMemoryError text back, and saying what it
 * means.  The text's fields are defined in allocator-rules.md section 2:
 * "Tried to allocate" is the segment size (R7), the free figure is
 * cudaMemGetInfo after the retry flush (R19), and "reserved but
 * unallocated" is then mostly memory trapped in split segments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"

/* Parse "<number> <unit>" at p ("2.00 GiB", "0 bytes"); returns the end. */
static const char *size_at(const char *p, uint64_t *out) {
  char *end;
  double v;
  while (*p == ' ') p++;
  v = strtod(p, &end);
  if (end == p || v < 0) return NULL;
  p = end;
  while (*p == ' ') p++;
  if (strncmp(p, "bytes", 5) == 0) *out = (uint64_t)v, p += 5;
  else if (strncmp(p, "KiB", 3) == 0) *out = (uint64_t)(v * 1024.0 + 0.5), p += 3;
  else if (strncmp(p, "MiB", 3) == 0) *out = (uint64_t)(v * 1048576.0 + 0.5), p += 3;
  else if (strncmp(p, "GiB", 3) == 0) *out = (uint64_t)(v * 1073741824.0 + 0.5), p += 3;
  else if (strncmp(p, "TiB", 3) == 0) *out = (uint64_t)(v * 1099511627776.0 + 0.5), p += 3;
  else return NULL;
  return p;
}

/* The size that follows the first occurrence of key in s, or 0 (found = 0). */
static int find_size(const char *s, const char *key, uint64_t *out) {
  const char *p = strstr(s, key);
  if (!p) return 0;
  return size_at(p + strlen(key), out) != NULL;
}

/* The size just before key ("<size> is free"). */
static int size_before(const char *s, const char *key, uint64_t *out) {
  const char *p = strstr(s, key), *q;
  if (!p) return 0;
  q = p;
  while (q > s && q[-1] == ' ') q--;
  while (q > s && q[-1] != ' ') q--; /* unit */
  while (q > s && q[-1] == ' ') q--;
  while (q > s && q[-1] != ' ' && q[-1] != '(' && q[-1] != ';') q--; /* number */
  return size_at(q, out) != NULL;
}

int gpuplan_oom_parse(gpuplan_ctx *ctx, const char *text, gpuplan_oom_info *o) {
  const char *s, *p;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!text || !o) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "oom: NULL argument");
  memset(o, 0, sizeof *o);
  s = strstr(text, "Tried to allocate");
  if (!s)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "oom text: no 'Tried to allocate' (paste the whole 'CUDA out of memory.' line)");
  if (strncmp(s, "Tried to allocate more than 1EB", 31) == 0) {
    o->format = 2;
    o->tried = UINT64_MAX;
    return GPUPLAN_OK;
  }
  if (!find_size(s, "Tried to allocate", &o->tried))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "oom text: cannot read the size after 'Tried to allocate'");
  if ((p = strstr(s, "(GPU ")) != NULL) {
    /* <= 2.0: (GPU 0; T total capacity; P already allocated; F free; [A allowed; ]R reserved in total by PyTorch) */
    o->format = 1;
    o->device = atoi(p + 5);
    if (!size_before(s, " total capacity", &o->total) || !size_before(s, " already allocated", &o->allocated) ||
        !size_before(s, " free;", &o->free) || !size_before(s, " reserved in total by PyTorch", &o->reserved))
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "oom text: the (GPU ...; total capacity; already allocated; free; reserved) part is incomplete");
    size_before(s, " allowed;", &o->allowed);
    o->unallocated = o->reserved > o->allocated ? o->reserved - o->allocated : 0;
  } else {
    o->format = 2;
    p = strstr(s, "GPU ");
    if (!p) return gpuplan__error(ctx, GPUPLAN_EINVAL, "oom text: no 'GPU <n> has a total capacity'");
    o->device = atoi(p + 4);
    if (!find_size(s, "has a total capacity of", &o->total) || !size_before(s, " is free", &o->free))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "oom text: cannot read the total capacity and free memory");
    if (!find_size(s, "Of the allocated memory", &o->allocated))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "oom text: no 'Of the allocated memory <size> is allocated by PyTorch'");
    if (!size_before(s, " is reserved by PyTorch but unallocated", &o->unallocated))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "oom text: no '<size> is reserved by PyTorch but unallocated'");
    o->reserved = o->allocated + o->unallocated;
    find_size(s, "this process has", &o->process);
    size_before(s, " allowed;", &o->allowed);
    find_size(s, "with ", &o->private_pools);
    if (!strstr(s, "allocated in private pools")) o->private_pools = 0;
    /* "Process 1234 has 3.00 GiB memory in use." for other processes. */
    for (p = s; (p = strstr(p, "Process ")) != NULL; p += 8) {
      uint64_t x;
      if (find_size(p, " has ", &x)) {
        o->others += x;
        o->nprocs++;
      }
    }
  }
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

int gpuplan_oom_explain(gpuplan_ctx *ctx, const gpuplan_oom_info *o, gpuplan_oom_verdict *v_out,
                        char **text_out) {
  gpuplan__buf b;
  char A[32], F[32], U[32], P[32], T[32], X[32], N[32];
  gpuplan_oom_verdict v;
  int n = 1;
  uint64_t outside = 0;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!o || !text_out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "oom: NULL argument");
  *text_out = NULL;
  gpuplan_format_size(o->tried, A, sizeof A);
  gpuplan_format_size(o->free, F, sizeof F);
  gpuplan_format_size(o->unallocated, U, sizeof U);
  gpuplan_format_size(o->allocated, P, sizeof P);
  gpuplan_format_size(o->total, T, sizeof T);
  gpuplan_format_size(o->others, X, sizeof X);
  if (o->process > o->reserved) outside = o->process - o->reserved;
  gpuplan_format_size(outside, N, sizeof N);

  if (o->allowed && o->reserved + o->tried > o->allowed && o->free >= o->tried) v = GPUPLAN_OOM_FRACTION;
  else if (o->others > 0 && o->others >= o->tried && o->others * 10 >= o->total) v = GPUPLAN_OOM_OTHER_PROCESS;
  else if (o->unallocated >= o->tried) v = GPUPLAN_OOM_FRAGMENTATION;
  else if (o->others > 0 && o->free + o->others >= o->tried) v = GPUPLAN_OOM_OTHER_PROCESS;
  else if (o->free + o->unallocated >= o->tried) v = GPUPLAN_OOM_MIXED;
  else v = GPUPLAN_OOM_DEMAND;

  gpuplan__buf_init(&b, ctx);
  gpuplan__buf_printf(&b, "The allocator asked the driver for a %s segment; the card (%s) had %s free. "
                          "PyTorch held %s in live tensors and %s cached but unusable for this request",
                      A, T, F, P, U);
  if (o->process) gpuplan__buf_printf(&b, "; outside its allocator this process used %s (CUDA context, NCCL, cuBLAS, other libraries)", N);
  if (o->nprocs) gpuplan__buf_printf(&b, "; %d other process(es) held %s", o->nprocs, X);
  gpuplan__buf_puts(&b, ".\n\n");
  switch (v) {
  case GPUPLAN_OOM_FRAGMENTATION:
    gpuplan__buf_printf(&b, "Verdict: FRAGMENTATION. The %s reserved but unallocated is more than the %s "
                            "requested, but it is split into pieces inside partly used segments, which the "
                            "allocator's retry (empty the cache, try again) cannot return to the driver.\n"
                            "Try, in order:\n", U, A);
    gpuplan__buf_printf(&b, "  %d. PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place; "
                            "the free tail is reused instead of stranded)\n", n++);
    gpuplan__buf_printf(&b, "  %d. PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:<a size just above your common "
                            "large tensors> so big cached blocks are not carved up by small requests\n", n++);
    gpuplan__buf_printf(&b, "  %d. allocate the large, long-lived tensors first (or preallocate buffers) so "
                            "they do not land in the gaps of short-lived ones\n", n++);
    gpuplan__buf_printf(&b, "  %d. replay a memory snapshot under both settings: gpuplan replay FILE.pickle "
                            "--alloc-conf expandable_segments:True --gpu SKU\n", n++);
    if (o->total && o->allocated + o->tried + o->others + outside + o->total / 50 > o->total) {
      /* Less than 2% of the card would be left even with no fragmentation. */
      gpuplan__buf_printf(&b, "But the job is also at the card's limit: with no fragmentation at all, only %.1f%% "
                              "of the card would be left after this allocation, so a fragmentation fix may just "
                              "move the OOM a little later. Also consider:\n",
                          100.0 * (double)(o->total > o->allocated + o->tried + o->others + outside
                                               ? o->total - o->allocated - o->tried - o->others - outside
                                               : 0) / (double)o->total);
      gpuplan__buf_printf(&b, "  %d. reduce the peak: smaller micro-batch, activation checkpointing, sharding "
                              "(gpuplan plan MODEL --gpu SKU quantifies each)\n", n++);
    }
    break;
  case GPUPLAN_OOM_MIXED:
    gpuplan__buf_printf(&b, "Verdict: MOSTLY DEMAND, MADE WORSE BY FRAGMENTATION. Free (%s) plus cached (%s) "
                            "would cover the %s, but neither alone does.\n"
                            "Try, in order:\n", F, U, A);
    gpuplan__buf_printf(&b, "  %d. PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n", n++);
    gpuplan__buf_printf(&b, "  %d. reduce the peak: smaller micro-batch, activation checkpointing "
                            "(gpuplan plan shows which component to cut)\n", n++);
    break;
  case GPUPLAN_OOM_OTHER_PROCESS:
    gpuplan__buf_printf(&b, "Verdict: ANOTHER PROCESS. %d other process(es) hold %s on this GPU; without them "
                            "the %s would fit.\n"
                            "Try, in order:\n", o->nprocs, X, A);
    gpuplan__buf_printf(&b, "  %d. nvidia-smi: find and stop the other process (a stale notebook kernel, a "
                            "second job scheduled on the same GPU)\n", n++);
    gpuplan__buf_printf(&b, "  %d. make the scheduler request whole GPUs (exclusive-process compute mode)\n", n++);
    break;
  case GPUPLAN_OOM_FRACTION:
    {
      char L[32];
      gpuplan_format_size(o->allowed, L, sizeof L);
      gpuplan__buf_printf(&b, "Verdict: MEMORY FRACTION. The card had room, but "
                              "set_per_process_memory_fraction caps PyTorch at %s.\n"
                              "Try, in order:\n", L);
      gpuplan__buf_printf(&b, "  %d. raise or remove the fraction\n", n++);
    }
    break;
  default:
    {
      uint64_t short_by = o->tried > o->free + o->unallocated ? o->tried - o->free - o->unallocated : 0;
      char S[32];
      gpuplan_format_size(short_by, S, sizeof S);
      gpuplan__buf_printf(&b, "Verdict: REAL DEMAND. Even with every cached byte returned, the job is short by "
                              "about %s: the model, optimizer and activations do not fit this card. "
                              "expandable_segments will not fix this.\n"
                              "Try, in order (gpuplan plan MODEL --gpu SKU quantifies each):\n", S);
    }
    gpuplan__buf_printf(&b, "  %d. smaller micro-batch (with gradient accumulation for the same global batch)\n", n++);
    gpuplan__buf_printf(&b, "  %d. activation checkpointing (selective, then full)\n", n++);
    gpuplan__buf_printf(&b, "  %d. shard the model states: ZeRO-2/ZeRO-3 or FSDP over more GPUs\n", n++);
    gpuplan__buf_printf(&b, "  %d. bf16 mixed precision (or 8-bit optimizer states)\n", n++);
    gpuplan__buf_printf(&b, "  %d. more GPUs, or a bigger GPU\n", n++);
    break;
  }
  if (b.failed) {
    gpuplan__buf_dispose(&b);
    return gpuplan__nomem(ctx);
  }
  if (v_out) *v_out = v;
  *text_out = b.ptr; /* allocated by gpuplan__malloc: gpuplan_free() frees it */
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

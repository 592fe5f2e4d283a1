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

#include "alloc/alloc_int.h"
#include "common/internal.h"

/* The fix a message in torch 2.0's (or 1.13's) wording gets instead of
 * expandable_segments, which those releases lacked (2.1: pytorch#96995). */
#define UPGRADE_113_20                                                                                      \
  "expandable_segments (segments that grow in place, so the free tail is reused) came in torch 2.1; this "   \
  "message is in the wording of torch 2.0 or earlier, which has none: upgrade, then "                       \
  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"

/* Parse "<number> <unit>" at p ("2.00 GiB", "0 bytes"); returns the end.
 * The number is decimal, as format_size writes it (no inf, nan or hex),
 * and the size must fit 64 bits (found by fuzz_oom). */
static const char *size_at(const char *p, uint64_t *out) {
  static const struct { const char *unit; double mult; } units[] = {
    {"bytes", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
  };
  char *end;
  double v;
  size_t k;
  while (*p == ' ') p++;
  if (!(*p >= '0' && *p <= '9')) return NULL;
  v = strtod(p, &end);
  if (end == p || !(v >= 0) || (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))) return NULL;
  p = end;
  while (*p == ' ') p++;
  for (k = 0; k < sizeof units / sizeof units[0]; k++) {
    size_t n = strlen(units[k].unit);
    if (strncmp(p, units[k].unit, n) == 0) {
      double b = v * units[k].mult + (k ? 0.5 : 0.0);
      if (!(b < 18446744073709549568.0)) return NULL; /* below 2^64 */
      *out = (uint64_t)b;
      return p + n;
    }
  }
  return NULL;
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

/* The first of needles in s[0..n), or NULL. */
static const char *first_of(const char *s, const char *const *needles, size_t count) {
  const char *best = NULL;
  size_t i;
  for (i = 0; i < count; i++) {
    const char *p = strstr(s, needles[i]);
    if (p && (!best || p < best)) best = p;
  }
  return best;
}

/* The out-of-memory messages PyTorch and CUDA write. */
static const char *const oom_marks[] = {"out of memory. Tried to allocate", "CUDA error: out of memory"};
#define NMARKS (sizeof oom_marks / sizeof oom_marks[0])

/* "[rank3]:" (torchrun's prefix, on every line of a rank's output): the
 * nearest before p in the normalized text, within 512 bytes, or -1. */
static int rank_of(const char *text, const char *p) {
  const char *q = p;
  while (q > text && p - q < 512) {
    q--;
    if (*q == '[' && strncmp(q, "[rank", 5) == 0 && q[5] >= '0' && q[5] <= '9') return atoi(q + 5);
  }
  return -1;
}

/* A log's text as one line: ANSI escape sequences (a rich traceback's
 * colours, inside the numbers too) dropped, every run of white space (a
 * message wrapped at a terminal's width, CRLF ends, tabs) one space.  The
 * result is the caller's to free; NULL: out of memory. */
static char *normalized(gpuplan_ctx *ctx, const char *text) {
  size_t n = strlen(text), o = 0;
  const unsigned char *t = (const unsigned char *)text;
  char *out = gpuplan__malloc(ctx, n + 1);
  if (!out) return NULL;
  while (*t) {
    if (*t == 0x1b) { /* ESC [ params final (0x40-0x7e), or ESC and one byte */
      t++;
      if (*t == '[') {
        t++;
        while (*t && !(*t >= 0x40 && *t <= 0x7e)) t++;
      }
      if (*t) t++;
      continue;
    }
    if (*t == ' ' || *t == '\n' || *t == '\r' || *t == '\t' || *t == '\v' || *t == '\f') {
      if (o && out[o - 1] != ' ') out[o++] = ' ';
      t++;
      continue;
    }
    out[o++] = (char)*t++;
  }
  out[o] = '\0';
  return out;
}

/* The most a process's memory outside PyTorch's allocator may be for a
 * listed "Process N" to be taken for this one (gpuplan_oom_parse).  Our
 * bound, not PyTorch's: the two container logs read (a 2.1 ViT run,
 * Kaggle's Llama-3 notebook) had 0.31 and 0.18 GiB outside; a CUDA context
 * is 0.27 GiB with lazy module loading and 0.62 GiB without (pytorch#86509),
 * and NCCL's buffers, cuBLAS workspaces and other libraries add a few GiB
 * at most. */
#define SELF_OUTSIDE (4ull << 30)

const char *gpuplan__oom_conf_var(int conf_var) {
  return conf_var == 1 ? "PYTORCH_CUDA_ALLOC_CONF"
         : conf_var == 2 ? "PYTORCH_ALLOC_CONF"
         : conf_var == 3 ? "PYTORCH_HIP_ALLOC_CONF"
                         : NULL;
}

int gpuplan_oom_parse(gpuplan_ctx *ctx, const char *text, gpuplan_oom_info *o) {
  const char *s, *p, *next, *cap;
  char *msg = NULL;
  int rc = GPUPLAN_OK;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!text || !o) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "oom: NULL argument");
  memset(o, 0, sizeof *o);
  o->rank = -1;
  if (!(msg = normalized(ctx, text))) return gpuplan__nomem(ctx);
  s = first_of(msg, oom_marks, NMARKS);
  if (!s) {
    gpuplan__free(ctx, msg);
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "oom text: no out-of-memory message (no 'Tried to allocate' nor 'CUDA error: out of "
                          "memory'; paste the whole 'CUDA out of memory.' line)");
  }
  o->rank = rank_of(msg, s);
  /* The first message only: up to where the next one starts. */
  next = NULL;
  for (p = s, o->messages = 0; p; o->messages++) {
    p = first_of(p + 1, oom_marks, NMARKS);
    if (o->messages == 0) next = p;
  }
  if (next) msg[next - msg] = '\0';
  if (strncmp(s, "CUDA error: out of memory", 25) == 0) {
    /* cudaErrorMemoryAllocation from the runtime (context creation, a
     * library's workspace, a kernel): no figures. */
    o->cuda_error = 1;
    o->partial = 1;
    goto done;
  }
  if ((p = strstr(s, "Tried to allocate more than 1EB")) != NULL && p == strstr(s, "Tried to allocate")) {
    /* the allocator's refusal of a size no card has: no figures follow */
    o->format = 2;
    o->tried = UINT64_MAX;
    o->partial = 1;
    goto done;
  }
  s = strstr(s, "Tried to allocate");
  if (!s || !find_size(s, "Tried to allocate", &o->tried)) {
    rc = gpuplan__error(ctx, GPUPLAN_EINVAL, "oom text: cannot read the size after 'Tried to allocate'");
    goto done;
  }
  if ((p = strstr(s, "(GPU ")) != NULL && p - s < 64) {
    /* <= 2.0: (GPU 0; T total capacity; P already allocated; F free; [A allowed; ]R reserved in total by
     * PyTorch), right after the size (a "(GPU " later in the log is not it); 1.0-1.3 said "C cached)" for
     * what was held but not allocated (pytorch#13751) */
    o->format = 1;
    o->conf_var = 1;
    o->device = atoi(p + 5);
    if (!size_before(s, " total capacity", &o->total) || !size_before(s, " already allocated", &o->allocated) ||
        !size_before(s, " free;", &o->free))
      goto cut; /* the (GPU ...) part is cut short */
    if (size_before(s, " reserved in total by PyTorch", &o->reserved)) {
      o->unallocated = o->reserved > o->allocated ? o->reserved - o->allocated : 0;
    } else if (size_before(s, " cached)", &o->unallocated)) {
      o->reserved = o->allocated + o->unallocated;
    } else {
      goto cut;
    }
    size_before(s, " allowed;", &o->allowed);
  } else if ((p = strstr(s, "GPU ")) != NULL &&
             (strstr(s, (cap = "has a total capacity of")) || strstr(s, (cap = "has a total capacty of")))) {
    /* (2.1 wrote "capacty": gpuplan__oom_text_v21; it read PYTORCH_CUDA_ALLOC_CONF) */
    int capty = strcmp(cap, "has a total capacty of") == 0;
    o->format = 2;
    o->device = atoi(p + 4);
    if (!find_size(s, cap, &o->total) || !size_before(s, " is free", &o->free) ||
        !find_size(s, "Of the allocated memory", &o->allocated) ||
        !size_before(s, " is reserved by PyTorch but unallocated", &o->unallocated))
      goto cut; /* cut short */
    o->reserved = o->allocated + o->unallocated;
    /* the variable its advice names: PYTORCH_ALLOC_CONF in 2.10's, else
     * PYTORCH_CUDA_ALLOC_CONF (2.1-2.9, main after 2.10) */
    o->conf_var = strstr(s, "PYTORCH_ALLOC_CONF=")            ? 2
                  : strstr(s, "PYTORCH_HIP_ALLOC_CONF")           ? 3 /* ROCm's builds */
                  : strstr(s, "PYTORCH_CUDA_ALLOC_CONF") || capty ? 1
                                                                   : 0; /* (cut before the advice: unknown) */
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
    /* No "this process has": PyTorch did not find its own PID among
     * NVML's (a container: NVML gives the host's PIDs), so it listed
     * itself as "Process N".  A listed process holding at least what
     * PyTorch reserved is this one when it holds at most SELF_OUTSIDE more
     * (the CUDA context, cuBLAS and NCCL: a few hundred MiB to a few GiB),
     * or when it cannot be another (it and PyTorch's reservation would not
     * both fit in what the card had in use); two such cannot be told apart. */
    if (!o->process && o->nprocs) {
      uint64_t self = 0, used = o->total > o->free ? o->total - o->free : 0;
      int cands = 0;
      for (p = s; (p = strstr(p, "Process ")) != NULL; p += 8) {
        uint64_t x;
        if (find_size(p, " has ", &x) && o->reserved && x >= o->reserved &&
            (x - o->reserved <= SELF_OUTSIDE || o->reserved + x > used + used / 100))
          self = x, cands++;
      }
      if (cands == 1) {
        o->process = self;
        o->others -= self;
        o->nprocs--;
        o->self_listed = 1;
      }
    }
  } else {
    goto cut;
  }
  goto done;
cut:
  /* The message stops after the size (the seed ticket's), or part way:
   * only what was asked for is known. */
  {
    uint64_t tried = o->tried;
    int device = o->device, messages = o->messages, rank = o->rank;
    memset(o, 0, sizeof *o);
    o->tried = tried;
    o->device = device;
    o->messages = messages;
    o->rank = rank;
    o->partial = 1;
  }
done:
  gpuplan__free(ctx, msg);
  if (rc == GPUPLAN_OK) gpuplan__clear(ctx);
  return rc;
}

/* The fixes for real demand, numbered from *n. */
static void demand_fixes(gpuplan__buf *b, int *n) {
  gpuplan__buf_printf(b, "  %d. smaller micro-batch (with gradient accumulation for the same global batch)\n", (*n)++);
  gpuplan__buf_printf(b, "  %d. activation checkpointing (selective, then full)\n", (*n)++);
  gpuplan__buf_printf(b, "  %d. shard the model states: ZeRO-2/ZeRO-3 or FSDP over more GPUs\n", (*n)++);
  gpuplan__buf_printf(b, "  %d. bf16 mixed precision (or 8-bit optimizer states)\n", (*n)++);
  gpuplan__buf_printf(b, "  %d. more GPUs, or a bigger GPU\n", (*n)++);
}

int gpuplan_oom_explain(gpuplan_ctx *ctx, const gpuplan_oom_info *o, gpuplan_oom_verdict *v_out,
                        char **text_out) {
  gpuplan__buf b;
  char A[32], F[32], U[32], P[32], T[32], X[32], N[32], H[32], PS[32];
  const char *env = o->conf_var ? gpuplan__oom_conf_var(o->conf_var) : "PYTORCH_ALLOC_CONF";
  /* a message that does not name its variable: which one depends on the
   * release, said beside each fix */
  const char *env_note = o->conf_var ? "" : " (PYTORCH_CUDA_ALLOC_CONF before torch 2.10)";
  gpuplan_oom_verdict v;
  int n = 1;
  uint64_t outside = 0, headroom = 0;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!o || !text_out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "oom: NULL argument");
  *text_out = NULL;
  gpuplan_format_size(o->tried, A, sizeof A);
  gpuplan_format_size(o->free, F, sizeof F);
  gpuplan_format_size(o->unallocated, U, sizeof U);
  gpuplan_format_size(o->allocated, P, sizeof P);
  gpuplan_format_size(o->total, T, sizeof T);
  gpuplan_format_size(o->others, X, sizeof X);
  /* Memory outside PyTorch's allocator: this process's own (CUDA context,
   * NCCL, cuBLAS) when the message gives it; otherwise what neither
   * PyTorch nor the free figure accounts for (other processes included). */
  if (o->process > o->reserved) outside = o->process - o->reserved;
  else if (!o->process && o->total > o->reserved + o->free + o->others)
    outside = o->total - o->reserved - o->free - o->others;
  gpuplan_format_size(outside, N, sizeof N);
  /* What the card would have left after this allocation with no
   * fragmentation at all: the free memory plus every cached byte. */
  if (o->free + o->unallocated > o->tried) headroom = o->free + o->unallocated - o->tried;
  gpuplan_format_size(headroom, H, sizeof H);
  gpuplan_format_size(o->process, PS, sizeof PS);

  if (o->partial) v = GPUPLAN_OOM_UNKNOWN;
  /* ("allowed" is printed to 3 significant figures: 1.05 GiB may be 5 MiB
   * more than the cap, so within 0.5% it refused) */
  else if (o->allowed && o->reserved + o->tried + o->allowed / 200 > o->allowed && o->free >= o->tried)
    v = GPUPLAN_OOM_FRACTION;
  else if (o->others > 0 && o->others >= o->tried && o->others * 10 >= o->total) v = GPUPLAN_OOM_OTHER_PROCESS;
  else if (o->unallocated >= o->tried)
    /* Fragmented, but if defragmenting would leave under 2% of the card,
     * the job is at the card's limit: demand (EC-2, the Colab T4 case). */
    v = o->total && headroom * 50 < o->total ? GPUPLAN_OOM_DEMAND : GPUPLAN_OOM_FRAGMENTATION;
  else if (o->others > 0 && o->free + o->others >= o->tried) v = GPUPLAN_OOM_OTHER_PROCESS;
  else if (o->free + o->unallocated >= o->tried) v = GPUPLAN_OOM_MIXED;
  else v = GPUPLAN_OOM_DEMAND;

  gpuplan__buf_init(&b, ctx);
  if (o->messages > 1) {
    if (o->rank >= 0)
      gpuplan__buf_printf(&b, "The text holds %d out-of-memory messages; this is the first, from rank %d (the "
                              "others usually follow from it: a rank that fails stops the collective the rest "
                              "wait in).\n\n", o->messages, o->rank);
    else
      gpuplan__buf_printf(&b, "The text holds %d out-of-memory messages; this is the first.\n\n", o->messages);
  }
  if (o->cuda_error) {
    gpuplan__buf_puts(&b, "\"CUDA error: out of memory\" comes from the CUDA runtime, not from PyTorch's caching "
                          "allocator (whose message says \"Tried to allocate\"): a cudaMalloc the allocator does not "
                          "make ran out of memory. The usual ones: creating the CUDA context on a GPU that is "
                          "already full (another process), cuBLAS/cuDNN workspaces, NCCL's communicator buffers, "
                          "or a custom kernel or extension. CUDA reports errors asynchronously, so the line that "
                          "raised it may not be the one that failed.\n\n"
                          "Verdict: UNKNOWN from this message alone.\nTry, in order:\n");
    gpuplan__buf_printf(&b, "  %d. nvidia-smi: another process holding the GPU (gpuplan smi shows what to look "
                            "for)\n", n++);
    gpuplan__buf_printf(&b, "  %d. CUDA_LAUNCH_BLOCKING=1 to find the call that failed\n", n++);
    gpuplan__buf_printf(&b, "  %d. leave room outside PyTorch: torch.cuda.set_per_process_memory_fraction(0.9) "
                            "keeps PyTorch's cache from taking the whole card\n", n++);
    gpuplan__buf_printf(&b, "  %d. if PyTorch's own OutOfMemoryError appears earlier in the log, explain that "
                            "message instead\n", n++);
  } else if (o->partial && o->tried == UINT64_MAX) {
    gpuplan__buf_puts(&b, "\"Tried to allocate more than 1EB memory\" is the allocator refusing a size no card has, "
                          "before it asks the driver: the size itself is wrong, an overflowed or negative shape "
                          "(a product of dimensions past 2^63, a -1 that was not inferred) or a size in the wrong "
                          "unit.\n\nVerdict: UNKNOWN from this message alone: not a memory shortage.\n"
                          "Try, in order:\n");
    gpuplan__buf_printf(&b, "  %d. print the shapes of the tensors of the failing line (torch.Size), and check the "
                            "arithmetic that built them\n", n++);
    gpuplan__buf_printf(&b, "  %d. CUDA_LAUNCH_BLOCKING=1 to find the call if the traceback is unclear\n", n++);
  } else if (o->partial) {
    gpuplan__buf_printf(&b, "The allocator asked the driver for a %s segment and the driver refused. The message "
                            "stops there: it does not say what the card had free, nor how much PyTorch held in "
                            "tensors and in its cache, so fragmentation cannot be told from real demand.\n\n"
                            "Verdict: UNKNOWN from this message alone.\nTry, in order:\n", A);
    gpuplan__buf_printf(&b, "  %d. paste the whole message: PyTorch 2.1 and later add \"GPU 0 has a total "
                            "capacity of ... Of the allocated memory ...\", and gpuplan explain-oom reads it\n", n++);
    gpuplan__buf_printf(&b, "  %d. print torch.cuda.memory_summary() where it fails: \"Non-releasable memory\" is "
                            "the fragmentation\n", n++);
    gpuplan__buf_printf(&b, "  %d. record a snapshot (torch.cuda.memory._record_memory_history(), then "
                            "_dump_snapshot()) and replay it: gpuplan replay FILE.pickle --gpu SKU, then with "
                            "--alloc-conf expandable_segments:True\n", n++);
    gpuplan__buf_printf(&b, "  %d. estimate the job: gpuplan plan MODEL --gpu SKU says whether it fits at all\n",
                        n++);
  } else {
    if (o->private_pools && o->private_pools <= o->allocated) {
      /* 2.4 on (R35): "allocated by PyTorch" counts the free blocks
       * cached in private pools, which no tensor holds. */
      char L[32], Q[32];
      gpuplan_format_size(o->allocated - o->private_pools, L, sizeof L);
      gpuplan_format_size(o->private_pools, Q, sizeof Q);
      gpuplan__buf_printf(&b, "The allocator asked the driver for a %s segment; the card (%s) had %s free. "
                              "PyTorch held %s in live tensors, %s cached in private pools (CUDA graphs, "
                              "torch.cuda.MemPool: kept for their replays, so neither the OOM retry nor "
                              "empty_cache() can return it while they live) and %s cached but unusable for "
                              "this request", A, T, F, L, Q, U);
    } else {
      gpuplan__buf_printf(&b, "The allocator asked the driver for a %s segment; the card (%s) had %s free. "
                              "PyTorch held %s in live tensors and %s cached but unusable for this request",
                          A, T, F, P, U);
    }
    if (o->process && o->self_listed)
      gpuplan__buf_printf(&b, "; outside its allocator this process used %s (CUDA context, NCCL, cuBLAS, other "
                              "libraries; the message lists it as a 'Process N' of %s, at least what PyTorch "
                              "reserved: in a container NVML gives the host's process IDs, so PyTorch did not "
                              "know itself)", N, PS);
    else if (o->process)
      gpuplan__buf_printf(&b, "; outside its allocator this process used %s (CUDA context, NCCL, cuBLAS, other "
                              "libraries)", N);
    else if (outside)
      gpuplan__buf_printf(&b, "; %s of the card was outside PyTorch's allocator (the CUDA context, libraries, "
                              "other processes)", N);
    if (o->nprocs) gpuplan__buf_printf(&b, "; %d other process(es) held %s", o->nprocs, X);
    gpuplan__buf_puts(&b, ".\n\n");
  }
  if (!o->cuda_error && !o->partial && o->private_pools && o->private_pools * 10 >= o->tried) {
    /* A pool whose cached memory alone would go far toward the request:
     * what the graphs keep is the first thing to look at. */
    char Q[32];
    gpuplan_format_size(o->private_pools, Q, sizeof Q);
    gpuplan__buf_printf(&b, "The private pools' %s is memory a capture used and keeps (cached, not in tensors): "
                            "a CUDA graph reserves its high-water mark away from the default pools for as long "
                            "as it lives.", Q);
    if (o->unallocated >= o->tried)
      gpuplan__buf_printf(&b, " If this OOM came during a capture, the %s reserved but unallocated need not be "
                              "fragments: the retry does not empty the cache while a capture is underway, so "
                              "whole segments the warm-up left cached stay, and the capture cannot use them.", U);
    gpuplan__buf_puts(&b, "\nFirst:\n");
    gpuplan__buf_printf(&b, "  %d. torch.cuda.empty_cache() between the warm-up and the capture, so the capture "
                            "reuses the warm-up's cached memory (gpuplan simulate --cuda-graph "
                            "--empty-cache-before-capture shows the difference)\n", n++);
    gpuplan__buf_printf(&b, "  %d. capture several graphs into one pool (torch.cuda.graph(g, pool=first.pool()), "
                            "torch.compile's CUDA graph trees do) instead of one pool each; delete graphs no "
                            "longer replayed, then torch.cuda.empty_cache()\n", n++);
  }
  switch (v) {
  case GPUPLAN_OOM_UNKNOWN:
    break;
  case GPUPLAN_OOM_FRAGMENTATION:
    gpuplan__buf_printf(&b, "Verdict: FRAGMENTATION. The %s reserved but unallocated is more than the %s "
                            "requested, but it is split into pieces inside partly used segments, which the "
                            "allocator's retry (empty the cache, try again) cannot return to the driver.\n"
                            "Try, in order:\n", U, A);
    if (o->format == 1) {
      /* The wording of torch 2.0 or earlier (review A-8): no
       * expandable_segments (2.1, pytorch#96995), and the variable is
       * PYTORCH_CUDA_ALLOC_CONF. */
      gpuplan__buf_printf(&b, "  %d. PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:<a size just above your common "
                              "large tensors> so big cached blocks are not carved up by small requests\n", n++);
      gpuplan__buf_printf(&b, "  %d. %s\n", n++, UPGRADE_113_20);
    } else {
      /* PYTORCH_ALLOC_CONF reaches the CUDA allocator from 2.10 (conf.c,
       * gpuplan__reads_pytorch_alloc_conf). */
      if (o->conf_var)
        gpuplan__buf_printf(&b, "  %d. %s=expandable_segments:True (the variable this message's release reads; "
                                "segments grow in place; the free tail is reused instead of stranded)\n",
                            n++, env);
      else
        gpuplan__buf_printf(&b, "  %d. PYTORCH_ALLOC_CONF=expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF before "
                                "torch 2.10, the first whose CUDA allocator reads PYTORCH_ALLOC_CONF; segments "
                                "grow in place; the free tail is reused instead of stranded)\n", n++);
      gpuplan__buf_printf(&b, "  %d. %s=max_split_size_mb:<a size just above your common "
                              "large tensors>%s so big cached blocks are not carved up by small requests\n", n++,
                          env, env_note);
    }
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
    if (o->format == 1) gpuplan__buf_printf(&b, "  %d. %s\n", n++, UPGRADE_113_20);
    else gpuplan__buf_printf(&b, "  %d. %s=expandable_segments:True%s\n", n++, env, env_note);
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
    if (o->unallocated >= o->tried) {
      /* Fragmented too, but defragmenting buys under 2% of the card. */
      gpuplan__buf_printf(&b, "Verdict: REAL DEMAND, AT THE CARD'S LIMIT. %.1f%% of the card is in live tensors. "
                              "The %s cached but unusable would serve this %s request if it were not in pieces, "
                              "so the fragmentation is real, but removing it all would leave only %s (%.1f%% of "
                              "the card): the job needs about as much as the card has. expandable_segments may "
                              "carry it past this allocation, and is enough only if the job is at its last "
                              "allocations (replay a snapshot to know).\n"
                              "Try, in order (gpuplan plan MODEL --gpu SKU quantifies each):\n",
                          o->total ? 100.0 * (double)o->allocated / (double)o->total : 0.0, U, A, H,
                          o->total ? 100.0 * (double)headroom / (double)o->total : 0.0);
    } else {
      uint64_t short_by = o->tried > o->free + o->unallocated ? o->tried - o->free - o->unallocated : 0;
      char S[32];
      gpuplan_format_size(short_by, S, sizeof S);
      gpuplan__buf_printf(&b, "Verdict: REAL DEMAND. Even with every cached byte returned, the job is short by "
                              "about %s: the model, optimizer and activations do not fit this card. "
                              "expandable_segments will not fix this.\n"
                              "Try, in order (gpuplan plan MODEL --gpu SKU quantifies each):\n", S);
    }
    demand_fixes(&b, &n);
    if (o->unallocated >= o->tried && o->format == 1)
      gpuplan__buf_printf(&b, "  %d. to use the last %s: %s\n", n++, U, UPGRADE_113_20);
    else if (o->unallocated >= o->tried)
      gpuplan__buf_printf(&b, "  %d. %s=expandable_segments:True%s, to use the last %s\n", n++, env, env_note, U);
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

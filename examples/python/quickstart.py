"""gpuplan from Python: the 2 a.m. ticket, a layout search, and a replay."""
import os
import sys

import gpuplan

GiB = 2**30
cat = gpuplan.Catalog()

# 1. Does a full fine-tune of Llama-2-7B fit one A100-40GB?  (the seed ticket)
p = cat.plan("llama-2-7b", "a100-40gb")
print(f"{p.model} on {p.gpus} x {p.gpu}: {p.worst.total_bytes / GiB:.1f} GiB per GPU "
      f"of {p.worst.capacity_bytes / GiB:.1f} -> {'fits' if p.worst.fits else 'does not fit'}")
for c in p.worst.components:
    print(f"  {c.name:24s} {c.bytes / GiB:7.2f} GiB")
print("fix:", " -> ".join(r.change for r in p.ladder))

# 2. The best layouts for GPT-3 175B on 1024 A100-80GB
s = cat.search("gpt3-175b", "a100-80gb", gpus=1024, global_batch=1536, top=3)
print(f"\n{s.evaluated} layouts evaluated; best:")
for b in s.best:
    print(f"  tp {b.tp} pp {b.pp} dp {b.dp} {b.dp_mode:5s} mb {b.micro_batch} recompute {b.recompute:9s}: "
          f"{b.step_s:.2f} s/step, MFU {100 * b.mfu:.1f}%")

# 3. Errors are exceptions that are also the builtin you would catch
try:
    cat.plan("llama-2-7b", "h100-80gb")
except KeyError as e:  # gpuplan.AmbiguousError -> NotFoundError -> KeyError
    print(f"\n{type(e).__name__} ({e.gpuplan_errname}): {e}")

# 4. Replay a real torch.cuda.memory snapshot under another allocator setting
traces = os.environ.get("GPUPLAN_TRACES", "tests/data/torch-snapshots")
snap = os.path.join(traces, "cs336-ctx128-forward.pickle")
if os.path.exists(snap):
    for conf in (None, "expandable_segments:True"):
        r = gpuplan.replay(snap, alloc_conf=conf, capacity=18700 * 2**20)
        print(f"\nreplay with {conf or 'defaults'}: {r.num_ooms} OOM, "
              f"peak reserved {r.peak_reserved_bytes / GiB:.2f} GiB")
else:
    print("(no snapshot at", snap, ")", file=sys.stderr)

#!/usr/bin/env python3
"""Make the crafted snapshots of tests/data/replay/ that this script owns
(the older ones, linear-grad-*.pickle and s8-recorded-oom.pickle, were made
by hand and are kept as they are).  Deterministic: running it again gives
the same bytes.  Run from anywhere: python3 tests/data/replay/generate.py

Each file is a torch.cuda.memory._dump_snapshot() dict (or, for torch 1.13,
its plain list of segments) holding only plain data.  What each one tests
is written next to it below and in tests/unit/test_replay.c.
"""
import os
import pickle

HERE = os.path.dirname(os.path.abspath(__file__))
SNAPS = os.path.join(HERE, "..", "torch-snapshots")
MiB = 1 << 20
S0 = 0x7F0000000000
S1 = 0x7F0002000000


class _Plain(pickle.Unpickler):
    """The vendored snapshots hold plain data only: refuse every class."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused %s.%s" % (module, name))


def load(name):
    with open(os.path.join(SNAPS, name), "rb") as f:
        return _Plain(f).load()


def strip_frames(d):
    """Frames make the files big and nothing here reads them."""
    for seg in d["segments"]:
        seg.pop("frames", None)
        for b in seg["blocks"]:
            b.pop("frames", None)
    d["device_traces"] = [[{k: v for k, v in e.items() if k != "frames"} for e in t] for t in d["device_traces"]]
    return d


def seg(addr, blocks):
    """A large-pool segment from [(size, requested, allocated)]."""
    return {"device": 0, "address": addr, "total_size": sum(b[0] for b in blocks), "stream": 0,
            "segment_type": "large", "is_expandable": False,
            "blocks": [{"size": s, "requested_size": r, "state": "active_allocated" if a else "inactive"}
                       for s, r, a in blocks]}


def ev(action, addr, size):
    return {"action": action, "addr": addr, "size": size, "stream": 0}


def free(addr, size):
    return [ev("free_requested", addr, size), ev("free_completed", addr, size)]


def write(name, obj):
    with open(os.path.join(HERE, name), "wb") as f:
        pickle.dump(obj, f, protocol=4)


SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False}

# AL-1: the ring buffer dropped a free_requested; the trace starts with its
# free_completed (linear-grad cut after event 11).  Exact: 6 allocations,
# 2 cudaMallocs.
d = strip_frames(load("linear-grad.pickle"))
d["device_traces"][0] = d["device_traces"][0][12:]
write("linear-grad-cut-free-completed.pickle", d)

# AL-1: an unsplit remainder the rebuild must infer.  Before the trace:
# A = [0, 3) MiB and B = [3, 7.5) MiB allocated, B for a 4 MiB request
# (handed out whole: 0.5 MiB would have been left), [7.5, 20) free.  The
# trace allocates X (12.5 MiB) at 7.5, frees X, then frees B.  Undoing
# B's free alone gives B 4 MiB; X's free then leaves a 0.5 MiB free
# fragment, which no large-pool free block can be: it is B's.
A, B, X = S0, S0 + 3 * MiB, S0 + 7 * MiB + MiB // 2
write("unsplit-remainder.pickle", {
    "segments": [seg(S0, [(3 * MiB, 3 * MiB, True), (17 * MiB, 0, False)])],
    "device_traces": [[ev("alloc", X, 12 * MiB + MiB // 2)] + free(X, 12 * MiB + MiB // 2) + free(B, 4 * MiB)],
    "allocator_settings": SETTINGS})

# AL-1: the same remainder, shown only by where an allocation did *not*
# go.  Before the trace: A [0, 3), B [3, 7.5) (4 MiB request), a 4.8 MiB
# free block, Q [12.3, 20) allocated; a second, empty 20 MiB segment.
# A 5 MiB allocation goes to the second segment: the free block after B
# was too small, so B is longer than 4.3 MiB (by 0.3 to 1 MiB).
Q = S0 + 12 * MiB + 3 * MiB // 10 // 512 * 512
write("unsplit-remainder-elsewhere.pickle", {
    "segments": [seg(S0, [(3 * MiB, 3 * MiB, True), (Q - B, 0, False), (S0 + 20 * MiB - Q, S0 + 20 * MiB - Q, True)]),
                 seg(S1, [(5 * MiB, 5 * MiB, True), (15 * MiB, 0, False)])],
    "device_traces": [[ev("alloc", S1, 5 * MiB)] + free(B, 4 * MiB)],
    "allocator_settings": SETTINGS})

# AL-1: more such blocks than the replay learns (64): the events from the
# first one it cannot place are reported unchecked, with the trace's own
# peaks, instead of a divergence.  65 copies of the layout above, each
# 32 MiB apart, and one 340 MiB segment the 5 MiB allocations go to.
segs, trace = [], []
BIG = S0 + 65 * 32 * MiB
for i in range(65):
    base = S0 + i * 32 * MiB
    segs.append(seg(base, [(3 * MiB, 3 * MiB, True), (Q - B, 0, False), (S0 + 20 * MiB - Q, S0 + 20 * MiB - Q, True)]))
    trace.append(ev("alloc", BIG + i * 5 * MiB, 5 * MiB))
for i in range(65):
    trace += free(S0 + i * 32 * MiB + 3 * MiB, 4 * MiB)
segs.append(seg(BIG, [(5 * MiB, 5 * MiB, True)] * 65 + [(15 * MiB, 0, False)]))
write("unsplit-remainder-many.pickle", {"segments": segs, "device_traces": [trace], "allocator_settings": SETTINGS})

# AL-2: torch 1.13's snapshot, a plain list of segments (linear-grad's).
write("linear-grad-113-list.pickle", strip_frames(load("linear-grad.pickle"))["segments"])

# AL-5: a file with nothing to check.
write("empty-trace.pickle", {"segments": [], "device_traces": [[]]})

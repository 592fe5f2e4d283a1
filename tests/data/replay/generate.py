#!/usr/bin/env python3
"""Make the crafted snapshots of tests/data/replay/ that this script owns
(the older ones, linear-grad-*.pickle and s8-recorded-oom.pickle, were made
by hand and are kept as they are; inconsistent-trace.pickle is an input
libFuzzer's fuzz_snapshot made, kept as it found it).  Deterministic: running it again gives
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

# A segment_free the rebuild cannot undo: the segment it names is still
# live at the end, at the freed address (segment-free-live) or holding it
# (segment-free-inside-live), or a live segment starts inside the freed
# range (segment-free-over-live).  Undone, it would make a second segment
# over the first; the start diverges at that event instead.
write("segment-free-live.pickle", {
    "segments": [seg(S0, [(20 * MiB, 0, False)])],
    "device_traces": [[ev("segment_free", S0, 20 * MiB)]],
    "allocator_settings": SETTINGS})
write("segment-free-inside-live.pickle", {
    "segments": [seg(S0, [(20 * MiB, 0, False)])],
    "device_traces": [[ev("segment_free", S0 + 2 * MiB, 2 * MiB)]],
    "allocator_settings": SETTINGS})
write("segment-free-over-live.pickle", {
    "segments": [seg(S0 + 4 * MiB, [(20 * MiB, 0, False)])],
    "device_traces": [[ev("segment_free", S0, 8 * MiB)]],
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


# --- expandable segments (expandable_segments:True, torch 2.1-2.10) ---------
#
# No real trace recorded with expandable segments is vendored (no GPU), so
# these are derived by hand from c10/cuda/CUDACachingAllocator.cpp, in the
# exact format torch/csrc/cuda/memory_snapshot.cpp writes.  The rules used:
#  - one ExpandableSegment (a virtual reservation) per (stream, pool), made
#    only when no unmapped space of that (stream, pool) has room
#    (find_expandable_block); pages are 20 MiB (large pool) or 2 MiB
#    (small); map_block maps the pages covering the request from the
#    candidate and records segment_map(start of the mapped range, bytes);
#  - get_free_block is best fit over mapped free blocks; should_split under
#    expandable segments: split when >= 512 bytes are left;
#  - empty_cache() unmaps the whole free pages of every free block
#    (segment_unmap, page-aligned) and keeps partial pages mapped;
#  - the snapshot lists one segment dict per contiguous *mapped* range.
# The derivation, event by event (L0: large pool, stream 0; SP: small pool,
# stream 0; L1: large pool, stream 1):
#  0 segment_map L0+0 40 MiB   alloc A 30 MiB: no free block; a new
#                              reservation at L0; 2 pages cover 30 MiB
#  1 alloc L0+0 30 MiB         A split off the 40 MiB block, 10 MiB free
#  2 alloc L0+30 5 MiB         B: best fit is the 10 MiB tail; 5 MiB left
#  3,4 free A                  [L0, 30) free (B, allocated, after it)
#  5 alloc L0+0 25 MiB         C: best fit of {5 @35, 30 @0} is 30 @0
#  6 segment_map L0+40 20 MiB  D 12 MiB: no free block >= 12; the free
#                              5 MiB @35 before the unmapped tail has room:
#                              map 7 MiB more = 1 page @40, merged: 25 @35
#  7 alloc L0+35 12 MiB        D; 13 MiB free @47
#  8,9 free B                  merges with 5 @25: 10 @25
#  10,11 free C                merges: 35 @0
#  12 segment_unmap L0+0 20 MiB  empty_cache(): whole pages of 35 @0 is
#                              [0, 20); 13 @47 has none ([47, 60) holds no
#                              whole page); 15 @20 stays mapped and free
#  13 segment_map SP+0 2 MiB   E 4096 bytes, small pool: a reservation of
#                              its own, 1 page of 2 MiB
#  14 alloc SP+0 4096          E
#  15 alloc SP+4096 1 MiB      F (1 MiB is still the small pool)
#  16 segment_map L1+0 40 MiB  G 30 MiB on stream 1: its own reservation
#  17 alloc L1+0 30 MiB        G
#  18 segment_map L0+0 20 MiB  H 22 MiB: no free block >= 22 (15 @20,
#                              13 @47); the lowest unmapped range, the
#                              20 MiB hole at the base, plus the free 15
#                              after it has room: map it, merged: 35 @0
#  19 alloc L0+0 22 MiB        H; 13 MiB free @22
# Final mapped ranges: L0 [0, 60) = H 22, free 13, D 12, free 13;
# SP [0, 2 MiB) = E, F, free; L1 [0, 40) = G 30, free 10.
L0, SP, L1 = 0x7F4000000000, 0x7F6000000000, 0x7F8000000000
XSETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "max_split_size": -1,
             "garbage_collection_threshold": 0.0, "expandable_segments": True, "release_lock_on_cudamalloc": False,
             "pinned_use_cuda_host_register": False, "roundup_power2_divisions": {}}


def xseg(addr, blocks, stream=0, small=False, pool=(0, 0)):
    """A mapped range of an expandable segment from [(size, requested, allocated)]."""
    out, at = [], addr
    for s, r, a in blocks:
        out.append({"address": at, "size": s, "requested_size": r,
                    "state": "active_allocated" if a else "inactive", "frames": []})
        at += s
    return {"device": 0, "address": addr, "total_size": at - addr,
            "allocated_size": sum(b[0] for b in blocks if b[2]), "active_size": sum(b[0] for b in blocks if b[2]),
            "requested_size": sum(b[1] for b in blocks if b[2]), "stream": stream,
            "segment_type": "small" if small else "large", "segment_pool_id": pool, "is_expandable": True,
            "frames": [], "blocks": out}


_T = [1700000000000000]


def xev(action, addr, size, stream=0):
    _T[0] += 10
    return {"action": action, "addr": addr, "size": size, "stream": stream, "frames": [], "time_us": _T[0],
            "compile_context": "N/A", "user_metadata": ""}


def xfree(addr, size, stream=0):
    return [xev("free_requested", addr, size, stream), xev("free_completed", addr, size, stream)]


def expandable_trace(d_at=L0 + 35 * MiB):
    return ([xev("segment_map", L0, 40 * MiB), xev("alloc", L0, 30 * MiB), xev("alloc", L0 + 30 * MiB, 5 * MiB)]
            + xfree(L0, 30 * MiB)
            + [xev("alloc", L0, 25 * MiB), xev("segment_map", L0 + 40 * MiB, 20 * MiB), xev("alloc", d_at, 12 * MiB)]
            + xfree(L0 + 30 * MiB, 5 * MiB) + xfree(L0, 25 * MiB)
            + [xev("segment_unmap", L0, 20 * MiB),
               xev("segment_map", SP, 2 * MiB), xev("alloc", SP, 4096), xev("alloc", SP + 4096, MiB),
               xev("segment_map", L1, 40 * MiB, 1), xev("alloc", L1, 30 * MiB, 1),
               xev("segment_map", L0, 20 * MiB), xev("alloc", L0, 22 * MiB)])


def expandable_final(d_at=L0 + 35 * MiB, with_h=True):
    lead = d_at - L0 - 22 * MiB
    l0 = ([(22 * MiB, 22 * MiB, True), (lead, 0, False)] if with_h else [(15 * MiB + (d_at - L0 - 35 * MiB), 0, False)])
    l0 += [(12 * MiB, 12 * MiB, True), (L0 + 60 * MiB - d_at - 12 * MiB, 0, False)]
    return [xseg(L0 if with_h else L0 + 20 * MiB, l0),
            xseg(SP, [(4096, 4096, True), (MiB, MiB, True), (2 * MiB - 4096 - MiB, 0, False)], small=True),
            xseg(L1, [(30 * MiB, 30 * MiB, True), (10 * MiB, 0, False)], stream=1)]


ANNOTATIONS = [{"name": "forward", "stage": "START", "device": 0, "time_us": 1700000000000001},
               {"name": "forward", "stage": "END", "device": 0, "time_us": 1700000000000150}]


def xsnap(segments, trace):
    return {"segments": segments, "device_traces": [trace], "allocator_settings": XSETTINGS,
            "external_annotations": ANNOTATIONS}


# Exact: 20 events, every map, unmap and address checked.
write("expandable.pickle", xsnap(expandable_final(), expandable_trace()))
# Divergence: D moved 1 MiB up (in the trace and, consistently, in the
# final state): the model puts it at L0+35 MiB at event 7.
write("expandable-moved-alloc.pickle", xsnap(expandable_final(L0 + 36 * MiB), expandable_trace(L0 + 36 * MiB)))
# Mid-run, checkable: the ring buffer kept events 13-17 only.  The start
# rebuilt from the end has L0's mapped range [20, 60) MiB (15 free, D,
# 13 free); nothing after needs to know where L0's reservation begins.
write("expandable-midrun.pickle", xsnap(expandable_final(with_h=False), expandable_trace()[13:18]))
# Mid-run, not checkable: events 13-19.  H goes into the unmapped hole at
# L0's base, which the file cannot show (the start's lowest mapped range
# is at L0+20 MiB): event 6 (H's alloc) is reported unchecked.
write("expandable-midrun-hole.pickle", xsnap(expandable_final(), expandable_trace()[13:]))

# A private pool (segment_pool_id (1, 0): a MemPool's): its free 20 MiB
# segment must not serve the default pool's 5 MiB allocation, which went to
# a new segment at S1.  The trace does not say which pool an allocation was
# made in, but the segment it lies in does: S1, allocated by the trace and
# alive at the end, is the default pool's, so the replay is exact.
pooled = seg(S0, [(20 * MiB, 0, False)])
pooled["segment_pool_id"] = (1, 0)
dflt = seg(S1, [(5 * MiB, 5 * MiB, True), (15 * MiB, 0, False)])
dflt["segment_pool_id"] = (0, 0)
write("private-pool.pickle", {"segments": [pooled, dflt],
                              "device_traces": [[ev("segment_alloc", S1, 20 * MiB), ev("alloc", S1, 5 * MiB)]],
                              "allocator_settings": SETTINGS, "external_annotations": []})

# A block pending free (free_requested, no free_completed yet) next to a
# free one: the model frees at free_requested, so in its layout B has
# merged with A's free space and the segment's free tail; the page must
# still draw B, at S0 + 2 MiB, as pending.  D (22 MiB) then takes a new
# segment at S1 and makes the peak, where the page's map is drawn.
pending = seg(S0, [(2 * MiB, 0, False), (2 * MiB, 2 * MiB, True), (16 * MiB, 0, False)])
pending["blocks"][1]["state"] = "active_pending_free"
write("pending-free-merged.pickle", {
    "segments": [pending, seg(S1, [(22 * MiB, 22 * MiB, True)])],
    "device_traces": [[ev("segment_alloc", S0, 20 * MiB), ev("alloc", S0, 2 * MiB), ev("alloc", S0 + 2 * MiB, 2 * MiB)] +
                      free(S0, 2 * MiB) + [ev("free_requested", S0 + 2 * MiB, 2 * MiB),
                                           ev("segment_alloc", S1, 22 * MiB), ev("alloc", S1, 22 * MiB)]],
    "allocator_settings": SETTINGS, "external_annotations": []})
# The same pool at S0, a free default segment at S1, and a released
# MemPool's segment at S2 that the trace allocates, uses and frees: its
# pool is shown nowhere (the file's segments are the end's), so the 5 MiB
# allocation in it is taken as the default pool's, which the free block at
# S1 would serve.  The trace put it at S2: from event 1 the placement
# depends on the pool, and the replay reports the events unchecked.
S2 = 0x7F0004000000
dfree = seg(S1, [(20 * MiB, 0, False)])
dfree["segment_pool_id"] = (0, 0)
write("private-pool-freed.pickle", {
    "segments": [pooled, dfree],
    "device_traces": [[ev("segment_alloc", S2, 20 * MiB), ev("alloc", S2, 5 * MiB)] + free(S2, 5 * MiB) +
                      [ev("segment_free", S2, 20 * MiB)]],
    "allocator_settings": SETTINGS, "external_annotations": []})

# decode-small.pickle: a small snapshot of the shapes a replay decodes as
# records (test_pickle.c: every truncation and byte changed in turn, decoded
# and skipped alike): segments with blocks and a (0, 0) pool id each, frames
# lists met again (shared) and new ones holding frames met before and new
# ones, events whose frames come last, and annotations whose keys are new
# strings every time, as torch writes them.
def _fresh(s):
    return "".join(list(s))  # a str object of its own (not interned)


_f1 = {"filename": "a.py", "line": 3, "name": "f"}
_f2 = {"filename": "b.py", "line": 40, "name": "g"}
_f3 = {"filename": "a.py", "line": 9, "name": "h"}
_fr_a = [_f1, _f2]
_fr_b = [_f2, _f1, _f3]
_dseg = seg(S0, [(2 * MiB, 2 * MiB, True), (18 * MiB, 0, False)])
_dseg["segment_pool_id"] = (0, 0)
_dseg["frames"] = _fr_a
_dseg["blocks"][0]["frames"] = _fr_a
_dseg["blocks"][1]["frames"] = []
_devs = [dict(ev("segment_alloc", S0, 20 * MiB), time_us=1748474880683573, frames=_fr_a),
         dict(ev("alloc", S0, 2 * MiB), time_us=1748474880683666, frames=_fr_b),
         dict(ev("alloc", S0 + 2 * MiB, 1 * MiB), time_us=1748474880683767, frames=[_f3, _f1]),
         dict(ev("free_requested", S0 + 2 * MiB, 1 * MiB), time_us=1748474880683855, frames=_fr_b),
         dict(ev("free_completed", S0 + 2 * MiB, 1 * MiB), time_us=1748474880683949, frames=_fr_b)]
# The second annotation's keys and strs are taken by the decoder's template
# of a new str key (drec_fast); a last key refers to them again, so that a
# memo entry the decoder failed to set, or set in the wrong place, changes
# what that key loads as.
_a2 = [_fresh("stage"), _fresh("END"), _fresh("name"), _fresh("fwd"), _fresh("device")]
write("decode-small.pickle", {
    "segments": [_dseg],
    "device_traces": [_devs],
    "allocator_settings": SETTINGS,
    "external_annotations": [{_fresh("stage"): _fresh("START"), _fresh("name"): _fresh("fwd"),
                              _fresh("device"): 0, _fresh("time_us"): 1748474880840249},
                             {_a2[0]: _a2[1], _a2[2]: _a2[3], _a2[4]: 0, _fresh("time_us"): 1748474887587282}],
    "strs_again": [_a2[3], _a2[0], _a2[1], _a2[4], _a2[2]]})

# frames-forms.pickle: the forms of a frames list the loader's batch loop
# runs in one step (test_pickle.c: every truncation and byte changed in
# turn, decoded and skipped alike, as decode-small): one frame (its item
# and APPEND), a frame met twice in one list (the second a reference to
# the first, memoized in the same batch), a name longer than 255 bytes
# (BINUNICODE), lines past one and two bytes (BININT2, BININT), a frame of
# four keys with a float and None, an empty list, and a run of references
# long enough for the run cache once the input is larger (it is not); the
# last frame's name is the allocator settings' PYTORCH_CUDA_ALLOC_CONF.
_g1 = {"filename": "m.py", "line": 7, "name": "step"}
_g2 = {"filename": "m.py", "line": 300, "name": "x" * 300}
_g3 = {"filename": "n.py", "line": 70000, "name": "fwd"}
_g4 = {"filename": None, "line": 1.5, "name": "odd", "extra": 2}
# The last entry a batch memoizes (the last frame's name) is fetched again
# by the loader outside the frames, as torch's first '' (a frame's file)
# is fetched again for PYTORCH_CUDA_ALLOC_CONF: an entry the batch loop
# left unmarked fails that fetch.
_conf = _fresh("garbage_collection_threshold:0.8")
_g5 = {"filename": "o.py", "line": 2, "name": _conf}
_fdevs = [dict(ev("segment_alloc", S0, 20 * MiB), time_us=1748474880683573, frames=[_g1]),
          dict(ev("alloc", S0, 2 * MiB), time_us=1748474880683666, frames=[_g2, _g1, _g2, _g3]),
          dict(ev("alloc", S0 + 2 * MiB, 3 * MiB), time_us=1748474880683767, frames=[_g4, _g3]),
          dict(ev("free_requested", S0 + 2 * MiB, 3 * MiB), time_us=1748474880683855, frames=[]),
          dict(ev("free_completed", S0 + 2 * MiB, 3 * MiB), time_us=1748474880683949,
               frames=[_g1, _g3, _g2, _g1, _g3, _g2, _g1, _g3, _g2, _g4, _g5])]
_fseg = seg(S0, [(2 * MiB, 2 * MiB, True), (18 * MiB, 0, False)])
_fseg["frames"] = [_g1]
_fseg["blocks"][0]["frames"] = [_g3, _g3]
_fseg["blocks"][1]["frames"] = []
write("frames-forms.pickle", {"segments": [_fseg], "device_traces": [_fdevs],
                              "allocator_settings": dict(SETTINGS, PYTORCH_CUDA_ALLOC_CONF=_conf,
                                                         garbage_collection_threshold=0.8)})

# frames-batches.pickle: lists of more than 1,000 frames, which a pickler
# writes in batches of 1,000 (MARK ... APPENDS, then the rest: here one,
# with APPEND), new frames and references to them, in an input past 64 KiB
# (the run cache's), and long stacks met again: decoded without a second
# pass, as the skipping load gives it (test_pickle.c).
_many = [{"filename": "b%d.py" % (i % 7), "line": i, "name": "f%d" % i} for i in range(1001)]
_bdevs = [dict(ev("segment_alloc", S0, 20 * MiB), time_us=1748474880683573, frames=_many),
          dict(ev("alloc", S0, 2 * MiB), time_us=1748474880683666, frames=list(reversed(_many)) + _many[:999]),
          dict(ev("free_requested", S0, 2 * MiB), time_us=1748474880683767, frames=_many[::3] * 4),
          dict(ev("free_completed", S0, 2 * MiB), time_us=1748474880683855, frames=_many[::3] * 4)]
for _i in range(8):  # the same long stacks again: what the run cache knows
    _bdevs += [dict(ev("alloc", S0, 4 * MiB), time_us=1748474880684000 + 3 * _i, frames=_many[5:60] + [_many[_i]]),
               dict(ev("free_requested", S0, 4 * MiB), time_us=1748474880684001 + 3 * _i, frames=_many[5:60]),
               dict(ev("free_completed", S0, 4 * MiB), time_us=1748474880684002 + 3 * _i,
                    frames=_many[:200] * 2)]
# The memo is first sized a power of two (2,048 entries here): the segment
# holds as many extra strs ("pad", a key no replay reads) as put entry
# 2,048 on a frame's dict inside the first batch, where the batch finds
# the memo full and gives way to the machine, which grows it.
def _memo_op(data, idx):
    import pickletools
    ops = list(pickletools.genops(data))
    n = 0
    for i, (op, _, _) in enumerate(ops):
        if op.name == "MEMOIZE":
            if n == idx:
                return ops[i - 1][0].name
            n += 1
    return None


for _k in range(64):
    _bseg = seg(S0, [(20 * MiB, 0, False)])
    _bseg["pad"] = ["p%d" % i for i in range(_k)]
    _bsnap = {"segments": [_bseg], "device_traces": [_bdevs], "allocator_settings": SETTINGS}
    if _memo_op(pickle.dumps(_bsnap, protocol=4), 2048) == "EMPTY_DICT":
        break
else:
    raise SystemExit("frames-batches: no padding puts memo entry 2048 on a frame")
write("frames-batches.pickle", _bsnap)

# Review 2026-12-02: PyTorch's counters are int64 and its cumulative ones
# ("Tot Alloc") pass 2^63 - 1 after 16 allocations of 2^59 bytes (512 PiB,
# under the 1 EB request limit): the model's counters wrap as PyTorch's
# two's complement ones do, where C's signed overflow was undefined (UBSan).
_eb = 1 << 59
write("exabyte-churn.pickle", {
    "segments": [seg(S0, [(_eb, _eb, False)])],
    "device_traces": [[e for _ in range(17) for e in [ev("alloc", S0, _eb)] + free(S0, _eb)]],
    "allocator_settings": SETTINGS})

"""Snapshots that simulate writes (--snapshot) name what allocated each block
(issue 14 item 4, review AL-4), and open in PyTorch's own tools.

Truth: the step program's own record (the frame of each allocation is its
phase, layer and tensor; a free names what it frees), the replay of the
file (exact, at the recorded addresses), and Debian's PyTorch 1.13, whose
torch.cuda._memory_viz reads the list of segments that release's
memory_snapshot() returned: stats() checks every segment's blocks add up
to its size, and segments()/memory() name each block by its frames (the
flamegraph's input; no flamegraph.pl is needed to read it).

Run by CTest (python_bindings) with PYTHONPATH at the built package.
"""
import collections
import pickle
import re

import torch
import torch.cuda._memory_viz as memory_viz

import gpuplan

NO_FRAME = "no frame set"
NAMED = re.compile(r"^(setup|forward|backward|optimizer step)( \(CUDA graph capture\))?( layer \d+)?: .+")


def simulate(tmp_path, name, **kw):
    path = str(tmp_path / name)
    with gpuplan.Catalog() as cat:
        r = cat.simulate("gpt-2", "a100-40gb", steps=2, snapshot=path, memory_stats=True, **kw).to_dict()
    with open(path, "rb") as f:
        return r, path, pickle.load(f)


def test_every_entry_and_block_names_its_allocation(tmp_path):
    r, path, d = simulate(tmp_path, "gpt2.pickle")
    trace = d["device_traces"][0]
    assert len(trace) > 1000
    frame_at = {}
    for e in trace:
        f = e["frames"]
        assert len(f) == 1 and f[0]["filename"] == "gpuplan simulate", e
        assert NO_FRAME not in f[0]["name"] and NAMED.match(f[0]["name"]), f[0]["name"]
        assert f[0]["line"] in (0, 1, 2)  # the step (0: setup)
        if e["action"] == "alloc":
            frame_at[e["addr"]] = f[0]
        elif e["action"] in ("free_requested", "free_completed"):
            assert frame_at[e["addr"]] == f[0], e  # a free names what it frees
        assert "time_us" not in e  # no made-up clock
    names = collections.Counter(e["frames"][0]["name"] for e in trace if e["action"] == "alloc")
    assert any(n.startswith("forward layer 11: ") for n in names)
    assert any(n.startswith("backward layer 0: ") for n in names)
    assert any(n.startswith("optimizer step: ") for n in names)
    live = 0
    for seg in d["segments"]:
        # a segment names the allocation whose cudaMalloc made it
        assert NAMED.match(seg["frames"][0]["name"]), seg["frames"]
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                live += b["size"]
                assert b["frames"] and NAMED.match(b["frames"][0]["name"]), b
            else:
                assert b["frames"] == []
    assert live == r["memory_stats"]["allocated_bytes.all.current"]
    assert sum(b["requested_size"] for s in d["segments"] for b in s["blocks"]
               if b["state"] == "active_allocated") == r["memory_stats"]["requested_bytes.all.current"]
    back = gpuplan.replay(path)
    assert back.exact, back.divergence
    assert back.peak_reserved_bytes == r["peak_reserved_bytes"]


def test_torch_113_layout_opens_in_pytorchs_memory_viz(tmp_path):
    r, path, d = simulate(tmp_path, "gpt2-113.pickle", torch="1.13")
    assert isinstance(d, list) and d, "1.13's memory_snapshot() is a list of segments"
    st = memory_viz.stats(d)  # asserts every segment's blocks add up to it
    m = r["memory_stats"]
    assert st["segments"] == m["segment.all.current"]
    assert st["total_size"].value == m["reserved_bytes.all.current"]
    assert st["active_allocated"].value == m["active_bytes.all.current"]
    lines = memory_viz.segments(d, format_flamegraph=lambda s: s).splitlines()
    allocated = [ln for ln in lines if ";active_allocated;" in ln]
    assert allocated and not any("<non-python>" in ln or NO_FRAME in ln for ln in lines)
    # 1.13's _frame_fmt: file:line:name; "<gaps>" is a block's rounding (its size less real_size)
    named = [ln for ln in allocated if ";<gaps> " not in ln]
    assert len(named) == sum(1 for s in d for b in s["blocks"] if b["state"] == "active_allocated")
    assert all(re.search(r";active_allocated;gpuplan simulate:\d:(setup|forward|backward|optimizer step)", ln)
               for ln in named), named[:3]
    flame = memory_viz.memory(d, format_flamegraph=lambda s: s)
    total = sum(int(ln.rsplit(" ", 1)[1]) for ln in flame.splitlines())
    assert total == m["reserved_bytes.all.current"]
    back = gpuplan.replay(path).to_dict()
    assert back["format"] == 1 and back["final_reserved_bytes"] == m["reserved_bytes.all.current"]
    assert back["final_allocated_bytes"] == m["allocated_bytes.all.current"]

"""memory_stats and memory_summary against PyTorch's own code (issue 14 item 4).

Truth: Debian's PyTorch 1.13 (python3-torch).  Its
torch.cuda.memory.memory_summary() renders the table from the flat dict
torch.cuda.memory_stats() returns; it needs no GPU once memory_stats is
given.  So the memory_stats a replay or a simulation reports, handed to
PyTorch's memory_summary(), must give back, character for character, the
table gpuplan printed for --torch 1.13, and every key that PyTorch reads
must be there (a missing one is a KeyError inside PyTorch).  The key set of
1.13 is also the one its memory_stats() docstring lists.

The figures themselves are the allocator model's (the exact replays are
checked elsewhere); here they must agree with the same document's own
peaks, counters and cudaMalloc count.

Run by CTest (python_bindings) with PYTHONPATH at the built package,
GPUPLAN_CLI at the built executable and GPUPLAN_TRACES at the vendored
snapshots.
"""
import collections
import json
import os
import re
import subprocess

import pytest
import torch
import torch.cuda.memory

import gpuplan

CLI = os.environ.get("GPUPLAN_CLI", "gpuplan")
TRACES = os.environ.get("GPUPLAN_TRACES") or os.path.join(
    os.path.dirname(__file__), "..", "data", "torch-snapshots")
TRACE_NAMES = ["linear-grad", "linear-no-grad", "cs336-small-forward", "cs336-ctx128-forward",
               "cs336-ctx256-forward", "cs336-2.7b-forward", "cs336-newest-format"]


def trace(name):
    f = os.path.join(TRACES, name + ".pickle")
    assert os.path.isfile(f), "missing %s" % f
    return f


def torch_summary(monkeypatch, stats, abbreviated=False):
    """PyTorch 1.13's memory_summary() over our memory_stats."""
    assert torch.__version__.startswith("1.13"), torch.__version__
    od = collections.OrderedDict(stats)
    monkeypatch.setattr(torch.cuda.memory, "memory_stats", lambda device=None: od)
    return torch.cuda.memory.memory_summary(device=0, abbreviated=abbreviated)


def keys_of_113_docstring():
    """The keys torch 1.13's memory_stats() docstring promises, expanded."""
    doc = torch.cuda.memory.memory_stats.__doc__
    keys = set()
    for pat in re.findall(r'``"([a-z_.{},]+)"``', doc):
        parts = [p.split(",") for p in re.findall(r"\{([^}]*)\}|([a-z_]+)", pat) for p in [p[0] or p[1]]]
        acc = [""]
        for alts in parts:
            acc = [a + ("." if a else "") + b for a in acc for b in alts]
        keys.update(acc)
    # The docstring says "allocated.{...}" for the allocation counts; the dict
    # (torch/csrc/cuda/Module.cpp) and memory_summary() itself use "allocation".
    return {k.replace("allocated.", "allocation.", 1) if k.startswith("allocated.") else k for k in keys}


def consistent(doc):
    """memory_stats agrees with the document's own figures."""
    m = doc["memory_stats"]
    assert list(m.keys()) == sorted(m.keys())  # memory_stats() sorts its items
    assert m["allocated_bytes.all.peak"] == doc["peak_allocated_bytes"]
    assert m["reserved_bytes.all.peak"] == doc["peak_reserved_bytes"]
    assert m["num_alloc_retries"] == doc["num_alloc_retries"]
    assert m["num_ooms"] == doc["num_ooms"]
    if "num_device_alloc" in m and not doc.get("expandable") and "expandable" not in (doc.get("alloc_conf") or ""):
        # PyTorch counts a cudaMalloc and its segment together (alloc_block), a
        # start state's segments too (review C-2: num_device_alloc left them out)
        assert m["num_device_alloc"] == m["segment.all.allocated"]
        assert m["num_device_free"] == m["segment.all.freed"]
    for name in ("allocated_bytes", "reserved_bytes", "active_bytes", "allocation", "segment", "active"):
        for metric in ("current", "peak", "allocated", "freed"):
            # the aggregate is the sum of the two pools, for every stat
            if metric != "peak":
                assert m["%s.all.%s" % (name, metric)] == (m["%s.large_pool.%s" % (name, metric)] +
                                                           m["%s.small_pool.%s" % (name, metric)]), (name, metric)
        assert m[name + ".all.current"] == m[name + ".all.allocated"] - m[name + ".all.freed"]
        assert m[name + ".all.peak"] >= m[name + ".all.current"]


@pytest.mark.parametrize("name", TRACE_NAMES)
def test_replay_stats_latest(name):
    """The latest release's keys, the device counters among them."""
    consistent(gpuplan.replay(trace(name), memory_stats=True).to_dict())


@pytest.mark.parametrize("name", TRACE_NAMES)
def test_replay_summary_is_pytorchs(monkeypatch, name):
    r = gpuplan.replay(trace(name), torch="1.13", summary=True, memory_stats=True).to_dict()
    assert r["exact"], r["divergence"]
    assert set(r["memory_stats"]) == keys_of_113_docstring()
    assert torch_summary(monkeypatch, r["memory_stats"]) == r["summary"]
    consistent(r)
    if not r["rebuilt_start"]:
        assert r["memory_stats"]["allocated_bytes.all.current"] == r["final_allocated_bytes"]
    assert r["memory_stats"]["reserved_bytes.all.current"] == r["final_reserved_bytes"]


def test_start_that_does_not_fit_resets_the_peaks():
    """Review C-3: a what-if whose start state does not fit releases the
    cached segments first, and the statistics' peaks are then of what the
    card held, as the document's (were the installed cache's 4234 MB)."""
    f = os.path.join(os.path.dirname(__file__), "..", "data", "replay", "linear-grad-113-list.pickle")
    r = gpuplan.replay(f, capacity="100", memory_stats=True).to_dict()
    m = r["memory_stats"]
    assert m["reserved_bytes.all.peak"] == r["peak_reserved_bytes"] < 4234 * 2**20
    assert m["allocated_bytes.all.peak"] == r["peak_allocated_bytes"]


def test_abbreviated_summary_is_pytorchs(monkeypatch):
    r = gpuplan.replay(trace("cs336-ctx128-forward"), torch="1.13", abbreviated=True, memory_stats=True).to_dict()
    assert torch_summary(monkeypatch, r["memory_stats"], abbreviated=True) == r["summary"]
    assert "from large pool" not in r["summary"]


def test_out_of_memory_summary_is_pytorchs(monkeypatch):
    """A what-if that runs out: the header's OOM and retry counts (the lab's 18700 MiB)."""
    r = gpuplan.replay(trace("cs336-ctx128-forward"), torch="1.13", capacity=18700 * 2**20, summary=True,
                       memory_stats=True).to_dict()
    assert r["num_ooms"] == 1 and r["num_alloc_retries"] >= 1
    assert torch_summary(monkeypatch, r["memory_stats"]) == r["summary"]
    assert "CUDA OOMs: 1 " in r["summary"]
    consistent(r)


@pytest.mark.parametrize("alloc_conf,release", [(None, "1.13"), ("max_split_size_mb:128", "1.13"),
                                                 ("expandable_segments:True", "2.1")])
def test_simulate_summary_is_pytorchs(monkeypatch, alloc_conf, release):
    """1.13 has no expandable segments (it came in 2.1): that run checks the stats alone."""
    with gpuplan.Catalog() as cat:
        kw = {"alloc_conf": alloc_conf} if alloc_conf else {}
        r = cat.simulate("gpt-2", "a100-40gb", steps=2, torch=release, summary=True, memory_stats=True,
                         **kw).to_dict()
    if release == "1.13":
        assert torch_summary(monkeypatch, r["memory_stats"]) == r["summary"]
    consistent(r)
    m = r["memory_stats"]
    assert m["max_split_size"] == (128 * 2**20 if alloc_conf == "max_split_size_mb:128" else -1)
    if alloc_conf == "max_split_size_mb:128":
        assert m["oversize_allocations.allocated"] > 0  # gpt-2's embedding and its gradient are over 128 MiB


def test_large_counts_and_sizes_are_pytorchs(monkeypatch):
    """5000 steps: 1.5 million allocations and 11,868 GB allocated in total,
    so memory_summary() writes the K and GB prefixes (_format_count,
    _format_size) that short runs never reach."""
    with gpuplan.Catalog() as cat:
        r = cat.simulate("gpt2", "a100-40gb", steps=5000, torch="1.13", summary=True, memory_stats=True).to_dict()
    assert r["memory_stats"]["allocation.all.allocated"] > 750000
    assert torch_summary(monkeypatch, r["memory_stats"]) == r["summary"]
    assert " K  |" in r["summary"] and " GB |" in r["summary"]
    consistent(r)


def test_keys_by_release():
    """requested_bytes from 2.0 (pytorch#88575); the device counters from 2.3 (pytorch#120050)."""
    f = trace("linear-grad")
    counters = {"num_sync_all_streams", "num_device_alloc", "num_device_free"}
    k113 = set(gpuplan.replay(f, torch="1.13", memory_stats=True)["memory_stats"])
    k20 = set(gpuplan.replay(f, torch="2.0", memory_stats=True)["memory_stats"])
    k22 = set(gpuplan.replay(f, torch="2.2", memory_stats=True)["memory_stats"])
    k23 = gpuplan.replay(f, torch="2.3", memory_stats=True).to_dict()
    latest = gpuplan.replay(f, memory_stats=True).to_dict()
    assert len(k113) == 107 and not any(k.startswith("requested_bytes") for k in k113)
    assert k20 == k22 == k113 | {"requested_bytes.%s.%s" % (p, m) for p in ("all", "large_pool", "small_pool")
                                 for m in ("current", "peak", "allocated", "freed")}
    assert set(k23["memory_stats"]) == set(latest["memory_stats"]) == k20 | counters
    # every cudaMalloc of the replay, none freed
    assert latest["memory_stats"]["num_device_alloc"] == latest["segment_allocs"] == 7
    assert latest["memory_stats"]["num_device_free"] == 0
    assert latest["memory_stats"]["requested_bytes.all.peak"] <= latest["memory_stats"]["allocated_bytes.all.peak"]


def test_none_where_the_replay_diverged():
    """Review C-1: a replay that stops at a divergence has no statistics to
    give, as it has no summary (were: uninitialized memory)."""
    f = os.path.join(os.path.dirname(__file__), "..", "data", "replay", "segment-free-live.pickle")
    r = gpuplan.replay(f, summary=True, memory_stats=True).to_dict()
    assert r["diverged_at"] == 0 and not r["exact"]
    assert r["memory_stats"] is None and r["summary"] is None


def test_absent_unless_asked():
    assert "memory_stats" not in gpuplan.replay(trace("linear-grad")).keys()


def test_cli_equals_python():
    env = dict(os.environ)
    env.pop("PYTORCH_ALLOC_CONF", None)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    f = trace("linear-grad")
    out = subprocess.run([CLI, "replay", f, "--memory-stats", "--json"], check=True, capture_output=True,
                         text=True, env=env).stdout
    assert json.loads(out)["memory_stats"] == gpuplan.replay(f, memory_stats=True).to_dict()["memory_stats"]
    text = subprocess.run([CLI, "replay", f, "--memory-stats"], check=True, capture_output=True, text=True,
                          env=env).stdout
    assert "memory_stats() at the end of the replay:" in text
    assert re.search(r"^  allocated_bytes\.all\.peak +4436169216$", text, re.M), text


def test_counters_wrap_as_pytorchs_int64():
    """Review 2026-12-02: 17 allocations of 2^59 bytes put "Tot Alloc" at
    2^63 + 2^59, past int64; PyTorch's counters (int64_t) wrap in two's
    complement, so the dict says -2^63 + 2^59, as a real run's would (the
    model's had been C signed overflow, undefined: UBSan stopped it)."""
    f = os.path.join(os.path.dirname(__file__), "..", "data", "replay", "exabyte-churn.pickle")
    r = gpuplan.replay(f, memory_stats=True)
    assert r.exact
    s = r["memory_stats"]
    assert s["allocated_bytes.all.allocated"] == 17 * 2**59 - 2**64 == -8646911284551352320
    assert s["allocated_bytes.all.freed"] == s["allocated_bytes.all.allocated"]
    assert s["allocated_bytes.all.peak"] == 2**59 and s["allocated_bytes.all.current"] == 0

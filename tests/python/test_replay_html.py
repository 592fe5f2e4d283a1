"""replay(html=PATH) from Python: the library writes the page (the CLI's
--html, Lua's html field), the result names it, and the replay's figures
do not change.  The page itself is checked in a browser by
tests/browser/check_replay_html.py.

Run by CTest with PYTHONPATH at the built package and GPUPLAN_TRACES at the
real torch snapshots.
"""
import json
import os
import re

import pytest

import gpuplan

TRACES = os.environ.get("GPUPLAN_TRACES") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "data", "torch-snapshots")


def trace(name):
    f = os.path.join(TRACES, name)
    assert os.path.isfile(f), "missing %s (GPUPLAN_TRACES=%s)" % (f, TRACES)
    return f


def page_data(path):
    text = open(path, encoding="utf-8").read()
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"\s(src|href)\s*=|url\(|<link\b", text), "the page must fetch nothing"
    return json.loads(re.search(r'id="gpuplan-data">(.*?)</script>', text, re.S).group(1))


def test_replay_html_writes_the_page(tmp_path):
    f = trace("linear-grad.pickle")
    out = str(tmp_path / "replay.html")
    r = gpuplan.replay(f, html=out)
    assert r["html"] == out
    plain = gpuplan.replay(f).to_dict()
    got = r.to_dict()
    got.pop("html")
    assert got == plain
    d = page_data(out)
    assert d["peak"]["bytes"] == r.peak_allocated_bytes
    assert d["peak"]["label"].startswith("peak allocated 4.13 GiB at event ")
    assert d["exact"] is True and d["oom"] is None
    assert len(d["maps"]) == 1
    m = d["maps"][0]
    assert m["allocated"] == m["expected_allocated"] and m["reserved"] == m["expected_reserved"]


def test_replay_html_oom_and_bytes(tmp_path):
    f = trace("linear-grad.pickle")
    out = str(tmp_path / "oom.html")
    r = gpuplan.replay(open(f, "rb").read(), capacity=3500 * 2**20, html=out)
    assert r["html"] == out and r["file"] is None
    d = page_data(out)
    assert d["oom"]["event"] == r.oom_event
    assert d["oom"]["message"] == r.oom_message
    assert d["capacity"] == 3500 * 2**20


def test_map_of_a_diverged_replay_says_so(tmp_path):
    """Review C-5: the page of a replay that diverged says its map is the
    model's (was: "exact: the allocator's own layout")."""
    f = os.path.join(os.path.dirname(__file__), "..", "data", "replay", "inconsistent-trace.pickle")
    out = str(tmp_path / "diverged.html")
    r = gpuplan.replay(f, html=out)
    assert r.diverged_at == 2
    text = open(out, encoding="utf-8").read()
    assert 'data-diverged="2">The replay diverged at event 2: this map is the model' in text
    ok = str(tmp_path / "exact.html")
    gpuplan.replay(trace("linear-grad.pickle"), html=ok)
    assert "data-diverged" not in open(ok, encoding="utf-8").read()


def test_replay_html_names_the_field(tmp_path):
    with pytest.raises(gpuplan.Error, match=r"^html"):
        gpuplan.replay(trace("linear-grad.pickle"), html=str(tmp_path / "no" / "such" / "dir" / "x.html"))


SNAPSHOTS = ["linear-grad.pickle", "linear-no-grad.pickle", "cs336-small-forward.pickle",
             "cs336-ctx128-forward.pickle", "cs336-ctx256-forward.pickle", "cs336-2.7b-forward.pickle",
             "cs336-newest-format.pickle"]


@pytest.mark.parametrize("name", SNAPSHOTS)
@pytest.mark.parametrize("options", [{}, {"gpu": "a100-80gb"},
                                     {"alloc_conf": "max_split_size_mb:64,roundup_power2_divisions:4"}])
def test_segment_map_adds_up(tmp_path, name, options):
    """The page's segment map, rebuilt from the file and the model's trace,
    holds exactly the replay's allocated and reserved bytes at the peak."""
    out = str(tmp_path / "p.html")
    r = gpuplan.replay(trace(name), html=out, **options)
    d = page_data(out)
    assert d["peak"]["bytes"] == r.peak_allocated_bytes
    for m in d["maps"]:
        assert m["odd"] == 0
        assert (m["allocated"], m["reserved"]) == (m["expected_allocated"], m["expected_reserved"])

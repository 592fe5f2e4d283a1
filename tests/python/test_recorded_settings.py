"""The allocator settings a snapshot records, written and read back whole
(review A-4).

PyTorch records allocator_settings' PYTORCH_CUDA_ALLOC_CONF as the run had
the variable, beside fields for four settings; the others
(max_non_split_rounding_mb, large_segment_size_mb, ...) are only in that
text.  So simulate writes the text it was given, and replay reads the text
first and the fields over it.  Truth: the round trip is exact (every
allocation at its recorded address, every cudaMalloc of its recorded size),
which it was not when a setting was dropped (large_segment_size_mb:64:
"DIVERGES at event 1: cudaMalloc of 20971520 bytes where the trace has
67108864").

Run by CTest (python_bindings) with PYTHONPATH at the built package.
"""
import pickle

import pytest

import gpuplan


@pytest.mark.parametrize("conf", [
    "large_segment_size_mb:64",
    "max_non_split_rounding_mb:512,max_split_size_mb:64",
    "roundup_power2_divisions:[256:1,512:2,>:8]",
    "expandable_segments:True,max_split_size_mb:64",
    "garbage_collection_threshold:0.6,max_split_size_mb:200",
])
def test_settings_round_trip(tmp_path, conf):
    path = str(tmp_path / "run.pickle")
    with gpuplan.Catalog() as cat:
        sim = cat.simulate("gpt2", "t4", micro_batch=4, steps=2, alloc_conf=conf, snapshot=path)
    with open(path, "rb") as f:
        settings = pickle.load(f)["allocator_settings"]
    assert settings["PYTORCH_CUDA_ALLOC_CONF"] == conf
    back = gpuplan.replay(path)
    assert back.exact, back.divergence
    assert back.alloc_conf == conf and back.alloc_conf_source == "snapshot"
    assert back.peak_reserved_bytes == sim.peak_reserved_bytes
    assert back.peak_allocated_bytes == sim.peak_allocated_bytes


def test_text_the_model_does_not_take_is_said(tmp_path):
    """A recorded backend the model does not follow: the fields are replayed,
    and the report says the text was not read (was: silently ignored)."""
    path = str(tmp_path / "run.pickle")
    with gpuplan.Catalog() as cat:
        cat.simulate("gpt2", "t4", micro_batch=4, steps=1, snapshot=path)
    with open(path, "rb") as f:
        d = pickle.load(f)
    d["allocator_settings"]["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    with open(path, "wb") as f:
        pickle.dump(d, f, protocol=4)
    back = gpuplan.replay(path)
    assert back.exact  # the run itself used the native allocator's defaults
    assert any("PYTORCH_CUDA_ALLOC_CONF 'backend:cudaMallocAsync' was not read" in w for w in back.warnings), \
        back.warnings


@pytest.mark.parametrize("conf", [
    "per_process_memory_fraction:0.9",
    "per_process_memory_fraction:0.5,garbage_collection_threshold:0.6",
])
def test_fraction_of_a_card_the_file_does_not_record(tmp_path, conf):
    """Review 2026-12-02 #1: a recorded per_process_memory_fraction made the
    exact replay take a card of 0 bytes (the total was read before any
    event), so every cudaMalloc was refused: "DIVERGES at event 1: alloc of
    ... the model ran out of memory, PyTorch did not", our own snapshots
    included.  A snapshot does not record the card's memory: the exact replay
    follows the trace without the limit and says so; given the card, the
    what-if replays under the limit as simulate ran."""
    path = str(tmp_path / "run.pickle")
    with gpuplan.Catalog() as cat:
        sim = cat.simulate("gpt2", "t4", micro_batch=4, steps=2, alloc_conf=conf, snapshot=path)
    back = gpuplan.replay(path)
    assert back.exact, back.divergence
    assert back.peak_reserved_bytes == sim.peak_reserved_bytes
    assert any("per_process_memory_fraction" in w and "does not record" in w for w in back.warnings), back.warnings
    under = gpuplan.replay(path, gpu="t4")
    assert under.peak_reserved_bytes == sim.peak_reserved_bytes
    assert under.num_alloc_retries == sim.num_alloc_retries and under.num_ooms == sim.num_ooms == 0


def test_recorded_text_is_checked_against_the_release(tmp_path):
    """Review 2026-12-02 #3: a recorded key the asked release does not take
    (large_segment_size_mb came after 2.10) was modelled under --torch 1.13
    without a word, while --alloc-conf refuses it there: the replay says no
    run of that release wrote the file; under the release that has the key,
    nothing is said."""
    path = str(tmp_path / "run.pickle")
    with gpuplan.Catalog() as cat:
        cat.simulate("gpt2", "t4", micro_batch=4, steps=1, alloc_conf="large_segment_size_mb:64", snapshot=path)
    old = gpuplan.replay(path, torch="1.13")
    assert any("'large_segment_size_mb:64' is not what torch 1.13 takes" in w and "no run of that release" in w
               for w in old.warnings), old.warnings
    assert not any("is not what torch" in w for w in gpuplan.replay(path).warnings)
    with pytest.raises(gpuplan.InvalidError, match="large_segment_size_mb is not an option of torch 1.13"):
        gpuplan.replay(path, torch="1.13", alloc_conf="large_segment_size_mb:64")


RELEASES = ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "latest"]


@pytest.mark.parametrize("torch", RELEASES)
@pytest.mark.parametrize("conf", [
    "",
    "roundup_power2_divisions:[256:1,>:4],max_split_size_mb:64",
    "expandable_segments:True",
    "roundup_power2_divisions:1",
])
def test_each_release_replays_its_own_runs(tmp_path, torch, conf):
    """The allocator's rules of each release, written once: what simulate
    runs under --torch R, replay under --torch R follows allocation for
    allocation (the round trip of every release and four settings, among
    them the division of 1 that 2.4 changed and expandable segments, which
    2.0 lacks)."""
    if conf.startswith("expandable") and torch == "2.0":
        pytest.skip("expandable_segments came in 2.1")
    path = str(tmp_path / "run.pickle")
    with gpuplan.Catalog() as cat:
        sim = cat.simulate("gpt2", "t4", micro_batch=4, steps=2, torch=torch, alloc_conf=conf or None, snapshot=path)
    back = gpuplan.replay(path, torch=torch)
    assert back.exact, (torch, conf, back.divergence)
    assert (back.peak_reserved_bytes, back.peak_allocated_bytes) == (sim.peak_reserved_bytes, sim.peak_allocated_bytes)
    assert not any("is not what torch" in w for w in back.warnings), back.warnings

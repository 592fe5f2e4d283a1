"""simulate through the Python binding with the per-release allocator rules
(issue 14 item 2): the summary option, the torch option, and the settings'
source, equal to the CLI's --json; a key a release lacked names the release
that added it.

Run by CTest with PYTHONPATH at the built package and GPUPLAN_CLI at the
built `gpuplan` executable.
"""
import json
import os
import subprocess

import pytest

import gpuplan

CLI = os.environ.get("GPUPLAN_CLI", "gpuplan")


@pytest.fixture(scope="module")
def cat():
    with gpuplan.Catalog() as c:
        yield c


def cli_json(*args, env=None):
    e = dict(os.environ)
    e.pop("PYTORCH_ALLOC_CONF", None)
    e.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    e.update(env or {})
    out = subprocess.run([CLI, *args, "--json"], check=True, capture_output=True, text=True, env=e).stdout
    return json.loads(out)


def test_summary_equals_cli(cat):
    py = cat.simulate("gpt-2", "a100-40gb", steps=1, summary=True, torch="2.4")
    cli = cli_json("simulate", "gpt-2", "--gpu", "a100-40gb", "--steps", "1", "--summary", "--torch", "2.4")
    assert py["summary"] == cli["summary"]
    assert py["summary"].startswith("|====")
    assert "PyTorch CUDA memory summary, device ID 0" in py["summary"]
    assert "Requested memory" in py["summary"]
    assert py["torch"] == "2.4" and py["rules"] == "2.4"
    assert "summary" not in cat.simulate("gpt-2", "a100-40gb", steps=1).keys()


def test_summary_113_layout(cat):
    s = cat.simulate("gpt-2", "a100-40gb", steps=1, summary=True, torch="1.13")["summary"]
    assert "Requested memory" not in s
    assert " MB |" in s or " KB |" in s


def test_env_source_by_release(cat):
    # the environment's variables, passed as the CLI passes its own: the release decides which applies
    env = {"env_alloc_conf": "expandable_segments:True", "env_cuda_alloc_conf": "max_split_size_mb:100"}
    old = cat.simulate("gpt-2", "a100-40gb", steps=1, torch="2.9", **env)
    assert old["alloc_conf"] == "max_split_size_mb:100" and old["alloc_conf_source"] == "PYTORCH_CUDA_ALLOC_CONF"
    assert "does not read PYTORCH_ALLOC_CONF" in old["warnings"][0]
    cli = cli_json("simulate", "gpt-2", "--gpu", "a100-40gb", "--steps", "1", "--torch", "2.9",
                   env={"PYTORCH_ALLOC_CONF": "expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:100"})
    assert cli["warnings"] == old["warnings"] and cli["alloc_conf_source"] == "PYTORCH_CUDA_ALLOC_CONF"
    # 2.9 with only PYTORCH_ALLOC_CONF: ignored, the defaults apply
    alone = cat.simulate("gpt-2", "a100-40gb", steps=1, torch="2.9", env_alloc_conf="expandable_segments:True")
    assert alone["alloc_conf"] == "" and alone["alloc_conf_source"] == "defaults" and alone["warnings"]
    # from 2.10 PYTORCH_ALLOC_CONF comes first for the generic keys: the
    # other's max_split_size_mb is not read, and that is said
    new = cat.simulate("gpt-2", "a100-40gb", steps=1, torch="2.10", **env)
    assert new["alloc_conf"] == "expandable_segments:True"
    assert new["alloc_conf_source"] == "PYTORCH_ALLOC_CONF"
    assert len(new["warnings"]) == 1 and "'max_split_size_mb:100' was not read" in new["warnings"][0]
    # the option beats the environment
    opt = cat.simulate("gpt-2", "a100-40gb", steps=1, torch="2.10", alloc_conf="max_split_size_mb:200", **env)
    assert opt["alloc_conf"] == "max_split_size_mb:200" and opt["alloc_conf_source"] == "option"
    # replay follows the same rule
    snap = os.path.join(os.environ["GPUPLAN_TRACES"], "linear-grad.pickle")
    r = cat.replay(snap, torch="2.4", **env) if hasattr(cat, "replay") else gpuplan.replay(snap, torch="2.4", **env)
    assert r["alloc_conf_source"] == "PYTORCH_CUDA_ALLOC_CONF" and "does not read" in r["warnings"][0]


def test_key_of_a_later_release(cat):
    with pytest.raises(ValueError, match="came in 2.1"):
        cat.simulate("gpt-2", "a100-40gb", steps=1, torch="2.0", alloc_conf="expandable_segments:True")
    with pytest.raises(ValueError, match="more than 20"):
        cat.simulate("gpt-2", "a100-40gb", steps=1, torch="2.9", alloc_conf="max_split_size_mb:20")
    cat.simulate("gpt-2", "a100-40gb", steps=1, torch="2.10", alloc_conf="max_split_size_mb:20")

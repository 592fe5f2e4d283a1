"""One job, one document: every job of the corpus through the CLI (--json),
Python (Catalog.run) and Lua (cat:run) gives the same document, or the same
error message (issue 10).

The corpus (corpus.json) is written in the library's option names; the CLI
arguments are made from the library's option table (gpuplan.options()):
the positional option first, booleans as --flag / --no-flag, lists as
repeated flags, and every other value alternately as "--flag V" and
"--flag=V", so both spellings are exercised.  Lua has no null (a missing
key is nil), so its documents are compared with the nulls left out.

Run by CTest with PYTHONPATH at the built package, GPUPLAN_CLI at the built
command, GPUPLAN_LUA at a Lua 5.4 interpreter and LUA_CPATH at the module.
"""
import json
import os
import subprocess

import pytest

import gpuplan

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ.get("GPUPLAN_CLI", "gpuplan")
LUA = os.environ.get("GPUPLAN_LUA", "lua5.4")
TRACES = os.environ.get("GPUPLAN_TRACES") or os.path.join(HERE, "..", "data", "torch-snapshots")
# file options name the vendored snapshots as @TRACES@/NAME
DATA = os.path.join(HERE, "..", "..", "data", "reference")
# file options name the vendored snapshots as @TRACES@/NAME and the reference data as @DATA@/NAME
CORPUS = json.loads(open(os.path.join(HERE, "corpus.json")).read()
                    .replace("@TRACES@", os.path.abspath(TRACES)).replace("@DATA@", os.path.abspath(DATA)))
OPTIONS = {o["name"]: o for o in gpuplan.options()}


def cli_args(job):
    args = [job["command"]]
    opts = dict(job["options"])
    for name, o in OPTIONS.items():
        if o["positional"] and name in opts and job["command"] in o["commands"]:
            args.append(str(opts.pop(name)))
    for i, (name, v) in enumerate(sorted(opts.items())):
        flag = "--" + OPTIONS[name]["flag"]
        if isinstance(v, bool):
            args.append(flag if v else "--no-" + OPTIONS[name]["flag"])
        elif isinstance(v, list):
            for x in v:
                args += [flag, str(x)]
        else:
            text = repr(v) if isinstance(v, float) else str(v)
            args += [flag + "=" + text] if i % 2 else [flag, text]
    return args


def run_cli(job):
    p = subprocess.run([CLI, *cli_args(job), "--json"], capture_output=True, text=True)
    if p.returncode == 0 or p.stdout.startswith("{"):  # doctor exits 1 with its document when a check fails
        return {"ok": json.loads(p.stdout)}
    prefix = "gpuplan: %s: " % job["command"]
    msg = p.stderr.strip()
    assert msg.startswith(prefix), msg
    return {"error": msg[len(prefix):], "rc": p.returncode}


def run_python(cat, job):
    try:
        return {"ok": cat.run(job["command"], **job["options"]).to_dict()}
    except gpuplan.Error as e:
        # e.args[0]: str() of a KeyError subclass (NotFoundError) adds quotes
        return {"error": e.args[0], "code": e.gpuplan_errname}


def drop_nulls(v):
    """Lua's view: null fields absent; an object left empty is an empty table ([])."""
    if isinstance(v, dict):
        d = {k: drop_nulls(x) for k, x in v.items() if x is not None}
        return d if d else []
    if isinstance(v, list):
        return [drop_nulls(x) for x in v]
    return v


@pytest.fixture(scope="module")
def lua_results(tmp_path_factory):
    corpus = tmp_path_factory.mktemp("parity") / "corpus.json"
    corpus.write_text(json.dumps(CORPUS))
    out = subprocess.run([LUA, os.path.join(HERE, "run_lua.lua"), str(corpus)],
                         check=True, capture_output=True, text=True).stdout
    lines = [json.loads(x) for x in out.splitlines()]
    assert len(lines) == len(CORPUS)
    return lines


@pytest.fixture(scope="module")
def cat():
    with gpuplan.Catalog() as c:
        yield c


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 40
    # every command of the job API has jobs in the corpus
    assert {j["command"] for j in CORPUS} >= {"plan", "perf", "search", "simulate", "replay", "explain-oom",
                                             "catalog", "version", "smi", "topo", "doctor", "validate", "serve"}


@pytest.mark.parametrize("i", range(len(CORPUS)), ids=[
    "%d-%s-%s" % (i, j["command"], j["options"].get("model", "")) for i, j in enumerate(CORPUS)])
def test_same_document(i, cat, lua_results):
    job = CORPUS[i]
    cli = run_cli(job)
    py = run_python(cat, job)
    lua = lua_results[i]
    if "ok" in cli:
        assert "ok" in py, py
        assert cli["ok"] == py["ok"]
        assert cli["ok"]["schema"].startswith("gpuplan.%s" % job["command"])
        assert "ok" in lua, lua
        assert drop_nulls(cli["ok"]) == drop_nulls(lua["ok"])
    else:
        # the same message, and a usage error (exit 2) for a bad or contradictory option
        assert "error" in py and "error" in lua, (py, lua)
        assert cli["error"] == py["error"] == lua["error"]
        assert py["code"] == lua["code"]
        assert cli["rc"] == (2 if py["code"] in ("GPUPLAN_EINVAL", "GPUPLAN_ENOTFOUND", "GPUPLAN_EAMBIGUOUS") else 1)


def test_fsdp_case_of_the_review(cat):
    """AR-1: the CLI and Python disagreed on this job (convention, bytes)."""
    a = cat.plan("llama-2-13b", "a100-80gb", gpus=8, fsdp="full")
    b = cat.plan("llama-2-13b", "a100-80gb", gpus=8, dp_mode="fsdp-full")
    c = run_cli({"command": "plan", "options": {"model": "llama-2-13b", "gpu": "a100-80gb", "gpus": 8,
                                                "fsdp": "full"}})["ok"]
    assert a.options.convention == b.options.convention == c["options"]["convention"] == "fsdp"
    assert a.worst.total_bytes == b.worst.total_bytes == c["worst"]["total_bytes"]
    # the rule matters: the DeepSpeed convention (what Python used to apply) is another figure
    d = cat.plan("llama-2-13b", "a100-80gb", gpus=8, fsdp="full", convention="deepspeed")
    assert d.worst.total_bytes != a.worst.total_bytes

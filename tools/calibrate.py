#!/usr/bin/python3
"""Fit the performance model's constants on published training runs.

    tools/calibrate.py [--gp GPUPLAN] [--rounds N] [--start NAME=VALUE,...] [FILE.csv ...]

GPUPLAN defaults to the gpuplan on PATH, else build/bindings/cli/gpuplan.

Files default to data/reference/training_runs_calibration.csv and
tests/data/perf/narayanan2021_table2.csv; tests/data/perf/holdout_llm_foundry.csv
is never fitted on, only reported.  Coordinate descent over the constants
listed in PARAMS (a name, or framework.name for one framework's profile),
each within its bounds, minimising

    median |error| + 0.5 p90 |error| + 2 max(0, worst - 0.18)
    + 2 sum over framework x GPU groups of max(0, |median bias| - 0.06)

through `gpuplan validate --json --constants ...` (the same code path a user
runs).  Every constant is the same for every row of a framework: no per-row
tuning.  Prints the fit as a --constants string and the statistics;
libgpuplan/src/plan/perf.c holds the result (docs/performance.md lists it).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = [os.path.join(ROOT, "data", "reference", "training_runs_calibration.csv"),
         os.path.join(ROOT, "tests", "data", "perf", "narayanan2021_table2.csv")]
HOLDOUT = os.path.join(ROOT, "tests", "data", "perf", "holdout_llm_foundry.csv")

# name, starting value (the library's current one: keep in sync with
# libgpuplan/src/plan/perf.c), lower and upper bound, initial step (0: fixed)
PARAMS = [
    ("gemm_eff_ampere", 0.87, 0.5, 1.0, 0.05),
    ("gemm_eff_hopper", 0.895, 0.4, 1.0, 0.05),
    ("gemm_dim_half", 268, 0, 2048, 128),
    ("gemm_roofline", 0.625, 0.2, 8, 0.5),
    ("straggler", 0.02, 0, 0.05, 0.002),
    ("megatron.gemm_scale", 1.01, 0.5, 1.1, 0.05),
    ("megatron.elementwise_scale", 0.55, 0.2, 2.0, 0.2),
    ("megatron.overlap_eff", 0.90, 0.2, 1.0, 0.1),
    ("nemo.gemm_scale", 1.006, 0.5, 1.2, 0.05),
    ("nemo.tp_overlap", 0.24, 0, 1, 0.1),
    ("nemo.fp8_gemm_eff", 0.925, 0.4, 1.2, 0.05),
    ("nemo.attn_scale", 1.0, 0.3, 1.5, 0.1),
    ("composer.attn_scale", 0.55, 0.2, 1.5, 0.1),
    ("composer.elementwise_scale", 0.61, 0.2, 3.0, 0.2),
    ("composer.overlap_eff", 0.25, 0.0, 1.0, 0.1),
    ("composer.fp8_gemm_eff", 0.85, 0.3, 1.2, 0.05),
    ("composer.fp8_cast_bytes", 3, 0, 20, 2),
    ("composer.launch_s", 0, 0, 0.01, 0.0005),
    ("deepspeed.dp_bw_eff", 0.106, 0.02, 1.0, 0.05),
    ("deepspeed.overlap_eff", 0.975, 0.0, 1.0, 0.1),
    ("deepspeed.gemm_scale", 0.85, 0.5, 1.1, 0.05),
]


def validate(gp, path, spec):
    cmd = [gp, "validate", path, "--json"]
    if spec:
        cmd += ["--constants", spec]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def rows_of(gp, files, spec):
    rows = []
    for f in files:
        rows += [r for r in validate(gp, f, spec)["rows"] if r["status"] == "scored"]
    return rows


def stats(rows):
    errs = sorted(abs(r["error"]) for r in rows)
    med = statistics.median(errs)
    p90 = errs[max(0, int(0.9 * len(errs) + 0.999999) - 1)]
    worst = max(rows, key=lambda r: abs(r["error"]))
    groups = {}
    for r in rows:
        groups.setdefault("%s x %s" % (r["framework"], r["gpu"]), []).append(r["error"])
    bias = {k: statistics.median(v) for k, v in groups.items()}
    return med, p90, worst, bias


def objective(rows):
    med, p90, worst, bias = stats(rows)
    j = med + 0.5 * p90 + 2 * max(0.0, abs(worst["error"]) - 0.18)
    j += 2 * sum(max(0.0, abs(b) - 0.06) for b in bias.values())
    return j


def spec_of(values):
    return ",".join("%s=%.6g" % (n, v) for n, v in values.items())


def report(label, rows):
    med, p90, worst, bias = stats(rows)
    print("%s: %d rows, median |error| %.1f%%, p90 %.1f%%, worst %+.1f%% (%s)" % (
        label, len(rows), 100 * med, 100 * p90, 100 * worst["error"], worst["id"]))
    for k in sorted(bias):
        print("    %-34s median bias %+.1f%%" % (k, 100 * bias[k]))


def main():
    args = sys.argv[1:]
    gp = shutil.which("gpuplan") or os.path.join(ROOT, "build", "bindings", "cli", "gpuplan")
    rounds = 8
    files = []
    start = {}
    while args:
        a = args.pop(0)
        if a == "--gp":
            gp = args.pop(0)
        elif a == "--rounds":
            rounds = int(args.pop(0))
        elif a == "--start":
            for kv in args.pop(0).split(","):
                n, v = kv.split("=")
                start[n] = float(v)
        else:
            files.append(a)
    files = files or FILES
    values = {n: start.get(n, v) for n, v, _, _, _ in PARAMS}
    # the library's own values are the starting point of the others
    base = rows_of(gp, files, spec_of(values))
    best = objective(base)
    if rounds == 0:
        # the library's own constants, no override
        report("the library's constants", rows_of(gp, files, ""))
        if os.path.exists(HOLDOUT):
            report("held out (not fitted)", rows_of(gp, [HOLDOUT], ""))
        return
    report("start", base)
    steps = {n: s for n, _, _, _, s in PARAMS}
    bounds = {n: (lo, hi) for n, _, lo, hi, _ in PARAMS}
    for rnd in range(rounds):
        improved = False
        for n, _, _, _, _ in PARAMS:
            if steps[n] == 0:
                continue
            for direction in (1, -1):
                while True:
                    trial = dict(values)
                    trial[n] = min(bounds[n][1], max(bounds[n][0], values[n] + direction * steps[n]))
                    if trial[n] == values[n]:
                        break
                    j = objective(rows_of(gp, files, spec_of(trial)))
                    if j < best - 1e-9:
                        best, values = j, trial
                        improved = True
                    else:
                        break
        steps = {n: s / 2 for n, s in steps.items()}
        print("round %d: objective %.4f  %s" % (rnd, best, spec_of(values)), flush=True)
        if not improved and rnd > 2:
            break
    fit = rows_of(gp, files, spec_of(values))
    report("fit", fit)
    if os.path.exists(HOLDOUT):
        report("held out (not fitted)", rows_of(gp, [HOLDOUT], spec_of(values)))
    print("fit:", spec_of(values))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Fit the performance model's six constants on a calibration CSV.

    tools/calibrate.py ../shared/reference/training_runs_calibration.csv

Coordinate descent over gemm_eff_max, gemm_half_dim, attn_eff,
elementwise_bytes, coll_eff (fixed: measured NCCL efficiency),
dp_overlap and attn_balance, minimising the median |error| plus the share of rows beyond 30%.
The same constants serve every row: no per-row tuning.  Prints the fit;
libgpuplan/src/plan/perf.c holds the result.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GP = os.path.join(ROOT, "build", "bindings", "cli", "gpuplan")


def evaluate(csv, k):
    out = subprocess.run([GP, "validate", csv, "--json", "--constants", ",".join("%g" % x for x in k)],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    errs = [abs(r["error"]) for r in d["rows"] if "error" in r]
    over = sum(1 for e in errs if e > 0.30) / len(errs)
    return d["median_abs_error"] + over + 0.2 * max(errs), d


def main():
    csv = sys.argv[1]
    k = [0.80, 256, 0.55, 40, 0.80, 0.80, 200]
    steps = [0.05, 128, 0.05, 10, 0, 0.1, 50]
    lo = [0.2, 1, 0.05, 0, 0.8, 0, 10]
    hi = [1.0, 8192, 1.0, 400, 0.8, 1.0, 2000]
    best, d = evaluate(csv, k)
    for rnd in range(10):
        improved = False
        for i in range(len(k)):
            if steps[i] == 0:
                continue
            for direction in (1, -1):
                while True:
                    trial = list(k)
                    trial[i] = min(hi[i], max(lo[i], trial[i] + direction * steps[i]))
                    if trial[i] == k[i]:
                        break
                    score, dd = evaluate(csv, trial)
                    if score < best - 1e-9:
                        best, k, d = score, trial, dd
                        improved = True
                    else:
                        break
        steps = [s / 2 for s in steps]
        print("round %d: score %.4f median %.3f worst %.3f k=%s" % (
            rnd, best, d["median_abs_error"], d["worst_error"], ",".join("%g" % x for x in k)))
        if not improved and rnd > 2:
            break
    print("fit:", ",".join("%g" % x for x in k))


if __name__ == "__main__":
    main()

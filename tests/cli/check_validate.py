#!/usr/bin/python3
"""`gpuplan validate` on published runs: median |error| <= 10% and no row
beyond 30% (issue 5's bar), on the calibration file and, when present, on
held-out runs that are not in it.  Both files are in the repository
(data/reference/, tests/data/perf/): a missing one fails."""
import json
import os
import subprocess
import sys


def check(gp, path, label):
    out = subprocess.run([gp, "validate", path, "--json"], capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    errs = [abs(r["error"]) for r in d["rows"] if "error" in r]
    beyond = [r["id"] for r in d["rows"] if "error" in r and abs(r["error"]) > 0.30]
    print("%s: %d rows compared, %d skipped, median |error| %.1f%%, worst %+.1f%% (%s), beyond 30%%: %s"
          % (label, d["rows_compared"], d["rows_skipped"], 100 * d["median_abs_error"],
             100 * d["worst_error"], d["worst_id"], beyond or "none"))
    ok = d["rows_compared"] >= 20 and d["median_abs_error"] <= 0.10 and not beyond
    return ok


def main():
    gp, ref, holdout = sys.argv[1], sys.argv[2], sys.argv[3]
    files = [(ref, "calibration"), (holdout, "held out")]
    missing = [p for p, _ in files if not os.path.exists(p)]
    if missing:
        print("validation data not found: %s" % ", ".join(missing))
        return 1
    ok = all(check(gp, p, l) for p, l in files)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

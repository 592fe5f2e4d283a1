#!/usr/bin/python3
"""Every real snapshot cut where a ring buffer could have cut it still
replays exactly (review AL-1).

A trace from torch.cuda.memory._record_memory_history(max_entries=N) keeps
the last N events: it may start anywhere, for instance with the
free_completed of a free whose free_requested was dropped.  Each vendored
snapshot is cut at such points and at evenly spaced others, the final
segments kept, and `gpuplan replay CUT --json` must report an exact match
(or, where the file leaves the start open, events it says it cannot
check; never a divergence).  Independent truth: the recorded addresses.

usage: check_replay_cuts.py GPUPLAN TRACES_DIR TMP_DIR
"""
import json
import os
import pickle
import subprocess
import sys

PER_CLASS = 10  # cuts of each kind per snapshot: enough to cover, fast enough to run


class Plain(pickle.Unpickler):
    """The snapshots hold plain data: refuse every class."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused %s.%s" % (module, name))


def spread(xs, n):
    if len(xs) <= n:
        return xs
    return [xs[i * (len(xs) - 1) // (n - 1)] for i in range(n)]


def main():
    gp, traces, tmp = sys.argv[1:4]
    cut = os.path.join(tmp, "replay-cut.pickle")
    bad, runs = [], 0
    for name in sorted(f for f in os.listdir(traces) if f.endswith(".pickle")):
        with open(os.path.join(traces, name), "rb") as f:
            snap = Plain(f).load()
        t = snap["device_traces"][0]
        after_request = [k for k in range(1, len(t)) if t[k - 1]["action"] == "free_requested"]
        others = [k for k in range(1, len(t)) if t[k - 1]["action"] != "free_requested"]
        for k in spread(after_request, PER_CLASS) + spread(others, PER_CLASS):
            d = dict(snap)
            d["device_traces"] = [t[k:]] + snap["device_traces"][1:]
            with open(cut, "wb") as f:
                pickle.dump(d, f, protocol=4)
            out = subprocess.run([gp, "replay", cut, "--json"], capture_output=True, text=True)
            runs += 1
            if out.returncode:
                bad.append("%s cut at %d: exit %d: %s" % (name, k, out.returncode, out.stderr.strip()))
                continue
            r = json.loads(out.stdout)
            if not r["exact"] and not r.get("unchecked"):
                bad.append("%s cut at %d: diverges at %s: %s" % (name, k, r["diverged_at"], r["divergence"]))
    for b in bad:
        print("FAIL " + b)
    print("%d cuts replayed, %d failed" % (runs, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

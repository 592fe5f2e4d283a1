"""bench_python.py: the Python binding's cost over the C call, per call.

Runs bench_job (the same plan and perf jobs from C, set by name and run)
and the same calls through gpuplan.Catalog, and prints the overhead in
microseconds and as a ratio to the 2 us budget of issue 10.  Printed, not
asserted.   usage: bench_python.py BENCH_JOB [CALLS]
"""
import json
import statistics
import subprocess
import sys
import time

import gpuplan

exe = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
c_us = json.loads(subprocess.check_output([exe, str(n), "--json"]))
cat = gpuplan.Catalog()
for cmd in ("plan", "perf"):
    f = getattr(cat, cmd)
    f("llama-2-7b", "a100-80gb", gpus=8, zero=1)
    rounds = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(n // 7):
            f("llama-2-7b", "a100-80gb", gpus=8, zero=1)
        rounds.append((time.perf_counter() - t0) / (n // 7) * 1e6)
    py = statistics.median(rounds)
    c = c_us[cmd + "_us"]
    over = py - c
    print("python %s: %.3f us per call, C %.3f us: binding overhead %.3f us (%.2fx the 2 us budget)"
          % (cmd, py, c, over, over / 2.0))
    # reading a field costs what it reads
    r = f("llama-2-7b", "a100-80gb", gpus=8, zero=1)
    t0 = time.perf_counter()
    for _ in range(n):
        r.worst.total_bytes if cmd == "plan" else r.step_s
    print("python %s: one field read %.3f us" % (cmd, (time.perf_counter() - t0) / n * 1e6))

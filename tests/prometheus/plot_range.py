#!/usr/bin/python3
"""The figure of docs/lab-watching-a-training-job.md: a real Prometheus
(Debian's) scrapes `gpuplan exporter --sim a100-80gb:8 --job 7B --fault
thermal@3 --speed 10` for about a minute; the range query's JSON from
Prometheus' HTTP API (DCGM_FI_DEV_GPU_TEMP and DCGM_FI_DEV_SM_CLOCK) is
drawn to a PNG.  Not part of the test suite (it takes a minute); run it
after a build to refresh the figure:

    tests/prometheus/plot_range.py GPUPLAN OUT.png [SECONDS]
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GP, OUT = sys.argv[1], sys.argv[2]
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 60
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


work = tempfile.mkdtemp(prefix="gpuplan-plot-")
procs = []
try:
    log = open(os.path.join(work, "exporter.log"), "w+")
    ex = subprocess.Popen([GP, "exporter", "--sim", "a100-80gb:8", "--job", "7B", "--fault", "thermal@3", "--speed", "10",
                           "--port", "0", "--duration", str(SECONDS + 30)], stderr=log)
    procs.append(ex)
    port = None
    for _ in range(200):
        log.seek(0)
        m = re.search(r":(\d+)/metrics", log.read())
        if m:
            port = int(m.group(1))
            break
        time.sleep(0.05)
    pport = free_port()
    cfg = os.path.join(work, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - %s\n"
                "scrape_configs:\n  - job_name: gpuplan\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                % (os.path.join(SRC, "examples", "prometheus", "gpuplan-alerts.yml"), port))
    pr = subprocess.Popen(["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(work, "data"),
                           "--web.listen-address=127.0.0.1:%d" % pport, "--log.level=warn"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(pr)
    start = time.time()
    time.sleep(SECONDS)
    end = time.time()
    api = "http://127.0.0.1:%d/api/v1/" % pport

    def rng(q):
        u = api + "query_range?" + urllib.parse.urlencode({"query": q, "start": start, "end": end, "step": "1s"})
        with urllib.request.urlopen(u, timeout=10) as r:
            return json.loads(r.read())["data"]["result"]

    temp, clock = rng("DCGM_FI_DEV_GPU_TEMP"), rng("DCGM_FI_DEV_SM_CLOCK")
    alerts = rng('ALERTS{alertname="GPUThermalThrottling"}')
    fig, (a, b) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for series, ax in ((temp, a), (clock, b)):
        for s in sorted(series, key=lambda s: int(s["metric"]["gpu"])):
            t = [(float(v[0]) - start) * 10 for v in s["values"]]
            y = [float(v[1]) for v in s["values"]]
            g = s["metric"]["gpu"]
            ax.plot(t, y, lw=2.2 if g == "3" else 1, color="tab:red" if g == "3" else None,
                    label="GPU %s" % g, alpha=1 if g == "3" else 0.7)
    a.axhline(83, color="grey", ls="--", lw=1)
    a.text(0.99, 0.86, "83 C: slowdown", color="grey", fontsize=8, ha="right", transform=a.transAxes)
    a.set_ylabel("DCGM_FI_DEV_GPU_TEMP (C)")
    b.set_ylabel("DCGM_FI_DEV_SM_CLOCK (MHz)")
    b.set_xlabel("simulated seconds since the job started (Prometheus query_range, 1 s steps)")
    a.legend(ncol=4, fontsize=7, loc="lower right")
    a.set_title("gpuplan exporter --sim a100-80gb:8 --job 7B --fault thermal@3, scraped by Prometheus %s"
                % subprocess.run(["prometheus", "--version"], capture_output=True, text=True).stdout.split()[2],
                fontsize=9)
    if alerts:
        t0 = (float(alerts[0]["values"][0][0]) - start) * 10
        a.axvline(t0, color="tab:red", lw=0.8, ls=":")
        a.text(t0 + 2, 40, "GPUThermalThrottling pending", color="tab:red", fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    print("wrote %s (%d temperature series, %d points each)" % (OUT, len(temp), len(temp[0]["values"]) if temp else 0))
finally:
    for p in procs:
        p.terminate()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
    shutil.rmtree(work, ignore_errors=True)

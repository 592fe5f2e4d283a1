#!/usr/bin/python3
"""gpuplan exporter against a real Prometheus server from Debian.

Starts `gpuplan exporter --sim a100-80gb:8 --fault thermal@3` on a free
localhost port, checks its exposition with `promtool check metrics`, starts
`prometheus` on another free localhost port with a temporary configuration
and storage directory (scraping every second, with the seven alert rules of
examples/prometheus), queries it over its HTTP API until the samples arrive,
and requires DCGM_FI_DEV_GPU_TEMP{gpu="3"} >= 83 while the other GPUs stay
cooler, and the thermal alert active for GPU 3 only.  Both processes are
killed at the end; the whole test is bounded in time.

    test_prometheus.py GPUPLAN SOURCE_DIR TMPDIR
Exit 77 (skipped) when prometheus or promtool is not installed.
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

GP, SRC, TMP = sys.argv[1], sys.argv[2], sys.argv[3]
DEADLINE = time.monotonic() + 45


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


for tool in ("prometheus", "promtool"):
    if not shutil.which(tool):
        print("skipped: %s is not installed (tools/setup.sh --test installs it)" % tool)
        sys.exit(77)

work = tempfile.mkdtemp(prefix="gpuplan-prom-", dir=TMP if os.path.isdir(TMP) else None)
procs = []
try:
    # 1. the exporter, on a port of its own choosing (printed on stderr)
    log = open(os.path.join(work, "exporter.log"), "w+")
    ex = subprocess.Popen([GP, "exporter", "--sim", "a100-80gb:8", "--fault", "thermal@3", "--port", "0",
                           "--duration", "60"], stdout=subprocess.DEVNULL, stderr=log)
    procs.append(ex)
    port = None
    while time.monotonic() < DEADLINE and port is None:
        log.seek(0)
        m = re.search(r"serving http://127\.0\.0\.1:(\d+)/metrics", log.read())
        if m:
            port = int(m.group(1))
        elif ex.poll() is not None:
            log.seek(0)
            fail("the exporter exited: " + log.read())
        else:
            time.sleep(0.05)
    if port is None:
        fail("the exporter did not start")
    text = get("http://127.0.0.1:%d/metrics" % port)
    # 2. promtool's linter on what the exporter serves
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        fail("promtool check metrics: %s%s" % (r.stdout, r.stderr))
    for name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
                 "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_XID_ERRORS",
                 "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                 "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gpuplan_doctor_check_failed"):
        if "\n" + name + "{" not in text:
            fail("the exposition has no %s" % name)
    if 'modelName="' in text or 'model_name="NVIDIA A100-SXM4-80GB"' not in text:
        fail("labels: %s" % text.splitlines()[2])
    # 3. Prometheus, scraping every second, with the alert rules
    pport = free_port()
    cfg = os.path.join(work, "prometheus.yml")
    rules = os.path.join(SRC, "examples", "prometheus", "gpuplan-alerts.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "rule_files:\n  - %s\n"
                "scrape_configs:\n  - job_name: gpuplan\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % (rules, port))
    plog = open(os.path.join(work, "prometheus.log"), "w")
    pr = subprocess.Popen(["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(work, "data"),
                           "--web.listen-address=127.0.0.1:%d" % pport, "--log.level=warn"],
                          stdout=plog, stderr=subprocess.STDOUT)
    procs.append(pr)
    api = "http://127.0.0.1:%d/api/v1/" % pport

    def query(q):
        return json.loads(get(api + "query?" + urllib.parse.urlencode({"query": q})))["data"]["result"]

    temps = []
    while time.monotonic() < DEADLINE:
        if pr.poll() is not None:
            fail("prometheus exited (see %s)" % os.path.join(work, "prometheus.log"))
        try:
            temps = query("DCGM_FI_DEV_GPU_TEMP")
        except (OSError, ValueError, KeyError):
            temps = []
        if len(temps) == 8:
            break
        time.sleep(0.25)
    if len(temps) != 8:
        fail("Prometheus has %d GPU temperatures, not 8" % len(temps))
    by_gpu = {t["metric"]["gpu"]: float(t["value"][1]) for t in temps}
    if by_gpu["3"] < 83:
        fail("GPU 3 reads %.1f C, not >= 83" % by_gpu["3"])
    hot = [g for g, v in by_gpu.items() if g != "3" and v >= 83]
    if hot:
        fail("GPUs %s read >= 83 C too: %r" % (hot, by_gpu))
    t3 = query('DCGM_FI_DEV_GPU_TEMP{gpu="3"} >= 83')
    if len(t3) != 1 or t3[0]["metric"].get("Hostname") != "gpuplan-mock" or not t3[0]["metric"].get("UUID"):
        fail("the query for GPU 3: %r" % t3)
    # the thermal alert: pending or firing for GPU 3, and for no other GPU
    alerts = []
    while time.monotonic() < DEADLINE:
        alerts = query('ALERTS{alertname="GPUThermalThrottling"}')
        if alerts:
            break
        time.sleep(0.25)
    if [a["metric"]["gpu"] for a in alerts] != ["3"]:
        fail("ALERTS for GPUThermalThrottling: %r" % alerts)
    if query('ALERTS{alertname!="GPUThermalThrottling"}'):
        fail("other alerts on a node with only a thermal fault: %r" % query("ALERTS"))
    # the simulated clock runs while the exporter serves: GPU 3's thermal
    # violation counter grows between scrapes
    v1 = query('DCGM_FI_DEV_THERMAL_VIOLATION{gpu="3"}')
    time.sleep(2.2)
    v2 = query('DCGM_FI_DEV_THERMAL_VIOLATION{gpu="3"}')
    if not v1 or not v2 or float(v2[0]["value"][1]) <= float(v1[0]["value"][1]):
        fail("DCGM_FI_DEV_THERMAL_VIOLATION does not grow: %r -> %r" % (v1, v2))
    print("prometheus: GPU temperatures %s; alert %s for GPU 3" %
          (", ".join("%s:%.0f" % (g, by_gpu[g]) for g in sorted(by_gpu)), alerts[0]["metric"]["alertstate"]))
finally:
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    shutil.rmtree(work, ignore_errors=True)
print("test_prometheus: all passed")

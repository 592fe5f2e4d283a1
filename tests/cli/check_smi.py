#!/usr/bin/python3
"""Checks of gpuplan smi, topo and doctor that need a parser: one JSON
document with a schema key each (--json), documents that do not change
between runs on mock GPUs, -x that is well-formed XML with nvidia-smi's
elements, -L with distinct UUIDs, and every command doctor recommends,
run, for each of the seven faults.

    check_smi.py GPUPLAN
"""
import json
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

GP = sys.argv[1]
fails = []


def run(args, want=0):
    r = subprocess.run([GP] + args, capture_output=True, text=True, timeout=60)
    if r.returncode != want:
        fails.append("%s: exit %d, wanted %d: %s" % (" ".join(args), r.returncode, want, (r.stderr or r.stdout)[:300]))
    return r.stdout


def doc(args, want=0):
    out = run(args + ["--json"], want)
    try:
        d = json.loads(out)
    except ValueError as e:
        fails.append("%s --json: not JSON (%s)" % (" ".join(args), e))
        return {}
    return d


def check(cond, what):
    if not cond:
        fails.append(what)


# One document each, with its schema (issue 10 acceptance; review EC-7).
smi = doc(["smi", "--sim", "a100-80gb:2"])
check(smi.get("schema") == "gpuplan.smi/1", "smi --json: schema %r" % smi.get("schema"))
check(len(smi.get("gpus", [])) == 2, "smi --json: 2 GPUs")
topo = doc(["topo", "--node", "standard_nd96asr_v4"])
check(topo.get("schema") == "gpuplan.topo/1", "topo --json: schema")
check(len(topo.get("matrix", [])) == 8, "topo --json: an 8-GPU matrix")
doctor = doc(["doctor", "--sim", "h100-sxm5-80gb:2"])
check(doctor.get("schema") == "gpuplan.doctor/1" and doctor.get("ok") is True, "doctor --json: schema, ok")

# Deterministic on mock GPUs: the same options, the same document.
a = run(["smi", "--sim", "a100-80gb:8", "--fault", "thermal@3", "--json"])
b = run(["smi", "--sim", "a100-80gb:8", "--fault", "thermal@3", "--json"])
check(a == b and a, "smi --json on mock GPUs differs between runs")
a = run(["doctor", "--sim", "a100-80gb:8", "--fault", "ecc@2", "--json"], 1)
b = run(["doctor", "--sim", "a100-80gb:8", "--fault", "ecc@2", "--json"], 1)
check(a == b and a, "doctor --json differs between runs")

# The mock's GPUs are distinct, named as the driver names them, and their
# memory is held by listed processes (review EC-5).
d = doc(["smi", "--sim", "a100-80gb:8"])
uuids = {g["uuid"] for g in d["gpus"]}
check(len(uuids) == 8, "8 distinct UUIDs")
check(len({g["serial"] for g in d["gpus"]}) == 8, "8 distinct serials")
check(all(g["name"] == "NVIDIA A100-SXM4-80GB" for g in d["gpus"]), "the driver's name")
check(len({round(g["temperature"]["gpu_c"], 1) for g in d["gpus"]}) > 1, "not identical GPUs")
for g in d["gpus"]:
    held = sum(p["used_bytes"] for p in g["processes"])
    check(held == g["memory"]["used_bytes"], "GPU %d: processes hold %d of %d used" % (g["index"], held, g["memory"]["used_bytes"]))
check(d["driver"]["version"].startswith("535.") and d["driver"]["cuda_version"] == "12.2", "535 driver: CUDA 12.2")
d = doc(["smi", "--sim", "a100-80gb:1", "--driver", "550.54.15"])
check(d["driver"]["cuda_version"] == "12.4", "550 driver: CUDA 12.4")
listing = run(["smi", "--sim", "a100-80gb:8", "-L"]).splitlines()
check(len(listing) == 8 and all("(UUID: GPU-" in l for l in listing), "-L: 8 GPUs with UUIDs")
check({l.split("UUID: ")[1].rstrip(")") for l in listing} == uuids, "-L UUIDs are the document's")
# -i by index, UUID and bus id
one = sorted(uuids)[0]
out = run(["smi", "--sim", "a100-80gb:8", "-L", "-i", one]).splitlines()
check(len(out) == 1 and one in out[0], "-i UUID")
out = run(["smi", "--sim", "a100-80gb:8", "-L", "-i", "00000000:47:00.0"]).splitlines()
check(len(out) == 1 and out[0].startswith("GPU 2:"), "-i PCI bus id: %r" % out)
out = run(["smi", "--sim", "a100-80gb:8", "-L", "--id=1,3"]).splitlines()
check([l.split(":")[0] for l in out] == ["GPU 1", "GPU 3"], "--id=1,3")

# -x: well-formed XML with nvidia-smi's elements
x = run(["smi", "--sim", "a100-80gb:2", "--fault", "ecc@1", "-q", "-x"])
try:
    root = ET.fromstring(x.split("\n", 2)[2])
    check(root.tag == "nvidia_smi_log", "-x root")
    gpus = root.findall("gpu")
    check(len(gpus) == 2, "-x: 2 gpus")
    check(gpus[1].find("ecc_errors/volatile/dram_uncorrectable").text == "2", "-x: ECC of GPU 1")
    check(gpus[0].find("fb_memory_usage/total").text == "81920 MiB", "-x: memory")
    check(root.find("cuda_version").text == "12.2", "-x: cuda_version")
except ET.ParseError as e:
    fails.append("-x is not XML: %s" % e)

# Query rows as CSV: the new fields, in nvidia-smi's units
d = doc(["smi", "--sim", "rtx-4090:1", "--query-gpu=timestamp,fan.speed,clocks.mem,clocks.max.sm,clocks.max.mem,"
         "pcie.link.gen.current,pcie.link.width.current,persistence_mode,temperature.memory,serial,vbios_version",
         "--format=csv"])
row = d["rows"][0]
check(isinstance(row["fan.speed"], int), "rtx-4090 has a fan")
check(row["temperature.memory"] is None, "GDDR: no memory temperature")
check(row["timestamp"] == "2026/12/01 09:10:00.000", "simulated timestamp %r" % row["timestamp"])
csv = run(["smi", "--sim", "v100:2", "--fault", "ecc@1", "--query-gpu=index,retired_pages.double_bit.count,"
           "retired_pages.pending", "--format=csv,noheader"])
check(csv.splitlines() == ["0, 0, No", "1, 2, Yes"], "V100 retired pages: %r" % csv)
csv = run(["smi", "--sim", "a100-80gb:2", "--fault", "ecc@1", "--query-gpu=index,remapped_rows.uncorrectable,"
           "remapped_rows.pending,retired_pages.double_bit.count", "--format=csv,noheader"])
check(csv.splitlines() == ["0, 0, No, [N/A]", "1, 2, Yes, [N/A]"], "A100 remapped rows: %r" % csv)
csv = run(["smi", "--sim", "a100-80gb:2", "--fault", "oom@1", "--query-compute-apps=pid,process_name,used_memory",
           "--format=csv"]).splitlines()
check(csv[0] == "pid, process_name, used_memory [MiB]" and len(csv) == 4, "query-compute-apps: %r" % csv)
check(any("/opt/conda/bin/python" in l for l in csv), "the stray process of the oom fault")
csv = run(["smi", "--sim", "a100-80gb:2", "--query-gpu=index,memory.used", "--format=csv", "--csv"])
check(csv.splitlines()[0] == "index,memory.used", "--csv: the rows")

# Each fault: doctor's findings are data, and every command it recommends runs.
for fault, spec in [("oom@1", "a100-80gb:2"), ("cuda-mismatch", "h100-sxm5-80gb:2"), ("gpu-not-found@1", "a100-80gb:2"),
                    ("ecc@1", "a100-80gb:2"), ("thermal", "a100-80gb:8"), ("data-starvation", "a100-80gb:2"),
                    ("nvlink-down@3", "a100-80gb:8")]:
    d = doc(["doctor", "--sim", spec, "--fault", fault], 1)
    fail = [f for f in d.get("findings", []) if f["level"] == "fail"]
    check(fail, "doctor %s: a failure" % fault)
    for f in d.get("findings", []):
        check(len(f["commands"]) == len(f["nvidia_smi"]), "commands and nvidia_smi pair up")
        for c in f["commands"]:
            argv = shlex.split(c)
            check(argv[0] == "gpuplan" and argv[1] == "smi", "a gpuplan smi command: %s" % c)
            r = subprocess.run([GP] + argv[1:], capture_output=True, text=True, timeout=60)
            check(r.returncode == 0 and r.stdout.strip(), "doctor %s recommends '%s': exit %d %s" %
                  (fault, c, r.returncode, r.stderr[:200]))
# grouped across GPUs: one thermal finding for eight GPUs
d = doc(["doctor", "--sim", "a100-80gb:8", "--fault", "thermal"], 1)
th = [f for f in d["findings"] if f["check"] == "thermal"]
check(len(th) == 1 and th[0]["gpus"] == list(range(8)), "thermal grouped: %r" % [f["gpus"] for f in th])
check(th and th[0]["message"].startswith("GPUs 0-7: thermal throttling"), "grouped message")

if fails:
    print("\n".join("FAIL " + f for f in fails))
    sys.exit(1)
print("check_smi: all passed")

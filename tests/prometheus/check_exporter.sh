#!/bin/sh
# gpuplan exporter's exposition against promtool's linter (every fault, a
# simulated job, this machine through the fake driver and NVML), DCGM's
# exact spelling on request, promtool on the alert rules and their tests,
# and the Grafana dashboard's queries against the metrics served.
#   check_exporter.sh GPUPLAN SOURCE_DIR FAKE_LIBCUDA FAKE_LIBNVML
# Exit 77 (skipped) without promtool.
gp=$1 src=$2 fake=$3 nvml=$4
command -v promtool >/dev/null 2>&1 || { echo "skipped: promtool is not installed (tools/setup.sh --test)"; exit 77; }
fails=0
lint() {  # lint DESCRIPTION -- command...
  desc=$1; shift 2
  out=$("$@" 2>&1) || { echo "FAIL $desc: exit $?"; echo "$out" | head -5; fails=$((fails + 1)); return; }
  if ! printf '%s\n' "$out" | promtool check metrics; then echo "FAIL $desc: promtool check metrics"; fails=$((fails + 1)); fi
}
lint "healthy" -- "$gp" exporter --sim a100-80gb:8 --once
for f in oom@1 cuda-mismatch gpu-not-found@1 gpu-not-found ecc@1 thermal@3 data-starvation nvlink-down@3; do
  lint "fault $f" -- "$gp" exporter --sim a100-80gb:8 --fault "$f" --once
done
lint "a simulated job" -- "$gp" exporter --sim h100-sxm5-80gb:8 --job 7B --load 900 --once
lint "V100 node" -- "$gp" exporter --sim v100:8 --fault ecc@2 --once
lint "the fake driver" -- env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" FAKE_CUDA_DEVICES=2 "$gp" exporter --once
out=$("$gp" exporter --sim a100-80gb:8 --fault thermal@3 --once)
t3=$(printf '%s\n' "$out" | sed -n 's/^DCGM_FI_DEV_GPU_TEMP{gpu="3".* \([0-9.]*\)$/\1/p')
[ "${t3%.*}" -ge 83 ] 2>/dev/null || { echo "FAIL thermal@3: GPU 3 at '$t3'"; fails=$((fails + 1)); }
hot=$(printf '%s\n' "$out" | grep '^DCGM_FI_DEV_GPU_TEMP{' | grep -v 'gpu="3"' | awk '$NF >= 83' | wc -l)
[ "$hot" = 0 ] || { echo "FAIL thermal@3: $hot other GPUs at 83 C or more"; fails=$((fails + 1)); }
printf '%s\n' "$("$gp" exporter --sim a100-80gb:2 --dcgm-exact --once)" | grep -q 'modelName="NVIDIA A100-SXM4-80GB"' ||
  { echo "FAIL --dcgm-exact: no modelName label"; fails=$((fails + 1)); }
printf '%s\n' "$("$gp" exporter --sim a100-80gb:2 --dcgm-exact --once)" | grep -q '^# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter' ||
  { echo "FAIL --dcgm-exact: counters"; fails=$((fails + 1)); }
"$gp" exporter --sim a100-80gb:2 --port 70000 --once >/dev/null 2>&1; [ $? = 2 ] || { echo "FAIL --port 70000: not a usage error"; fails=$((fails + 1)); }
promtool check rules "$src/examples/prometheus/gpuplan-alerts.yml" >/dev/null || { echo "FAIL promtool check rules"; fails=$((fails + 1)); }
(cd "$src/tests/prometheus" && promtool test rules gpuplan-alerts_test.yml) >/dev/null || { echo "FAIL promtool test rules"; fails=$((fails + 1)); }
promtool check config "$src/examples/prometheus/prometheus.yml" >/dev/null || { echo "FAIL promtool check config"; fails=$((fails + 1)); }
# the dashboard: JSON, and every metric its queries name is served
"$gp" exporter --sim a100-80gb:8 --fault thermal@3 --once > "${TMPDIR:-/tmp}/gpuplan-exposition.$$"
python3 - "$src/examples/grafana/gpuplan-dcgm-dashboard.json" "${TMPDIR:-/tmp}/gpuplan-exposition.$$" <<'PY' || fails=$((fails + 1))
import json, re, sys
d = json.load(open(sys.argv[1]))
served = set(re.findall(r"^([A-Za-z_][A-Za-z0-9_]*)\{", open(sys.argv[2]).read(), re.M))
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
names = set(re.findall(r"\b(DCGM_FI_[A-Z_]+|gpuplan_[a-z_]+)\b", " ".join(exprs)))
missing = sorted(names - served)
if missing or len(exprs) < 10:
    print("FAIL dashboard: %d queries; not served: %s" % (len(exprs), missing)); sys.exit(1)
PY
rm -f "${TMPDIR:-/tmp}/gpuplan-exposition.$$"
[ "$fails" = 0 ] && echo "check_exporter: all passed"
[ "$fails" = 0 ]

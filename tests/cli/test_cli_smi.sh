#!/bin/sh
# End-to-end checks of `gpuplan smi` and `gpuplan doctor`: no driver, the
# fake driver, and each of the seven faults from the CLI with its symptom in
# smi and its diagnosis in doctor.
#   test_cli_smi.sh GPUPLAN TMPDIR FAKE_LIBCUDA FAKE_LIBNVML
gp=$1
tmp=$2
fake=$3
nvml=$4
fails=0
pass=0

check() {  # check DESCRIPTION EXPECTED_RC PATTERN -- command...
  desc=$1 want=$2 pat=$3
  shift 4
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $desc: exit $rc, wanted $want"; echo "$out" | head -8
    fails=$((fails + 1)); return
  fi
  if [ -n "$pat" ] && ! printf '%s\n' "$out" | grep -q -- "$pat"; then
    echo "FAIL $desc: no '$pat' in output"; echo "$out" | head -12
    fails=$((fails + 1)); return
  fi
  pass=$((pass + 1))
}

# no driver: nvidia-smi's message and its exit status 9
check "smi without a driver" 9 "couldn't communicate with the NVIDIA driver" -- \
  env GPUPLAN_LIBCUDA=/nonexistent/libcuda.so.1 "$gp" smi
check "doctor without a driver" 1 "FAIL.*no working NVIDIA driver" -- \
  env GPUPLAN_LIBCUDA=/nonexistent/libcuda.so.1 "$gp" doctor
# the fake driver stands in for a real one
check "smi on the fake driver" 0 "NVIDIA A100-SXM4-40GB" -- \
  env GPUPLAN_LIBCUDA="$fake" FAKE_CUDA_DEVICES=2 "$gp" smi
check "smi query on the fake driver" 0 "1, NVIDIA A100-SXM4-40GB, 40960 MiB" -- \
  env GPUPLAN_LIBCUDA="$fake" FAKE_CUDA_DEVICES=2 "$gp" smi --query-gpu=index,name,memory.total --format=csv
check "doctor on the fake driver" 0 "catalog a100-sxm4-40gb" -- \
  env GPUPLAN_LIBCUDA="$fake" "$gp" doctor
check "doctor: no device" 1 "CUDA_ERROR_NO_DEVICE" -- \
  env GPUPLAN_LIBCUDA="$fake" FAKE_CUDA_MODE=nodevice "$gp" doctor
check "doctor: driver/library mismatch" 1 "do not match" -- \
  env GPUPLAN_LIBCUDA="$fake" FAKE_CUDA_MODE=mismatch "$gp" doctor

# NVML telemetry on the fake driver: the same symptoms on "real" devices
check "smi NVML table" 0 "42C  P0              72W /  400W" -- \
  env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" "$gp" smi
check "smi NVML driver version" 0 "Driver Version: 550.54.15" -- \
  env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" "$gp" smi
check "smi NVML query" 0 "^88, P2, 990 MHz, 3$" -- \
  env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" FAKE_NVML_TEMP=88 FAKE_NVML_PSTATE=2 FAKE_NVML_CLOCK=990 \
  FAKE_NVML_ECC=3 "$gp" smi --query-gpu=temperature.gpu,pstate,clocks.sm,ecc.errors.uncorrected.volatile.total \
  --format=csv,noheader
check "topo on NVML" 0 "NV12" -- env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" FAKE_CUDA_DEVICES=2 "$gp" smi topo -m
check "topo on NVML, links down" 0 "PHB" -- \
  env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" FAKE_CUDA_DEVICES=2 FAKE_NVML_NVLINK_UP=0 "$gp" smi topo -m
check "dmon on NVML" 0 "1410" -- env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" "$gp" smi dmon -c 1
check "doctor on NVML: ECC, NVLink, thermal" 1 "3 failure(s)" -- \
  env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" FAKE_NVML_ECC=1 FAKE_NVML_NVLINK_UP=0 FAKE_NVML_TEMP=88 \
  FAKE_NVML_THROTTLE=40 FAKE_NVML_CLOCK=990 FAKE_NVML_PSTATE=2 "$gp" doctor
check "doctor on NVML, healthy" 0 "0 failure(s)" -- env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" "$gp" doctor
check "topo without NVML" 1 "NVML unavailable" -- \
  env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML=/nonexistent/libnvidia-ml.so.1 "$gp" smi topo -m

# a step program with real allocations on the (fake) card: predicted vs actual
check "simulate --on cuda" 0 "predicted     27700 MiB   on the card     27700 MiB" -- \
  env GPUPLAN_LIBCUDA="$fake" "$gp" simulate llama-2-7b --gpu a100-40gb --zero 3 --gpus 4 --recompute full --on cuda
check "simulate --on cuda, OOM on both" 0 "predicted yes, on the card yes" -- \
  env GPUPLAN_LIBCUDA="$fake" "$gp" simulate llama-2-7b --gpu a100-40gb --on cuda
check "simulate --on cuda:1 missing" 2 "device: 1 is not in 0..0" -- \
  env GPUPLAN_LIBCUDA="$fake" "$gp" simulate llama-2-7b --gpu a100-40gb --on cuda:1
check "simulate --on without a driver" 1 "no NVIDIA driver" -- \
  env GPUPLAN_LIBCUDA=/nonexistent/libcuda.so.1 "$gp" simulate llama-2-7b --gpu a100-40gb --on cuda
check "simulate --on bad" 2 "is not cuda or cuda:N" -- "$gp" simulate llama-2-7b --gpu a100-40gb --on rocm

# a healthy simulated node
check "smi healthy" 0 "P0" -- "$gp" smi --sim a100-80gb:8
check "doctor healthy" 0 "0 failure(s)" -- "$gp" doctor --sim a100-80gb:8
check "topo healthy" 0 "NV12" -- "$gp" smi --sim a100-80gb:4 topo -m
# 1. OOM: another process holds the memory
check "smi oom" 0 "python (a process outside this job)" -- "$gp" smi --sim a100-80gb:2 --fault oom@1
check "doctor oom" 1 "other processes hold" -- "$gp" doctor --sim a100-80gb:2 --fault oom@1
# 2. CUDA version mismatch
check "doctor cuda-mismatch" 1 "no kernel image is available" -- "$gp" doctor --sim h100-sxm5-80gb --fault cuda-mismatch
check "doctor runtime newer than driver" 1 "CUDA driver version is insufficient" -- \
  "$gp" doctor --sim h100-sxm5-80gb --torch-cuda 12.4
# 3. GPU not found
check "smi gpu-not-found" 9 "couldn't communicate with the NVIDIA driver" -- \
  "$gp" smi --sim a100-80gb --fault gpu-not-found
check "doctor gpu-not-found" 1 "no working NVIDIA driver" -- "$gp" doctor --sim a100-80gb --fault gpu-not-found
# 4. ECC
check "smi ecc" 0 "^1, 2$" -- \
  "$gp" smi --sim a100-80gb:2 --fault ecc@1 --query-gpu=index,ecc.errors.uncorrected.volatile.total --format=csv,noheader
check "doctor ecc" 1 "uncorrected ECC errors" -- "$gp" doctor --sim a100-80gb:2 --fault ecc@1
# 5. thermal throttling
check "smi thermal" 0 "83, P2" -- \
  "$gp" smi --sim a100-80gb --fault thermal --query-gpu=temperature.gpu,pstate --format=csv,noheader
check "doctor thermal" 1 "thermal throttling: 83 C, P2" -- "$gp" doctor --sim a100-80gb --fault thermal
# 6. low utilisation (data starvation)
check "smi starvation" 0 "^33 %$" -- \
  "$gp" smi --sim a100-80gb --fault data-starvation --query-gpu=utilization.gpu --format=csv,noheader
check "doctor starvation" 1 "input pipeline starves" -- "$gp" doctor --sim a100-80gb --fault data-starvation
# 7. NVLink not detected
check "topo nvlink-down" 0 "PHB" -- "$gp" smi --sim a100-80gb:4 --fault nvlink-down topo -m
check "doctor nvlink-down" 1 "NVLink not detected" -- "$gp" doctor --sim a100-80gb:8 --fault nvlink-down
check "doctor nvlink-down cost" 1 "on PCIe (" -- "$gp" doctor --sim a100-80gb:8 --fault nvlink-down

# bad input
check "unknown fault" 2 "NAME one of oom" -- "$gp" smi --sim a100-80gb --fault gremlins
check "fault on a missing GPU" 2 "ecc@5.*GPU in 0..1" -- "$gp" smi --sim a100-80gb:2 --fault ecc@5
check "unknown SKU" 1 "a100-9000" -- "$gp" smi --sim a100-9000
check "bad count" 2 "SKU\[:N\]" -- "$gp" smi --sim a100-80gb:0
check "unknown field" 2 "field 'fan.speed' is not known" -- \
  "$gp" smi --sim a100-80gb --query-gpu=fan.speed --format=csv
check "query needs csv" 2 "format=csv" -- "$gp" smi --sim a100-80gb --query-gpu=name

echo "$pass passed, $fails failed"
[ "$fails" = 0 ]

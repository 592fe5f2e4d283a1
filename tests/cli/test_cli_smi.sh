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
check "topo without a driver" 9 "couldn't communicate with the NVIDIA driver" -- \
  env GPUPLAN_LIBCUDA=/nonexistent/libcuda.so.1 "$gp" topo
check "topo --json without a driver: one document" 0 '"driver": {' -- \
  env GPUPLAN_LIBCUDA=/nonexistent/libcuda.so.1 "$gp" topo --json
check "topo of this machine on the fake driver" 0 "GPU0" -- \
  env GPUPLAN_LIBCUDA="$fake" FAKE_CUDA_DEVICES=2 "$gp" topo
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
check "smi NVML table" 0 "42C    P0             72W /  400W" -- \
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
# predicted and measured agree on the fake card (whatever the memory model predicts)
check "simulate --on cuda" 0 "predicted  *\([0-9][0-9]*\) MiB   on the card  *\1 MiB (+0.0%)" -- \
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
check "smi oom" 0 "4243      C   /opt/conda/bin/python  *77336MiB" -- "$gp" smi --sim a100-80gb:2 --fault oom@1
check "doctor oom" 1 "other processes hold" -- "$gp" doctor --sim a100-80gb:2 --fault oom@1
# 2. CUDA version mismatch
check "doctor cuda-mismatch" 1 "no kernel image is available" -- "$gp" doctor --sim h100-sxm5-80gb --fault cuda-mismatch
# review EC-1: a newer minor of the driver's CUDA major runs (minor-version
# compatibility, 525.60.13+ for 12.x); a newer major does not
check "doctor 12.4 runtime on a 12.2 driver" 0 "runs through CUDA's minor-version compatibility" -- \
  "$gp" doctor --sim h100-sxm5-80gb --torch-cuda 12.4
check "doctor 13.0 runtime on a 12.2 driver" 1 "needs a CUDA 13 driver (580 or later)" -- \
  "$gp" doctor --sim h100-sxm5-80gb --torch-cuda 13.0
check "doctor 13.0 runtime: forward compatibility" 1 "cuda-compat-13-0" -- \
  "$gp" doctor --sim h100-sxm5-80gb --torch-cuda 13.0
check "doctor 12.4 runtime on a 11.8 driver" 1 "needs a CUDA 12 driver" -- \
  "$gp" doctor --sim a100-80gb --driver 520.61.05 --torch-cuda 12.4
check "doctor 12.8 runtime on a 570 driver" 0 "0 failure(s)" -- \
  "$gp" doctor --sim b200:8 --driver 570.86.15 --torch-cuda 12.8
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
check "unknown SKU" 2 "a100-9000" -- "$gp" smi --sim a100-9000
check "bad count" 2 "SKU\[:N\]" -- "$gp" smi --sim a100-80gb:0
check "unknown field" 2 "field 'gremlins.count' is not known" -- \
  "$gp" smi --sim a100-80gb --query-gpu=gremlins.count --format=csv
check "query needs csv" 2 "format=csv" -- "$gp" smi --sim a100-80gb --query-gpu=name

# the seven problems, grouped across GPUs: one finding for eight GPUs
check "doctor groups GPUs" 1 "GPUs 0-7: thermal throttling: 83 C, P2" -- "$gp" doctor --sim a100-80gb:8 --fault thermal
check "doctor: a GPU fell off the bus" 1 "GPU 3: fell off the bus (Xid 79" -- \
  "$gp" doctor --sim a100-80gb:8 --fault gpu-not-found@3
check "smi -L: a lost GPU" 0 "GPU00000000:4E:00.0: GPU is lost" -- "$gp" smi --sim a100-80gb:8 --fault gpu-not-found@3 -L
# framework builds against architectures (cu128 wheels and Volta)
check "doctor: cu128 2.7 on V100" 1 "carry no kernels for compute capability 7.0 (Volta)" -- \
  "$gp" doctor --sim v100:8 --torch-cuda 12.8 --torch 2.7
check "doctor: cu128 2.8 on V100" 0 "0 failure(s)" -- "$gp" doctor --sim v100:8 --torch-cuda 12.8 --torch 2.8
check "doctor: cu128 on V100, release unknown" 0 "only in releases 2.8-2.9" -- "$gp" doctor --sim v100:8 --torch-cuda 12.8
check "doctor: cu124 on B200" 1 "carry no kernels for compute capability 10.0" -- \
  "$gp" doctor --sim b200:8 --driver 570.86.15 --torch-cuda 12.4
check "doctor: a 535 driver for B200" 1 "older than Blackwell GPUs" -- "$gp" doctor --sim b200:8 --torch-cuda 12.8
check "doctor: sm_86 kernels run on sm_89" 0 "(sm_86)" -- "$gp" doctor --sim l4:1
check "doctor recommends gpuplan smi" 1 "see: gpuplan smi --sim a100-80gb:1 --fault thermal -q -d TEMPERATURE,PERFORMANCE" -- \
  "$gp" doctor --sim a100-80gb:1 --fault thermal
check "doctor --json exits 1 on a failure" 1 '"ok": false' -- "$gp" doctor --sim a100-80gb:2 --fault ecc@1 --json
# review L2: a non-finite or malformed --torch-cuda is refused, naming it
check "doctor --torch-cuda inf" 2 "torch_cuda (--torch-cuda)" -- "$gp" doctor --sim a100-80gb:2 --torch-cuda inf
check "doctor --torch-cuda nan" 2 "torch_cuda (--torch-cuda)" -- "$gp" doctor --sim a100-80gb:2 --torch-cuda nan
check "doctor --torch-cuda 12.45" 2 "is not a CUDA version X.Y" -- "$gp" doctor --sim a100-80gb:2 --torch-cuda 12.45
check "doctor --torch-cuda 1e400" 2 "torch_cuda" -- "$gp" doctor --sim a100-80gb:2 --torch-cuda 1e400
# review L3: a layout whose product overflows is refused before any output
check "topo layout overflow" 2 "overflows" -- \
  "$gp" topo --gpu a100-80gb --nodes 16 --layout 4294967296,4294967296,1
check "topo layout overflow, no matrix" 2 "" -- sh -c "'$gp' topo --gpu a100-80gb --nodes 16 --layout 4294967296,4294967296,1 | grep -q GPU0 && exit 9; exit 2"
check "topo layout mismatch" 2 "but the cluster has 128 GPUs" -- "$gp" topo --gpu a100-80gb --nodes 16 --layout 8,2,4

# nvidia-smi parity on the mock (review EC-4, EC-5)
check "smi -q" 0 "Clocks Event Reasons" -- "$gp" smi --sim a100-80gb:1 -q
check "smi -q -d" 0 "Used GPU Memory" -- \
  "$gp" smi --sim a100-80gb:1 -q -d MEMORY,UTILIZATION,TEMPERATURE,POWER,CLOCK,PERFORMANCE,ECC,PIDS
check "smi -q -d TEMPERATURE only" 1 "" -- sh -c "'$gp' smi --sim a100-80gb:1 -q -d TEMPERATURE | grep -q 'FB Memory Usage'"
check "smi -q -d bad" 2 "is not one of MEMORY" -- "$gp" smi --sim a100-80gb:1 -q -d GREMLINS
check "smi -i" 0 "^GPU 1: NVIDIA A100-SXM4-80GB" -- "$gp" smi --sim a100-80gb:2 -L -i 1
check "smi -i out of range" 2 "'9' is no GPU here" -- "$gp" smi --sim a100-80gb:2 -L -i 9
check "smi 535 layout" 0 "^| NVIDIA-SMI 535.161.08             Driver Version: 535.161.08   CUDA Version: 12.2     |$" -- \
  "$gp" smi --sim a100-80gb:1
check "smi 550 layout" 0 "^|   0  NVIDIA A100-SXM4-80GB          On  |   00000000:07:00.0 Off |" -- \
  "$gp" smi --sim a100-80gb:1 --driver 550.54.15
check "smi MIG row" 0 "Disabled |$" -- "$gp" smi --sim a100-80gb:1
check "smi processes when memory is used" 0 "31400      C   /usr/bin/python3  *71338MiB" -- "$gp" smi --sim a100-80gb:1
check "smi no processes when idle" 0 "No running processes found" -- "$gp" smi --sim a100-80gb:1 --load 0
check "smi bad driver" 2 "is not an NVIDIA driver version" -- "$gp" smi --sim a100-80gb:1 --driver 9.9
check "smi --fault without --sim" 2 "applies to simulated GPUs" -- "$gp" smi --fault ecc
check "smi query new fields" 0 "^0, 1593 MHz, 1410 MHz, 1593 MHz, 4, 16, Enabled, 74, Disabled$" -- \
  "$gp" smi --sim a100-80gb:1 --query-gpu=index,clocks.mem,clocks.max.sm,clocks.max.mem,pcie.link.gen.current,pcie.link.width.current,persistence_mode,temperature.memory,mig.mode.current --format=csv,noheader
check "smi query-compute-apps" 0 "^31400, /usr/bin/python3, 71338 MiB$" -- \
  "$gp" smi --sim a100-80gb:1 --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
check "smi pmon" 0 "31400      C  71338     95     52      -      -    python3" -- "$gp" smi --sim a100-80gb:1 pmon -s um -c 2
check "smi dmon -s pucvmet" 0 "pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk  pviol  tviol     fb   bar1  sbecc  dbecc    pci  rxpci  txpci" -- \
  "$gp" smi --sim a100-80gb:1 dmon -s pucvmet -c 2
check "smi dmon -c 1e30" 2 "samples" -- "$gp" smi --sim a100-80gb:1 dmon -c 1e30
check "smi nvlink -s" 0 "Link 11: 25 GB/s" -- "$gp" smi --sim a100-80gb:2 nvlink -s
check "smi nvlink -s, links down" 0 "all links are inActive" -- "$gp" smi --sim a100-80gb:2 --fault nvlink-down@1 nvlink -s
check "smi nvlink -c" 0 "Link 0, P2P is supported: true" -- "$gp" smi --sim h100-sxm5-80gb:2 nvlink -c
check "smi nvlink H100 speed" 0 "Link 17: 26.562 GB/s" -- "$gp" smi --sim h100-sxm5-80gb:2 nvlink -s
check "smi topo -m affinity" 0 "^GPU4	NV12	NV12	NV12	NV12	 X 	NV12	NV12	NV12	48-95,144-191	1" -- \
  "$gp" smi --sim a100-80gb:8 topo -m
check "smi topo -m DGX-1 cube-mesh" 0 "^GPU0	 X 	NV1	NV1	NV2	NV2	SYS	SYS	SYS" -- "$gp" smi --sim v100:8 topo -m
check "smi topo -m nvlink down" 0 "^GPU2	SYS	SYS	 X 	PXB" -- "$gp" smi --sim a100-80gb:4 --fault nvlink-down@2 topo -m
check "smi -l loops" 0 "09:10:01.000, 67" -- \
  sh -c "timeout 1.6 '$gp' smi --sim a100-80gb:1 --query-gpu=timestamp,temperature.gpu --format=csv,noheader -l 1; true"
check "smi simulated job" 0 "training" -- sh -c "'$gp' smi --sim a100-80gb:8 --job 7B --json | grep '\"state\"'"
check "smi simulated job starting" 0 '"state": "starting"' -- "$gp" smi --sim a100-80gb:8 --job 7B --load 20 --json
check "smi --mem with --job" 2 "memory comes from the job" -- "$gp" smi --sim a100-80gb:8 --job 7B --mem 0.5
# a size is the catalog's model of that size (here Llama-3-70B, 80 layers), not Llama-2-7B's shape rescaled
check "smi --job size resolves" 0 '"model_id": "llama-3-70b"' -- "$gp" smi --sim a100-80gb:8 --job 70B --json
check "smi --job size says which" 0 "the catalog's llama-3-70b" -- "$gp" smi --sim a100-80gb:8 --job 70B --json
check "smi --job unknown size" 2 "no catalog model has 33 B parameters" -- "$gp" smi --sim a100-80gb:8 --job 33B
check "smi checkpoint without job" 2 "give job" -- "$gp" smi --sim a100-80gb:8 --checkpoint-every 60
# the same views against the fake driver and NVML (review EC-4: on a real GPU every field comes from NVML)
fk() { env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" FAKE_NVML_PROCS=4321:1000 "$@"; }
check "fake NVML -q" 0 "Serial Number                         : 1324020000001" -- fk "$gp" smi -q
check "fake NVML -q -d PIDS" 0 "Process ID                        : 4321" -- fk "$gp" smi -q -d PIDS
check "fake NVML -L" 0 "^GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-" -- fk "$gp" smi -L
check "fake NVML query-compute-apps" 0 "^4321, /usr/bin/python3, 1000 MiB$" -- \
  fk "$gp" smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
check "fake NVML pmon" 0 "4321      C   1000      -      -      -      -    python3" -- fk "$gp" smi pmon -s um -c 1
check "fake NVML nvlink -s" 0 "Link 11: 25 GB/s" -- fk "$gp" smi nvlink -s
check "fake NVML nvlink -s down" 0 "all links are inActive" -- env FAKE_NVML_NVLINK_UP=0 GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" "$gp" smi nvlink -s
check "fake NVML -x" 0 "<remapped_row_pending>Yes</remapped_row_pending>" -- env FAKE_NVML_REMAPPED=3 GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" "$gp" smi -x
check "fake NVML new query fields" 0 "^4, 16, Enabled, 92.00.19.00.01, \[N/A\]$" -- \
  fk "$gp" smi --query-gpu=pcie.link.gen.current,pcie.link.width.current,persistence_mode,vbios_version,fan.speed --format=csv,noheader
check "fake NVML fan" 0 "^55 %$" -- env FAKE_NVML_FAN=55 GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" "$gp" smi --query-gpu=fan.speed --format=csv,noheader
check "fake NVML, an old NVML" 0 "^\[N/A\], \[N/A\]$" -- env FAKE_NVML_OLD=1 GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" "$gp" smi --query-gpu=serial,pcie.link.gen.current --format=csv,noheader
check "fake NVML doctor: other processes" 0 "already in use" -- env GPUPLAN_LIBCUDA="$fake" GPUPLAN_LIBNVML="$nvml" FAKE_CUDA_USED_MIB=20000 "$gp" doctor
# JSON, XML, doctor's commands, grouping (a parser helps)
check "smi/topo/doctor documents" 0 "all passed" -- python3 "$(dirname "$0")/check_smi.py" "$gp"

echo "$pass passed, $fails failed"
[ "$fails" = 0 ]

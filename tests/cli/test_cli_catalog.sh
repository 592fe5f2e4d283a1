#!/bin/sh
# End-to-end checks of `gpuplan catalog`: output shapes, exit codes (0 ok,
# 1 run-time error, 2 usage) and one-line errors on stderr.
gp=$1
tmp=$2
fails=0
pass=0

one_line_errors=any
. "$(dirname "$0")/checks.sh"

check "lists gpus" 0 "h100-sxm5-80gb" -- "$gp" catalog gpus
check "lists nodes" 0 "Standard_ND96asr_v4" -- "$gp" catalog nodes
check "lists models" 0 "llama-2-70b" -- "$gp" catalog models
check "lists fabrics" 0 "ib-ndr" -- "$gp" catalog fabrics
check "json" 0 '"bf16_flops": 989000000000000' -- "$gp" catalog gpus --json
check "csv header" 0 "^id,name,vendor" -- "$gp" catalog gpus --csv
check "show by alias" 0 "a100-sxm4-80gb" -- "$gp" catalog show a100-80gb
check "show json" 0 '"kind": "gpu"' -- "$gp" catalog show "H100 SXM" --json
check "show node" 0 "gpu_fraction" -- "$gp" catalog show NV6ads_A10_v5
# A name or a file the command cannot use is a bad value of an option: exit
# 2, as every option the library rejects (issue 10), e.g. plan's unknown model.
check "ambiguous" 2 "ambiguous.*h100-nvl-94gb.*h100-pcie-80gb.*h100-sxm5-80gb" -- "$gp" catalog show h100
check "suggests" 2 "did you mean h100-sxm5-80gb" -- "$gp" catalog show h10O-sxm
check "unknown" 2 "unknown" -- "$gp" catalog show qqqqqqqqqqqqqqqq
check "kind filter" 2 "unknown model" -- "$gp" catalog show h10O-sxm --kind model
check "bad kind" 2 "kind: .disk. is not one of gpu" -- "$gp" catalog show x --kind disk
check "bad subcommand" 2 "unknown subcommand" -- "$gp" catalog disks
check "bad option" 2 "unknown option" -- "$gp" catalog gpus --yaml
check "bad command" 2 "unknown command" -- "$gp" frobnicate
check "no command" 2 "no command" -- "$gp"
check "show needs name" 2 "NAME" -- "$gp" catalog show
check "version" 0 "^gpuplan [0-9]" -- "$gp" version
check "help" 0 "usage: gpuplan" -- "$gp" --help
check "catalog help" 0 "usage: gpuplan catalog" -- "$gp" catalog --help
check "version help" 0 "usage: gpuplan version" -- "$gp" version --help
check "help topic" 0 "usage: gpuplan catalog" -- "$gp" help catalog
check "info" 0 "schema version" -- "$gp" catalog info
check "missing catalog" 1 "no such file" -- "$gp" --catalog "$tmp/none.sqlite" catalog gpus
check "catalog needs file" 2 "needs a FILE" -- "$gp" --catalog

# A user catalog layered over the default.
rm -f "$tmp/user.sqlite"
check "init" 0 "created" -- "$gp" catalog init "$tmp/user.sqlite"
check "init twice" 1 "already exists" -- "$gp" catalog init "$tmp/user.sqlite"
cat > "$tmp/rows.sql" <<'SQL'
INSERT INTO node(id,name,provider,gpu_id,gpu_count,intra_fabric_id,vcpus,
                 price_per_hour,currency,source)
VALUES ('rack-7','rack-7','on-prem','h100-sxm5-80gb',8,'nvswitch4',224,
        41.5,'USD','internal chargeback sheet 2026-11');
SQL
check "import" 0 "imported" -- "$gp" catalog import "$tmp/user.sqlite" "$tmp/rows.sql"
check "layered show" 0 "rack-7" -- "$gp" --layer "$tmp/user.sqlite" catalog show rack-7
check "layered keeps default" 0 "Standard_ND96asr_v4" -- "$gp" --layer "$tmp/user.sqlite" catalog nodes
echo "DROP TABLE gpu;" > "$tmp/bad.sql"
check "import refuses DDL" 1 "nothing written" -- "$gp" catalog import "$tmp/user.sqlite" "$tmp/bad.sql"
printf 'garbage that is not sqlite at all, not even close....' > "$tmp/junk.sqlite"
check "junk catalog" 1 "junk.sqlite" -- "$gp" --catalog "$tmp/junk.sqlite" catalog gpus

# gpuplan plan: the seed's ticket and its errors.
check "plan seed ticket" 0 "DOES NOT FIT" -- "$gp" plan 7B --gpu a100-40gb --precision fp16-mixed
check "plan ladder" 0 "fix ladder" -- "$gp" plan 7B --gpu a100-40gb
check "plan zero3 fits" 0 "FITS" -- "$gp" plan 7B --gpu a100-40gb --gpus 8 --zero 3 --seq 2048
check "plan json" 0 '"total_bytes"' -- "$gp" plan llama-2-7b --gpu h100-sxm --json
check "plan per-rank" 0 "worst rank is stage" -- "$gp" plan llama-2-13b --gpu h100-sxm --pp 4 --per-rank
check "plan infer" 0 "KV cache" -- "$gp" plan llama-2-70b --gpu h200 --infer --tp 2 --batch 16 --context 4096
check "plan node" 0 "Standard\|A100" -- "$gp" plan 7B --node Standard_ND96asr_v4 --zero 3
check "plan vgpu slice" 0 "4.0 GiB each" -- "$gp" plan gpt2 --node NV6ads_A10_v5 --infer
check "plan help" 0 "usage: gpuplan plan" -- "$gp" plan --help
check "plan unknown model" 2 "did you mean llama-2-7b" -- "$gp" plan lamma-2-7b --gpu h100-sxm
check "plan unknown gpu" 2 "unknown GPU" -- "$gp" plan llama-2-7b --gpu h10O-sxm
check "plan heads/tp" 2 "tp: 3 does not divide" -- "$gp" plan llama-2-7b --gpu h100-sxm --tp 3
check "plan layers/pp" 2 "pp: 5 does not divide" -- "$gp" plan llama-2-7b --gpu h100-sxm --pp 5
check "plan gpus product" 2 "gpus: 8 != dp\*tp\*pp\*cp (3\*1\*1\*1 = 3)" -- "$gp" plan llama-2-7b --gpu h100-sxm --gpus 8 --dp 3
check "plan negative" 2 "micro_batch (--micro-batch): -2 is out of range (allowed: an integer in 1..1048576)" -- "$gp" plan llama-2-7b --gpu h100-sxm --micro-batch -2
check "plan zero batch" 2 "micro_batch (--micro-batch): 0 is out of range" -- "$gp" plan llama-2-7b --gpu h100-sxm --micro-batch 0
check "plan overflow" 2 "overflows 64 bits" -- "$gp" plan llama-2-7b --gpu h100-sxm --micro-batch 1000000 --seq 16777216
check "plan bad enum" 2 "adamw" -- "$gp" plan llama-2-7b --gpu h100-sxm --optimizer lion
check "plan cpu node" 2 "CPU-only" -- "$gp" plan 7B --node Standard_D16s_v5
check "plan needs gpu" 2 "gpu, node: needs a GPU SKU" -- "$gp" plan llama-2-7b

# simulate, replay, explain-oom
traces="${GPUPLAN_TRACES:-$(dirname "$0")/../data/torch-snapshots}"
data="$(dirname "$0")/../data/replay"
check "simulate seed OOM" 0 "CUDA out of memory. Tried to allocate" -- "$gp" simulate 7B --gpu a100-40gb
check "simulate zero3" 0 "steps completed      2" -- "$gp" simulate 7B --gpu a100-40gb --gpus 8 --zero 3 --seq 2048
check "simulate json" 0 '"peak_reserved_bytes"' -- "$gp" simulate gpt2 --gpu t4 --json
check "simulate bad conf" 2 "max_split_size_mb" -- "$gp" simulate gpt2 --gpu t4 --alloc-conf max_split_size_mb:3
check "simulate help" 0 "usage: gpuplan simulate" -- "$gp" simulate --help
# the real snapshots are vendored (tests/data/torch-snapshots): no skip
check "replay exact" 0 "exact match: 12 allocations" -- "$gp" replay "$traces/linear-grad.pickle"
check "replay ring buffer" 0 "start state rebuilt" -- "$gp" replay "$traces/cs336-small-forward.pickle"
check "replay what-if" 0 "what-if" -- "$gp" replay "$traces/cs336-small-forward.pickle" --alloc-conf expandable_segments:True --gpu t4
check "replay json" 0 '"exact": true' -- "$gp" replay "$traces/linear-no-grad.pickle" --json
check "replay divergence" 0 "DIVERGES at event 7" -- "$gp" replay "$data/linear-grad-moved-alloc.pickle"
check "replay recorded oom" 0 "OUT OF MEMORY at event 5" -- "$gp" replay "$data/s8-recorded-oom.pickle"
check "replay missing" 2 "No such file" -- "$gp" replay "$tmp/none.pickle"
check "replay hostile" 2 "GLOBAL" -- "$gp" replay "$(dirname "$0")/../data/pickle/global_os_system.pickle"
check "replay bad conf" 2 "unknown key" -- "$gp" replay "$data/s8-recorded-oom.pickle" --alloc-conf bogus:1
check "explain fragmentation" 0 "FRAGMENTATION" -- "$gp" explain-oom "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 39.59 GiB total capacity; 35.12 GiB already allocated; 1.02 GiB free; 37.21 GiB reserved in total by PyTorch)"
check "explain demand" 0 "REAL DEMAND" -- "$gp" explain-oom "CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.10 GiB is free. Of the allocated memory 76.50 GiB is allocated by PyTorch, and 1.05 GiB is reserved by PyTorch but unallocated."
check "explain other process" 0 "ANOTHER PROCESS" -- "$gp" explain-oom "CUDA out of memory. Tried to allocate 112.00 MiB. GPU 0 has a total capacity of 39.49 GiB of which 119.38 MiB is free. Including non-PyTorch memory, this process has 8.38 GiB memory in use. Process 4242 has 31.00 GiB memory in use. Of the allocated memory 7.61 GiB is allocated by PyTorch, and 257.45 MiB is reserved by PyTorch but unallocated."
check "explain garbage" 2 "Tried to allocate" -- "$gp" explain-oom "segmentation fault"

# perf, search, topo, validate
check "perf" 0 "MFU" -- "$gp" perf llama-2-7b --gpu h100-sxm --gpus 16 --global-batch 256 --tokens 1e12
check "perf json" 0 '"tokens_per_s"' -- "$gp" perf gpt2 --gpu t4 --gpus 1 --json
check "perf cpu vms" 0 "CPU only" -- "$gp" perf gpt-2-medium --node Standard_D16s_v5 --nodes 8 --global-batch 512 --micro-batch 8 --tokens 2e9
check "perf bad batch" 2 "global batch" -- "$gp" perf llama-2-7b --gpu h100-sxm --gpus 16 --global-batch 100
check "search" 0 "layouts evaluated" -- "$gp" search gpt-3-175b --gpu a100-80gb --gpus 1024 --global-batch 1536
check "search needs batch" 2 "global-batch" -- "$gp" search gpt2 --gpu t4 --gpus 1
check "search nothing fits" 0 "no layout fits" -- "$gp" search llama-2-70b --gpu t4 --gpus 1 --global-batch 8
check "topo" 0 "NV12" -- "$gp" topo --node Standard_ND96asr_v4
check "topo warning" 0 "WARNING: tensor parallelism spans nodes" -- "$gp" topo --gpu h100-sxm --nodes 2 --layout 16,1,1
check "topo pcie" 0 "PCIe only" -- "$gp" topo --gpu h100-sxm --pcie-only --layout 8,1,1
check "topo bad layout" 2 "cluster has" -- "$gp" topo --gpu h100-sxm --layout 4,1,1

echo "$pass passed, $fails failed"
[ "$fails" = 0 ]

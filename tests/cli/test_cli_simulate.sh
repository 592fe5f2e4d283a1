#!/bin/sh
# End-to-end checks of `gpuplan simulate` with the per-release allocator
# rules (issue 14 item 2): --summary (torch.cuda.memory_summary() at the
# end of the run), --torch, and the allocator settings from the
# environment as the chosen release read them; CUDA graph capture
# (--cuda-graph, --empty-cache-before-capture).  usage: test_cli_simulate.sh GPUPLAN TMPDIR
gp=$1
tmp=$2/cli_simulate   # its own directory: other CLI suites may run beside it
mkdir -p "$tmp"
fails=0
pass=0

. "$(dirname "$0")/checks.sh"

unset PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF
sim="simulate gpt-2 --gpu a100-40gb --steps 1"

# --summary: memory_summary() of the simulated allocator, as replay --summary
check "summary header" 0 "PyTorch CUDA memory summary, device ID 0" -- "$gp" $sim --summary
check "summary title" 0 "^memory_summary() at the end of the run:$" -- "$gp" $sim --summary
check "summary 2.x rows" 0 "^| Requested memory      |" -- "$gp" $sim --summary
check "summary 1.13 layout" 0 "^| Allocated memory      | .* MB |" -- "$gp" $sim --summary --torch 1.13
nocheck "summary 1.13 has no requested" "Requested memory" -- "$gp" $sim --summary --torch 1.13
nocheck "summary abbreviated" "from large pool" -- "$gp" $sim --summary --abbreviated
check "summary json" 0 '"summary": "|====' -- "$gp" $sim --summary --json
nocheck "no summary unasked" "memory summary" -- "$gp" $sim
check "torch in the report" 0 "(torch 2.4 rules, alloc conf ''" -- "$gp" $sim --torch 2.4
check "torch in json" 0 '"rules": "main after 2.10"' -- "$gp" $sim --json

# The environment: PYTORCH_ALLOC_CONF first, then PYTORCH_CUDA_ALLOC_CONF;
# --alloc-conf wins; PYTORCH_ALLOC_CONF reaches the CUDA allocator from
# 2.10 only (before, it was ignored: pytorch#183387).
check "env new name" 0 "alloc conf 'expandable_segments:True' from PYTORCH_ALLOC_CONF" -- env PYTORCH_ALLOC_CONF=expandable_segments:True "$gp" $sim
check "env new name 2.10" 0 '"alloc_conf_source": "PYTORCH_ALLOC_CONF"' -- env PYTORCH_ALLOC_CONF=expandable_segments:True "$gp" $sim --torch 2.10 --json
check "env new name ignored by 2.9" 0 "warning: torch 2.9's CUDA allocator does not read PYTORCH_ALLOC_CONF" -- env PYTORCH_ALLOC_CONF=expandable_segments:True "$gp" $sim --torch 2.9
check "env new name ignored: defaults" 0 '"alloc_conf_source": "defaults"' -- env PYTORCH_ALLOC_CONF=expandable_segments:True "$gp" $sim --torch 2.x --json
check "env old name" 0 "from PYTORCH_CUDA_ALLOC_CONF" -- env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$gp" $sim --torch 2.1
check "env new name first" 0 '"alloc_conf": "max_split_size_mb:64"' -- env PYTORCH_ALLOC_CONF=max_split_size_mb:64 PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 "$gp" $sim --json
check "env old name's generic key unread" 0 "'max_split_size_mb:128' was not read" -- env PYTORCH_ALLOC_CONF=max_split_size_mb:64 PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 "$gp" $sim --json
# 2.10's CUDA config reads PYTORCH_CUDA_ALLOC_CONF and refuses a key no config knows
check "2.10 unknown key of the old name" 2 "Unrecognized key 'garbage' in CUDA allocator config." -- env PYTORCH_ALLOC_CONF=max_split_size_mb:64 PYTORCH_CUDA_ALLOC_CONF=garbage "$gp" $sim
# ... while the generic config skips the new name's unknown keys (said, not fatal)
check "2.10 unknown key of the new name skipped" 0 "'x:1' was not read" -- env PYTORCH_ALLOC_CONF=x:1 PYTORCH_CUDA_ALLOC_CONF=per_process_memory_fraction:0.5 "$gp" $sim --torch 2.10 --json
# set but empty: the generic keys do not fall back to the old name
check "2.10 empty new name is set" 0 '"alloc_conf_source": "defaults"' -- env PYTORCH_ALLOC_CONF= PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$gp" $sim --torch 2.10 --json
check "2.9 empty new name is nothing" 0 '"alloc_conf_source": "PYTORCH_CUDA_ALLOC_CONF"' -- env PYTORCH_ALLOC_CONF= PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$gp" $sim --torch 2.9 --json
# review 2026-12-02: 2.10 takes the CUDA allocator's own keys from
# PYTORCH_CUDA_ALLOC_CONF first (CUDAAllocatorConfig::instance()), the
# generic ones from PYTORCH_ALLOC_CONF first (the fraction was dropped)
check "2.10 splits the keys" 0 '"alloc_conf": "per_process_memory_fraction:0.5,expandable_segments:True"' -- env PYTORCH_ALLOC_CONF=expandable_segments:True PYTORCH_CUDA_ALLOC_CONF=per_process_memory_fraction:0.5,max_split_size_mb:64 "$gp" $sim --torch 2.10 --json
check "2.10 splits: both named" 0 '"alloc_conf_source": "PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF"' -- env PYTORCH_ALLOC_CONF=expandable_segments:True PYTORCH_CUDA_ALLOC_CONF=per_process_memory_fraction:0.5 "$gp" $sim --torch 2.10 --json
check "2.10 split: the CUDA key in the new name yields" 0 '"alloc_conf": "per_process_memory_fraction:0.5,max_split_size_mb:64"' -- env PYTORCH_ALLOC_CONF=max_split_size_mb:64,per_process_memory_fraction:0.9 PYTORCH_CUDA_ALLOC_CONF=per_process_memory_fraction:0.5 "$gp" $sim --torch 2.10 --json
check "flag beats env" 0 '"alloc_conf_source": "option"' -- env PYTORCH_ALLOC_CONF=garbage "$gp" $sim --alloc-conf expandable_segments:True --json
check "flag= beats env" 0 '"alloc_conf": "max_split_size_mb:64"' -- env PYTORCH_CUDA_ALLOC_CONF=garbage "$gp" $sim --alloc-conf=max_split_size_mb:64 --json
check "empty env is unset" 0 '"alloc_conf_source": "defaults"' -- env PYTORCH_ALLOC_CONF= "$gp" $sim --json
# review 2026-12-02: spaces only were taken for settings (a what-if of ' ')
check "blank env is unset" 0 '"alloc_conf_source": "defaults"' -- env "PYTORCH_ALLOC_CONF=  " "$gp" $sim --json
check "blank old env is unset" 0 '"alloc_conf_source": "defaults"' -- env "PYTORCH_CUDA_ALLOC_CONF= " "$gp" $sim --torch 2.4 --json
check "env garbage refused" 2 "alloc_conf (from PYTORCH_CUDA_ALLOC_CONF): alloc conf: expected key:value" -- env PYTORCH_CUDA_ALLOC_CONF=garbage "$gp" $sim

# Keys and values by release, errors naming the key and the release
check "expandable before 2.1" 2 "expandable_segments is not an option of torch 2.0: it came in 2.1" -- env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$gp" $sim --torch 2.0
check "max_split 20 before 2.10" 2 "alloc_conf (--alloc-conf): alloc conf max_split_size_mb: must be more than 20" -- "$gp" $sim --torch 2.4 --alloc-conf max_split_size_mb:20
check "max_split 20 in 2.10" 0 "alloc conf 'max_split_size_mb:20'" -- "$gp" $sim --torch 2.10 --alloc-conf max_split_size_mb:20
check "unknown key, 2.9's words" 2 'Unrecognized CachingAllocator option: frob' -- "$gp" $sim --torch 2.9 --alloc-conf frob:1
check "unknown key, 2.10's words" 2 "Unrecognized key 'frob' in CUDA allocator config." -- "$gp" $sim --torch 2.10 --alloc-conf frob:1
check "bad torch" 2 "torch" -- "$gp" $sim --torch 3.0
check "empty snapshot path" 2 "snapshot: give the path of the snapshot to write" -- "$gp" $sim --snapshot ""

# CUDA graphs: the last step captured in a private pool.  GPT-2 XL at
# micro-batch 8 on an A100-80GB: without empty_cache() the capture cannot
# use what the warm-up left cached and runs out; with it the step fits.
g="simulate gpt-2-xl --gpu a100-80gb --micro-batch 8 --seq 1024 --steps 3 --cuda-graph"
check "graph capture runs out" 0 "OUT OF MEMORY in step 3 (CUDA graph capture) forward" -- "$gp" $g
check "graph OOM text names private pools" 0 "allocated in private pools (e.g., CUDA Graphs), and " -- "$gp" $g
check "graph pool line" 0 "CUDA graph pool .* GiB reserved (.* GiB of it allocated: its static outputs), cache emptied before the capture" -- "$gp" $g --empty-cache-before-capture
nocheck "emptied cache: no OOM" "OUT OF MEMORY" -- "$gp" $g --empty-cache-before-capture
check "graph json" 0 '"graph_captured": true' -- "$gp" $g --empty-cache-before-capture --json
check "no graph unasked" 0 '"graph_pool_reserved_bytes": 0' -- "$gp" $sim --json
check "empty cache needs a graph" 2 "empty_cache_before_capture (--empty-cache-before-capture): needs cuda_graph" -- "$gp" $sim --empty-cache-before-capture
check "graph needs a warm-up" 2 "cuda_graph: needs steps >= 2" -- "$gp" $sim --cuda-graph

# Its snapshot replays exactly; recorded under 2.4's rules with expandable
# segments (private pools get cudaMalloc segments before 2.5, R34) it
# replays exactly under 2.4 and says so under a later release.
gs="simulate gpt-2 --gpu t4 --micro-batch 8 --steps 2 --cuda-graph --snapshot $tmp/graph.pickle"
"$gp" $gs > /dev/null
check "graph snapshot replays exactly" 0 "^exact match: " -- "$gp" replay "$tmp/graph.pickle"
"$gp" $gs --alloc-conf expandable_segments:True --torch 2.4 > /dev/null
check "2.4 graph snapshot under 2.4" 0 "^exact match: " -- "$gp" replay "$tmp/graph.pickle" --torch 2.4
check "2.4 graph snapshot under main" 0 "recorded with torch 2.4 or earlier, and the replay follows main after 2.10's rules; replay it with --torch 2.4" -- "$gp" replay "$tmp/graph.pickle"

echo "$pass passed, $fails failed"
[ "$fails" = 0 ]

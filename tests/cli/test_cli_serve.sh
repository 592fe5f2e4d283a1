#!/bin/sh
# End-to-end checks of `gpuplan serve` (issue 13): the engine's KV-cache
# line, latency quantiles, cost, --check's exit 3, --search, --validate,
# and one-line errors with exit 2 for bad options.
#   test_cli_serve.sh GPUPLAN TMPDIR SOURCE_DIR
gp=$1
tmp=$2/cli_serve   # its own directory: other CLI suites may run beside it
mkdir -p "$tmp"
src=$3
fails=0
pass=0

one_line_errors=2
. "$(dirname "$0")/checks.sh"

# memory as vLLM lays it out, explained component by component
check "vLLM KV line" 0 "GPU KV cache size: .* tokens" -- "$gp" serve llama-3-8b --gpu h100-sxm5-80gb --context 8192
check "max concurrency line" 0 "Maximum concurrency for 8,192 tokens per request" -- \
  "$gp" serve llama-3-8b --gpu h100-sxm5-80gb --context 8192
check "components" 0 "activation peak" -- "$gp" serve llama-3-8b --gpu h100-sxm5-80gb --context 8192
check "V0 block count" 0 "# GPU blocks: " -- "$gp" serve llama-3-8b --gpu h100-sxm5-80gb --engine-version 0.6.4
check "SGLang pool" 0 "KV Cache is allocated. #tokens" -- "$gp" serve llama-3-8b --gpu a100-80gb --engine sglang
check "TRT-LLM pool" 0 "Allocated .* GiB for max tokens in paged KV cache" -- \
  "$gp" serve llama-3-8b --gpu h100-sxm5-80gb --engine trtllm
check "encoder: no KV cache" 0 "no KV cache: bert-large is an encoder" -- "$gp" serve bert-large --gpu v100 --input-len 384
# speed under a load
check "rate quantiles" 0 "^TTFT " -- "$gp" serve llama-3-8b --gpu a100-80gb --rate 4 --input-len 1000 --output-len 200
check "ITL row" 0 "^ITL " -- "$gp" serve llama-3-8b --gpu a100-80gb --concurrency 16
check "TP over PCIe" 0 "tensor-parallel fabric: pcie4" -- \
  "$gp" serve llama-2-70b --gpu l40s --tp 4 --weights fp8 --concurrency 8
check "saturated" 0 "SATURATED" -- "$gp" serve llama-3-8b --gpu a100-80gb --rate 500
check "T4 cost" 0 "0.526 USD/h" -- "$gp" serve gpt-2-medium --node Standard_NC4as_T4_v3 --concurrency 4
check "CPU serving" 0 "served by vllm latest on the CPUs of" -- \
  "$gp" serve gpt-2-medium --node Standard_D16s_v5 --concurrency 1 --input-len 128 --output-len 32
check "json" 0 '"schema": "gpuplan.serve/1"' -- "$gp" serve llama-3-8b --gpu h100-sxm5-80gb --json
# the SLO check: met, missed (--check exits 3)
check "SLO met" 0 "-> MET" -- "$gp" serve llama-3-8b --gpu h100-sxm5-80gb --rate 2 --slo-ttft 1000 --slo-itl 100
check "SLO missed exits 3" 3 "-> MISSED" -- \
  "$gp" serve llama-3-8b --gpu t4 --rate 2 --weights int4 --slo-ttft 50 --slo-itl 10 --check
# the search
check "search" 0 "configurations tried: " -- \
  "$gp" serve llama-3-8b --search --rate 10 --slo-ttft 1000 --slo-itl 100
check "search json" 0 '"schema": "gpuplan.serve-search/1"' -- \
  "$gp" serve llama-3-8b --search --rate 10 --slo-ttft 1000 --slo-itl 100 --json
# the published measurements
check "validate" 0 "486 rows" -- "$gp" serve --validate "$src/data/reference/serving_runs_calibration.csv"
check "validate rows" 0 "1 rows, 1 scored" -- \
  "$gp" serve --validate "$src/data/reference/serving_runs_calibration.csv" --validate-rows SC0483
# usage errors: exit 2, one line
check "no hardware" 2 "gpu, node" -- "$gp" serve llama-3-8b
check "bad engine" 2 "engine" -- "$gp" serve llama-3-8b --gpu h100-sxm5-80gb --engine nope
check "two loads" 2 "give one load" -- "$gp" serve llama-3-8b --gpu h100-sxm5-80gb --rate 1 --concurrency 2
check "bf16 on T4" 2 "compute capability" -- "$gp" serve llama-3-8b --gpu t4 --weights bf16
check "does not fit" 0 "DOES NOT FIT" -- "$gp" serve llama-2-70b --gpu l4
check "does not fit: --check exits 3" 3 "raise tp or pp" -- "$gp" serve llama-2-70b --gpu l4 --check
check "encoder output" 2 "encoder" -- "$gp" serve bert-large --gpu v100 --output-len 8
check "search needs a rate" 2 "rate" -- "$gp" serve llama-3-8b --search --slo-ttft 100
check "help" 0 "gpu-memory-utilization" -- "$gp" serve --help

echo "test_cli_serve: $pass passed, $fails failed"
[ "$fails" = 0 ]

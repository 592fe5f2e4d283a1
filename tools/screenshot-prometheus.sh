#!/bin/sh
# tools/screenshot-prometheus.sh GPUPLAN OUT.png: the screenshot in
# docs/lab-watching-a-training-job.md.  Starts `gpuplan exporter --sim
# a100-80gb:8 --fault thermal@3` and Debian's prometheus on loopback, lets it
# scrape for 40 s, and takes a headless-Chromium (Debian's chromium package)
# screenshot of the graph of DCGM_FI_DEV_GPU_TEMP.
set -eu
GP=$1; OUT=$2; W=$(mktemp -d)
$GP exporter --sim a100-80gb:8 --fault thermal@3 --port 0 --duration 120 2> $W/ex.log &
EX=$!
for i in $(seq 1 100); do PORT=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\)\/metrics.*/\1/p' $W/ex.log); [ -n "$PORT" ] && break; sleep 0.1; done
PP=19091
cat > $W/p.yml <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: gpuplan
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
prometheus --config.file=$W/p.yml --storage.tsdb.path=$W/data --web.listen-address=127.0.0.1:$PP --log.level=warn > $W/p.log 2>&1 &
PR=$!
sleep 40
URL="http://127.0.0.1:$PP/graph?g0.expr=DCGM_FI_DEV_GPU_TEMP&g0.tab=0&g0.stacked=0&g0.show_exemplars=0&g0.range_input=1m"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir=$W/chrome --window-size=1400,900 \
  --virtual-time-budget=15000 --screenshot=$OUT "$URL" > $W/chrome.log 2>&1 || true
kill $EX $PR 2>/dev/null || true
wait 2>/dev/null || true
ls -la $OUT

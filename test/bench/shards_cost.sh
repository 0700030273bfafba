#!/usr/bin/env bash
# Storage requests per worker-hour of a 3-worker --shards pool on Azurite
# (defaults L 15 s, D 10 s, renew 2 s, P 1 s, tick 1 s): starts Azurite
# ($AZURITE_BLOB or node_modules/.bin/azurite-blob) and three workers with
# --shards ${SHARDS:-16}, waits ${SETTLE:-60} s, scrapes every worker's
# /metrics (m0.txt), waits ${WINDOW:-180} s, scrapes again (m1.txt); t0/t1
# hold the scrape times and status*.txt the workers' /status. Output in
# $OUT (default /tmp/shards_bench). Needs curl. Not part of make bench.
set -euo pipefail
WT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/shards_bench}; mkdir -p "$OUT"; cd "$OUT"; go -C "$WT" build -o "$OUT/blobleader" ./worker/cmd/blobleader
PORT=18731
${AZURITE_BLOB:-$WT/node_modules/.bin/azurite-blob} --blobHost 127.0.0.1 --blobPort $PORT --inMemoryPersistence --skipApiVersionCheck --loose --disableTelemetry >azurite.log 2>&1 &
AZ=$!
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; kill $AZ 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 100); do curl -s -o /dev/null "127.0.0.1:$PORT" && break; sleep 0.1; done # until Azurite answers
CONN="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:$PORT/devstoreaccount1;"
for i in 1 2 3; do
  ./blobleader --connection-string "$CONN" --identity w$i --listen 127.0.0.1:1874$i --shards ${SHARDS:-16} --log-format json >w$i.log 2>&1 &
  PIDS+=($!)
done
sleep ${SETTLE:-60}
scrape() { for i in 1 2 3; do curl -s 127.0.0.1:1874$i/metrics | grep '^blobleader_storage_requests_total{' | awk -v w=w$i '{print w, $0}'; done; }
for i in 1 2 3; do curl -s 127.0.0.1:1874$i/status; echo; done > status0.txt
scrape > m0.txt
date -u +%s.%N > t0
sleep ${WINDOW:-180}
scrape > m1.txt
date -u +%s.%N > t1
for i in 1 2 3; do curl -s 127.0.0.1:1874$i/status; echo; done > status1.txt

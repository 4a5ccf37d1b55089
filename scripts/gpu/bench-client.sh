#!/usr/bin/env bash
# The load generator on the GPU host: `bringup bench` against a CUDA llama-server at high
# concurrency, then bench/client_overhead.py (bringup's client only) where server and client
# do not share cores.
# Usage (from the repository root): scripts/gpu/bench-client.sh OUT_DIR
# Env: as in common.sh; PORT (default 18080).
# Writes OUT_DIR/{bench.log,bench.json,server.log,client_overhead.log}.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
port=${PORT:-18080}
# shellcheck source=common.sh
. "$here/common.sh"

# 64 slots of 256 tokens: the benchmark's 128 in + 128 out
"$server" -m "$model" -ngl 99 -fa on --parallel 64 -c 16384 --no-warmup \
  --host 127.0.0.1 --port "$port" > "$out/server.log" 2>&1 &
spid=$!
trap 'kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null' EXIT
for _ in $(seq 1 240); do
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
  kill -0 "$spid" 2>/dev/null || { echo "llama-server exited"; exit 1; }
  sleep 0.5
done
{
  echo "\$ bringup bench http://127.0.0.1:$port -c 1,16,64 --input-tokens 128" \
    "--output-tokens 128 --duration 15 --warmup 8"
  bringup bench "http://127.0.0.1:$port" -c 1,16,64 --input-tokens 128 --output-tokens 128 \
    --duration 15 --warmup 8
} 2>&1 | tee "$out/bench.log"
bringup bench "http://127.0.0.1:$port" -c 64 --input-tokens 128 --output-tokens 128 \
  --duration 15 --warmup 8 --json > "$out/bench.json" 2>&1
kill "$spid"; wait "$spid" 2>/dev/null; trap - EXIT

{
  echo "\$ python bench/client_overhead.py --peers none"
  "$py" "$repo/bench/client_overhead.py" --peers none
  echo "\$ python bench/client_overhead.py --peers none --streams 1024 --processes 2"
  "$py" "$repo/bench/client_overhead.py" --peers none --streams 1024 --processes 2
} 2>&1 | tee "$out/client_overhead.log"

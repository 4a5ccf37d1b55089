#!/usr/bin/env bash
# Wait for the background sweep (at most WAIT seconds), then copy what it wrote to OUT
# (the device tool brings back 8 files at most): sweep.log, trials.json, report.html,
# bringup.db, runs.tar.gz (every trial's engine log) and facts.tar.gz (nvidia-smi, versions,
# `vllm serve --help=all`, the conversion log).
# Usage: scripts/gpu/vllm/collect.sh OUT [WAIT]
V=${V:-/root/v}
out=${1:?output folder}; wait_s=${2:-0}
s=$V/out/sweep
end=$((SECONDS + wait_s))
while [ ! -f "$s/DONE" ] && [ $SECONDS -lt $end ]; do sleep 5; done
tail -n 25 "$s/sweep.log" 2>/dev/null
if [ -f "$s/DONE" ]; then
  cp "$s"/sweep.log "$s"/trials.json "$s"/report.html "$s"/bringup.db "$s"/runs.tar.gz "$out/"
  tar -C "$V/out" -czf "$out/facts.tar.gz" facts facts.log ../convert.log 2>/dev/null
  echo "sweep rc=$(cat "$s/DONE")"
else
  echo "sweep still running"
fi

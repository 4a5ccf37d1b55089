#!/usr/bin/env bash
# Wait for the background SGLang sweep (at most WAIT seconds), then copy what it wrote to
# OUT (the device tool brings back 8 files at most): sweep.log, trials.json, report.html,
# bringup.db, runs.tar.gz (every trial's engine log) and facts.tar.gz (versions, 0.5.17's
# --help). Without DONE it copies what is there so far (a partial sweep.log, the runs).
# Usage: scripts/gpu/sglang/collect.sh OUT [WAIT]
S=${S:-/root/s}
out=${1:?output folder}; wait_s=${2:-0}
s=$S/out/sweep
end=$((SECONDS + wait_s))
while [ ! -f "$s/DONE" ] && [ $SECONDS -lt $end ]; do sleep 5; done
tail -n 25 "$s/sweep.log" 2>/dev/null
tar -C "$S/out" -czf "$out/facts.tar.gz" facts sweep.nohup 2>/dev/null
if [ -f "$s/DONE" ]; then
  cp "$s"/sweep.log "$s"/trials.json "$s"/report.html "$s"/bringup.db "$s"/runs.tar.gz "$out/"
  echo "sweep rc=$(cat "$s/DONE")"
else
  cp "$s/sweep.log" "$out/" 2>/dev/null
  [ -d "$s/work/runs" ] && tar -C "$s/work" -czf "$out/runs-partial.tar.gz" runs
  [ -f "$s/work/bringup.db" ] && cp "$s/work/bringup.db" "$out/bringup-partial.db"
  echo "sweep still running"
fi

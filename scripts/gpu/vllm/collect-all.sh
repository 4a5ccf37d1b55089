#!/usr/bin/env bash
# Everything the session made, as one archive in the tool's $OUT: the vLLM sweep (log,
# trials.json, report.html, bringup.db, runs), the profiles (summaries, texts, engine logs;
# not the raw traces), facts, and the SGLang sweep if one ran (/root/s/out).
# Usage: scripts/gpu/vllm/collect-all.sh OUT [WAIT]   (waits for every DONE at most WAIT s)
V=${V:-/root/v}; S=${S:-/root/s}
out=${1:?output folder}; wait_s=${2:-0}
end=$((SECONDS + wait_s))
for done in "$V/out/sweep/DONE" "$V/out/prof/DONE" "$S/out/sweep/DONE"; do
  [ -e "$(dirname "$done")" ] || continue
  while [ ! -f "$done" ] && [ $SECONDS -lt $end ]; do sleep 5; done
  echo "$done: $(cat "$done" 2>/dev/null || echo 'still running')"
done
tail -n 30 "$V/out/sweep/sweep.log" 2>/dev/null
tail -n 30 "$S/out/sweep/sweep.log" 2>/dev/null
cat "$V"/out/prof/*.txt 2>/dev/null | head -80
tar -czf "$out/all.tar.gz" --exclude='traces-*' -C / "${V#/}/out" "${V#/}/convert.log" \
  $( [ -d "$S/out" ] && echo "${S#/}/out" ) 2>/dev/null
ls -la "$out"

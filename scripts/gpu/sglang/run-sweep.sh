#!/usr/bin/env bash
# The SGLang sweep of sglang-spec.toml, then the report. Run it under setsid: it outlasts one
# device call; poll $OUT_DIR/sweep.log.
# Usage: scripts/gpu/sglang/run-sweep.sh OUT_DIR   (Env: as in common.sh; SPEC; MODEL_DIR)
# Writes OUT_DIR/{sweep.log,report.html,trials.json,bringup.db,runs.tar.gz,DONE}.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
out=$(mkdir -p "${1:?output folder}" && cd "$1" && pwd)
spec=${SPEC:-$here/sglang-spec.toml}
model=${MODEL_DIR:-$V/gemma-3-270m-bf16}
work=${WORK:-$out/work}; mkdir -p "$work"
sed -e "s#^path = .*#path = \"$model\"#" -e "s#PYTHONPATH = \"[^\"]*\"#PYTHONPATH = \"$S/site\"#" \
  "$spec" > "$work/sglang-spec.toml"
cd "$work"
echo "\$ bringup sweep sglang-spec.toml" | tee "$out/sweep.log"
bringup sweep sglang-spec.toml 2>&1 | tee -a "$out/sweep.log"
rc=${PIPESTATUS[0]}
{
  echo "\$ bringup report --html report.html --json trials.json"
  bringup report --html "$out/report.html" --json "$out/trials.json"
} 2>&1 | tee -a "$out/sweep.log"
nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv >> "$out/sweep.log" 2>&1
cp bringup.db "$out/bringup.db"
tar -czf "$out/runs.tar.gz" runs
echo "$rc" > "$out/DONE"

#!/usr/bin/env bash
# Run the GPU sweep of gpu-spec.toml, then the report and the compatibility matrix.
# Usage (from the repository root): scripts/gpu/run-sweep.sh OUT_DIR
# Env: as in common.sh (PYTHON, LLAMA_SERVER, MODEL, SITE, WHEELS: cp312 wheels of
# pydantic, pydantic-core, annotated-types, typing-inspection, orjson, typing-extensions,
# httptools); SPEC (default: gpu-spec.toml beside this script).
# Writes OUT_DIR/{nvidia-smi.txt,sweep.log,report.html,trials.json,bringup.db,runs.tar.gz}.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
spec=${SPEC:-$here/gpu-spec.toml}
# shellcheck source=common.sh
. "$here/common.sh"

{
  nvidia-smi
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm \
    --format=csv
  "$server" --version
  "$server" --list-devices
} > "$out/nvidia-smi.txt" 2>&1

work=$(mktemp -d)
sed -e "s#^binary = .*#binary = \"$server\"#" -e "s#^path = .*#path = \"$model\"#" \
  "$spec" > "$work/gpu-spec.toml"
cd "$work"
echo "\$ bringup sweep gpu-spec.toml" | tee "$out/sweep.log"
bringup sweep gpu-spec.toml 2>&1 | tee -a "$out/sweep.log"
rc=${PIPESTATUS[0]}
{
  echo "\$ bringup report --html report.html --json trials.json"
  bringup report --html "$out/report.html" --json "$out/trials.json"
  echo "\$ bringup matrix"
  bringup matrix
} 2>&1 | tee -a "$out/sweep.log"
nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv >> "$out/nvidia-smi.txt"
cp bringup.db "$out/bringup.db"
tar -czf "$out/runs.tar.gz" runs
exit $rc

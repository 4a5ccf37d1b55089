#!/usr/bin/env bash
# Run the GPU sweep of gpu-spec.toml, then the report and the compatibility matrix.
# Usage (from the repository root): scripts/gpu/run-sweep.sh OUT_DIR
# Env: PYTHON (default python3), LLAMA_SERVER (CUDA llama-server), MODEL (.gguf),
# WHEELS (a folder of cp312 wheels for what the host's python3 lacks: pydantic,
# pydantic-core, annotated-types, typing-inspection, orjson, typing-extensions) and
# SITE (where they are installed), SPEC (default: gpu-spec.toml beside this script).
# Writes OUT_DIR/{nvidia-smi.txt,sweep.log,report.html,trials.json,bringup.db,runs.tar.gz}.
set -uo pipefail
out=$(mkdir -p "${1:?output folder}" && cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
server=${LLAMA_SERVER:-/root/stash/llama/build/bin/llama-server}
model=${MODEL:-/root/.cache/bringup/models/gemma-3-270m-q4_k_m.gguf}
site=${SITE:-/root/stash/site}
spec=${SPEC:-$here/gpu-spec.toml}
if [ -n "${WHEELS:-}" ] && [ ! -d "$site" ]; then
  "${PYTHON:-python3}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" "$WHEELS"/*.whl || exit 1
fi
export PYTHONPATH="$repo/src${site:+:$site}" PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-200}
py=${PYTHON:-python3}
bringup() { "$py" -c "from bringup.cli.main import main; main()" "$@"; }

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

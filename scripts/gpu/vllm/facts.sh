#!/usr/bin/env bash
# What the device is and what vLLM 0.26.0 offers there: nvidia-smi, versions, and
# `vllm serve --help=all` (kept as src/bringup/engines/.../vllm-0.26.0-serve-help-all.txt).
# Usage: scripts/gpu/vllm/facts.sh OUT_DIR
set -uo pipefail
. "$(dirname "$0")/common.sh"
out=${1:?output folder}; mkdir -p "$out"
{
  nvidia-smi
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm --format=csv
  "$py" -c "import sys, torch, vllm, transformers, triton; print('python', sys.version.split()[0]);
print('torch', torch.__version__, 'cuda', torch.version.cuda); print('vllm', vllm.__version__);
print('transformers', transformers.__version__); print('triton', triton.__version__)"
} > "$out/nvidia-smi.txt" 2>&1
vllm serve --help=all > "$out/vllm-0.26.0-serve-help-all.txt" 2> "$out/help.err"; rc=$?
echo "help: $(wc -l < "$out/vllm-0.26.0-serve-help-all.txt") lines, rc=$rc"

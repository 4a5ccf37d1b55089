#!/usr/bin/env bash
# A second batch of real vLLM failures with known causes, none like the first batch's
# (failures.sh): each case launches `vllm serve` on the staged Gemma 3 270M with one
# deliberate fault and keeps its whole log and exit status. The labels (failures2.tsv) were
# written from the faults, by the corpus's labelling conventions, and committed before any
# log of these cases existed; nothing here classifies them.
# Usage: scripts/gpu/vllm/failures2.sh OUT [PARALLEL]     (on the device, after stage.sh convert)
# Writes OUT/<case>.log, OUT/<case>.rc, OUT/DONE; `bench/real_failures.py --batch 2 OUT`
# measures `bringup diagnose` on them.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
out=$(mkdir -p "${1:?output folder}" && cd "$1" && pwd)
par=${2:-4}
model=${MODEL_DIR:-$V/gemma-3-270m-bf16}
bad=$V/bad-models2; mkdir -p "$bad"
. "$here/failures-lib.sh"

# broken copies of the model: config.json and tokenizer.json cut in the middle; a model type
# nobody knows; a config.json that is a named pipe nobody writes (reading it blocks)
for d in corrupt-config tokenizer-corrupt unknown-type fifo-config; do cp -r "$model" "$bad/$d"; done
truncate -s $(( $(stat -c %s "$bad/corrupt-config/config.json") / 2 )) "$bad/corrupt-config/config.json"
truncate -s $(( $(stat -c %s "$bad/tokenizer-corrupt/tokenizer.json") / 2 )) "$bad/tokenizer-corrupt/tokenizer.json"
"$py" - "$bad/unknown-type/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["model_type"] = "gemma9000_text"
json.dump(c, open(p, "w"), indent=2)
PY
rm "$bad/fifo-config/config.json" && mkfifo "$bad/fifo-config/config.json"

# another process holds most of the GPU before vLLM asks for its share
gpu_taken_by_other() {
  local port=$1
  "$py" -c "import torch, time; x = torch.empty(125 * 10**9, dtype=torch.uint8, device='cuda'); print('holding', flush=True); time.sleep(400)" > "$out/gpu_holder.txt" 2>&1 &
  local holder=$!
  for _ in $(seq 60); do grep -q holding "$out/gpu_holder.txt" 2>/dev/null && break; sleep 1; done
  run_case gpu_taken_by_other "$port" -- "$model" --enforce-eager
  kill "$holder"; wait "$holder" 2>/dev/null
}

E=--enforce-eager
cases=(
  "config_fifo_hang 8210 TMO=150 -- $bad/fifo-config $E"
  "dtype_unknown 8201 -- $model $E --dtype float8"
  "gmu_above_one 8202 GMU=1.5 -- $model $E"
  "pp2_on_one_gpu 8203 -- $model $E --pipeline-parallel-size 2"
  "missing_tokenizer 8204 -- $model $E --tokenizer $V/models/no-tokenizer-here"
  "corrupt_config_json 8205 -- $bad/corrupt-config $E"
  "tokenizer_corrupt 8206 -- $bad/tokenizer-corrupt $E"
  "unknown_model_type 8207 -- $bad/unknown-type $E"
  "bitsandbytes_missing 8208 -- $model $E --quantization bitsandbytes"
  "lora_module_missing 8209 -- $model $E --enable-lora --lora-modules ghost=$V/models/no-adapter-here"
)

echo "cases: ${#cases[@]} in parallel by $par, then 2 alone"
printf '%s\n' "${cases[@]}" | xargs -P "$par" -I{} bash -c "$(declare -f run_case); py=$py; out=$out; run_case {}"
gpu_taken_by_other 8220
core_signal engine_core_segv 8221 11
summarise

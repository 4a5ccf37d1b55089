#!/usr/bin/env bash
# Real vLLM failures with known causes: each case launches `vllm serve` on the staged Gemma 3
# 270M with one deliberate fault and keeps its whole log and exit status. The label of each
# case (failures.tsv) was written from the fault, by the corpus's labelling conventions
# (bench/data/diagnose/README.md), before any log existed; nothing here classifies them.
# Usage: scripts/gpu/vllm/failures.sh OUT [PARALLEL]     (on the device, after stage.sh convert)
# Writes OUT/<case>.log, OUT/<case>.rc, OUT/DONE; `bench/real_failures.py` turns them into
# labelled cases and measures `bringup diagnose` on them.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
out=$(mkdir -p "${1:?output folder}" && cd "$1" && pwd)
par=${2:-4}
model=${MODEL_DIR:-$V/gemma-3-270m-bf16}
bad=$V/bad-models; mkdir -p "$bad"

# broken copies of the model: weights cut short; an architecture no engine knows
cp -r "$model" "$bad/truncated"
w=$(ls "$bad/truncated"/*.safetensors | head -n 1)
truncate -s $(( $(stat -c %s "$w") / 3 )) "$w"
cp -r "$model" "$bad/unknown-arch"
"$py" - "$bad/unknown-arch/config.json" <<'EOF'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["architectures"] = ["Gemma3FlashMoeForCausalLM"]
json.dump(c, open(p, "w"), indent=2)
EOF

. "$here/failures-lib.sh"
engine_core_killed() { core_signal engine_core_killed "$1" 9; }

# the port taken by another process before the server starts
port_in_use() {
  local port=$1
  "$py" -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', $port)); s.listen(); time.sleep(400)" &
  local holder=$!
  sleep 1
  run_case port_in_use "$port" -- "$model" --enforce-eager
  kill "$holder"; wait "$holder" 2>/dev/null
}

E=--enforce-eager
cases=(
  "bad_kv_dtype 8101 -- $model $E --kv-cache-dtype fp4_e9m9"
  "bad_attention_backend 8102 -- $model $E --attention-backend SPARSE_MAGIC_ATTN"
  "tp2_on_one_gpu 8103 -- $model $E --tensor-parallel-size 2"
  "max_len_over_model 8104 -- $model $E --max-model-len 10000000"
  "batched_tokens_below_len 8105 -- $model $E --max-model-len 8192 --max-num-batched-tokens 64 --no-enable-chunked-prefill"
  "bad_block_size 8106 -- $model $E --block-size 7"
  "missing_model_dir 8107 -- $V/models/gemma-3-270m-missing $E"
  "truncated_weights 8108 -- $bad/truncated $E"
  "unknown_architecture 8109 -- $bad/unknown-arch $E"
  "flashinfer_sampler_missing 8110 VLLM_USE_FLASHINFER_SAMPLER=1 -- $model $E"
  "ray_executor_missing 8111 -- $model $E --distributed-executor-backend ray"
  "no_visible_gpu 8112 CUDA_VISIBLE_DEVICES= -- $model $E"
  "max_num_seqs_zero 8113 -- $model $E --max-num-seqs 0"
)
# the memory cases run alone: another case's allocation would change what they see
alone=(
  "kv_cache_no_room 8120 GMU=0.002 -- $model $E"
  "kv_cache_below_max_len 8121 GMU=0.15 -- $model $E --max-model-len 32768 --kv-cache-memory-bytes 20000000"
)

echo "cases: ${#cases[@]} in parallel by $par, then ${#alone[@]} alone, then 2 special"
printf '%s\n' "${cases[@]}" | xargs -P "$par" -I{} bash -c "$(declare -f run_case); py=$py; out=$out; run_case {}"
for c in "${alone[@]}"; do
  # GMU is read by run_case from the case's environment
  read -r -a a <<< "$c"; name=${a[0]}; port=${a[1]}; gmu=${a[2]#GMU=}
  GMU=$gmu run_case "$name" "$port" -- "${a[@]:4}"
done
port_in_use 8130
engine_core_killed 8131
summarise

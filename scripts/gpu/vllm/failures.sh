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

# one case: NAME PORT ENV... -- FLAGS...; every launch bounded (a case that outlives it is
# itself a finding: its .rc says 124), and one that starts after all (the fault did not
# bite) is stopped at once: its .rc says "started"
run_case() {
  local name=$1 port=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  (
    [ ${#envs[@]} -gt 0 ] && export "${envs[@]}"
    timeout -k 10 300 "$py" -m vllm.entrypoints.cli.main serve "$@" --host 127.0.0.1 \
      --port "$port" --gpu-memory-utilization "${GMU:-0.15}" > "$out/$name.log" 2>&1 &
    local server=$!
    while kill -0 "$server" 2>/dev/null; do
      sleep 3
      if "$py" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null; then
        echo started > "$out/$name.rc"; kill "$server"; wait "$server"; exit 0
      fi
    done
    wait "$server"; echo $? > "$out/$name.rc"
  )
}

# the engine core killed under a live server: the front end's own account of it
engine_core_killed() {
  local port=$1
  "$py" -m vllm.entrypoints.cli.main serve "$model" --enforce-eager --host 127.0.0.1 \
    --port "$port" --gpu-memory-utilization 0.15 > "$out/engine_core_killed.log" 2>&1 &
  local server=$!
  local t=0
  until "$py" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null; do
    sleep 2; t=$((t + 2))
    if [ $t -gt 240 ] || ! kill -0 "$server" 2>/dev/null; then break; fi
  done
  # the engine core is a child of this server: chosen by parent pid, never by name alone
  local core
  core=$(ps --ppid "$server" -o pid=,comm= | awk '/[Ee]ngine/ {print $1; exit}')
  if [ -n "$core" ]; then kill -9 "$core"; fi
  "$py" -c "
import json, urllib.request as u
r = u.Request('http://127.0.0.1:$port/v1/completions', json.dumps({'prompt': 'Hi', 'max_tokens': 8}).encode(), {'Content-Type': 'application/json'})
try: print(u.urlopen(r, timeout=30).read()[:200])
except Exception as e: print('request:', e)
" >> "$out/engine_core_killed.note" 2>&1
  for _ in $(seq 30); do kill -0 "$server" 2>/dev/null || break; sleep 2; done
  kill "$server" 2>/dev/null; wait "$server"; echo $? > "$out/engine_core_killed.rc"
}

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
for f in "$out"/*.rc; do printf '%s rc=%s lines=%s\n' "$(basename "$f" .rc)" "$(cat "$f")" \
  "$(wc -l < "${f%.rc}.log")"; done
echo 0 > "$out/DONE"

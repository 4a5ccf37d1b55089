#!/usr/bin/env bash
# A third batch of real vLLM failures with known causes, none like the first two batches'
# (failures.sh, failures2.sh): each case launches `vllm serve` on the staged Gemma 3 270M with
# one deliberate fault and keeps its whole log and exit status. The labels (failures3.tsv)
# were written from the faults, by the corpus's labelling conventions, and committed before
# any log of these cases existed; nothing here classifies them.
# Usage: scripts/gpu/vllm/failures3.sh OUT [PARALLEL]     (on the device, after stage.sh convert)
# Writes OUT/<case>.log, OUT/<case>.rc, OUT/GPU, OUT/DATE, OUT/DONE;
# `bench/real_failures.py --batch 3 OUT` measures `bringup diagnose` on them.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
out=$(mkdir -p "${1:?output folder}" && cd "$1" && pwd)
par=${2:-4}
model=${MODEL_DIR:-$V/gemma-3-270m-bf16}
bad=$V/bad-models3; mkdir -p "$bad"
. "$here/failures-lib.sh"
nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | grep -o 'H[0-9]\+' > "$out/GPU"
date -u +%F > "$out/DATE"

# broken copies of the model: the weights file deleted; a git-lfs pointer in its place (a
# clone made without git-lfs); one tensor renamed in the safetensors header
for d in no-weights lfs-pointer renamed-tensor; do rm -rf "${bad:?}/$d"; cp -r "$model" "$bad/$d"; done
rm "$bad"/no-weights/*.safetensors
w=$(ls "$bad/lfs-pointer"/*.safetensors | head -n 1)
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %s\n' \
  "$(sha256sum "$w" | cut -d' ' -f1)" "$(stat -c %s "$w")" > "$w.pointer" && mv "$w.pointer" "$w"
# the same length of name, so the header keeps its size and every offset stays valid
"$py" - "$(ls "$bad/renamed-tensor"/*.safetensors | head -n 1)" > "$out/renamed_tensor.note" 2>&1 <<'PY'
import json, struct, sys
with open(sys.argv[1], "r+b") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    head = f.read(n)
    names = [k for k in json.loads(head) if k.endswith("layers.0.mlp.down_proj.weight")]
    assert len(names) == 1, names
    old = json.dumps(names[0]).encode()
    new = old.replace(b"down_proj", b"dense_out")
    assert head.count(old) == 1 and len(new) == len(old)
    head = head.replace(old, new)
    assert new.decode().strip('"') in json.loads(head)
    f.seek(8)
    f.write(head)
print("renamed", old.decode(), "->", new.decode())
PY
mkdir -p "$bad/hf-home-empty"

# the engine core SIGSTOPped once its weights are loaded: alive, silent, never ready; the
# launch is bounded by 180 s (timeout then sends TERM and CONT to the whole group)
engine_core_stopped() {
  local name=engine_core_stopped port=$1
  timeout -k 10 180 "$py" -m vllm.entrypoints.cli.main serve "$model" --enforce-eager \
    --host 127.0.0.1 --port "$port" --gpu-memory-utilization 0.15 > "$out/$name.log" 2>&1 &
  local guard=$! server="" core="" t0=$SECONDS
  for _ in $(seq 120); do
    sleep 1
    kill -0 "$guard" 2>/dev/null || break
    # the server is timeout's child, the engine core the server's: chosen by parent pid
    [ -n "$server" ] || server=$(ps --ppid "$guard" -o pid= | head -n 1 | tr -d ' ')
    if [ -n "$server" ] && [ -z "$core" ]; then
      core=$(ps --ppid "$server" -o pid=,comm= | awk '/[Ee]ngine/ {print $1; exit}')
    fi
    [ -n "$core" ] && grep -q "Model loading took" "$out/$name.log" && break
  done
  if [ -n "$core" ]; then
    kill -STOP "$core" && echo "engine core $core stopped $((SECONDS - t0)) s after launch" > "$out/$name.note"
  else
    echo "no engine core found" > "$out/$name.note"
  fi
  while kill -0 "$guard" 2>/dev/null; do
    sleep 5
    if "$py" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null; then
      echo "ready after all" >> "$out/$name.note"; kill "$guard"
    fi
  done
  wait "$guard"; echo $? > "$out/$name.rc"
  if [ -n "$core" ] && kill -0 "$core" 2>/dev/null; then kill -CONT "$core"; kill -KILL "$core"; fi
}

E=--enforce-eager
cases=(
  "weights_removed 8301 -- $bad/no-weights $E"
  "weights_lfs_pointer 8302 -- $bad/lfs-pointer $E"
  "tensor_renamed 8303 -- $bad/renamed-tensor $E"
  "hub_download_no_network 8304 HF_HUB_OFFLINE=0 TRANSFORMERS_OFFLINE=0 HF_HOME=$bad/hf-home-empty -- google/gemma-3-270m $E"
  "removed_flag 8305 -- $model $E --disable-log-requests"
  "port_out_of_range 99999 -- $model $E"
  "instanttensor_missing 8307 -- $model $E --load-format instanttensor"
  "lmcache_missing 8308 -- $model $E --kv-transfer-config.kv_connector LMCacheConnectorV1 --kv-transfer-config.kv_role kv_both"
)

echo "cases: ${#cases[@]} in parallel by $par, then 3 alone"
printf '%s\n' "${cases[@]}" | xargs -P "$par" -I{} bash -c "$(declare -f run_case); py=$py; out=$out; run_case {}"
# its JSON has quotes and spaces, which xargs would take apart
run_case speculative_config_bad_json 8309 -- "$model" $E \
  --speculative-config '{"method": "ngram", "num_speculative_tokens": 3'
# alone: another case's allocations would change what it sees
run_case max_num_seqs_oom 8320 -- "$model" $E --max-num-seqs 300000 \
  --max-num-batched-tokens 300000 --max-model-len 1024
engine_core_stopped 8321
summarise

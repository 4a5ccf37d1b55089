#!/usr/bin/env bash
# Device side of the staging: each call carries one payload piece (.gpu-stage/pN) and runs
#   bash .gpu-stage/s/stage.sh add .gpu-stage/pN
# the last one then runs `stage.sh unpack` (reassemble the payload, unpack the trimmed vLLM
# site, install gguf into it, copy the repository's src and these scripts), `stage.sh facts`
# (background), `stage.sh convert` (GGUF to bf16, tokenizer checked) and `stage.sh sweep`
# (background, under setsid, so it outlives the call).
set -euo pipefail
V=${V:-/root/v}
mkdir -p "$V/parts"
case "${1:?add PIECE_DIR | unpack}" in
  add)
    cp "$2"/payload.* "$V/parts/"
    ls -la "$V/parts" | tail -n +2 ;;
  unpack)
    here=$(cd "$(dirname "$0")" && pwd)
    (cd "$V/parts" && sha256sum -c payload.sha256)
    cat "$V"/parts/payload.tar.* | tar -x -C "$V"
    rm -rf "$V/parts"
    xz -T0 -dc "$V/site.tar.xz" | tar -x -C "$V" && rm "$V/site.tar.xz"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target "$V/site" "$V"/whl/*.whl
    mkdir -p "$V/repo" "$V/scripts"
    cp -r src "$V/repo/"                       # bringup itself, from the call's checkout
    [ -d "$here/src" ] && cp -r "$here/src" "$V/repo/"   # newer bringup sources, if carried
    cp "$here"/*.sh "$here"/*.py "$here"/*.toml "$here"/expected_ids.json "$V/scripts/"
    du -sh "$V"/* ;;
  convert)  # about 30 s
    PYTHONPATH=$V/site python3 "$V/scripts/convert_gemma.py" "$V/gemma-3-270m-q4_k_m.gguf" \
      "$V/tok" "$V/scripts/expected_ids.json" "$V/gemma-3-270m-bf16" 2>&1 | tee "$V/convert.log"
    ls -la "$V/gemma-3-270m-bf16" ;;
  facts)  # in the background: nvidia-smi, versions, `vllm serve --help=all`
    mkdir -p "$V/out/facts"
    setsid nohup bash "$V/scripts/facts.sh" "$V/out/facts" > "$V/out/facts.log" 2>&1 < /dev/null &
    ;;
  sweep)  # in the background, about 15 minutes: poll $V/out/sweep/sweep.log and DONE
    mkdir -p "$V/out/sweep"
    REPO=$V/repo SPEC=$V/scripts/${SPEC_NAME:-vllm-spec-h200.toml} setsid nohup \
      bash "$V/scripts/run-sweep.sh" "$V/out/sweep" > "$V/out/sweep.nohup" 2>&1 < /dev/null &
    echo "sweep started" ;;
  profile)  # in the background, once the sweep is DONE: poll $V/out/prof/DONE
    mkdir -p "$V/out/prof"
    REPO=$V/repo setsid nohup bash "$V/scripts/profile-trials.sh" "$V/out/prof" \
      > "$V/out/prof.nohup" 2>&1 < /dev/null &
    echo "profiles start when the sweep is done" ;;
esac

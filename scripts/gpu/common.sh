# Sourced by the GPU scripts: paths, the Python path and a `bringup` function.
# Expects $1 (the output folder) and $here (this folder). Env: PYTHON (default python3),
# LLAMA_SERVER (CUDA llama-server), MODEL (.gguf), SITE (where the wheels the host's python3
# lacks are installed), WHEELS (a folder of cp312 wheels to install there when SITE is absent).
out=$(mkdir -p "${1:?output folder}" && cd "$1" && pwd)
repo=$(cd "$here/../.." && pwd)
server=${LLAMA_SERVER:-/root/stash/llama/build/bin/llama-server}
model=${MODEL:-/root/.cache/bringup/models/gemma-3-270m-q4_k_m.gguf}
site=${SITE:-/root/stash/site}
py=${PYTHON:-python3}
if [ -n "${WHEELS:-}" ] && [ ! -d "$site" ]; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" "$WHEELS"/*.whl || exit 1
fi
export PYTHONPATH="$repo/src${site:+:$site}" PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-200}
bringup() { "$py" -c "from bringup.cli.main import main; main()" "$@"; }

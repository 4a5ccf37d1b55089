# Sourced by the SGLang GPU scripts: where stage.sh put things on the device, the Python path
# and a `bringup` function. Env: S (default /root/s: the SGLang site), V (default /root/v:
# the vLLM payload, whose site carries bringup's own dependencies and whose converted model
# SGLang serves), PYTHON (python3).
S=${S:-/root/s}
V=${V:-/root/v}
repo=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
py=${PYTHON:-python3}
# bringup runs as in the vLLM run; SGLang's site comes last so that the fingerprint (run
# with bringup's environment) finds sglang and sglang-kernel. The server itself gets
# PYTHONPATH=$S/site alone from the spec's engine.env.
export PYTHONPATH="$repo/src:$V/site:$S/site" PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-200}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
bringup() { "$py" -c "from bringup.cli.main import main; main()" "$@"; }
sglang_serve() { PYTHONPATH="$S/site" "$py" -m sglang.launch_server "$@"; }

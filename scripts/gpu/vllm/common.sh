# Sourced by the vLLM GPU scripts: where stage.sh put things on the device, the Python path
# and a `bringup` function. Env: V (default /root/v: the staged payload), PYTHON (python3).
V=${V:-/root/v}
# the checkout the scripts came from, or, on the device (scripts copied to $V/scripts), the
# sources stage.sh unpacked to $V/repo
here_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
[ -d "$here_repo/src/bringup" ] || here_repo=$V/repo
repo=${REPO:-$here_repo}
py=${PYTHON:-python3}
export PYTHONPATH="$repo/src:$V/site" PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-200}
export VLLM_USE_FLASHINFER_SAMPLER=0 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1
bringup() { "$py" -c "from bringup.cli.main import main; main()" "$@"; }
vllm() { "$py" -m vllm.entrypoints.cli.main "$@"; }

# Sourced by the vLLM GPU scripts: where stage.sh put things on the device, the Python path
# and a `bringup` function. Env: V (default /root/v: the staged payload), PYTHON (python3).
V=${V:-/root/v}
repo=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
py=${PYTHON:-python3}
export PYTHONPATH="$repo/src:$V/site" PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-200}
export VLLM_USE_FLASHINFER_SAMPLER=0 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1
bringup() { "$py" -c "from bringup.cli.main import main; main()" "$@"; }
vllm() { "$py" -m vllm.entrypoints.cli.main "$@"; }

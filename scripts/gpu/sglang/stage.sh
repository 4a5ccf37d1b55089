#!/usr/bin/env bash
# Device side of the SGLang staging, after the vLLM one (scripts/gpu/vllm/stage.sh: its
# `convert` made /root/v/gemma-3-270m-bf16). Each call carries one piece (.gpu-stage/qN)
# and these scripts (.gpu-stage/t):
#   bash .gpu-stage/t/stage.sh add .gpu-stage/qN
# the last one then runs `stage.sh unpack` (check and unpack the site to $S/site, copy the
# repository's src and these scripts), `stage.sh facts` (versions and help, about 30 s) and
# `stage.sh sweep` (background, under setsid, so it outlives the call).
set -euo pipefail
S=${S:-/root/s}
mkdir -p "$S/parts"
case "${1:?add PIECE_DIR | unpack | facts | sweep}" in
  add)
    cp "$2"/site.* "$S/parts/"
    ls -la "$S/parts" | tail -n +2 ;;
  unpack)  # about 10 s
    here=$(cd "$(dirname "$0")" && pwd)
    (cd "$S/parts" && sha256sum -c site.sha256)
    cat "$S"/parts/site.tar.xz.[0-9]* | xz -T0 -dc | tar -x -C "$S"
    rm -rf "$S/parts"
    mkdir -p "$S/repo" "$S/scripts"
    cp -r src "$S/repo/"                       # bringup itself, from the call's checkout
    [ -d "$here/src" ] && cp -r "$here/src" "$S/repo/"   # newer bringup sources, if carried
    cp "$here"/*.sh "$here"/*.toml "$S/scripts/"
    du -sh "$S"/* ;;
  facts)  # versions, and 0.5.17's own --help (bringup reads it too, at the sweep's start)
    . "$(dirname "$0")/common.sh"
    mkdir -p "$S/out/facts"
    PYTHONPATH=$S/site "$py" -c "import sys, torch, sglang, sgl_kernel, transformers, triton;
print('python', sys.version.split()[0]); print('torch', torch.__version__, 'cuda', torch.version.cuda);
print('sglang', sglang.__version__, 'sgl_kernel', sgl_kernel.__version__);
print('transformers', transformers.__version__, 'triton', triton.__version__)" \
      > "$S/out/facts/versions.txt" 2>&1 || true   # informational: never stops the sweep
    tail -n 8 "$S/out/facts/versions.txt"
    rc=0; sglang_serve --help > "$S/out/facts/sglang-0.5.17-serve-help.txt" \
      2> "$S/out/facts/help.err" || rc=$?
    echo "help: $(wc -l < "$S/out/facts/sglang-0.5.17-serve-help.txt") lines, rc=$rc" ;;
  sweep)  # in the background, at most about 12 minutes: poll $S/out/sweep/sweep.log and DONE
    [ -f "${V:-/root/v}/gemma-3-270m-bf16/config.json" ] \
      || { echo "no /root/v/gemma-3-270m-bf16: stage and convert the vLLM payload first"; exit 2; }
    mkdir -p "$S/out/sweep"
    REPO=$S/repo setsid nohup bash "$S/scripts/run-sweep.sh" "$S/out/sweep" \
      > "$S/out/sweep.nohup" 2>&1 < /dev/null &
    echo "sweep started" ;;
esac

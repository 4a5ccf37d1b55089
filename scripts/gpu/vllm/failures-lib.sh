# Sourced by failures.sh and failures2.sh (after common.sh, with $out and $model set): one
# launch with one deliberate fault, its whole log and exit status kept.

# one case: NAME PORT ENV... -- FLAGS...; every launch bounded by ${TMO:-300} s (a case that
# outlives it is itself a finding: its .rc says 124), and one that starts after all (the
# fault did not bite) is stopped at once: its .rc says "started"
run_case() {
  local name=$1 port=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  (
    [ ${#envs[@]} -gt 0 ] && export "${envs[@]}"
    timeout -k 10 "${TMO:-300}" "$py" -m vllm.entrypoints.cli.main serve "$@" --host 127.0.0.1 \
      --port "$port" --gpu-memory-utilization "${GMU:-0.15}" > "$out/$name.log" 2>&1 &
    local server=$!
    while kill -0 "$server" 2>/dev/null; do
      sleep 3
      if "$py" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null; then
        echo started > "$out/$name.rc"; kill "$server"; wait "$server"; exit 0
      fi
    done
    wait "$server"; echo $? > "$out/$name.rc"
  )
}

# NAME PORT SIGNAL: the engine core sent SIGNAL under a live server, then one request: the
# front end's own account of it
core_signal() {
  local name=$1 port=$2 sig=$3
  "$py" -m vllm.entrypoints.cli.main serve "$model" --enforce-eager --host 127.0.0.1 \
    --port "$port" --gpu-memory-utilization 0.15 > "$out/$name.log" 2>&1 &
  local server=$!
  local t=0
  until "$py" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null; do
    sleep 2; t=$((t + 2))
    if [ $t -gt 240 ] || ! kill -0 "$server" 2>/dev/null; then break; fi
  done
  # the engine core is a child of this server: chosen by parent pid, never by name alone
  local core
  core=$(ps --ppid "$server" -o pid=,comm= | awk '/[Ee]ngine/ {print $1; exit}')
  if [ -n "$core" ]; then kill "-$sig" "$core"; fi
  "$py" -c "
import json, urllib.request as u
r = u.Request('http://127.0.0.1:$port/v1/completions', json.dumps({'prompt': 'Hi', 'max_tokens': 8}).encode(), {'Content-Type': 'application/json'})
try: print(u.urlopen(r, timeout=30).read()[:200])
except Exception as e: print('request:', e)
" >> "$out/$name.note" 2>&1
  for _ in $(seq 30); do kill -0 "$server" 2>/dev/null || break; sleep 2; done
  kill "$server" 2>/dev/null; wait "$server"; echo $? > "$out/$name.rc"
}

# print each case's status and log length, then mark the folder done
summarise() {
  for f in "$out"/*.rc; do printf '%s rc=%s lines=%s\n' "$(basename "$f" .rc)" "$(cat "$f")" \
    "$(wc -l < "${f%.rc}.log")"; done
  echo 0 > "$out/DONE"
}

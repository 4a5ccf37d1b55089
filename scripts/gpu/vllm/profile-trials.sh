#!/usr/bin/env bash
# After the sweep: `bringup profile` of the winner and of one passed fp8-KV trial, each
# against the reference, both at once (one starts while the other is traced: start-ups and
# traced windows take turns through the device locks the run's spec turns on). Run it under
# setsid; poll OUT/DONE.
# Usage: scripts/gpu/vllm/profile-trials.sh OUT_DIR   (Env: as in common.sh; SWEEP)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
out=$(mkdir -p "${1:?output folder}" && cd "$1" && pwd)
sweep=${SWEEP:-$V/out/sweep}
while [ ! -f "$sweep/DONE" ]; do sleep 5; done
pick() {  # winner | fp8: a trial id from trials.json
  "$py" - "$sweep/trials.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if sys.argv[2] == "winner":
    w = d.get("winner") or ""
    print(w if isinstance(w, str) else w.get("trial_id") or w.get("id") or "")
else:
    ok = [t for t in d["trials"] if t.get("status") == "passed"
          and str(t["flags"].get("--kv-cache-dtype", "")).startswith("fp8")]
    print(ok[0]["id"] if ok else "")
PY
}
cd "$out"
for name in winner fp8; do
  id=$(pick $name)
  echo "$name: ${id:-none}"
  [ -n "$id" ] || continue
  cp "$sweep/bringup.db" "$out/$name.db"   # one store each: the two never write one file
  (bringup profile "$id" --db "$out/$name.db" --runs-dir "$out/runs-$name" \
     --out "$out/traces-$name" --json "$out/$name.json" > "$out/$name.txt" 2>&1;
   echo "$name rc=$?" >> "$out/rc.txt") &
done
wait
cat "$out"/*.txt
echo done > "$out/DONE"

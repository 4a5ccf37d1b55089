"""Print what the paired-load sweep's checks measured, from its store."""

import json
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
rows = db.execute(
    "select seq, purpose, flags_json, status, category, timings_json, checks_json, metrics_json from trials order by seq"
).fetchall()
for seq, purpose, flags, status, cat, timings, checks, metrics in rows:
    t = json.loads(timings or "{}")
    c = json.loads(checks or "{}")
    m = json.loads(metrics or "{}")
    f = " ".join(f"{k}={v}" for k, v in json.loads(flags).items())
    print(
        f"t{seq:03d} {purpose:9s} {f}: {status}{' ' + cat if cat else ''}; total {t.get('total', 0):.1f}s, accurate {t.get('accurate_s', 0):.1f}s, long-context {t.get('long_context_s', 0):.1f}s; output_tok_s {m.get('output_tok_s', 0):.1f}"
    )
    lc = c.get("long_context")
    if lc:
        arms = ", ".join(
            f"{i['arm']} {i['prompt_tokens']} tok {i['elapsed_s']:.1f}s {'ok' if i['expected'] in (i['output'] or '') else 'MISS'}"
            for i in lc.get("items", [])
        )
        print(
            f"   long_context: passed {lc.get('passed')} at {lc.get('context_tokens')} tokens ({lc.get('source')}); {arms}; probe {lc.get('elapsed_s', 0):.1f}s"
        )
    ul = c.get("accuracy_under_load")
    if ul:
        comp = ul.get("comparison") or {}
        keep = {
            k: comp.get(k)
            for k in ("token_agreement", "exact_match", "logprob_mad", "logprob_mad_ci")
        }
        print(
            "   accuracy_under_load: passed",
            ul.get("passed"),
            "judged",
            ul.get("judged"),
            "streams",
            ul.get("streams"),
            json.dumps(keep),
            "floor",
            json.dumps(ul.get("floor")),
            "limits",
            json.dumps(ul.get("limits")),
            "evidence",
            json.dumps(ul.get("evidence"))[:700],
        )
    acc = c.get("accuracy") or {}
    if "token_agreement" in acc:
        print(
            "   accuracy (idle):",
            json.dumps(
                {
                    k: acc.get(k)
                    for k in (
                        "passed",
                        "token_agreement",
                        "exact_match",
                        "logprob_mad",
                        "logprob_mad_ci",
                    )
                }
            ),
        )
for key, cfg, answers in db.execute(
    "select fingerprint_key, config_key, answers_json from reference_answers"
):
    meta = json.loads(answers).get("meta", {})
    ul = meta.get("under_load") or {}
    print(
        "reference answers",
        cfg,
        "load_floor:",
        json.dumps(meta.get("load_floor")),
        "under_load meta:",
        json.dumps(ul.get("meta") if isinstance(ul, dict) else None),
    )

"""Token ids that llama.cpp's own tokenizer gives for test texts, for the tokenizer check.

Asks llama.cpp: ``llama-tokenize`` (a path to it, with the model given as ``--model``), or a
running llama-server (a URL: ``/tokenize`` with ``add_special``); either way ``<bos>`` comes
first, as the rebuilt tokenizer's template adds it. Then, when the ``tokenizers`` package is here,
compares with the rebuilt ``tokenizer.json`` at once, so a mismatch is found before any
device time is spent. Usage: python expected_ids.py SERVER_URL|LLAMA_TOKENIZE TOKENIZER_DIR OUT.json [MODEL.gguf]
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

TEXTS = [
    "The capital of France is",
    "Hello, world! How are you today?",
    "  two leading spaces and  double  spaces",
    "line one\nline two\n\nafter a blank line\n\n\n",
    "tabs\tand\t\ttabs",
    "Numbers: 1234567890, 3.14159, -42, 1e-9",
    "Unicode: café, naïve, 東京, 😀, Ελληνικά",
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "def f(x):\n    return x * 2  # comment\n",
    "<h1>Title</h1><p>para</p>",
    "ALLCAPS and MiXeD cAsE words, hyphen-ated, e-mail@example.com",
    "Q: What is the largest planet in the Solar System?\nA:",
    " leading space",
    "trailing space ",
]


def tokenize(url: str, text: str) -> list[int]:
    body = json.dumps({"content": text, "add_special": True}).encode()
    req = urllib.request.Request(f"{url}/tokenize", data=body, method="POST")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as r:
        return [int(t) for t in json.loads(r.read())["tokens"]]


def tokenize_cli(binary: str, model: str, text: str) -> list[int]:
    argv = [binary, "-m", model, "-p", text, "--ids", "--log-disable"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return [int(t) for t in ast.literal_eval(out.strip().splitlines()[-1])]


def main(url: str, tok_dir: str, out: str, model: str = "") -> int:
    if url.startswith("http"):
        cases = [{"text": t, "ids": tokenize(url, t)} for t in TEXTS]
    else:
        cases = [{"text": t, "ids": tokenize_cli(url, model, t)} for t in TEXTS]
    Path(out).write_text(json.dumps(cases, ensure_ascii=False, indent=1) + "\n")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        print(f"wrote {out}; tokenizers not installed here, no local comparison")
        return 0
    tok = Tokenizer.from_file(str(Path(tok_dir) / "tokenizer.json"))
    bad = [c for c in cases if tok.encode(c["text"]).ids != c["ids"]]
    for c in bad:
        print(f"MISMATCH {c['text']!r}:\n  rebuilt {tok.encode(c['text']).ids}\n  llama   {c['ids']}")
    print(f"wrote {out}: {len(cases) - len(bad)}/{len(cases)} texts match llama.cpp's ids")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))

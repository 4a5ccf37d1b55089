"""Evaluate the garbage detectors on real garbage and on real healthy output.

Garbage: the ``garbage_output`` cases of shared/corpus/failure_logs.jsonl (the garbage
text extracted from each log), plus garbage made the way broken engines make it, from the
real Gemma 3 270M: near-uniform sampling (temperature 8, no top-k/top-p: what a kernel
that scrambles logits emits: multilingual subword junk), one subword repeated, ``<unk>``
and pad runs, control characters and replacement characters spliced into healthy text,
and healthy non-ASCII text shown as mojibake. Healthy: the real model's continuations of
240 varied prompts (prose, facts, lists, code, Q&A, dialogue, other languages), greedy and
sampled at temperature 0.8. The real text is generated once with llama-server and kept as
a fixture (``tests/unit/data/gemma_outputs.json``, which the unit tests also read);
only ``--regenerate`` remakes and writes it (texts and likelihood scores): a plain run
measures what the fixture lacks and changes no tracked file. Where a garbage case's
prompt is known (the corpus case quoting ``Input:``), the reference-likelihood check runs
too, with Gemma as the reference. Prints ``recall=<float> false_alarm=<float>`` as the last line.

    .venv/bin/python bench/garbage_eval.py [--fixture FILE] [--regenerate] [--show N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import re
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bringup.bench.prompts import text_prompt
from bringup.builtin_models import resolve_builtin
from bringup.checks.garbage import check_likelihood, detect_garbage
from bringup.checks.scoring import mean_finite, score_text
from bringup.engines.llamacpp import find_llama_server
from bringup.http import OpenAIClient
from bringup.server.ports import free_port
from bringup.server.process import EngineProcess

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / ".." / "shared" / "corpus" / "failure_logs.jsonl"
FIXTURE = ROOT / "tests" / "unit" / "data" / "gemma_outputs.json"
TOKENS = 48

TOPICS = [
    "The Eiffel Tower",
    "Photosynthesis",
    "The Roman Empire",
    "Quantum mechanics",
    "The Amazon rainforest",
    "Jazz music",
    "The human heart",
    "Volcanoes",
    "The Internet",
    "Ancient Egypt",
    "Climate change",
    "The Moon",
    "Honey bees",
    "The French Revolution",
    "Machine learning",
    "Coffee",
    "The Great Wall of China",
    "Mount Everest",
    "The piano",
    "Democracy",
    "Chess",
    "The printing press",
    "Black holes",
    "Tea",
    "The Olympic Games",
    "Vaccines",
    "The Sahara desert",
    "Shakespeare",
    "Electric cars",
    "Penguins",
]
STARTS = [
    "Once upon a time, there was a",
    "It was a cold morning when",
    "The detective opened the door and",
    "She looked at the map and said",
    "In the year 2150, humanity",
    "The old man sat by the fire and",
    "Chapter 3\n\nThe storm had passed, but",
    "Dear diary, today I",
    "The dragon flew over the",
    "When I was a child, my grandmother",
    "The spaceship landed on",
    "He had never seen anything like",
    "The village was quiet until",
    "After the war ended,",
    "The letter arrived on a Tuesday.",
]
CODE = [
    "def reverse_string(s):\n",
    "import numpy as np\n\n",
    "class Stack:\n    def __init__(self):\n",
    "for i in range(10):\n",
    "SELECT * FROM orders WHERE",
    "function fetchData(url) {\n",
    "#include <stdio.h>\n\nint main() {\n",
    "<!DOCTYPE html>\n<html>\n<head>\n",
    "#!/bin/bash\n\n",
    "public class HelloWorld {\n",
    "def quicksort(arr):\n",
    "const express = require('express');\n",
    "CREATE TABLE users (\n",
    "fn main() {\n",
    "# Install dependencies\npip install",
    '{\n  "name": "my-app",\n',
    "git clone https://github.com/",
    "x = [1, 2, 3]\nprint(",
    'def is_prime(n):\n    """Return True if n is prime."""\n',
    '<div class="container">\n',
]
QUESTIONS = [
    "What is the capital of Germany?",
    "How many days are in a week?",
    "Who painted the Mona Lisa?",
    "What is the boiling point of water?",
    "Why is the sky blue?",
    "What is a noun?",
    "How do airplanes fly?",
    "What is the largest planet?",
    "Who wrote Hamlet?",
    "What is DNA?",
    "How many continents are there?",
    "What is the speed of light?",
    "What is an atom?",
    "Why do we sleep?",
    "What is inflation?",
]
LISTS = [
    "Here are five tips for better sleep:\n1.",
    "Ingredients:\n-",
    "Top 10 programming languages:\n1.",
    "Things to pack for a beach trip:\n*",
    "Steps to change a tire:\n1.",
    "Benefits of exercise:\n-",
    "Shopping list: milk, eggs,",
    "The days of the week are",
    "Prime numbers: 2, 3, 5, 7,",
    "Table of contents\n\n1. Introduction\n2.",
    "| Name | Age |\n|------|-----|\n| Alice | 30 |\n",
    "Colors of the rainbow: red, orange,",
    "Planets: Mercury, Venus,",
    "A, B, C, D,",
    "10, 20, 30, 40,",
]
OTHER_LANG = [
    "La ville de Paris est",
    "Der Hund läuft im Park und",
    "El sol brilla y los niños",
    "Il était une fois",
    "Oggi è una bella giornata e",
    "東京は日本の首都で",
    "北京是中国的首都，",
    "Москва — столица России,",
    "서울은 한국의 수도이며",
    "A casa é grande e",
    "Het weer is vandaag",
    "Merhaba, benim adım",
    "Καλημέρα, σήμερα",
    "मेरा नाम राम है और",
    "Witaj, nazywam się",
]
MISC = [
    "Dear John,\n\nThank you for your letter.",
    "Subject: Meeting tomorrow\n\nHi team,",
    "Q: What's your favorite movie?\nA:",
    "Alice: Hi Bob, how are you?\nBob:",
    "Roses are red,\nviolets are blue,",
    "BREAKING NEWS:",
    "Abstract\n\nIn this paper we",
    "Terms and Conditions\n\n1.",
    "Recipe: Chocolate cake\n\n",
    "Product review: I bought this blender",
    "Weather report: Today will be",
    "Lesson 1: Introduction to",
    "The meeting minutes:\n-",
    "FAQ\n\nQ: How do I reset my password?\nA:",
    "Tweet: Just finished my first marathon!",
    "Step 1:",
    "Note to self:",
    "Error: file not found.",
    "Title: The Last Summer\n\n",
    "2 + 2 = 4\n3 + 3 =",
]


def healthy_prompts() -> list[str]:
    out = [f"{t} is" for t in TOPICS] + [f"{t} was" for t in TOPICS[:15]]
    out += [f"Q: {q}\nA:" for q in QUESTIONS] + [f"{q}\n" for q in QUESTIONS]
    out += STARTS + CODE + LISTS + OTHER_LANG + MISC
    out += [f"A short essay about {t.lower()}:\n\n" for t in TOPICS[:20]]
    out += [f"Wikipedia: {t}\n\n{t}" for t in TOPICS[10:30]]
    out += [f"The history of {t.lower()}" for t in TOPICS[:20]]
    out += [f"Translate to French: {t}\nFrench:" for t in TOPICS[:10]]
    return out


def extract_garbage(log: str) -> tuple[str, str | None]:
    """The generated text inside a reported log, and the prompt when the log gives it."""
    prompt = None
    m = re.search(r'Input:\s*"(.*?)"', log)
    if m:
        prompt = m.group(1)
    m = re.search(r'Output:\s*"(.*?)"\s*$', log, flags=re.S | re.M)
    if m:
        return m.group(1), prompt
    m = re.search(r"^assistant\n(.*?)(?:\n>|\Z)", log, flags=re.S | re.M)  # chat CLI transcript
    if m:
        return m.group(1), prompt
    quoted = re.findall(r'"([^"]{8,})"', log)  # the quoted output in a prose report
    if quoted:
        return max(quoted, key=len), prompt
    return log, prompt


@contextlib.asynccontextmanager
async def llama_server(*extra: str) -> AsyncIterator[str]:
    binary = find_llama_server()
    if binary is None:
        raise SystemExit("llama-server is not installed (run `make engine`)")
    model = str(resolve_builtin("gemma3-270m"))
    port = free_port()
    log = Path(tempfile.mkdtemp(prefix="garbage-eval-")) / "llama-server.log"
    argv = [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "2048"]
    proc = EngineProcess([*argv, "-t", "2", "--no-warmup", *extra], log)
    url = f"http://127.0.0.1:{port}"
    try:
        async with OpenAIClient(url, timeout_s=5) as client:
            deadline = time.monotonic() + 120
            while (await client.health())[0] != 200:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"llama-server did not start: {log.read_text(errors='replace')[-600:]}"
                    )
                await asyncio.sleep(0.2)
        yield url
    finally:
        proc.stop(grace_s=5)


async def _gen(
    c: OpenAIClient, prompt: str, temperature: float, seed: int, **extra: Any
) -> dict[str, Any]:
    body = {
        "prompt": prompt,
        "max_tokens": TOKENS,
        "temperature": temperature,
        "seed": seed,
        "logprobs": 1,
    }
    payload = await c.post_json("/v1/completions", {**body, **extra})
    from bringup.http import parse_completion

    comp = parse_completion(payload)
    return {"prompt": prompt, "temperature": temperature, "text": comp.text, "tokens": comp.tokens}


async def generate(have: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The sections of the fixture that are missing (all of them with --regenerate)."""
    prompts = healthy_prompts()
    rng = random.Random(7)
    out = dict(have)
    async with llama_server() as url, OpenAIClient(url, timeout_s=120) as c:
        if "healthy" not in out:
            out["healthy"] = []
            for i, p in enumerate(prompts):
                out["healthy"].append(await _gen(c, p, 0.0, 0))
                if i % 3 == 0:  # a sampled continuation of every third prompt as well
                    out["healthy"].append(await _gen(c, p, 0.8, rng.randrange(1 << 30)))
        if "bench" not in out:
            # What the benchmark sends: word-salad prompts, greedy, EOS ignored.
            out["bench"] = []
            for i in range(40):
                p = text_prompt(i, 32, rng)
                out["bench"].append(await _gen(c, p, 0.0, 0, ignore_eos=True))
        if "junk" not in out:
            # Scrambled logits: near-uniform sampling over the whole vocabulary.
            out["junk"] = []
            for p in random.Random(8).sample(prompts, 40):
                out["junk"].append(
                    await _gen(c, p, 8.0, rng.randrange(1 << 30), top_k=0, top_p=1.0, min_p=0.0)
                )
    return out


def save_fixture(fixture: Path, real: dict[str, Any]) -> None:
    """Only ``--regenerate`` writes the fixture: a benchmark run never changes tracked files."""
    fixture.parent.mkdir(parents=True, exist_ok=True)
    fixture.write_text(json.dumps(real, ensure_ascii=False, indent=1), encoding="utf-8")


def synthesize(real: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str, list[str] | None]]:
    """Garbage cases (kind, text, tokens) built from the real model's tokens and text."""
    rng = random.Random(11)
    cases: list[tuple[str, str, list[str] | None]] = []
    for r in real["junk"]:
        cases.append(("uniform-sampling", r["text"], r["tokens"] or None))
    for r in real["junk"]:  # the same scramble over a vocabulary of Latin subwords only
        ascii_tokens = [t for t in r["tokens"] if t.isascii()]
        cases.append(("latin-subword-soup", "".join(ascii_tokens), ascii_tokens or None))
    pieces = [t for r in real["junk"] for t in r["tokens"] if t.strip()]
    for _ in range(20):  # one subword repeated, the '!!!!' family
        tok = rng.choice(pieces)
        n = rng.randint(12, 48)
        sep = rng.choice(["", " ", ""])
        cases.append(("repeated-subword", sep.join([tok] * n), [tok] * n))
    for marker in ["<unk>", "<pad>", "<mask>", "[UNK]", "<0x00>"]:
        cases.append(("special-token", (" " + marker) * rng.randint(6, 30), None))
    healthy = [r["text"] for r in real["healthy"] if len(r["text"]) > 60]
    for text in rng.sample(healthy, 20):  # corrupted detokenizer / memory
        chars = list(text)
        junk = rng.choice(["\ufffd", "\x00", "\x1b", "\x07", "\ue000"])
        for _ in range(rng.randint(4, 10)):
            chars.insert(rng.randrange(len(chars)), junk)
        cases.append(("control-chars", "".join(chars), None))
    non_ascii = [t for t in healthy if sum(ord(ch) > 127 for ch in t) >= 4]
    for text in non_ascii[:10]:
        cases.append(("mojibake", text.encode("utf-8").decode("cp1252", errors="ignore"), None))
    return cases


async def likelihood_scores(cases: list[tuple[str, str]]) -> list[tuple[float, float]]:
    """(reference's mean logprob of the text, of its own greedy answer), Gemma as reference."""
    out = []
    async with llama_server() as url, OpenAIClient(url, timeout_s=120) as c:
        for prompt, text in cases:
            own = await c.complete(prompt, max_tokens=16, logprobs=10)
            scored = await score_text(c, prompt, text)
            out.append((mean_finite(scored), mean_finite(own.token_logprobs)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixture", type=Path, default=FIXTURE)
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--show", type=int, default=5, help="misses and false alarms to print")
    ap.add_argument("--likelihood", type=int, default=12, help="calibration cases (0: skip)")
    args = ap.parse_args()

    real: dict[str, Any] = {}
    if args.fixture.is_file():
        real = json.loads(args.fixture.read_text(encoding="utf-8"))
    if args.regenerate:
        real = {}
    if not {"healthy", "bench", "junk"} <= set(real):
        real = asyncio.run(generate(real))
        if not args.regenerate:
            print(f"{args.fixture} lacks generated texts; measured now, not saved (--regenerate)")

    rows = [
        json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    corpus = [
        (r["id"], *extract_garbage(r["log"])) for r in rows if r["category"] == "garbage_output"
    ]
    # The likelihood check needs the prompt: corpus cases quoting one, plus a calibration
    # sample of healthy sampled (T=0.8) outputs and of uniform-sampling junk.
    with_prompt = [(i, p, t) for i, t, p in corpus if p is not None]
    sampled = [r for r in real["healthy"] if r["temperature"] > 0][: args.likelihood]
    junk = real["junk"][: args.likelihood]
    lik: dict[str, bool] = {}
    if args.likelihood:
        cases = [(p, t) for _, p, t in with_prompt]
        cases += [(r["prompt"], r["text"]) for r in sampled + junk]
        # Scores kept in the fixture beside the texts they score; the rest measured now
        # (and kept only with --regenerate).
        known: dict[str, list[float]] = real.setdefault("likelihood", {})
        todo = [c for c in cases if "\x00".join(c) not in known]
        if todo:
            for c, sc in zip(todo, asyncio.run(likelihood_scores(todo)), strict=True):
                known["\x00".join(c)] = list(sc)
        scores = [(known["\x00".join(c)][0], known["\x00".join(c)][1]) for c in cases]
        flags = [
            check_likelihood(t, a, b) is not None
            for (_, t), (a, b) in zip(cases, scores, strict=True)
        ]
        k = len(with_prompt)
        for (cid, _, _), (a, b), f in zip(with_prompt, scores, flags, strict=False):
            print(
                f"likelihood corpus {cid}: {a:.2f} vs own {b:.2f} -> {'flagged' if f else 'passed'}"
            )
            lik[cid] = f
        for name, part, fl in (
            ("healthy sampled", scores[k : k + len(sampled)], flags[k : k + len(sampled)]),
            ("uniform junk", scores[k + len(sampled) :], flags[k + len(sampled) :]),
        ):
            gaps = sorted(round(a - b, 2) for a, b in part)
            print(f"likelihood {name}: {sum(fl)}/{len(fl)} flagged; score-own gaps {gaps}")
    if args.regenerate:
        save_fixture(args.fixture, real)

    garbage: list[tuple[str, str, bool]] = []
    for cid, text, _ in corpus:
        finding = detect_garbage(text)
        hit = finding is not None or lik.get(cid, False)
        how = finding.detector if finding else ("likelihood" if hit else "-")
        print(f"corpus {cid}: {'DETECTED' if hit else 'missed'} by {how}: {text[:60]!r}")
        garbage.append(("corpus", text, hit))
    for kind, text, tokens in synthesize(real):
        garbage.append((kind, text, detect_garbage(text, tokens) is not None))

    # The benchmark's word-salad prompts make this small model loop one word (`` the the``)
    # on a healthy engine; check_under_load compares such samples with their idle answers,
    # so they are counted here on their own, not as natural healthy text.
    salad = [r for r in real["bench"] if detect_garbage(r["text"], r["tokens"] or None)]
    healthy = real["healthy"]
    alarms = [(r, f) for r in healthy if (f := detect_garbage(r["text"], r["tokens"] or None))]

    by_kind: dict[str, list[bool]] = {}
    for kind, _, hit in garbage:
        by_kind.setdefault(kind, []).append(hit)
    for kind, hits in by_kind.items():
        print(f"garbage {kind:17s} {sum(hits):3d}/{len(hits):3d} detected")
    for kind, text, _hit in [g for g in garbage if not g[2]][: args.show]:
        print(f"  missed {kind}: {text[:70]!r}")
    n_greedy = sum(r["temperature"] == 0 for r in real["healthy"])
    print(f"healthy outputs: {len(healthy)} ({n_greedy} greedy)")
    print(f"bench-style word-salad prompts: detectors fire on {len(salad)}/{len(real['bench'])}")
    for r, f in alarms[: args.show]:
        print(f"  false alarm {f.detector}: {r['prompt'][:30]!r} -> {r['text'][:70]!r}")
    recall = sum(hit for _, _, hit in garbage) / len(garbage)
    corpus_recall = sum(by_kind["corpus"]) / len(by_kind["corpus"])
    print(f"corpus_recall={corpus_recall:.3f} over {len(by_kind['corpus'])} cases")
    print(f"recall={recall:.3f} false_alarm={len(alarms) / len(healthy):.4f}")


if __name__ == "__main__":
    main()

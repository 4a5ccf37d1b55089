"""Garbage detectors: is this generated text the output of a broken engine?

``detect_garbage(text, tokens)`` runs every text detector and returns the first
:class:`GarbageFinding` (detector name, one-sentence reason, quoted excerpt) or None.
The detectors look for what broken kernels, bad quantization and corrupted KV caches
produce: empty text, one token or a tiny unit repeated (``!!!!``, ``<pad><pad>``), a
handful of distinct tokens, special-token markers, replacement characters and control
runs, mojibake, letter soup across many scripts and letter/digit junk. They are tuned not
to fire on what a healthy small base model writes at temperature 0, which is often
repetitive English that loops a whole phrase: loops of a phrase pass, loops of a
character or a token do not. Batch-level and reference-based checks (every prompt ending
at its first token; the reference's likelihood of the text) live beside them.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class GarbageFinding:
    """Which detector fired, why, and the output it fired on (quoted, shortened)."""

    detector: str
    reason: str
    excerpt: str

    def evidence(self) -> str:
        return f"{self.detector}: {self.reason}; output {self.excerpt}"


def quote(text: str, limit: int = 80) -> str:
    """The text as a short Python-style literal, so control characters stay visible."""
    shown = text if len(text) <= limit else text[:limit] + "…"
    return repr(shown)


_SPECIAL = re.compile(
    r"<pad>|<unk>|<mask>|\[PAD\]|\[UNK\]|\[MASK\]|<\|endoftext\|>|<\|pad\|>|<0x[0-9A-F]{2}>|"
    r"<unused\d+>|<\|reserved_special_token_\d+\|>|<extra_id_\d+>"
)
# UTF-8 bytes read as Latin-1/CP1252: a lead byte (Â..ï) followed by a continuation byte
# (0x80-0xBF as Latin-1 or as CP1252, such as the € of "â€™"). Healthy text in any
# language writes the real letter instead.
_CONT = "".join(
    sorted(
        set(bytes(range(0x80, 0xC0)).decode("latin-1"))
        | set(bytes(range(0x80, 0xC0)).decode("cp1252", errors="ignore"))
    )
)
_MOJIBAKE = re.compile(f"[\u00c2-\u00ef][{re.escape(_CONT)}]")
_TAG = re.compile(r"</?[A-Za-z][^<>]{0,40}>")
_WORD = re.compile(r"\S+")
_ALNUM_WORD = re.compile(r"[A-Za-z0-9]+")

# Thresholds, set on healthy Gemma 3 270M output and real garbage (bench/garbage_eval.py).
MIN_REPEAT_CHARS = 8  # shortest run of one repeated unit that counts as a loop
REPEAT_COVERAGE = 0.6  # share of the text the tiny loop must cover
LOW_DISTINCT_MIN_TOKENS = 24
LOW_DISTINCT_MAX = 3
BAD_CHAR_MIN = 3
BAD_CHAR_RATIO = 0.05
SCRIPT_MIN = 4
JUNK_WORD_RATIO = 0.4
JUNK_MIN_WORDS = 5


def _strip_trailing_partial(text: str) -> str:
    # A multi-byte character cut by max_tokens decodes as U+FFFD at the very end; healthy.
    return text.rstrip("\ufffd")


def check_empty(text: str, tokens: Sequence[str] | None = None) -> GarbageFinding | None:
    if text.strip():
        return None
    return GarbageFinding("empty", "the output is empty or only whitespace", quote(text))


def check_special_tokens(text: str, tokens: Sequence[str] | None = None) -> GarbageFinding | None:
    hits = _SPECIAL.findall(text)
    if len(hits) < 2:
        return None
    top, n = Counter(hits).most_common(1)[0]
    return GarbageFinding(
        "special_tokens",
        f"{len(hits)} special-token markers in the text ({top!r} x{n})",
        quote(text),
    )


def _loops(text: str) -> list[tuple[str, int, int]]:
    """Stretches made of one unit of 1-4 characters repeated 4+ times: (unit, start, length).

    Longer units are left alone: a small model's greedy decoding loops whole words and
    phrases on a healthy engine (``python-python-python``). Digits are left alone too:
    ``1000000000`` is a number, however long.
    """
    found = []
    for m in re.finditer(r"(.{1,4}?)\1{3,}", text, flags=re.DOTALL):
        unit = m.group(1)
        if unit.strip() == "" or unit.isdigit():
            continue  # runs of spaces or newlines are layout; digit runs are numbers
        found.append((unit, m.start(), len(m.group(0))))
    return found


_RULE_CHARS = set("-=_*#~.·•+| ")  # repeated as separators and rules in healthy text


def check_repeated_unit(text: str, tokens: Sequence[str] | None = None) -> GarbageFinding | None:
    """One character, token or tiny unit repeated over most of the output, or ending it."""
    body = text.strip()
    if tokens and len(tokens) >= 8:
        tok, n = Counter(tokens).most_common(1)[0]
        # A one-token loop: the same token is almost every token generated.
        if tok.strip() and not tok.strip().isdigit() and n >= 8 and n / len(tokens) >= 0.75:
            return GarbageFinding(
                "repeated_token",
                f"token {tok!r} is {n} of {len(tokens)} generated tokens",
                quote(text),
            )
    for unit, start, span in sorted(_loops(body), key=lambda x: -x[2]):
        covers = span >= MIN_REPEAT_CHARS and span >= REPEAT_COVERAGE * len(body)
        # The engine fell into a loop and never left it (output ends in the loop).
        tail = start + span == len(body) and span >= 16 and not set(unit) <= _RULE_CHARS
        if covers or tail:
            where = "ending the output" if tail and not covers else f"of {len(body)} characters"
            return GarbageFinding(
                "repeated_token", f"{unit!r} repeated over {span} characters {where}", quote(text)
            )
    words = body.split()
    run, best, best_word = 1, 1, ""
    for a, b in itertools.pairwise(words):
        run = run + 1 if a == b and not a.isdigit() else 1
        if run > best:
            best, best_word = run, b
    if best >= 6:
        return GarbageFinding(
            "repeated_token", f"{best_word!r} repeated {best} times in a row", quote(text)
        )
    return None


def check_low_distinct(text: str, tokens: Sequence[str] | None = None) -> GarbageFinding | None:
    """Many tokens drawn from a handful: a loop of one or two tokens, even with spacing."""
    units = [t for t in tokens if t.strip()] if tokens else _WORD.findall(text)
    if len(units) < LOW_DISTINCT_MIN_TOKENS:
        return None
    distinct = len(set(units))
    if distinct > LOW_DISTINCT_MAX:
        return None
    return GarbageFinding(
        "low_distinct_tokens",
        f"{len(units)} tokens but only {distinct} distinct",
        quote(text),
    )


def _bad_char(ch: str) -> bool:
    if ch in "\n\r\t":
        return False
    if ch == "\ufffd":
        return True
    cat = unicodedata.category(ch)
    return cat in ("Cc", "Cs", "Co", "Cn") or (cat == "Cf" and ch not in "\u200b\u200c\u200d\ufeff")


def check_bad_chars(text: str, tokens: Sequence[str] | None = None) -> GarbageFinding | None:
    """Replacement characters, control characters, private-use or unassigned code points."""
    body = _strip_trailing_partial(text)
    bad = [ch for ch in body if _bad_char(ch)]
    if len(bad) < BAD_CHAR_MIN and not (len(bad) >= 2 and len(bad) >= BAD_CHAR_RATIO * len(body)):
        return None
    kinds = Counter(f"U+{ord(c):04X}" for c in bad).most_common(3)
    named = ", ".join(f"{k} x{n}" for k, n in kinds)
    return GarbageFinding(
        "nonprintable", f"{len(bad)} replacement or non-printable characters ({named})", quote(text)
    )


def check_mojibake(text: str, tokens: Sequence[str] | None = None) -> GarbageFinding | None:
    hits = _MOJIBAKE.findall(text)
    if len(hits) < 3:
        return None
    return GarbageFinding(
        "mojibake", f"{len(hits)} UTF-8-read-as-Latin-1 sequences such as {hits[0]!r}", quote(text)
    )


def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return "UNKNOWN"
    first = name.split(" ", 1)[0]
    # Japanese mixes kanji and kana and Korean uses one script: count them as one each.
    if first in ("CJK", "HIRAGANA", "KATAKANA"):
        return "CJK"
    return first


def check_script_soup(text: str, tokens: Sequence[str] | None = None) -> GarbageFinding | None:
    """Letters from many writing systems mixed in one short output: random-token junk."""
    scripts = Counter(s for s in map(_script, text) if s)
    # Count a script only when it has a few letters; one borrowed name or symbol is normal.
    present = [s for s, n in scripts.items() if n >= 2]
    if len(present) < SCRIPT_MIN:
        return None
    return GarbageFinding(
        "script_soup",
        f"letters from {len(present)} writing systems ({', '.join(sorted(present)[:6])})",
        quote(text),
    )


def _junk_word(word: str) -> bool:
    """A Latin/digit word no language writes: mixed letters and digits inside, or caps soup."""
    if len(word) == 1:
        # Stray capitals; lower-case single letters are variables in code, units, options.
        return word.isupper() and word not in "AIO"
    has_digit = any(c.isdigit() for c in word)
    has_alpha = any(c.isalpha() for c in word)
    if has_digit and has_alpha:
        # Interleaved, such as P23D323D4; units like 10km or 3rd or v2 have one switch.
        switches = sum(1 for a, b in itertools.pairwise(word) if a.isdigit() != b.isdigit())
        return switches >= 3
    if has_alpha and len(word) >= 5 and not re.search("[aeiouyAEIOUY]", word):
        return word.upper() != word or len(word) >= 7  # long vowel-less runs; short acronyms pass
    return False


def _in_sequence(words: list[str], i: int) -> bool:
    """A single letter next to its alphabet neighbour (``A, B, C`` or ``x y z``) is a list."""
    if len(words[i]) != 1:
        return False
    here = ord(words[i].lower())
    for j in (i - 1, i + 1):
        if 0 <= j < len(words) and len(words[j]) == 1 and abs(ord(words[j].lower()) - here) == 1:
            return True
    return False


def check_letter_junk(text: str, tokens: Sequence[str] | None = None) -> GarbageFinding | None:
    """Most words are stray letters or letter/digit soup (such as ``D R P23D323D4 PP``)."""
    words = _ALNUM_WORD.findall(_TAG.sub(" ", text))  # <b>, </div>: markup, not words
    if len(words) < JUNK_MIN_WORDS:
        return None
    junk = [w for i, w in enumerate(words) if _junk_word(w) and not _in_sequence(words, i)]
    if len(junk) < 3 or len(junk) / len(words) < JUNK_WORD_RATIO:
        return None
    return GarbageFinding(
        "letter_junk",
        f"{len(junk)} of {len(words)} words are stray letters or letter/digit soup "
        f"(e.g. {', '.join(junk[:3])})",
        quote(text),
    )


# Function words of the languages a small model writes most, and code keywords: healthy
# prose is 20-50% such words; random subwords glued together are almost none.
_FUNCTION_TEXT = """the of and to in is was that for on are with as his they be at one have
    this from or
    had by but what some we can out other were all there when up use your how said an each
    she which do their time if will way about many then them would like so these her make
    see him two has more day could go come did no most people my over know than who may
    down been now any new after back only very just also a i it you he not me our its us am
    le la les de des du un une et est en que qui dans pour pas sur au aux il elle je ce sont
    par avec der die das und ist ein eine zu den nicht von mit sich auf im dem für es ich sie
    war el los las y por una con para del se al lo como más di che è per non sono della o os
    um uma do da em com não het een van ik je ze te op och att som är jag ja ei ole se että
    ve bir bu da ile için yang dan di ke dari itu ini w na nie się jest że z
    def return if else elif for while import class not and or none true false int var let
    const function new self print end then"""
_FUNCTION_WORDS = frozenset(_FUNCTION_TEXT.split())
_LATIN_WORD = re.compile(r"[A-Za-zÀ-ÿ]+")
_GLUED = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")  # persamaanHuh, KUkitchen
SALAD_MIN_WORDS = 10


def check_word_salad(text: str, tokens: Sequence[str] | None = None) -> GarbageFinding | None:
    """Latin-script subword soup: no function words, no repeats, glued camel-case or very
    long non-words (``persamaanHuh dominatedenseGreyconfirm``), what scrambled logits emit
    on a vocabulary of mostly Latin subwords."""
    words = _LATIN_WORD.findall(_TAG.sub(" ", text))
    if len(words) < SALAD_MIN_WORDS:
        return None
    function = sum(w.lower() in _FUNCTION_WORDS for w in words) / len(words)
    distinct = len({w.lower() for w in words}) / len(words)
    if function > 0.10 or distinct < 0.85:
        return None  # prose has function words; lists, tables and loops repeat themselves
    # Thresholds sit mid-way in a flat region: no healthy output fired from function <= 0.2
    # and glued >= 0.05 down to 8 words (bench/garbage_eval.py).
    glued = [w for w in words if _GLUED.search(w) or len(w) >= 12]
    if len(glued) / len(words) < 0.08:
        return None
    return GarbageFinding(
        "word_salad",
        f"{len(words)} words, {function:.0%} function words, {len(glued)} glued or overlong "
        f"(e.g. {', '.join(glued[:3])})",
        quote(text),
    )


DETECTORS = (
    check_empty,
    check_special_tokens,
    check_repeated_unit,
    check_low_distinct,
    check_bad_chars,
    check_mojibake,
    check_script_soup,
    check_letter_junk,
    check_word_salad,
)


def detect_garbage(text: str, tokens: list[str] | None = None) -> GarbageFinding | None:
    """The first detector that fires on this output, or None when it looks like language."""
    for detector in DETECTORS:
        finding = detector(text, tokens)
        if finding is not None:
            return finding
    return None


def detect_first_token_stops(
    outputs: Sequence[tuple[str, int, str | None]],
) -> GarbageFinding | None:
    """Every output ``(text, completion_tokens, finish_reason)`` stopped at its first token.

    One short answer is fine; all of them ending on their first token means the engine
    emits end-of-sequence at once (a broken sampler or an all-masked attention).
    """
    if len(outputs) < 2:
        return None
    if all(n <= 1 and reason != "length" for _, n, reason in outputs):
        shown = ", ".join(quote(t, 20) for t, _, _ in outputs[:4])
        return GarbageFinding(
            "first_token_stop", f"all {len(outputs)} prompts ended at their first token", shown
        )
    return None


# A reference-scored text is garbage when its mean log-probability per token falls this far
# below what the reference gives its own greedy output for the same prompt (nats), and below
# the absolute floor. Measured with bench/garbage_eval.py on Gemma 3 270M (text scored with
# top-10 alternatives): healthy sampled (T=0.8) continuations sit 0.0-1.0 nats below the
# reference's own answer; near-uniform junk 2.5-3.4 below, the corpus's "san, a, b, both"
# 2.5 below (-3.92 against -1.38).
LIKELIHOOD_MARGIN = 2.0
LIKELIHOOD_FLOOR = -3.0


def check_likelihood(
    text: str, candidate_mean_logprob: float, reference_mean_logprob: float
) -> GarbageFinding | None:
    """Compare the reference's log-probability of the candidate's text with its own output."""
    if math.isnan(candidate_mean_logprob):
        return None
    if candidate_mean_logprob > LIKELIHOOD_FLOOR:
        return None
    if candidate_mean_logprob > reference_mean_logprob - LIKELIHOOD_MARGIN:
        return None
    return GarbageFinding(
        "likelihood",
        f"the reference gives this output {candidate_mean_logprob:.2f} nats/token against "
        f"{reference_mean_logprob:.2f} for its own answer",
        quote(text),
    )

"""Score given tokens under a server: its log-probability of each, in its own context.

OpenAI-compatible servers return log-probabilities only for tokens they generate (llama-
server has no prompt log-probabilities, and ``echo`` is not portable), so
``force_tokens`` walks the target with greedy generations: it reads the server's logprob
of each target token while the server's greedy choice agrees with it, and at a divergence
reads the target token from the top alternatives, then resumes generation from the prompt
plus the target text so far. The cost is one request per divergence plus one. A target
token outside the top alternatives gets the lowest returned alternative's logprob (an upper
bound on its real logprob), so differences computed from it are lower bounds.
``score_text`` does the same walk over a text instead of a token list (for the
reference-likelihood check, where the candidate's tokens need not be the reference's).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from bringup.http import Completion, OpenAIClient

RESUME_CHUNK = 8  # tokens asked for after a divergence; drifting candidates diverge often


def mean_finite(values: Sequence[float]) -> float:
    vals = [v for v in values if math.isfinite(v)]
    return sum(vals) / len(vals) if vals else math.nan


def _lookup(top: dict[str, float], token: str) -> float:
    if token in top:
        return top[token]
    return min(top.values()) if top else -math.inf


async def force_tokens(
    client: OpenAIClient,
    prompt: str,
    target: Sequence[str],
    *,
    first: Completion | None = None,
    top: int = 10,
    max_requests: int | None = None,
) -> list[float]:
    """The server's logprob of each ``target`` token after ``prompt`` and the tokens before it.

    ``first``, when given, is the server's own greedy completion of ``prompt`` with top
    logprobs; it saves the first request. Positions left unscored (the request budget ran
    out, or the server stopped generating) are ``-inf``, never silently dropped.
    """
    n = len(target)
    out = [-math.inf] * n
    pos = 0
    comp = first
    budget = max_requests if max_requests is not None else n + 1
    chunk = RESUME_CHUNK
    while pos < n:
        if comp is None:
            if budget <= 0:
                break
            budget -= 1
            comp = await client.complete(
                prompt + "".join(target[:pos]),
                max_tokens=min(chunk, n - pos),
                temperature=0.0,
                logprobs=top,
            )
        if not comp.tokens:
            break  # the server ends here while the target goes on: leave the rest unscored
        diverged_at: int | None = None
        for i, tok in enumerate(comp.tokens):
            j = pos + i
            if j >= n:
                break
            if tok == target[j]:
                out[j] = comp.token_logprobs[i] if i < len(comp.token_logprobs) else -math.inf
                continue
            out[j] = _lookup(comp.top_logprobs[i] if i < len(comp.top_logprobs) else {}, target[j])
            diverged_at = j
            break
        # Diverging at once again: ask for one token at a time until the two agree again.
        chunk = 1 if diverged_at == pos else RESUME_CHUNK
        pos = diverged_at + 1 if diverged_at is not None else min(n, pos + len(comp.tokens))
        comp = None
    return out


def _skip(rest: str) -> int:
    """Characters of an unscorable piece: up to the next whitespace, at least one."""
    m = re.match(r"\s*\S+?(?=\s|$)", rest, flags=re.DOTALL)
    return max(1, len(m.group(0)) if m else 1)


async def score_text(
    client: OpenAIClient,
    prompt: str,
    text: str,
    *,
    top: int = 10,
    max_requests: int = 48,
    max_chars: int = 160,
) -> list[float]:
    """The server's logprob of each piece of ``text`` after ``prompt``, walking by text.

    Works without the server's tokenizer: its greedy tokens are matched against the text;
    at a divergence the longest top alternative that continues the text is taken; when
    none does, the piece up to the next whitespace gets the lowest alternative's logprob.
    """
    text = text[:max_chars]
    out: list[float] = []
    off = 0
    chunk = RESUME_CHUNK
    while off < len(text) and max_requests > 0:
        max_requests -= 1
        comp = await client.complete(
            prompt + text[:off], max_tokens=chunk, temperature=0.0, logprobs=top
        )
        if not comp.tokens:
            break
        chunk = RESUME_CHUNK
        for i, tok in enumerate(comp.tokens):
            rest = text[off:]
            if not rest:
                break
            lp = comp.token_logprobs[i] if i < len(comp.token_logprobs) else -math.inf
            if tok and rest.startswith(tok):
                out.append(lp)
                off += len(tok)
                continue
            tops = comp.top_logprobs[i] if i < len(comp.top_logprobs) else {}
            fits = [t for t in tops if t and rest.startswith(t)]
            if fits:
                best = max(fits, key=len)
                out.append(tops[best])
                off += len(best)
            else:
                out.append(min(tops.values()) if tops else -math.inf)
                off += _skip(rest)
            if i == 0:
                chunk = 1  # diverging at once: one token at a time until they agree again
            break
    return out

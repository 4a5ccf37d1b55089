"""Completion answers read into one shape, whichever log-probability layout a server uses.

Both shapes seen in the wild are read into one :class:`Completion`: the OpenAI legacy one
(``tokens``/``token_logprobs``/``top_logprobs``) and llama-server's per-token ``content``
list. A malformed answer raises :class:`~bringup.errors.RequestError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bringup.errors import RequestError


@dataclass
class Completion:
    """One completion choice, with per-token log-probabilities when they were asked for."""

    text: str
    tokens: list[str] = field(default_factory=list)
    token_logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[dict[str, float]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0
    # what the engine says of this request beside the choice (llama-server's draft counts);
    # per request, so never stored with the answers
    timings: dict[str, Any] = field(default_factory=dict)

    @property
    def completion_tokens(self) -> int:
        """Tokens generated, from usage when the server reports it, else the token list."""
        n = self.usage.get("completion_tokens")
        return int(n) if isinstance(n, int) else len(self.tokens)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "token_logprobs": self.token_logprobs,
            "top_logprobs": self.top_logprobs,
            "finish_reason": self.finish_reason,
            "usage": self.usage,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Completion:
        return cls(
            text=str(d.get("text", "")),
            tokens=[str(t) for t in d.get("tokens", [])],
            token_logprobs=[float(x) for x in d.get("token_logprobs", [])],
            top_logprobs=[
                {str(k): float(v) for k, v in m.items()} for m in d.get("top_logprobs", [])
            ],
            finish_reason=d.get("finish_reason"),
            usage=dict(d.get("usage") or {}),
        )


def _num(x: Any) -> float:
    # JSON null appears for the first prompt token under echo; -inf keeps arithmetic honest.
    return float(x) if isinstance(x, int | float) else -math.inf


def parse_logprobs(lp: Any) -> tuple[list[str], list[float], list[dict[str, float]]]:
    """Tokens, their log-probabilities and the top alternatives, from either known shape."""
    if not isinstance(lp, dict):
        return [], [], []
    content = lp.get("content")
    if isinstance(content, list):  # llama-server (and chat-style) per-token records
        tokens, lps, tops = [], [], []
        for rec in content:
            if not isinstance(rec, dict):
                continue
            tokens.append(str(rec.get("token", "")))
            lps.append(_num(rec.get("logprob")))
            top: dict[str, float] = {}
            for alt in rec.get("top_logprobs") or []:
                if isinstance(alt, dict) and "token" in alt:
                    top.setdefault(str(alt["token"]), _num(alt.get("logprob")))
            tops.append(top)
        return tokens, lps, tops
    tokens = [str(t) for t in lp.get("tokens") or []]
    lps = [_num(x) for x in lp.get("token_logprobs") or []]
    tops = [
        {str(k): _num(v) for k, v in m.items()} if isinstance(m, dict) else {}
        for m in lp.get("top_logprobs") or []
    ]
    return tokens, lps, tops


def parse_completion(payload: Any, elapsed_s: float = 0.0) -> Completion:
    """The first choice of a ``/v1/completions`` response body."""
    if not isinstance(payload, dict):
        raise RequestError("completion response is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise RequestError(f"completion response has no choices: {str(payload)[:200]}")
    choice = choices[0]
    text = choice.get("text")
    if not isinstance(text, str):
        raise RequestError(f"completion choice has no text: {str(choice)[:200]}")
    tokens, lps, tops = parse_logprobs(choice.get("logprobs"))
    usage = payload.get("usage")
    timings = payload.get("timings")
    return Completion(
        text=text,
        tokens=tokens,
        token_logprobs=lps,
        top_logprobs=tops,
        finish_reason=choice.get("finish_reason"),
        usage=usage if isinstance(usage, dict) else {},
        elapsed_s=elapsed_s,
        timings=timings if isinstance(timings, dict) else {},
    )

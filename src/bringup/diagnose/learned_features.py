"""The features the learned fallback reads from a log: one function for training and runtime.

``features(text, settings)`` turns a log into the list of terms a linear model weighs. The
trainer (``bench/diagnose_train.py``) hands this very function to scikit-learn as the
vectorizer's ``analyzer``, and the runtime (:mod:`bringup.diagnose.learned`) calls it on the
log it classifies, with the settings stored in the exported model: the two cannot tokenize
differently. :data:`FEATURES_VERSION` names this function's behaviour; a model exported under
another version is refused at load (retrain it).

Each line loses what loggers put in front of it (``logtext.content``: times, levels, ranks),
then numbers, hex addresses and quoted paths are folded into placeholders, so that terms name
what a message says, not when or where it was said. Terms are lower-case words (``w:``), word
pairs (``b:``) and, optionally, character n-grams inside words (``c:``), which read
identifiers a word split would miss (``cudaerrornokernelimagefordevice``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from bringup.diagnose.logtext import content, log_lines

FEATURES_VERSION = 1

_HEX = re.compile(r"\b0x[0-9a-f]+\b")
_NUM = re.compile(r"\d+(?:\.\d+)*")
_PATH = re.compile(r"(?:[a-z]:)?(?:[\\/][\w.@+-]+){2,}[\\/]?")
_WORD = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")


@dataclass(frozen=True)
class FeatureSettings:
    bigrams: bool = True
    char_min: int = 0  # 0: no character n-grams
    char_max: int = 0
    max_chars: int = 6000  # the model reads the log's last characters (excerpts fit whole)
    split_dotted: bool = True  # "torch.cuda.outofmemoryerror" also as its parts

    def to_dict(self) -> dict[str, int | bool]:
        return {
            "bigrams": self.bigrams,
            "char_min": self.char_min,
            "char_max": self.char_max,
            "max_chars": self.max_chars,
            "split_dotted": self.split_dotted,
        }

    @classmethod
    def from_dict(cls, data: dict[str, int | bool]) -> FeatureSettings:
        return cls(
            bigrams=bool(data["bigrams"]),
            char_min=int(data["char_min"]),
            char_max=int(data["char_max"]),
            max_chars=int(data["max_chars"]),
            split_dotted=bool(data["split_dotted"]),
        )


def normalise(text: str, max_chars: int) -> str:
    """The log's messages, lower-case, numbers and addresses folded, last ``max_chars``."""
    body = "\n".join(content(line) for line in log_lines(text[-max_chars * 2 :]))[-max_chars:]
    low = body.lower()
    low = _HEX.sub(" hexaddr ", low)
    low = _PATH.sub(" pathname ", low)
    return _NUM.sub("0", low)


def features(text: str, settings: FeatureSettings) -> list[str]:
    """The terms of a log, repeated as often as they occur (term frequency is counted by
    the caller: the vectorizer in training, :mod:`bringup.diagnose.learned` at runtime)."""
    out: list[str] = []
    for line in normalise(text, settings.max_chars).splitlines():
        words = _WORD.findall(line)
        for word in words:
            out.append("w:" + word)
            if settings.split_dotted and "." in word:
                out.extend("w:" + part for part in word.split("."))
            if settings.char_min:
                padded = f" {word} "
                for n in range(settings.char_min, settings.char_max + 1):
                    out.extend("c:" + padded[i : i + n] for i in range(len(padded) - n + 1))
        if settings.bigrams:
            out.extend(f"b:{a} {b}" for a, b in pairwise(words))
    return out

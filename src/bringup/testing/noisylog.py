"""A long engine log whose every line says "error": the worst case for the diagnosis.

``noisy_error_log(n)`` writes ``n`` distinct request-error lines of about 1,300 characters
(vLLM's logger prefix, an error word, a long JSON-ish request dump with quotes and
brackets, words that rules look for) and then the decisive failure, a CUDA OOM traceback.
Every line passes the classifier's keyword gate and none repeats, so no line can be
skipped or read once for many: the log measures the work per line
(``bench/diagnose_speed.py``) and checks the verdict still comes from the decisive line
(``tests/unit/test_diagnose_literals.py``). Seeded: the same ``n`` gives the same text.
"""

from __future__ import annotations

import random

# the words rules look for, spaced by the brackets and quotes of a request dump
_TEXT = (
    "error failed request model cuda tensor value invalid with 'prompt' \"role\" ( ) [ ] "
    "{ } . , : = module import support config token kv cache block rank worker timeout "
    "not found memory stream engine scheduler batch sequence"
)
_WORDS = tuple(_TEXT.split())

OOM_TAIL = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2101, '
    "in _dummy_run\n"
    "    hidden_states = self.model(input_ids=input_ids, positions=positions)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 79.19 GiB of which 1.02 GiB is free."
)


def noisy_error_log(n: int, words_per_line: int = 220, seed: int = 0) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        body = " ".join(rng.choice(_WORDS) for _ in range(words_per_line))
        lines.append(
            f"ERROR 12-01 10:{i // 60 % 60:02d}:{i % 60:02d} [serving_chat.py:{200 + i % 97}] "
            f"error in request chatcmpl-{i:06x}: {body}"
        )
    return "\n".join([*lines, OOM_TAIL]) + "\n"

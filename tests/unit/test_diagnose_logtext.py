"""One logger-prefix grammar: what ``content`` strips and the level ``level_of`` reads."""

from __future__ import annotations

import pytest

from bringup.diagnose.logtext import content, level_of, prefix_of


@pytest.mark.parametrize(
    ("line", "level", "message"),
    [
        ("ERROR 08-11 10:45:36 [core.py:708] EngineCore failed", "error", "EngineCore failed"),
        ("(VllmWorker pid=12) WARNING 08-11 10:45:36 [x.py:1] slow", "warning", "slow"),
        ("[2025-06-23 15:07:01 TP6] ERROR Scheduler hit", "error", "Scheduler hit"),
        ("[56285] 0.54.236.075 E llama_init: failed", "error", "llama_init: failed"),
        ("W llama_model_loader: odd key", "warning", "llama_model_loader: odd key"),
        ("2024-05-01T01:17:12.123Z  WARN shard-manager: low", "warning", "low"),
        ('time=2024 level=ERROR source=x.go:1 msg="boom"', "error", None),
        ("E0123 12:34:56.789 1 x.cc:1] bad", "error", "bad"),
        ("ERROR:    Exception in ASGI application", "error", None),
        (
            "RuntimeError: CUDA error: out of memory",
            None,
            "RuntimeError: CUDA error: out of memory",
        ),
    ],
)
def test_prefix_grammar(line: str, level: str | None, message: str | None) -> None:
    assert level_of(line) == level
    assert content(line) == (message if message is not None else line)


@pytest.mark.parametrize(
    ("line", "prefix"),
    [
        ("(APIServer pid=1886)   Value error, Failed to import Ray", "(APIServer pid=1886)"),
        (
            "(EngineCore pid=1851) ERROR 12-03 17:49:16 [core.py:1330] ValueError: x",
            "(EngineCore pid=1851) ERROR 12-03 17:49:16 [core.py:1330]",
        ),
        ("  Input should be greater than or equal to 1", ""),
        ("", ""),
    ],
)
def test_prefix_is_what_the_logger_wrote_before_the_message(line: str, prefix: str) -> None:
    assert prefix_of(line) == prefix

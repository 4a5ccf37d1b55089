"""trtllm-serve's help, reconstructed from source (no flag changes recorded yet).

``help/trtllm-serve-00209af-options-from-source.txt`` was not captured: it lays out the
click options of ``trtllm-serve serve`` as declared in ``tensorrt_llm/commands/serve.py``
at commit 00209af, the way click prints them (the file's header says so).
"""

from __future__ import annotations

from bringup.engines.flagcheck import CapturedHelp

CAPTURED = CapturedHelp(
    "bringup.engines.trtllm",
    "trtllm-serve-00209af-options-from-source.txt",
    "commit 00209af",
    "click",
)

"""Ollama, known to diagnosis only: ``bringup diagnose --engine ollama`` reads its logs.

bringup does not launch Ollama (run it through the ``command`` engine). Ollama embeds
llama.cpp, so it lives in llama.cpp's folder and its logs are read with llama.cpp's rules
and patterns after its own.
"""

from __future__ import annotations

from typing import Any

from bringup.engines.base import EngineAdapter
from bringup.engines.llamacpp import logs as llamacpp_logs
from bringup.engines.llamacpp import ollama_rules
from bringup.engines.llamacpp import rules as llamacpp_rules
from bringup.engines.registry import hookimpl

FATAL = (
    r"llama runner process has terminated",
    r"error loading llama server",
    r"^panic: ",
    r"level=ERROR .*msg=\"error loading",
    *llamacpp_logs.FATAL[:2],  # "exiting due to", "<func>: error: "
)


class OllamaLogs(EngineAdapter):
    name = "ollama"
    display = "Ollama"
    launchable = False
    rules = (ollama_rules.RULES, llamacpp_rules.RULES)
    fatal_patterns = FATAL

    def read_chosen(self, lines: list[str], found: dict[str, str]) -> None:
        llamacpp_logs.read_chosen(lines, found)


@hookimpl
def register_engines(register: Any) -> None:
    adapter: EngineAdapter = OllamaLogs()
    register(adapter)

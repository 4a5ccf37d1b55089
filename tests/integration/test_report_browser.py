"""The HTML report opened by a real browser (Debian's headless Chromium).

The page must render offline, show the winner, the matrix, both plots and every failure,
and show planted markup from a model output and a log line as text: no element of it
may exist in the DOM the browser built.
"""

from __future__ import annotations

import importlib.util
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType

import pytest

from bringup.report import load_report, write_html

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="chromium is not installed (apt-get install chromium)"
    ),
]


def _report_data() -> ModuleType:
    """The store builder of the unit tests, so both test the same planted data."""
    path = Path(__file__).parents[1] / "unit" / "test_report.py"
    spec = importlib.util.spec_from_file_location("report_store_data", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)


class _Dom(HTMLParser):
    """Tags the browser built, and the text of elements by class."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.texts: dict[str, list[str]] = {}
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        cls = dict(attrs).get("class") or ""
        if tag == "pre":
            self._open.append(cls)
            self.texts.setdefault(cls, []).append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        if self._open:
            self.texts[self._open[-1]][-1] += data


def test_browser_shows_report_and_markup_as_text(tmp_path: Path) -> None:
    data = _report_data()
    store, _ = data.build_store(tmp_path / "bringup.db")
    page = write_html(load_report(store), tmp_path / "report.html")

    dom_text = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    dom = _Dom()
    dom.feed(dom_text)
    assert "script" not in dom.tags and "img" not in dom.tags and "b" not in dom.tags
    assert dom.texts["output"] == [data.MODEL_OUTPUT]  # shown exactly as the model wrote it
    assert data.LOG_LINE in dom.texts["evidence"]
    assert dom.tags.count("svg") == 2
    assert "Winner: t002" in dom_text and "invalid_config" in dom_text
    assert data.API_KEY not in dom_text

    shot = tmp_path / "report.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000

"""Fixtures for the tmux driver: a private tmux server per test, reaped afterwards."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from app.tmux.driver import TmuxDriver
from tests.plugin.tmux import NewTmuxServer

RECORDER = """\
import json, sys
with open(sys.argv[1], "a", encoding="utf-8") as handle:
    handle.write(json.dumps(sys.argv[2:]) + "\\n")
"""


@pytest.fixture
def driver(private_tmux: NewTmuxServer) -> TmuxDriver:
    """A driver on its own tmux socket; the server is killed however the test ends."""
    return TmuxDriver(socket_name=private_tmux())


@pytest.fixture
def publish_log(tmp_path: Path) -> tuple[str, Path]:
    """A stand-in for `orchestrate publish` that appends its argv as a JSON line to a file."""
    script = tmp_path / "record_publish.py"
    script.write_text(RECORDER, encoding="utf-8")
    log = tmp_path / "published.jsonl"
    return shlex.join([sys.executable, str(script), str(log)]), log

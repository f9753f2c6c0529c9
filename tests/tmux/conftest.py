"""Fixtures for the tmux driver: a private tmux server per test, reaped afterwards."""

from __future__ import annotations

import os
import shlex
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.tmux.driver import TmuxDriver

RECORDER = """\
import json, sys
with open(sys.argv[1], "a", encoding="utf-8") as handle:
    handle.write(json.dumps(sys.argv[2:]) + "\\n")
"""


@pytest.fixture
def driver() -> Iterator[TmuxDriver]:
    """A driver on its own tmux socket; the server is killed however the test ends."""
    tmux = TmuxDriver(socket_name=f"orch_test_{uuid.uuid4().hex[:10]}")
    try:
        yield tmux
    finally:
        socket_path = _socket_path(tmux)
        # not server.kill(): it raises if the server exits on its own meanwhile
        tmux.server.cmd("kill-server")
        socket_path.unlink(missing_ok=True)  # tmux leaves the socket file behind


def _socket_path(tmux: TmuxDriver) -> Path:
    """Where tmux puts a -L socket (it may already be gone with its server)."""
    base = Path(os.environ.get("TMUX_TMPDIR") or "/tmp")
    return base / f"tmux-{os.getuid()}" / tmux.socket_name


@pytest.fixture
def publish_log(tmp_path: Path) -> tuple[str, Path]:
    """A stand-in for `orchestrate publish` that appends its argv as a JSON line to a file."""
    script = tmp_path / "record_publish.py"
    script.write_text(RECORDER, encoding="utf-8")
    log = tmp_path / "published.jsonl"
    return shlex.join([sys.executable, str(script), str(log)]), log

"""A private tmux server per test (``tmux -L NAME``), reaped however the test ends.

As libtmux's own pytest plugin does, every server gets a fresh socket name and a
finalizer: a test never sees the user's tmux, nor another test's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

NewTmuxServer = Callable[..., str]


def tmux_socket_path(name: str) -> Path:
    """Where tmux puts a ``-L`` socket (it may already be gone with its server)."""
    base = Path(os.environ.get("TMUX_TMPDIR") or "/tmp")
    return base / f"tmux-{os.getuid()}" / name


def reap_tmux_server(name: str, tmux: str | None = None) -> None:
    """Kill the server on socket ``name`` if it runs and remove the socket file tmux
    leaves behind. Never raises: the server may have exited on its own meanwhile."""
    binary = tmux or shutil.which("tmux") or "tmux"
    subprocess.run([binary, "-L", name, "kill-server"], capture_output=True, check=False)
    tmux_socket_path(name).unlink(missing_ok=True)


@pytest.fixture
def private_tmux() -> Iterator[NewTmuxServer]:
    """``private_tmux("orch-outer")``: a fresh socket name for a tmux server of this
    test's own (a person's terminal, a second server), reaped after the test."""
    tmux = shutil.which("tmux") or "tmux"  # resolved now: a test may empty PATH
    names: list[str] = []

    def new(prefix: str = "orch_test") -> str:
        names.append(f"{prefix}_{uuid.uuid4().hex[:10]}")
        return names[-1]

    try:
        yield new
    finally:
        for name in names:
            reap_tmux_server(name, tmux)


@pytest.fixture
def tmux_socket(private_tmux: NewTmuxServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """orchestrate's tmux socket for this test, exported as ORCHESTRATE_TMUX_SOCKET so
    CLI subprocesses and panes use it too; its server is reaped after the test."""
    name = private_tmux()
    monkeypatch.setenv("ORCHESTRATE_TMUX_SOCKET", name)
    return name

"""Fixtures for the control room: a private tmux server, a state dir, an Orchestrator."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.settings import Settings
from app.tmux.driver import TmuxDriver

PYTHON = sys.executable


def demo_cmd(*flags: str) -> list[str]:
    """The demo agent, fast (0.05 s steps), with extra flags; the prompt comes as a path."""
    return [PYTHON, "-m", "app.agents.demo_cli", "--steps", "2", "--delay", "0.05", *flags]


def demo_cmd_text(*flags: str) -> str:
    """`demo_cmd` as the shell-like string `--agent-cmd` takes."""
    return " ".join([*demo_cmd(*flags), "{prompt_file}"])


@pytest.fixture
def tmux_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A private tmux socket for this test (also for CLI subprocesses); its server is reaped."""
    name = f"orch_test_{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("ORCHESTRATE_TMUX_SOCKET", name)
    try:
        yield name
    finally:
        TmuxDriver(name).server.cmd("kill-server")
        base = Path(os.environ.get("TMUX_TMPDIR") or "/tmp")
        (base / f"tmux-{os.getuid()}" / name).unlink(missing_ok=True)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The agents' and the CLI's working directory (so stray files would show up here)."""
    directory = tmp_path / "work"
    directory.mkdir()
    monkeypatch.chdir(directory)
    return directory


@pytest.fixture
def orch(state_dir: Path, tmux_socket: str, workdir: Path) -> Orchestrator:
    """An Orchestrator on this test's state dir and tmux server."""
    return Orchestrator(Settings(state_dir=state_dir), tmux_socket=tmux_socket)

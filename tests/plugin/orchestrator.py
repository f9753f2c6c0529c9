"""An Orchestrator on the test's own state dir, tmux server and working directory, for
every tier that runs jobs through orchestrate itself (control, supervision, agents, review)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported when a test asks for one: tiers without tmux load none of it
    from app.control import Orchestrator


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
    from app.control import Orchestrator
    from app.settings import Settings

    return Orchestrator(Settings(state_dir=state_dir), tmux_socket=tmux_socket)

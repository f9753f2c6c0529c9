"""Fixtures for the review tests: hermetic git (no user or system config), a repo, settings."""

from __future__ import annotations

import os
import shlex
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # importlib mode: make git_repos importable

from git_repos import make_repo

from app.settings import Settings
from app.tmux.driver import TmuxDriver


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git sees this test's identity and clock only: never ~/.gitconfig or /etc/gitconfig."""
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Test User\n\temail = test@example.com\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(name, "2025-01-15T12:00:00+00:00")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "repo",
        {
            "README.md": "hello\n",
            "src/app.py": "def main():\n    return 1\n",
            ".gitignore": ".agent-inbox\n",
        },
    )


@pytest.fixture
def settings(state_dir: Path) -> Settings:
    return Settings(state_dir=state_dir)


@pytest.fixture
def tmux_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A private tmux socket for this test (CLI subprocesses too); its server is reaped."""
    name = f"orch_test_{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("ORCHESTRATE_TMUX_SOCKET", name)
    try:
        yield name
    finally:
        TmuxDriver(name).server.cmd("kill-server")
        base = Path(os.environ.get("TMUX_TMPDIR") or "/tmp")
        (base / f"tmux-{os.getuid()}" / name).unlink(missing_ok=True)


@pytest.fixture
def agent_cmd() -> str:
    """`--agent-cmd` for the fake agent (the prompt as a path, so its stdin is the pane)."""
    return shlex.join([sys.executable, str(Path(__file__).parent / "fake_agent.py")]) + (
        " {prompt_file}"
    )

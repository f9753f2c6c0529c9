"""Fixtures for the review tests: hermetic git (no user or system config), a repo, settings."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from app.settings import Settings
from tests.review.git_repos import make_repo


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
def agent_cmd() -> str:
    """`--agent-cmd` for the fake agent (the prompt as a path, so its stdin is the pane)."""
    return shlex.join([sys.executable, str(Path(__file__).parent / "fake_agent.py")]) + (
        " {prompt_file}"
    )


@pytest.fixture
def rounds_agent(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of an agents.toml agent (the fake agent with --rounds) that works, then
    waits at its `fake> ` prompt for more: done when idle, after a short grace. The
    background supervisor is on, as for a user: it sees each round end."""
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "0.3")
    monkeypatch.setenv("ORCHESTRATE_SUPERVISOR", "on")
    command = [sys.executable, str(Path(__file__).parent / "fake_agent.py")]
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "agents.toml").write_text(
        "[agents.fakebot]\n"
        f"command = [{command[0]!r}, {command[1]!r}, '{{prompt_file}}', '--rounds']\n"
        'done_when = "idle"\n'
        "[[agents.fakebot.rules]]\n"
        'name = "ready"\n'
        'activity = "idle"\n'
        "pattern = '^fake> ?$'\n",
        encoding="utf-8",
    )
    return "fakebot"

"""Fixtures for the review tests: hermetic git (no user or system config), a repo, settings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # importlib mode: make git_repos importable

from git_repos import make_repo

from app.settings import Settings


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
        {"README.md": "hello\n", "src/app.py": "def main():\n    return 1\n"},
    )


@pytest.fixture
def settings(state_dir: Path) -> Settings:
    return Settings(state_dir=state_dir)

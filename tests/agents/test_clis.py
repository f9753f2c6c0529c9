"""A missing agent CLI is named with its pinned version; tests skip for it, except under CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents import clis


def test_missing_names_every_agent_not_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clis, "AGENT_BIN", tmp_path)
    target = tmp_path / "claude-real"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o755)
    (tmp_path / "claude").symlink_to(target)  # executable, but not the pinned version

    reasons = clis.missing()

    assert sorted(reasons) == ["aider", "claude", "codex", "gemini", "qwen"]
    assert "@openai/codex@0.169.0" in reasons["codex"]
    assert "is not @anthropic-ai/claude-code@2.1.197" in reasons["claude"]


def test_require_skips_locally_and_fails_under_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clis, "AGENT_BIN", tmp_path)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="gemini"):
        clis.require("gemini")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="gemini"):
        clis.require("gemini")
    monkeypatch.setenv("CI", "false")  # a person saying "not CI": a skip, as locally
    with pytest.raises(pytest.skip.Exception, match="gemini"):
        clis.require("gemini")


def test_the_latest_set_takes_whatever_version_is_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ORCHESTRATE_AGENT_SET=latest: no pinned version is required, a missing CLI still is."""
    monkeypatch.setattr(clis, "AGENT_BIN", tmp_path)
    monkeypatch.setattr(clis, "AGENT_SET", "latest")
    target = tmp_path / "claude-code@2.1.332" / "claude"
    target.parent.mkdir()
    target.write_text("#!/bin/sh\n")
    target.chmod(0o755)
    (tmp_path / "claude").symlink_to(target)

    assert clis.cli_path("claude") == tmp_path / "claude"
    reasons = clis.missing()
    assert sorted(reasons) == ["aider", "codex", "gemini", "qwen"]
    assert "scripts/setup-agents --latest" in reasons["codex"]

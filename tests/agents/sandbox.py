"""A fresh, offline config per test for each real agent CLI, pointed at a fake model server.

The configs themselves are the product's (app/selftest/offline.py, which
`doctor --self-test` uses too); here each agent is the one of the set the tests drive
(tests/agents/clis.py), under ``root`` (a tmp_path).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.selftest import offline
from app.selftest.offline import FAKE_KEY, FAKE_MODEL, GEMINI_OFFLINE_SETTINGS, AgentRun, base_env
from tests.agents.clis import cli_path

__all__ = ["FAKE_KEY", "FAKE_MODEL", "GEMINI_OFFLINE_SETTINGS", "AgentRun", "base_env"]


CLAUDE_ASK_ME: dict[str, Any] = {"permissions": {"defaultMode": "default"}}
"""A user's own Claude settings that keep permission dialogs (2.1.197 asks by default)."""


def claude(
    root: Path, workdir: Path, base_url: str, settings: Mapping[str, Any] | None = None
) -> AgentRun:
    """Claude Code offline (see app/selftest/offline.py); ``settings`` go in ``--settings``.
    The user asks to be asked: from 2.1.332 auto mode is the default and answers (or
    blocks) on its own, so no dialog would come (test_claude_latest.py drives auto mode)."""
    return offline.claude(
        str(cli_path("claude")), root, workdir, base_url, settings, user_settings=CLAUDE_ASK_ME
    )


def codex(root: Path, workdir: Path, base_url: str, extra_config: str = "") -> AgentRun:
    """Codex offline; ``extra_config`` is appended TOML (e.g. hooks)."""
    return offline.codex(str(cli_path("codex")), root, workdir, base_url, extra_config)


def gemini(
    root: Path, workdir: Path, base_url: str, settings: Mapping[str, Any] | None = None
) -> AgentRun:
    """Gemini CLI offline; ``settings`` are merged on top of its offline settings."""
    return offline.gemini(str(cli_path("gemini")), root, workdir, base_url, settings)


def aider(root: Path, workdir: Path, base_url: str) -> AgentRun:
    """Aider offline, against an OpenAI-compatible fake model."""
    return offline.aider(str(cli_path("aider")), root, workdir, base_url)


def qwen(root: Path, workdir: Path, base_url: str) -> AgentRun:
    """Qwen Code offline, against an OpenAI-compatible fake model with function calling."""
    return offline.qwen(str(cli_path("qwen")), root, workdir, base_url)

"""Per built-in agent kind: which scripted model speaks its wire API, and how its
throwaway offline config is built around a given executable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.selftest import offline
from app.selftest.models.anthropic import AnthropicMessages
from app.selftest.models.gemini import GeminiApi
from app.selftest.models.openai_chat import OpenAIChat
from app.selftest.models.openai_responses import OpenAIResponses
from app.selftest.models.openai_tools import OpenAIChatTools
from app.selftest.models.server import WireApi
from app.selftest.offline import AgentRun

CLAUDE_USER_SETTINGS = {"permissions": {"defaultMode": "default"}}
"""Claude Code 2.1.332 starts in auto mode, which answers its own dialogs: the
self-test's throwaway settings ask for the dialog, which is what it checks."""


@dataclass(frozen=True)
class Wiring:
    """How to run one agent kind offline: its model's API and its config."""

    api: Callable[[], WireApi]
    config: Callable[[str, Path, Path, str], AgentRun]
    """(executable, root, workdir, model base URL) -> how to start it."""


def _claude(executable: str, root: Path, workdir: Path, base_url: str) -> AgentRun:
    return offline.claude(executable, root, workdir, base_url, user_settings=CLAUDE_USER_SETTINGS)


def _codex(executable: str, root: Path, workdir: Path, base_url: str) -> AgentRun:
    return offline.codex(executable, root, workdir, base_url)


def _gemini(executable: str, root: Path, workdir: Path, base_url: str) -> AgentRun:
    return offline.gemini(executable, root, workdir, base_url)


WIRINGS: dict[str, Wiring] = {
    "claude": Wiring(AnthropicMessages, _claude),
    "codex": Wiring(OpenAIResponses, _codex),
    "gemini": Wiring(GeminiApi, _gemini),
    "aider": Wiring(OpenAIChat, offline.aider),
    "qwen": Wiring(OpenAIChatTools, offline.qwen),
}
"""The agent kinds a self-test can drive (the built-in ones with a real CLI)."""

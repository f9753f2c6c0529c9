"""Per agent: its fake model's wire, its sandbox, and how its dialog and idle prompt look."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.selftest.models.anthropic import AnthropicMessages
from app.selftest.models.gemini import GeminiApi
from app.selftest.models.openai_chat import OpenAIChat
from app.selftest.models.openai_responses import OpenAIResponses
from app.selftest.models.openai_tools import OpenAIChatTools
from app.selftest.models.server import WireApi
from tests.agents import sandbox
from tests.agents.sandbox import AgentRun
from tests.agents.tmux_pane import AgentPane

AIDER_PROMPT = re.compile(r"^(\w+)?> ?$")
"""Aider's idle prompt: ``> `` or ``diff> `` (the edit format) alone on the last line."""


def _claude_idle(screen: str) -> bool:
    return "? for shortcuts" in screen and "esc to interrupt" not in screen


def _codex_idle(screen: str) -> bool:
    # "\u203a" (a right angle quote) marks Codex's input line
    return "\u203a Ask Codex to do anything" in screen and "esc to interrupt" not in screen


def _gemini_idle(screen: str) -> bool:
    return "Type your message" in screen and "esc to cancel" not in screen


def _qwen_idle(screen: str) -> bool:
    return "Type your message" in screen and "esc to cancel" not in screen


def _aider_idle(screen: str) -> bool:
    lines = [line for line in screen.splitlines() if line.strip()]
    return bool(lines) and AIDER_PROMPT.match(lines[-1].strip()) is not None


@dataclass(frozen=True)
class AgentCase:
    """What a test needs to know to drive one real agent through a permission dialog."""

    name: str
    api: Callable[[], WireApi]
    sandbox: Callable[[Path, Path, str], AgentRun]
    dialog: str
    """Text its shell-command dialog shows (Aider's stays in the scrollback once answered)."""
    yes: tuple[str, ...]
    no: tuple[str, ...]
    always: tuple[str, ...]
    idle: Callable[[str], bool]
    needs_git_repo: bool = False
    dialog_stays_on_screen: bool = False
    """Aider's question stays in its scrollback once answered: no way to see the answer land."""

    def start(self, run: AgentRun, workdir: Path, task: str, raw_log: Path | None) -> AgentPane:
        """Start the agent in a private tmux pane with TASK: as one argv word, or pasted once
        the agent's prompt is up when it takes none in argv."""
        if self.needs_git_repo:
            subprocess.run(["git", "init", "-q", str(workdir)], env=run.env, check=True)
        if run.prompt_flag is not None:
            return AgentPane(run.command(task), run.env, workdir, raw_log=raw_log).start()
        pane = AgentPane(run.command(), run.env, workdir, raw_log=raw_log).start()
        try:
            pane.wait_until(self.idle, 45, f"{self.name}'s prompt")
            pane.paste(task)
        except BaseException:
            pane.__exit__(None, None, None)
            raise
        return pane

    def answer(self, pane: AgentPane, keys: tuple[str, ...], tries: int = 3) -> int:
        """Send an answer and confirm it landed (the dialog left the screen); send it again
        if not. Codex drops a key that comes within a few ms of its dialog's first frame
        (1 run in 5-10 here), so the first key alone is not proof. Returns the sends used."""
        for attempt in range(1, tries + 1):
            pane.send_keys(*keys)
            if self.dialog_stays_on_screen:
                return attempt
            try:
                pane.wait_until(lambda screen: self.dialog not in screen, 1.0, "dialog gone")
                return attempt
            except AssertionError:
                continue
        raise AssertionError(f"{self.name} ignored {keys} {tries} times; screen:\n{pane.screen()}")


AGENTS: dict[str, AgentCase] = {
    "claude": AgentCase(
        name="claude",
        api=AnthropicMessages,
        sandbox=sandbox.claude,
        dialog="Do you want to proceed?",
        yes=("1",),
        no=("Escape",),
        always=("2",),
        idle=_claude_idle,
    ),
    "codex": AgentCase(
        name="codex",
        api=OpenAIResponses,
        sandbox=sandbox.codex,
        dialog="Would you like to run the following command?",
        yes=("y",),
        no=("Escape",),
        always=("p",),
        idle=_codex_idle,
    ),
    "gemini": AgentCase(
        name="gemini",
        api=GeminiApi,
        sandbox=sandbox.gemini,
        dialog="Allow execution of [Shell]?",
        yes=("1",),
        no=("Escape",),
        always=("2",),
        idle=_gemini_idle,
    ),
    "aider": AgentCase(
        name="aider",
        api=OpenAIChat,
        sandbox=sandbox.aider,
        dialog="Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:",
        yes=("y", "Enter"),
        no=("n", "Enter"),
        always=("d", "Enter"),
        idle=_aider_idle,
        needs_git_repo=True,
        dialog_stays_on_screen=True,
    ),
    "qwen": AgentCase(
        name="qwen",
        api=OpenAIChatTools,
        sandbox=sandbox.qwen,
        dialog="Allow execution of: 'touch'?",
        yes=("1",),
        no=("Escape",),
        always=("2",),
        idle=_qwen_idle,
    ),
}

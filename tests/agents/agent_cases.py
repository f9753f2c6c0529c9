"""Per agent: its fake model's wire, its sandbox, and how its dialog and idle prompt look."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.agents.claude import Claude
from app.approvals.dialog import read_dialog
from app.approvals.meaning import NO_WORDS, AnswerWords, meaning_of
from app.approvals.selection import answer_by_meaning
from app.selftest.models.anthropic import AnthropicMessages
from app.selftest.models.gemini import GeminiApi
from app.selftest.models.openai_chat import OpenAIChat
from app.selftest.models.openai_responses import OpenAIResponses
from app.selftest.models.openai_tools import OpenAIChatTools
from app.selftest.models.server import WireApi
from registry.vocabulary import Answer
from tests.agents import sandbox
from tests.agents.sandbox import AgentRun
from tests.agents.tmux_pane import AgentPane

RESEND_SEC = 3.0
"""How long an answered dialog may take to go before its key is sent again (1 s was
too short for Claude Code at a load of 14 on 2 cores)."""
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
    offer: str = ""
    """A question the agent may ask once a turn is over, about itself rather than the task
    (Claude Code 2.1.332: "Make auto mode your default permission mode?")."""
    offer_words: AnswerWords = field(default_factory=lambda: NO_WORDS)
    """How its offer's options are read, to decline it by meaning (the product's own path:
    its marker moved to the "no" option and checked there before Enter). Escape was
    not reliable: once it dismissed the offer, once it only moved the marker to No."""

    def wait_until_idle(self, pane: AgentPane, timeout: float, what: str) -> str:
        """The screen once the agent is idle at its prompt, its offer (if it made one)
        declined first: the offer covers the prompt until it is answered."""

        def idle_or_offer(screen: str) -> bool:
            return self.idle(screen) or bool(self.offer and self.offer in screen)

        screen = pane.wait_until(idle_or_offer, timeout, what)
        if self.offer and self.offer in screen and not self.idle(screen):
            answer_by_meaning(
                lambda: pane.screen().splitlines(),
                lambda names: pane.send_keys(*names),
                Answer.NO,
                self.offer_words,
            )
            try:
                return pane.wait_until(self.idle, RESEND_SEC, f"{what}, the offer declined")
            except AssertionError:  # an Enter right after the arrow can be dropped (as
                pass  # keys.py's resend): sent again only with the marker on the "no"
            dialog = read_dialog(pane.screen().splitlines())
            assert dialog is not None and meaning_of(dialog.marked, self.offer_words) == Answer.NO
            pane.send_keys("Enter")
            screen = pane.wait_until(self.idle, timeout, f"{what}, the offer declined")
        return screen

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
        (1 run in 5-10 here), so the first key alone is not proof; but a resend that comes
        after a slow redraw is typed into what follows (Claude Code 2.1.332's offer, then
        its prompt: a stray "1"), hence RESEND_SEC. Returns the sends used."""
        for attempt in range(1, tries + 1):
            pane.send_keys(*keys)
            if self.dialog_stays_on_screen:
                return attempt
            try:
                pane.wait_until(lambda screen: self.dialog not in screen, RESEND_SEC, "dialog gone")
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
        offer="Make auto mode your default permission mode?",
        offer_words=Claude.answer_words,
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

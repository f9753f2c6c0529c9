"""What every agent adapter knows: how to start, resume, answer and stop its agent,
and where its activity comes from.

An adapter is plain data plus a few methods, so that `orchestrate hook` (which
runs on the agent's critical path) can load one without tmux, Textual or click.
Each agent kind lives in its own module; `app.agents` finds them by name.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from app.agents.screen import ScreenRule
from app.agents.versions import TestedVersions
from registry.activity import Observation
from registry.vocabulary import Answer

PromptDelivery = Literal["argv", "paste", "file"]
DoneWhen = Literal["exit", "idle"]

PROMPT_WORD = "{prompt}"
"""An argv word the pane runner replaces by the prompt text itself (one word, no shell)."""
APP_SERVER = "codex_app_server"
"""A launch plan's ``extra`` entry for a companion app-server (argv, socket, log,
fallback_argv), which the pane runner runs beside the agent."""
PROMPT_FILE_WORD = "{prompt_file}"
"""An argv word the pane runner replaces by the path of the file holding the prompt."""


@dataclass(frozen=True)
class Keys:
    """tmux key names an adapter sends. Answers are sent only while the dialog is on
    screen: Enter or stray text means yes in three of the four real agents."""

    yes: tuple[str, ...] = ("y", "Enter")
    no: tuple[str, ...] = ("n", "Enter")
    always: tuple[str, ...] = ()
    interrupt: tuple[str, ...] = ("Escape",)
    exit: tuple[str, ...] = ("C-c",)

    def answer(self, answer: Answer) -> tuple[str, ...]:
        """The keys for an answer; empty when the agent has no such choice (which
        answers an agent takes is app/approvals/question.py's, from these)."""
        return {Answer.YES: self.yes, Answer.NO: self.no, Answer.ALWAYS: self.always}[answer]


NUMBERED_MENU = Keys(
    yes=("1",), no=("Escape",), always=("2",), interrupt=("Escape",), exit=("C-c", "C-c")
)
"""Claude Code's and Gemini CLI's dialogs: 1 allows once, 2 for the session or project,
Esc is "no" wherever it sits; C-c twice exits."""


@dataclass(frozen=True)
class LaunchContext:
    """What an adapter needs to build the command line of one job's agent."""

    job_id: str
    job_dir: Path
    workdir: Path
    hook_command: str
    """The shell command an agent's hook runs (``'/path/orchestrate' hook``); the
    adapter appends its kind. Hook commands are run by the agent through a shell,
    so this is shlex-quoted and holds no agent text."""
    agent_session_id: str | None = None
    approvals: Literal["agent", "control-room"] = "agent"
    approval_wait_sec: float = 120.0
    env: Mapping[str, str] = field(default_factory=dict)
    """The submitter's environment (where the agent's own config lives)."""


@dataclass(frozen=True)
class LaunchPlan:
    """How to run the agent: argv (with ``{prompt}``/``{prompt_file}`` words), extra
    environment, and how the prompt gets in."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    deliver: PromptDelivery = "argv"
    agent_session_id: str | None = None
    prompt: str | None = None
    """The text to give instead of the job's prompt (a resume says "continue")."""
    extra: dict[str, Any] = field(default_factory=dict)
    """For the pane runner: a companion process to run beside the agent (Codex's own
    app-server, see app/agents/codex_bridge.py)."""


CONTINUE_PROMPT = (
    "You were interrupted (your terminal closed). Continue the task where you left off."
)


@dataclass(frozen=True)
class HookReading:
    """What one hook call tells: an activity, and maybe the agent's own session id."""

    observation: Observation | None = None
    agent_session_id: str | None = None
    wants_decision: bool = False
    """The hook may return a decision (Claude's PreToolUse/PermissionRequest under
    ``--approvals control-room``)."""


class AgentAdapter:
    """Defaults for an agent kind; subclasses in app/agents/<kind>.py override them."""

    kind: str = "generic"
    aliases: tuple[str, ...] = ()
    display_name: str = "agent"
    executable: str = ""
    deliver: PromptDelivery = "argv"
    done_when: DoneWhen = "exit"
    keys: Keys = Keys()
    screen_rules: tuple[ScreenRule, ...] = ()
    selection_list: bool = False
    """Its dialogs are lists with a selection marker: an answer moves the marker to
    the option that means it, checks it there, then confirms (app/approvals/meaning.py)
    instead of typing ``keys``, whose meaning changes with the options on screen."""
    answer_words: Mapping[str, Answer | None] = MappingProxyType({})
    """Phrases of its options and what they mean, read before the generic words;
    None for an option orchestrate never chooses."""
    tested_versions: TestedVersions | None = None
    """The agent versions its keys, hooks and screen rules are tested on (pinned … the
    newest that passed CI's drift run); doctor and submit warn outside them."""
    reads_osc_status: bool = False
    """The agent writes ``OSC 7501;state=…`` into its output (Codex)."""
    has_hooks: bool = False
    """Hooks report its state; screen rules are then a slower cross-check."""
    resumable: bool = False
    gets_instructions: bool = False
    """The prompt is prefixed with how to report through `orchestrate publish`
    (only for agents with no better signal that may follow them)."""

    def start(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan:
        """The first start of the job's agent; ``argv`` is a user's own command, if any."""
        base = list(argv) if argv else [self.executable]
        if self.deliver == "argv" and PROMPT_WORD not in base and PROMPT_FILE_WORD not in base:
            base.append(PROMPT_WORD)
        return LaunchPlan(base, deliver=self.delivery_for(base))

    def resume(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan | None:
        """How to continue the job's conversation (None: the agent cannot; start afresh)."""
        return None

    def refuse_command(self, argv: Sequence[str] | None, env: Mapping[str, str]) -> str | None:
        """Why the job's command cannot start this agent (None: it may). Checked by
        submit and resume before anything is stored; the ACP kind checks its agent's."""
        return None

    def delivery_for(self, argv: Sequence[str]) -> PromptDelivery:
        """argv or file when the command line carries the prompt, else paste."""
        if PROMPT_WORD in argv:
            return "argv"
        if PROMPT_FILE_WORD in argv:
            return "file"
        return "paste"

    def read_hook(self, event: str, payload: Mapping[str, Any]) -> HookReading:
        """What a hook call of this agent says (nothing, by default)."""
        return HookReading()

    def about_the_task(self, payload: Mapping[str, Any], prompt: str) -> bool:
        """Whether a hook call is about the job's own conversation (Codex also notifies
        for a hidden title thread of its own)."""
        return True

    def decision_output(self, event: str, allow: bool, reason: str) -> str | None:
        """The hook's stdout that approves or denies a tool (None: the agent has none)."""
        return None

    def hook_command(self, ctx: LaunchContext) -> str:
        """The shell command this agent's hooks run."""
        return f"{ctx.hook_command} {shlex.quote(self.kind)}"


def text_of(value: object) -> str:
    """A payload field as text ('' when it is not one): hook payloads are untrusted."""
    return value if isinstance(value, str) else ""


def tool_command(tool_input: object) -> str:
    """The command or file a tool call is about, from its input object."""
    if not isinstance(tool_input, Mapping):
        return ""
    for key in ("command", "cmd", "file_path", "path", "url", "pattern"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return shlex.join(value)
    return ""

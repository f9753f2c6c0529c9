"""Gemini CLI: prompt with `-i`, state from its hooks (a per-job settings layer) and
its pane title, resume by its session id."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from app.agents.base import (
    CONTINUE_PROMPT,
    NUMBERED_MENU,
    PROMPT_WORD,
    AgentAdapter,
    HookReading,
    LaunchContext,
    LaunchPlan,
    text_of,
    tool_command,
)
from app.agents.screen import ScreenRule
from app.agents.settings_files import write_json
from app.agents.versions import TestedVersions
from registry.activity import AGENT_NAMES, Observation
from registry.vocabulary import Activity

HOME_ENV = "GEMINI_CLI_HOME"
HOOK_EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "Notification",
               "AfterAgent", "SessionEnd")  # fmt: skip
HOOK_TIMEOUT_MS = 5000
IDLE_PROMPT = r"Type your message or @path/to/file"
"""Its input box: shown when it waits for the person's next message, hidden by a dialog."""
TOOL_OF_KIND = {"exec": "Shell", "edit": "Edit"}
"""A ToolPermission's kind as its dialog names the tool ("Allow execution of [Shell]?")."""


def user_gemini_dir(env: Mapping[str, str]) -> Path:
    """Where the user's own Gemini CLI config is: $GEMINI_CLI_HOME/.gemini, else ~/.gemini."""
    base = env.get(HOME_ENV) or env.get("HOME") or str(Path.home())
    return Path(base).expanduser() / ".gemini"


def read_settings(path: Path) -> dict[str, Any]:
    """The user's settings.json (Gemini allows comments in it; a file we cannot read as
    JSON is left out rather than guessed at)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def link_entries(source: Path, target: Path, *, skip: set[str]) -> None:
    """Link every entry of the user's dir into the job's layer (they stay the user's)."""
    if not source.is_dir():
        return
    for entry in source.iterdir():
        if entry.name in skip:
            continue
        link = target / entry.name
        if link.is_symlink() or link.exists():
            continue
        with contextlib.suppress(OSError):
            link.symlink_to(entry)


def with_hooks(settings: dict[str, Any], command: str) -> dict[str, Any]:
    """The settings with orchestrate's hook added to each event it listens to."""
    hooks = settings.get("hooks")
    merged: dict[str, Any] = dict(hooks) if isinstance(hooks, dict) else {}
    for event in HOOK_EVENTS:
        handler = {"type": "command", "name": f"orchestrate-{event}", "command": command,
                   "timeout": HOOK_TIMEOUT_MS}  # fmt: skip
        group: dict[str, Any] = {"hooks": [handler]}
        if event in ("BeforeTool", "AfterTool"):
            group["matcher"] = "*"
        existing = merged.get(event)
        merged[event] = [*(existing if isinstance(existing, list) else []), group]
    return {**settings, "hooks": merged}


class Gemini(AgentAdapter):
    kind = "gemini"
    display_name = AGENT_NAMES["gemini"]
    executable = "gemini"
    deliver = "argv"
    done_when = "idle"
    has_hooks = True
    resumable = True
    keys = NUMBERED_MENU
    # Its dialogs are numbered lists in a box under a U+25CF marker: answered by meaning.
    selection_list = True
    # Never chosen: a permanent policy file, and trust for every sibling folder.
    answer_words = MappingProxyType({"for all future sessions": None, "trust parent folder": None})
    tested_versions = TestedVersions("0.61.0", "0.61.0")
    screen_rules = (
        ScreenRule(
            "gemini.approval",
            Activity.WAITING,
            r"(?P<question>Allow execution of \[(?P<tool>[^\]\n]+)\]\?|Apply this change\?"
            r"|Allow execution of: .+\?)",
            lines=30,
            details=(r"│ \? \S+\s+(?P<command>\S.*?)\s*│\s*$",),
            # its input box is hidden while the dialog is open: below the dialog, it
            # means an answered one (left in the scrollback by a redraw after a resize)
            gone_if_below=IDLE_PROMPT,
        ),
        ScreenRule(
            "gemini.setup",
            Activity.WAITING,
            r"(?P<question>Do you trust the files in this folder\?|How would you like to "
            r"authenticate for this project\?)",
            lines=40,
        ),
        ScreenRule("gemini.working", Activity.WORKING, r"\(esc to cancel|\(esc to\s*$", lines=10),
        ScreenRule("gemini.idle", Activity.IDLE, IDLE_PROMPT, lines=8),
    )

    def start(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan:
        """`gemini --session-id UUID -i PROMPT`, its hooks from a per-job settings file."""
        session_id = ctx.agent_session_id or str(uuid.uuid4())
        base = list(argv) if argv else [self.executable]
        return LaunchPlan(
            [*base, "--session-id", session_id, "-i", PROMPT_WORD],
            env=self.settings_env(ctx),
            agent_session_id=session_id,
        )

    def resume(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan | None:
        if not ctx.agent_session_id:
            return None
        base = list(argv) if argv else [self.executable]
        return LaunchPlan(
            [*base, "--resume", ctx.agent_session_id, "-i", PROMPT_WORD],
            env=self.settings_env(ctx),
            agent_session_id=ctx.agent_session_id,
            prompt=CONTINUE_PROMPT,
        )

    def settings_env(self, ctx: LaunchContext) -> dict[str, str]:
        """A per-job GEMINI_CLI_HOME layered over the user's own: its settings.json is
        the user's with the job's hooks added to theirs, and every other entry of their
        ~/.gemini (credentials, chats, history) is linked in. (Gemini's system-settings
        file would be simpler, but it is ignored unless root owns it.)"""
        user = user_gemini_dir(ctx.env)
        home = ctx.job_dir / "gemini-home"
        layer = home / ".gemini"
        layer.mkdir(parents=True, exist_ok=True)
        link_entries(user, layer, skip={"settings.json"})
        settings = read_settings(user / "settings.json")
        write_json(layer / "settings.json", with_hooks(settings, self.hook_command(ctx)))
        return {HOME_ENV: str(home)}

    def read_hook(self, event: str, payload: Mapping[str, Any]) -> HookReading:
        session_id = text_of(payload.get("session_id")) or None
        source = f"hook:gemini:{event}"
        observation: Observation | None = None
        if event in ("BeforeAgent", "BeforeTool", "AfterTool"):
            tool = text_of(payload.get("tool_name"))
            command = tool_command(payload.get("tool_input"))
            observation = Observation(Activity.WORKING, source, tool=tool, command=command)
        elif event == "Notification" and payload.get("notification_type") == "ToolPermission":
            details = payload.get("details")
            details = details if isinstance(details, Mapping) else {}
            question = text_of(payload.get("message")) or text_of(details.get("title"))
            observation = Observation(
                Activity.WAITING,
                f"{source}:ToolPermission",
                question=question,
                tool=TOOL_OF_KIND.get(text_of(details.get("type")))
                or text_of(details.get("rootCommand")),
                command=text_of(details.get("command")) or tool_command(details),
            )
        elif event == "AfterAgent":
            observation = Observation(Activity.IDLE, source)
        elif event == "SessionEnd":
            observation = Observation(Activity.EXITED, source)
        return HookReading(observation, session_id)

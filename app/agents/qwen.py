"""Qwen Code (Gemini CLI's lineage, Claude Code's hooks): prompt with `-i`, state from
its hooks (a per-job QWEN_HOME layer), resume by its session id; screen rules as the
cross-check and the fallback.

Measured on 0.24.4 (AGENTS.md "Qwen Code"): its hooks are Claude Code's events and
payloads (PermissionRequest exactly when the dialog shows, with the tool input), but
"no" at its dialog ends the turn with no Stop: the idle_prompt Notification, sent at
once, is the only hook that says so.
"""

from __future__ import annotations

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
from app.agents.claude import Claude
from app.agents.gemini import IDLE_PROMPT, link_entries, read_settings
from app.agents.screen import ScreenRule
from app.agents.settings_files import write_json
from app.agents.versions import TestedVersions
from registry.activity import AGENT_NAMES, Observation
from registry.vocabulary import Activity

HOME_ENV = "QWEN_HOME"
"""Qwen's config dir itself (not its parent, unlike GEMINI_CLI_HOME)."""
HOOK_ACTIVITY: dict[str, str] = {
    "UserPromptSubmit": Activity.WORKING,
    "PreToolUse": Activity.WORKING,
    "PermissionRequest": Activity.WAITING,
    "PostToolUse": Activity.WORKING,
    "Notification": Activity.IDLE,  # only idle_prompt is read (NOTIFICATION_IDLE)
    "Stop": Activity.IDLE,
    "SessionEnd": Activity.EXITED,
}
TOOL_EVENTS = ("PreToolUse", "PermissionRequest", "PostToolUse")
HOOK_EVENTS = ("UserPromptSubmit", "PermissionRequest", "PreToolUse", "Notification", "Stop",
               "SessionEnd")  # fmt: skip
"""The events orchestrate's hook is registered for. Each is a process on the agent's
path (Qwen waits for it): SessionStart (the id is chosen at start anyway) and PostToolUse
(PreToolUse already said working) are read if a user's own setup sends them, not asked for."""
NOTIFICATION_IDLE = "idle_prompt"
INPUT_BOX = r"^─{20,}\n> [^\n]*\n─{20,}$"
"""Its input box between its two rules, whatever it holds (working is read first)."""
"""Sent at once when the prompt is back (after Stop, and alone after a "no");
permission_prompt repeats what PermissionRequest said 40 ms earlier."""
HOOK_TIMEOUT_SEC = 5
"""Seconds: Qwen reads a hook timeout in seconds (a large value as legacy milliseconds)."""
TOOL_NAMES = MappingProxyType({"run_shell_command": "Shell", "edit": "Edit",
                               "write_file": "WriteFile"})  # fmt: skip
"""Its tool ids as its dialog names them ("? Shell touch done.txt")."""


def user_qwen_dir(env: Mapping[str, str]) -> Path:
    """Where the user's own Qwen Code config is: $QWEN_HOME, else ~/.qwen."""
    if env.get(HOME_ENV):
        return Path(env[HOME_ENV]).expanduser()
    return Path(env.get("HOME") or str(Path.home())).expanduser() / ".qwen"


def with_hooks(settings: dict[str, Any], command: str, permission_timeout: int) -> dict[str, Any]:
    """The settings with orchestrate's hook added to each event it listens to (Claude
    Code's layout: a group per event, a ``matcher`` on tool events)."""
    hooks = settings.get("hooks")
    merged: dict[str, Any] = dict(hooks) if isinstance(hooks, dict) else {}
    for event in HOOK_EVENTS:
        timeout = permission_timeout if event == "PermissionRequest" else HOOK_TIMEOUT_SEC
        group: dict[str, Any] = {
            "hooks": [{"type": "command", "command": command, "timeout": timeout}]
        }
        if event in TOOL_EVENTS:
            group["matcher"] = "*"
        existing = merged.get(event)
        merged[event] = [*(existing if isinstance(existing, list) else []), group]
    return {**settings, "hooks": merged}


class Qwen(AgentAdapter):
    kind = "qwen"
    aliases = ("qwen-code",)
    display_name = AGENT_NAMES["qwen"]
    executable = "qwen"
    deliver = "argv"
    done_when = "idle"
    has_hooks = True
    resumable = True
    keys = NUMBERED_MENU
    # Its dialog is a numbered list under a U+203A marker: answered by meaning.
    selection_list = True
    # Never chosen: a rule written into the user's own settings, and auto mode's offer to
    # change the session's approval mode. "Always … in this project" is `always`.
    answer_words = MappingProxyType({"for this user": None, "switch to default mode": None})
    tested_versions = TestedVersions("0.24.4", "0.24.4")
    screen_rules = (
        ScreenRule(
            "qwen.approval",
            Activity.WAITING,
            r"(?P<question>Allow execution of: '(?P<tool>[^'\n]+)'\?|Apply this change\?"
            r"|Allow execution of MCP tool .+\?)",
            lines=30,
            details=(r"^\s*\? (?P<tool>\w+) (?P<command>\S.*?)(?: \(.*\))? \u2190\s*$",),
            gone_if_below=IDLE_PROMPT,
        ),
        ScreenRule("qwen.working", Activity.WORKING, r"esc to cancel", lines=10),
        # its input box, empty (the placeholder) or holding the follow-up it suggests
        # once a turn is over ("> Nothing more to do."): the placeholder alone missed it
        ScreenRule("qwen.idle", Activity.IDLE, rf"{IDLE_PROMPT}|{INPUT_BOX}", lines=10),
    )

    def start(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan:
        """`qwen --session-id UUID -i PROMPT`: the id is chosen here, so the job can be
        resumed by it even if no hook ever reports it."""
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
        """A per-job QWEN_HOME layered over the user's own: its settings.json is the
        user's with the job's hooks added to theirs, and every other entry of their
        config dir (credentials, sessions, memory) is linked in, so nothing of the
        user's own config is written by orchestrate."""
        layer = ctx.job_dir / "qwen-home"
        layer.mkdir(parents=True, exist_ok=True)
        user = user_qwen_dir(ctx.env)
        link_entries(user, layer, skip={"settings.json"})
        permission_timeout = HOOK_TIMEOUT_SEC
        if ctx.approvals == "control-room":
            permission_timeout += int(ctx.approval_wait_sec)
        settings = with_hooks(
            read_settings(user / "settings.json"), self.hook_command(ctx), permission_timeout
        )
        write_json(layer / "settings.json", settings)
        return {HOME_ENV: str(layer)}

    def read_hook(self, event: str, payload: Mapping[str, Any]) -> HookReading:
        session_id = text_of(payload.get("session_id")) or None
        activity = HOOK_ACTIVITY.get(event)
        if activity is None:
            return HookReading(agent_session_id=session_id)
        source = f"hook:qwen:{event}"
        if event == "Notification":
            if text_of(payload.get("notification_type")) != NOTIFICATION_IDLE:
                return HookReading(agent_session_id=session_id)
            return HookReading(Observation(activity, f"{source}:{NOTIFICATION_IDLE}"), session_id)
        if event in TOOL_EVENTS:
            name = text_of(payload.get("tool_name"))
            tool = TOOL_NAMES.get(name, name)
            waiting = activity == Activity.WAITING
            observation = Observation(
                activity,
                source,
                question=f"Allow {tool}?" if waiting and tool else "",
                tool=tool,
                command=tool_command(payload.get("tool_input")),
            )
        else:
            observation = Observation(activity, source)
        return HookReading(observation, session_id, wants_decision=event == "PermissionRequest")

    def decision_output(self, event: str, allow: bool, reason: str) -> str | None:
        """PermissionRequest: Claude Code's decision shape, which Qwen reads the same way."""
        return Claude().decision_output(event, allow, reason)

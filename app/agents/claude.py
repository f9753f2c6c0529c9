"""Claude Code: prompt as an argv word, state from its hooks (per-job `--settings`),
resume by its session id, screen rules as a cross-check."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
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

# Hook events orchestrate listens to, and the activity each one means. The
# Notification events come late (permission_prompt 6 s after the dialog,
# idle_prompt 60 s after Stop): PermissionRequest and Stop already said it.
HOOK_ACTIVITY: dict[str, str] = {
    "UserPromptSubmit": Activity.WORKING,
    "PreToolUse": Activity.WORKING,
    "PermissionRequest": Activity.WAITING,
    "PostToolUse": Activity.WORKING,
    "Stop": Activity.IDLE,
    "StopFailure": Activity.IDLE,
    "SessionEnd": Activity.EXITED,
}
TOOL_EVENTS = ("PreToolUse", "PermissionRequest", "PostToolUse")
HOOK_TIMEOUT_SEC = 5


class Claude(AgentAdapter):
    kind = "claude"
    aliases = ("claude-code",)
    display_name = AGENT_NAMES["claude"]
    executable = "claude"
    deliver = "argv"
    done_when = "idle"
    has_hooks = True
    resumable = True
    keys = NUMBERED_MENU  # Claude: 2 switches the session to accept-edits
    # 2.1.332's trust dialog has no numbers and starts on "No, exit": answered by meaning.
    selection_list = True
    tested_versions = TestedVersions("2.1.197", "2.1.197")
    screen_rules = (
        ScreenRule(
            "claude.trust",
            Activity.WAITING,
            r"(?P<question>Is this a project you created or one you trust\?"
            r"|Do you want to use this API key\?)",
        ),
        ScreenRule(
            "claude.dialog",
            Activity.WAITING,
            r"^\s*(?P<question>Do you want to (?:proceed|make this edit to .+|create .+)\?)\s*$"
            r"(?:\n.*){0,2}\n\s*\u276f?\s*1\. Yes",
            details=(r"^\s*(?P<tool>[A-Z]\w+) command\s*\n+\s*(?P<command>\S.*)$",),
        ),
        ScreenRule("claude.working", Activity.WORKING, r"esc to interrupt", lines=4),
        ScreenRule("claude.idle", Activity.IDLE, r"\? for shortcuts", lines=4),
    )

    def start(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan:
        """`claude --session-id UUID --settings FILE PROMPT`: the id is chosen here, so
        the job can be resumed by it even if no hook ever reports it."""
        session_id = ctx.agent_session_id or str(uuid.uuid4())
        base = list(argv) if argv else [self.executable]
        settings = self.write_settings(ctx)
        command = [*base, "--session-id", session_id, "--settings", str(settings), PROMPT_WORD]
        return LaunchPlan(command, deliver="argv", agent_session_id=session_id)

    def resume(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan | None:
        if not ctx.agent_session_id:
            return None
        base = list(argv) if argv else [self.executable]
        settings = self.write_settings(ctx)
        command = [*base, "--resume", ctx.agent_session_id, "--settings", str(settings)]
        return LaunchPlan(
            [*command, PROMPT_WORD],
            agent_session_id=ctx.agent_session_id,
            prompt=CONTINUE_PROMPT,
        )

    def write_settings(self, ctx: LaunchContext) -> Any:
        """The per-job settings file with orchestrate's hooks (never the user's own config)."""
        command = self.hook_command(ctx)
        entry = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SEC}
        hooks: dict[str, list[dict[str, Any]]] = {}
        for event in ("SessionStart", *HOOK_ACTIVITY):
            handler = dict(entry)
            if ctx.approvals == "control-room" and event == "PermissionRequest":
                handler["timeout"] = int(ctx.approval_wait_sec) + HOOK_TIMEOUT_SEC
            group: dict[str, Any] = {"hooks": [handler]}
            if event in TOOL_EVENTS:
                group["matcher"] = "*"
            hooks[event] = [group]
        return write_json(ctx.job_dir / "claude-settings.json", {"hooks": hooks})

    def read_hook(self, event: str, payload: Mapping[str, Any]) -> HookReading:
        session_id = text_of(payload.get("session_id")) or None
        activity = HOOK_ACTIVITY.get(event)
        if activity is None:
            return HookReading(agent_session_id=session_id)
        source = f"hook:claude:{event}"
        if event in TOOL_EVENTS:
            tool = text_of(payload.get("tool_name"))
            command = tool_command(payload.get("tool_input"))
            question = f"Allow {tool}?" if activity == Activity.WAITING and tool else ""
            observation = Observation(activity, source, question=question, tool=tool,
                                      command=command)  # fmt: skip
        elif event == "StopFailure":
            observation = Observation(activity, source, question=text_of(payload.get("error")))
        else:
            observation = Observation(activity, source)
        return HookReading(observation, session_id, wants_decision=event == "PermissionRequest")

    def decision_output(self, event: str, allow: bool, reason: str) -> str | None:
        """PermissionRequest: allow or deny the tool without the dialog."""
        if event != "PermissionRequest":
            return None
        decision: dict[str, Any] = {"behavior": "allow" if allow else "deny"}
        if not allow:
            decision["message"] = reason or "denied in the orchestrate control room"
        output = {"hookSpecificOutput": {"hookEventName": event, "decision": decision}}
        return json.dumps(output)

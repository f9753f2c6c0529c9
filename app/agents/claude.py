"""Claude Code: prompt as an argv word, state from its hooks (per-job `--settings`),
resume by its session id, screen rules as a cross-check."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
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

# Hook events orchestrate listens to, and the activity each one means. The
# permission_prompt and idle_prompt Notifications come late (6 s after the dialog,
# 60 s after Stop): PermissionRequest and Stop already said it; only the
# notifications in NOTIFICATION_WAITS are read.
HOOK_ACTIVITY: dict[str, str] = {
    "UserPromptSubmit": Activity.WORKING,
    "PreToolUse": Activity.WORKING,
    "PermissionRequest": Activity.WAITING,
    # Auto mode (2.1.332's default) refused a tool call. The agent works on (the model
    # is told, and may try another way); stopping after it counts as `blocked`.
    "PermissionDenied": Activity.WORKING,
    "PostToolUse": Activity.WORKING,
    "Notification": Activity.WAITING,
    "Stop": Activity.IDLE,
    "StopFailure": Activity.IDLE,
    "SessionEnd": Activity.EXITED,
}
TOOL_EVENTS = ("PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse")
NOTIFICATION_WAITS = frozenset({"agent_needs_input"})
"""Notifications that are a dialog of their own (2.1.332: "Auto mode can't check actions
in this session and needs your choice", when auto mode's server-side check fails)."""
BLOCKERS: dict[str, str] = {"auto": "auto mode"}
"""What refused a tool call, by the payload's ``permission_mode``, as `job why` says it."""
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
    # 2.1.332's Bash dialog offers "Yes, and switch to auto mode": a second yes that also
    # hands the session's later prompts to auto mode, which orchestrate never chooses.
    answer_words = MappingProxyType({"switch to auto mode": None})
    # 2.1.332: the trust and Bash dialogs by meaning, auto mode's blocks, its offer;
    # `doctor --self-test` passes, and so do the real-CLI tests at the newest set
    tested_versions = TestedVersions("2.1.197", "2.1.332")
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
            details=(
                # 2.1.332: a tip and the description first, the command between dashed rules
                r"^\s*(?P<tool>[A-Z]\w+) command\s*\n(?:.*\n){0,3}?\s*\u254c+\s*\n"
                r"\s*(?P<command>\S.*)$",
                r"^\s*(?P<tool>[A-Z]\w+) command\s*\n+\s*(?P<command>\S.*)$",
            ),
        ),
        ScreenRule(
            "claude.auto_mode_check",
            Activity.WAITING,
            r"^\s*(?P<question>Auto mode can't check actions in this session)\s*$",
        ),
        # 2.1.332, in manual mode, after a turn and after a "no": an offer to make auto
        # mode the default. A question for the person (`waiting`), not a note on `idle`:
        # measured, it stays until answered (120 s and more), a pasted prompt does not
        # reach the agent while it shows (`send` would be lost), and its option selected
        # first is "Yes", which changes the person's own default for every session. No
        # hook reports it: it takes the place of the question an answer ended
        # (app/approvals/answer.py). Once answered no, Claude records it seen in the
        # person's config (hasSeenAutoDefaultNudge) and does not ask again.
        ScreenRule(
            "claude.auto_mode_offer",
            Activity.WAITING,
            r"^\s*(?P<question>Make auto mode your default permission mode\?)\s*$",
        ),
        ScreenRule("claude.working", Activity.WORKING, r"esc to interrupt", lines=4),
        # 2.1.332 in auto mode: the footer says so instead of "? for shortcuts"
        ScreenRule(
            "claude.idle", Activity.IDLE, r"\? for shortcuts|\u23f5\u23f5 auto mode on", lines=4
        ),
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
        if event == "Notification":
            return self._notification(payload, source, session_id)
        if event == "PermissionDenied":
            observation = Observation(
                activity,
                source,
                question=text_of(payload.get("reason")),
                tool=text_of(payload.get("tool_name")),
                command=tool_command(payload.get("tool_input")),
                blocked_by=blocker(payload),
            )
        elif event in TOOL_EVENTS:
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

    @staticmethod
    def _notification(
        payload: Mapping[str, Any], source: str, session_id: str | None
    ) -> HookReading:
        """A notification that is a dialog of its own (NOTIFICATION_WAITS); the rest
        only repeat what another hook said, late."""
        kind = text_of(payload.get("notification_type"))
        if kind not in NOTIFICATION_WAITS:
            return HookReading(agent_session_id=session_id)
        question = text_of(payload.get("message"))
        return HookReading(
            Observation(Activity.WAITING, f"{source}:{kind}", question=question), session_id
        )

    def decision_output(self, event: str, allow: bool, reason: str) -> str | None:
        """PermissionRequest: allow or deny the tool without the dialog."""
        if event != "PermissionRequest":
            return None
        decision: dict[str, Any] = {"behavior": "allow" if allow else "deny"}
        if not allow:
            decision["message"] = reason or "denied in the orchestrate control room"
        output = {"hookSpecificOutput": {"hookEventName": event, "decision": decision}}
        return json.dumps(output)


def blocker(payload: Mapping[str, Any]) -> str:
    """What refused the tool call, from the permission mode the payload names (2.1.332
    sends ``permission_mode: auto``; PermissionDenied is documented for auto mode only)."""
    mode = text_of(payload.get("permission_mode")) or "auto"
    return BLOCKERS.get(mode, f"Claude Code ({mode} mode)")

"""Gemini CLI: prompt with `-i`, state from its hooks (a per-job settings layer) and
its pane title, resume by its session id."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from app.agents.base import (
    CONTINUE_PROMPT,
    PROMPT_WORD,
    AgentAdapter,
    HookReading,
    Keys,
    LaunchContext,
    LaunchPlan,
    text_of,
    tool_command,
)
from app.agents.screen import ScreenRule
from app.agents.settings_files import write_json
from registry.activity import Observation

SETTINGS_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
HOOK_EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "Notification",
               "AfterAgent", "SessionEnd")  # fmt: skip
HOOK_TIMEOUT_MS = 5000


class Gemini(AgentAdapter):
    kind = "gemini"
    display_name = "Gemini CLI"
    executable = "gemini"
    deliver = "argv"
    done_when = "idle"
    has_hooks = True
    resumable = True
    # 1 (or Enter) allows once, 2 for the session; Esc is "no" wherever it sits.
    keys = Keys(
        yes=("1",), no=("Escape",), always=("2",), interrupt=("Escape",), exit=("C-c", "C-c")
    )
    screen_rules = (
        ScreenRule(
            "gemini.approval",
            "waiting",
            r"(?P<question>Allow execution of \[(?P<tool>[^\]\n]+)\]\?|Apply this change\?"
            r"|Allow execution of: .+\?)",
            lines=30,
            details=(r"│ \? \S+\s+(?P<command>\S.*?)\s*│\s*$",),
        ),
        ScreenRule(
            "gemini.setup",
            "waiting",
            r"(?P<question>Do you trust the files in this folder\?|How would you like to "
            r"authenticate for this project\?)",
            lines=40,
        ),
        ScreenRule("gemini.working", "working", r"\(esc to cancel|\(esc to\s*$", lines=10),
        ScreenRule("gemini.idle", "idle", r"Type your message or @path/to/file", lines=8),
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
        """A system-settings layer holding only orchestrate's hooks: the user's own
        ~/.gemini settings (auth, model) still apply beneath it."""
        command = self.hook_command(ctx)
        hooks: dict[str, list[dict[str, Any]]] = {}
        for event in HOOK_EVENTS:
            handler = {"type": "command", "name": f"orchestrate-{event}", "command": command,
                       "timeout": HOOK_TIMEOUT_MS}  # fmt: skip
            group: dict[str, Any] = {"hooks": [handler]}
            if event in ("BeforeTool", "AfterTool"):
                group["matcher"] = "*"
            hooks[event] = [group]
        path = write_json(ctx.job_dir / "gemini-settings.json", {"hooks": hooks})
        return {SETTINGS_ENV: str(path)}

    def read_hook(self, event: str, payload: Mapping[str, Any]) -> HookReading:
        session_id = text_of(payload.get("session_id")) or None
        source = f"hook:gemini:{event}"
        observation: Observation | None = None
        if event in ("BeforeAgent", "BeforeTool", "AfterTool"):
            tool = text_of(payload.get("tool_name"))
            command = tool_command(payload.get("tool_input"))
            observation = Observation("working", source, tool=tool, command=command)
        elif event == "Notification" and payload.get("notification_type") == "ToolPermission":
            details = payload.get("details")
            details = details if isinstance(details, Mapping) else {}
            question = text_of(payload.get("message")) or text_of(details.get("title"))
            observation = Observation(
                "waiting",
                f"{source}:ToolPermission",
                question=question,
                tool=text_of(details.get("rootCommand")),
                command=text_of(details.get("command")) or tool_command(details),
            )
        elif event == "AfterAgent":
            observation = Observation("idle", source)
        elif event == "SessionEnd":
            observation = Observation("exited", source)
        return HookReading(observation, session_id)

"""A tiny ACP agent for the unit tests, on the `agent-client-protocol` package's agent
side: each prompt streams a message (with hostile bytes in it), a plan and a diff,
asks permission to run ``touch done.txt`` and, when allowed, creates the file in its
session's cwd, then ends its turn.

    python -m tests.acp.fake_agent [--no-load] [--exit-at-once]

``--no-load`` does not advertise ``loadSession``. Every prompt's text is appended to
``prompts.txt`` in the cwd, so a test can see what was sent.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    plan_entry,
    run_agent,
    start_tool_call,
    tool_diff_content,
    update_agent_message_text,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J text ─ your turn"
"""An OSC title, a screen clear, and the transcript's own rule: none may reach the pane."""


class FakeAgent:
    def __init__(self, load: bool) -> None:
        self.load = load
        self.conn: Any = None
        self.cwd: dict[str, Path] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=self.load),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = str(uuid.uuid4())
        self.cwd[session_id] = Path(cwd)
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        self.cwd[session_id] = Path(cwd)
        (Path(cwd) / "loaded.txt").write_text(session_id, encoding="utf-8")
        return LoadSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        cwd = self.cwd[session_id]
        text = " ".join(getattr(block, "text", "") for block in prompt)
        with (cwd / "prompts.txt").open("a", encoding="utf-8") as out:
            out.write(text + "\n")
        say = self.conn.session_update
        await say(session_id, update_agent_message_text(f"I will run a command. {HOSTILE}\n"))
        await say(session_id, update_plan([plan_entry("create done.txt", status="in_progress")]))
        diff = tool_diff_content("notes.md", "new line\n", "old line\n")
        await say(session_id, start_tool_call("edit-1", "Edit notes.md", kind="edit",
                                              status="completed", content=[diff]))  # fmt: skip
        await say(session_id, start_tool_call("run-1", "touch done.txt", kind="execute",
                                              status="pending"))  # fmt: skip
        options = [
            PermissionOption(option_id="always", name="Allow always", kind="allow_always"),
            PermissionOption(option_id="once", name="Allow", kind="allow_once"),
            PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        call = ToolCallUpdate(tool_call_id="run-1", title="touch done.txt", kind="execute")
        answer = await self.conn.request_permission(session_id, call, options)
        chosen = getattr(answer.outcome, "option_id", None)
        with (cwd / "answers.txt").open("a", encoding="utf-8") as out:
            out.write(f"{chosen}\n")
        if chosen in ("once", "always"):
            (cwd / "done.txt").write_text("done\n", encoding="utf-8")
            await say(session_id, update_tool_call("run-1", status="completed"))
        else:
            await say(session_id, update_tool_call("run-1", status="failed"))
        await say(session_id, update_agent_message_text("All done."))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


def main(argv: list[str]) -> None:
    agent = FakeAgent(load="--no-load" not in argv)
    if "--exit-at-once" in argv:
        sys.exit(3)
    asyncio.run(run_agent(agent))  # type: ignore[arg-type]


if __name__ == "__main__":
    main(sys.argv[1:])

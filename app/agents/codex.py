"""Codex: prompt as an argv word, state from the `OSC 7501` sequence it writes into
its own output (read from the pane log), screen rules for the command it asks about."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from app.agents.base import (
    APP_SERVER,
    CONTINUE_PROMPT,
    PROMPT_WORD,
    AgentAdapter,
    HookReading,
    Keys,
    LaunchContext,
    LaunchPlan,
    text_of,
)
from app.agents.screen import ScreenRule
from app.agents.versions import TestedVersions
from registry.activity import AGENT_NAMES, Observation
from registry.vocabulary import Activity, Answer

APP_SERVER_SOCKET = "codex-app-server.sock"


class Codex(AgentAdapter):
    kind = "codex"
    display_name = AGENT_NAMES["codex"]
    executable = "codex"
    deliver = "argv"
    done_when = "idle"
    reads_osc_status = True
    resumable = True
    # y runs at once; p writes a prefix rule ("don't ask again"); Esc declines
    # and interrupts the turn. C-d on an empty prompt exits.
    keys = Keys(yes=("y",), no=("Escape",), always=("p",), interrupt=("Escape",), exit=("C-d",))
    # Its dialogs are numbered lists under a U+203A marker: answered by meaning, so
    # that a reordered or reworded list is read, not typed into (the letters above
    # stay the answers it takes, and app/agents/base.py's fallback for others).
    selection_list = True
    answer_words = MappingProxyType(
        {"back to agent command center": Answer.NO, "continue without trusting": Answer.NO}
    )
    tested_versions = TestedVersions("0.169.0", "0.171.0")
    screen_rules = (
        ScreenRule(
            "codex.approval",
            Activity.WAITING,
            r"(?P<question>Would you like to (?:run the following command|make the following "
            r"edits|apply)[^\n]*\?)",
            lines=30,
            details=(r"^\s*\$ (?P<command>\S.*)$", r"^\s*Reason: (?P<question>\S.*)$"),
        ),
        ScreenRule(
            "codex.trust",
            Activity.WAITING,
            r"(?P<question>Do you trust the files in this folder\?|Trust this folder\?)",
        ),
        ScreenRule("codex.hooks_review", Activity.WAITING, r"(?P<question>Hooks need review)"),
        ScreenRule("codex.working", Activity.WORKING, r"esc to interrupt\)|Reconnecting", lines=8),
        ScreenRule("codex.idle", Activity.IDLE, "^\\s*\u203a ", lines=6),
    )

    def start(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan:
        """`codex --no-daemon -c notify=… PROMPT`. Without --no-daemon the TUI hands its
        turns to a shared background app-server that outlives the pane, so stopping
        the pane would not stop the agent. Its `notify` program (orchestrate's hook)
        tells the thread id, which `codex resume` needs. (Codex's hooks would need
        --dangerously-bypass-hook-trust, which also runs the user's untrusted hooks.)

        Under ``--approvals control-room`` the TUI joins an app-server of the job's
        own instead (`--remote unix://…`), whose approval requests orchestrate answers
        (app/agents/codex_bridge.py); the plain start above is its fallback."""
        base = list(argv) if argv else [self.executable]
        plan = LaunchPlan([*base, *self.options(ctx, base), PROMPT_WORD])
        return self.through_app_server(ctx, base, [PROMPT_WORD], plan)

    def resume(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan | None:
        if not ctx.agent_session_id:
            return None
        base = list(argv) if argv else [self.executable]
        words = [ctx.agent_session_id, PROMPT_WORD]
        plan = LaunchPlan(
            [*base, "resume", *self.options(ctx, base), *words],
            agent_session_id=ctx.agent_session_id,
            prompt=CONTINUE_PROMPT,
        )
        return self.through_app_server(ctx, [*base, "resume"], words, plan, resuming=True)

    def through_app_server(
        self,
        ctx: LaunchContext,
        base: Sequence[str],
        words: Sequence[str],
        plain: LaunchPlan,
        *,
        resuming: bool = False,
    ) -> LaunchPlan:
        """``plain`` as is, or (control-room approvals) the TUI on the job's app-server,
        with ``plain`` as the fallback should that server not start."""
        if ctx.approvals != "control-room":
            return plain
        socket = ctx.job_dir / APP_SERVER_SOCKET
        tui = [word for word in base if word != "--no-daemon"]  # refused beside --remote
        settings: list[str] = []
        if resuming:  # "Permission overrides are not supported when resuming a remote task"
            tui, settings = permission_settings(tui)
        server = [tui[0], "app-server", "--listen", f"unix://{socket}", *self.notify(ctx)]
        server += settings
        companion = {
            "argv": server,
            "socket": str(socket),
            "log": str(ctx.job_dir / "codex-app-server.log"),
            "fallback_argv": plain.argv,
        }
        return replace(
            plain,
            argv=[*tui, "--remote", f"unix://{socket}", *words],
            extra={APP_SERVER: companion},
        )

    def notify(self, ctx: LaunchContext) -> list[str]:
        """`-c notify=[…]`: orchestrate's hook after every turn (TOML takes JSON's list)."""
        return ["-c", f"notify={json.dumps([*shlex.split(ctx.hook_command), self.kind])}"]

    def options(self, ctx: LaunchContext, base: Sequence[str]) -> list[str]:
        options = self.notify(ctx)
        if "--no-daemon" not in base:
            options.insert(0, "--no-daemon")
        return options

    def read_hook(self, event: str, payload: Mapping[str, Any]) -> HookReading:
        """`notify`'s agent-turn-complete: the turn is over (idle), and its thread is the
        job's conversation when the turn was about the job's task (the hidden title
        thread also notifies: its input is the title request, not the task)."""
        if event != "agent-turn-complete":
            return HookReading()
        thread = text_of(payload.get("thread-id")) or None
        return HookReading(Observation(Activity.IDLE, "hook:codex:notify"), thread)

    def about_the_task(self, payload: Mapping[str, Any], prompt: str) -> bool:
        """The turn's input is the job's task itself (or the follow-up a resume sends):
        the title thread's input holds the task too, but inside its own instructions."""
        messages = payload.get("input-messages")
        if not isinstance(messages, list):
            return False
        wanted = {prompt.strip(), CONTINUE_PROMPT.strip()}
        return any(isinstance(text, str) and text.strip() in wanted for text in messages)


PERMISSION_FLAGS = {
    "-a": "approval_policy",
    "--ask-for-approval": "approval_policy",
    "-s": "sandbox_mode",
    "--sandbox": "sandbox_mode",
}


def permission_settings(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``argv`` without its approval and sandbox flags, and those flags as the
    app-server's ``-c key="value"`` settings (a resumed remote TUI refuses them)."""
    kept: list[str] = []
    settings: list[str] = []
    words = iter(argv)
    for word in words:
        name, equals, value = word.partition("=")
        key = PERMISSION_FLAGS.get(name)
        if key is None:
            kept.append(word)
            continue
        if not equals:
            value = next(words, "")
        settings += ["-c", f"{key}={json.dumps(value)}"]  # a JSON string is a TOML string
    return kept, settings

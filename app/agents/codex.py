"""Codex: prompt as an argv word, state from the `OSC 7501` sequence it writes into
its own output (read from the pane log), screen rules for the command it asks about."""

from __future__ import annotations

from collections.abc import Sequence

from app.agents.base import (
    CONTINUE_PROMPT,
    PROMPT_WORD,
    AgentAdapter,
    Keys,
    LaunchContext,
    LaunchPlan,
)
from app.agents.screen import ScreenRule


class Codex(AgentAdapter):
    kind = "codex"
    display_name = "Codex"
    executable = "codex"
    deliver = "argv"
    done_when = "idle"
    reads_osc_status = True
    resumable = True
    # y runs at once; p writes a prefix rule ("don't ask again"); Esc declines
    # and interrupts the turn. C-d on an empty prompt exits.
    keys = Keys(yes=("y",), no=("Escape",), always=("p",), interrupt=("Escape",), exit=("C-d",))
    screen_rules = (
        ScreenRule(
            "codex.approval",
            "waiting",
            r"(?P<question>Would you like to (?:run the following command|make the following "
            r"edits|apply)[^\n]*\?)",
            lines=30,
            details=(r"^\s*\$ (?P<command>\S.*)$", r"^\s*Reason: (?P<question>\S.*)$"),
        ),
        ScreenRule(
            "codex.trust",
            "waiting",
            r"(?P<question>Do you trust the files in this folder\?|Trust this folder\?)",
        ),
        ScreenRule("codex.hooks_review", "waiting", r"(?P<question>Hooks need review)"),
        ScreenRule("codex.working", "working", r"esc to interrupt\)|Reconnecting", lines=8),
        ScreenRule("codex.idle", "idle", "^\\s*\u203a ", lines=6),
    )

    def start(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan:
        """`codex --no-daemon PROMPT`: without --no-daemon the TUI hands its turns to a
        shared background app-server that outlives the pane, so stopping the pane
        would not stop the agent."""
        base = list(argv) if argv else [self.executable]
        return LaunchPlan([*base, "--no-daemon", PROMPT_WORD])

    def resume(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan | None:
        if not ctx.agent_session_id:
            return None
        base = list(argv) if argv else [self.executable]
        return LaunchPlan(
            [*base, "resume", "--no-daemon", ctx.agent_session_id, PROMPT_WORD],
            agent_session_id=ctx.agent_session_id,
            prompt=CONTINUE_PROMPT,
        )

"""Aider: no structured state at all, so screen rules decide; the task is pasted once
its prompt is on screen; one chat history file per job makes it resumable."""

from __future__ import annotations

from collections.abc import Sequence

from app.agents.base import CONTINUE_PROMPT, AgentAdapter, Keys, LaunchContext, LaunchPlan
from app.agents.screen import ScreenRule
from app.agents.versions import TestedVersions
from registry.activity import AGENT_NAMES
from registry.vocabulary import Activity

CONFIRM = (
    r"\(Y\)es/\(N\)o(?:/\(A\)ll)?(?:/\(S\)kip all)?(?:/\(D\)on't ask again)? \[(?:Yes|No)\]: ?$"
)


class Aider(AgentAdapter):
    kind = "aider"
    display_name = AGENT_NAMES["aider"]
    executable = "aider"
    deliver = "paste"
    done_when = "idle"
    resumable = True
    # Every question takes a word and Enter; bare Enter means Yes.
    keys = Keys(
        yes=("y", "Enter"), no=("n", "Enter"), always=("d", "Enter"), interrupt=("C-c",),
        exit=("C-d",),
    )  # fmt: skip
    tested_versions = TestedVersions("0.86.2", "0.86.2")
    screen_rules = (
        ScreenRule(
            "aider.run_shell",
            Activity.WAITING,
            r"^(?P<command>\S.*)\n(?P<question>Run shell commands?\?) " + CONFIRM,
            lines=4,
        ),
        ScreenRule("aider.confirm", Activity.WAITING, r"^(?P<question>.*\?) " + CONFIRM, lines=2),
        # the prompt (`>`, `diff>`, `ask>` …) under a rule, maybe below the files in chat
        ScreenRule(
            "aider.idle", Activity.IDLE, "^\u2500{10,}\n(?:.*\n)?(?:[\\w-]+ ?)?> ?$", lines=3
        ),
        ScreenRule("aider.working", Activity.WORKING, r"Waiting for |^[░█\s]+\S", lines=2),
    )

    def start(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan:
        """`aider --chat-history-file <job>/…`; the prompt is pasted at its `>` prompt.
        Never --yes-always: it answers for the person and hides the questions."""
        base = list(argv) if argv else [self.executable]
        return LaunchPlan([*base, *self.history_args(ctx)], deliver="paste")

    def resume(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan | None:
        base = list(argv) if argv else [self.executable]
        command = [*base, *self.history_args(ctx), "--restore-chat-history"]
        return LaunchPlan(command, deliver="paste", prompt=CONTINUE_PROMPT)

    def history_args(self, ctx: LaunchContext) -> list[str]:
        return [
            "--chat-history-file",
            str(ctx.job_dir / "aider.chat.history.md"),
            "--input-history-file",
            str(ctx.job_dir / "aider.input.history"),
        ]

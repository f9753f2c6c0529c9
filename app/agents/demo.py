"""The demo agent: reads its prompt file, reports with `orchestrate publish`, asks y/n."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from app.agents.base import PROMPT_FILE_WORD, AgentAdapter, Keys, LaunchContext, LaunchPlan
from app.agents.generic import YES_NO_RULES
from registry.activity import AGENT_NAMES

START = (sys.executable, "-m", "app.agents.demo_cli", PROMPT_FILE_WORD)


class Demo(AgentAdapter):
    kind = "demo"
    display_name = AGENT_NAMES["demo"]
    executable = sys.executable
    deliver = "file"
    done_when = "exit"
    gets_instructions = True
    keys = Keys(yes=("y", "Enter"), no=("n", "Enter"), interrupt=("C-c",), exit=("C-c",))
    screen_rules = YES_NO_RULES

    def start(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan:
        command = list(argv) if argv else list(START)
        return LaunchPlan(command, deliver=self.delivery_for(command))

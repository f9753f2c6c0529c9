"""Any other CLI agent: the user's own command, y/n questions read off its screen,
and whatever screen rules the agents config gives it."""

from __future__ import annotations

from collections.abc import Sequence

from app.agents.base import (
    PROMPT_FILE_WORD,
    PROMPT_WORD,
    AgentAdapter,
    DoneWhen,
    Keys,
    LaunchContext,
    LaunchPlan,
    PromptDelivery,
)
from app.agents.screen import ScreenRule
from registry.vocabulary import Activity

YES_NO_RULES = (
    ScreenRule(
        "generic.yes_no",
        Activity.WAITING,
        r"^(?P<question>.*\S)\s*[\[(]\s*y(?:es)?\s*/\s*n(?:o)?\s*[\])]\s*[:?]?\s*$",
        lines=1,
    ),
    ScreenRule(
        "generic.menu",
        Activity.WAITING,
        r"(?i)(?P<question>do you want to (?:proceed|make this edit|allow)[^\n]*)",
        lines=6,
    ),
)


class Generic(AgentAdapter):
    """An agent orchestrate has no module for; configured by the agents config."""

    kind = "generic"
    display_name = "agent"
    deliver: PromptDelivery = "paste"
    done_when: DoneWhen = "exit"
    screen_rules: tuple[ScreenRule, ...] = YES_NO_RULES

    def __init__(
        self,
        kind: str = "generic",
        *,
        command: Sequence[str] = (),
        deliver: PromptDelivery | None = None,
        done_when: DoneWhen | None = None,
        keys: Keys | None = None,
        rules: Sequence[ScreenRule] = (),
    ) -> None:
        self.kind = kind
        self.display_name = kind
        self.command = tuple(command)
        self.executable = command[0] if command else ""
        if deliver is not None:
            self.deliver = deliver
        if done_when is not None:
            self.done_when = done_when
        if keys is not None:
            self.keys = keys
        self.screen_rules = (*rules, *YES_NO_RULES)

    def start(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan:
        """The given command; the prompt goes where it says ({prompt}, {prompt_file}),
        else as the configured delivery, else pasted once the agent's screen settles."""
        command = list(argv or self.command)
        if not command:
            return LaunchPlan([])
        delivery = self.delivery_for(command)
        if delivery == "paste" and self.deliver == "argv":
            command.append(PROMPT_WORD)
            delivery = "argv"
        return LaunchPlan(command, deliver=delivery)

    def delivery_for(self, argv: Sequence[str]) -> PromptDelivery:
        if PROMPT_WORD in argv:
            return "argv"
        if PROMPT_FILE_WORD in argv:
            return "file"
        return "paste"

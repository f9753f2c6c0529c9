"""What each option of a dialog means (yes, always, no), and the keys that choose
the one an answer means.

The adapter's own words come first (``answer_words`` in app/agents/<kind>.py),
then generic ones. A dialog with an option that means nothing known, or with
two options meaning the answer asked for, is one orchestrate does not
understand: it says so, naming the options, and presses nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from app.approvals.dialog import Dialog, Option
from registry.vocabulary import Answer

AnswerWords = Mapping[str, Answer | None]
"""An adapter's words: a phrase of an option (lower case) and what it means; None for
an option the adapter knows and orchestrate never chooses (Gemini's "for all future
sessions", which writes a policy file)."""
NO_WORDS: AnswerWords = MappingProxyType({})

GENERIC_WORDS: tuple[tuple[str, Answer], ...] = (
    # "always" first: "Yes, and always allow …" is not a plain yes.
    ("don't ask again", Answer.ALWAYS),
    ("always", Answer.ALWAYS),
    ("allow all", Answer.ALWAYS),
    ("for this session", Answer.ALWAYS),
    # then "no": "Don't trust" holds "trust", "No, and tell Codex …" holds nothing else.
    ("don't trust", Answer.NO),
    ("no", Answer.NO),
    ("deny", Answer.NO),
    ("exit", Answer.NO),
    ("cancel", Answer.NO),
    ("reject", Answer.NO),
    ("yes", Answer.YES),
    ("allow", Answer.YES),
    ("proceed", Answer.YES),
    ("trust", Answer.YES),
)

MOVE_DOWN = "Down"
MOVE_UP = "Up"
CONFIRM = "Enter"


@dataclass(frozen=True)
class AnswerPlan:
    """How to choose an option: move the marker, check it, then confirm.

    Arrows, not the number a dialog shows: in Claude Code, Codex and Gemini CLI a
    number chooses *and* confirms at once, which leaves no moment to check that the
    marker sits on the option meant."""

    target: int
    option: Option
    moves: tuple[str, ...]
    confirm: tuple[str, ...] = (CONFIRM,)

    def describe(self) -> str:
        """ "Down Enter (Yes, I trust this folder)", for the answer's record."""
        return f"{' '.join((*self.moves, *self.confirm))} ({self.option.text})"


@dataclass(frozen=True)
class Refusal:
    """Why a dialog cannot be answered, in one line naming the options seen."""

    reason: str


def _phrase(words: str) -> re.Pattern[str]:
    """A phrase matched as whole words ("no" is not in "now")."""
    return re.compile(rf"(?<![\w']){re.escape(words)}(?![\w'])")


def _normal(text: str) -> str:
    """Lower case, with the typographic apostrophe a TUI may draw made plain."""
    return text.lower().replace("\u2019", "'")


def meaning_of(option: Option, words: AnswerWords = NO_WORDS) -> Answer | bool | None:
    """What ``option`` means: the adapter's words first, then generic ones. None for
    an option the adapter knows but never chooses; False for one nobody knows."""
    text = _normal(option.text)
    for phrase, answer in words.items():
        if _phrase(_normal(phrase)).search(text):
            return answer
    for phrase, generic in GENERIC_WORDS:
        if _phrase(phrase).search(text):
            return generic
    return False


def plan_answer(
    dialog: Dialog, answer: Answer, words: AnswerWords = NO_WORDS
) -> AnswerPlan | Refusal:
    """The keys that move the marker from where it is to the one option meaning
    ``answer``; a Refusal when any option means nothing known, or when none or more
    than one means ``answer``."""
    meanings = [meaning_of(option, words) for option in dialog.options]
    unknown = [dialog.options[i].text for i, meaning in enumerate(meanings) if meaning is False]
    if unknown:
        return Refusal(
            f"I don't recognise this dialog: options seen: {dialog.seen()} "
            f"(no meaning for {', '.join(map(repr, unknown))})"
        )
    chosen = [i for i, meaning in enumerate(meanings) if meaning == answer]
    if len(chosen) != 1:
        how_many = "no option" if not chosen else f"{len(chosen)} options"
        return Refusal(
            f"I don't recognise this dialog: options seen: {dialog.seen()} "
            f"({how_many} mean {answer.value!r})"
        )
    target = chosen[0]
    step = MOVE_DOWN if target > dialog.selected else MOVE_UP
    moves = (step,) * abs(target - dialog.selected)
    return AnswerPlan(target, dialog.options[target], moves)

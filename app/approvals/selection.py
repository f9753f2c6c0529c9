"""Answering a selection list by meaning: read → plan → move → re-read → check the
marker → Enter. The dialog leaving the screen is confirm.py's to see.

Nothing is confirmed on a guess: when the options cannot be mapped, or the marker
does not arrive on the option meant, Enter is never pressed and the error names
the options seen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from app.approvals.dialog import Dialog, read_dialog
from app.approvals.errors import UnrecognisedDialog
from app.approvals.meaning import NO_WORDS, AnswerPlan, AnswerWords, Refusal, plan_answer
from registry.vocabulary import Answer

MARKER_SEC = 1.0
"""How long the marker has to arrive after the arrows (a redraw takes a frame or two)."""
POLL_SEC = 0.01

ReadScreen = Callable[[], Sequence[str]]
SendKeys = Callable[[Sequence[str]], None]


def _read(read: ReadScreen) -> Dialog:
    """The dialog on screen now, or the refusal to answer one that is not a list."""
    dialog = read_dialog(read())
    if dialog is None:
        raise UnrecognisedDialog("I don't recognise this dialog: options seen: none")
    return dialog


def _marker_on(read: ReadScreen, plan: AnswerPlan, timeout: float) -> Dialog | None:
    """The dialog once its marker sits on the planned option (same text), else None."""
    deadline = time.monotonic() + timeout
    while True:
        dialog = read_dialog(read())
        if (
            dialog is not None
            and dialog.selected == plan.target
            and dialog.marked.text == plan.option.text
        ):
            return dialog
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL_SEC)


def answer_by_meaning(
    read: ReadScreen,
    send: SendKeys,
    reply: Answer,
    words: AnswerWords = NO_WORDS,
    *,
    marker_sec: float = MARKER_SEC,
) -> str:
    """Choose the option meaning ``reply`` in the dialog ``read`` shows, through
    ``send``. Returns how ("meaning: Down Enter (Yes, I trust this folder)").
    UnrecognisedDialog, with nothing confirmed, when the options cannot be mapped
    or the marker does not arrive on the option meant."""
    dialog = _read(read)
    plan = plan_answer(dialog, reply, words)
    if isinstance(plan, Refusal):
        raise UnrecognisedDialog(plan.reason)
    if plan.moves:
        send(plan.moves)
    if _marker_on(read, plan, marker_sec) is None:
        now = read_dialog(read())
        where = repr(now.marked.text) if now is not None else "a screen with no list"
        raise UnrecognisedDialog(
            f"the marker did not move to {plan.option.text!r} (it is on {where}); "
            f"nothing confirmed: options seen: {dialog.seen()}"
        )
    send(plan.confirm)
    return "meaning: " + plan.describe()

"""Answering a selection list by meaning: read → plan → move → re-read → check the
marker → Enter. The dialog leaving the screen is confirm.py's to see.

Nothing is confirmed on a guess: when the options cannot be mapped, or the marker
does not arrive on the option meant, Enter is never pressed and the error names
the options seen.

Waits are on the pane's output, not on a clock: a ``Moved`` counter (the pane
log's size) is cheap to read (a stat), and the screen, which costs a tmux call,
is read again only once the agent has drawn something since the last look. That
keeps an answer by meaning close to a blind key's time (bench/agents.py,
``answers``).
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
"""Between two screen reads when nothing tells that the pane drew."""
OUTPUT_POLL_SEC = 0.001
FALLBACK_READ_SEC = 0.02
"""With a counter, the screen is still read this often: the log lags the screen by
the pipe's reader (a ``cat`` that a loaded machine schedules late)."""
"""Between two looks at the output counter (a stat): a redraw is seen within 1 ms."""
MOVE_ATTEMPTS = 2
"""Arrows sent at most this often: a key the agent dropped (Codex drops one sent as
its dialog's first frame is drawn) is planned again from where the marker is."""

ReadScreen = Callable[[], Sequence[str]]
SendKeys = Callable[[Sequence[str]], None]
Moved = Callable[[], int]
"""How much the pane has drawn so far (its log's size): it grows with every redraw."""


def _read(read: ReadScreen, first: Sequence[str] | None) -> Dialog:
    """The dialog on screen now, or the refusal to answer one that is not a list."""
    dialog = read_dialog(first if first is not None else read())
    if dialog is None:
        raise UnrecognisedDialog("I don't recognise this dialog: options seen: none")
    return dialog


def wait_for_screen(
    read: ReadScreen,
    holds: Callable[[Sequence[str]], bool],
    timeout: float,
    moved: Moved | None = None,
) -> Sequence[str] | None:
    """The screen once ``holds`` says yes of it, else None after ``timeout``. With
    ``moved``, the screen is read again when the pane drew since the last read, and
    every FALLBACK_READ_SEC anyway (its output may be late in the log, or not in one)."""
    deadline = time.monotonic() + timeout
    seen = moved() if moved is not None else 0
    read_at = 0.0
    while True:
        now = time.monotonic()
        drawn = moved() if moved is not None else seen + 1
        if drawn != seen or moved is None or now - read_at >= FALLBACK_READ_SEC:
            seen, read_at = drawn, now
            screen = read()
            if holds(screen):
                return screen
        if now >= deadline:
            return None
        time.sleep(OUTPUT_POLL_SEC if moved is not None else POLL_SEC)


def _marker_on(
    read: ReadScreen, plan: AnswerPlan, timeout: float, moved: Moved | None
) -> Dialog | None:
    """The dialog once its marker sits on the planned option (same text), else None."""

    def arrived(screen: Sequence[str]) -> bool:
        dialog = read_dialog(screen)
        return (
            dialog is not None
            and dialog.selected == plan.target
            and dialog.marked.text == plan.option.text
        )

    screen = wait_for_screen(read, arrived, timeout, moved)
    return read_dialog(screen) if screen is not None else None


def answer_by_meaning(
    read: ReadScreen,
    send: SendKeys,
    reply: Answer,
    words: AnswerWords = NO_WORDS,
    *,
    marker_sec: float = MARKER_SEC,
    moved: Moved | None = None,
    first: Sequence[str] | None = None,
) -> str:
    """Choose the option meaning ``reply`` in the dialog ``read`` shows, through
    ``send``. Returns how ("meaning: Down Enter (Yes, I trust this folder)").
    UnrecognisedDialog, with nothing confirmed, when the options cannot be mapped
    or the marker does not arrive on the option meant. ``first``: the screen as
    just read (saves a read); ``moved``: the pane's output counter (see Moved)."""
    dialog = _read(read, first)
    plan = plan_answer(dialog, reply, words)
    if isinstance(plan, Refusal):
        raise UnrecognisedDialog(plan.reason)
    sent: list[str] = []
    for _attempt in range(MOVE_ATTEMPTS):
        if plan.moves:
            send(plan.moves)
            sent.extend(plan.moves)
        if _marker_on(read, plan, marker_sec / MOVE_ATTEMPTS, moved) is not None:
            send(plan.confirm)
            return "meaning: " + " ".join((*sent, *plan.confirm)) + f" ({plan.option.text})"
        now = read_dialog(read())
        if now is None or now.options != dialog.options:
            break  # another screen: nothing to plan on
        again = plan_answer(now, reply, words)
        if isinstance(again, Refusal):
            break
        plan = again  # from where the marker is now (a dropped or a late arrow)
    now = read_dialog(read())
    where = repr(now.marked.text) if now is not None else "a screen with no list"
    raise UnrecognisedDialog(
        f"the marker did not move to {plan.option.text!r} (it is on {where}); "
        f"nothing confirmed: options seen: {dialog.seen()}"
    )

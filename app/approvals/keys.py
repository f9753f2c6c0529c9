"""Keys, the fallback: the agent's own keys for an answer, typed only while its
dialog is on screen.

Enter or stray text means yes in three of the four real agents, so keys are
never sent on a guess: the adapter's screen rules (``screen_rules`` of
app/agents/<kind>.py, with state ``waiting``) must see the question first. The
keys themselves are the adapter's (``Keys``); this module only decides when to
type them.

An adapter whose dialogs are selection lists (``selection_list``) is answered by
meaning instead (selection.py): the same wait for its dialog, then the marker is
moved to the option that means the answer and checked there before Enter.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from app.agents.screen import ScreenRule, match_screen
from app.approvals.dialog import read_dialog
from app.approvals.errors import NotWaitingForPermission
from app.approvals.meaning import AnswerPlan, plan_answer
from app.approvals.question import Question
from app.approvals.selection import Moved, answer_by_meaning, wait_for_screen
from app.tmux.driver import TmuxDriver
from registry.activity import Observation
from registry.records import Job
from registry.vocabulary import Activity, Answer

DIALOG_GRACE_SEC = 3.0
"""How long to wait for the dialog to be drawn after the hook (or event) said waiting."""
POLL_SEC = 0.05
SETTLE_SEC = 0.2
"""A key in the dialog's first few ms can be lost (Codex)."""
RESEND_AFTER_SEC = 1.5
"""Codex drops a key sent within a few ms of its dialog's first frame (measured 1 in
5-10): an answer whose dialog is still there, unchanged, after this is sent once more."""
SCREEN_LINES = 40

Replaced = Callable[[Observation], None]
"""Told once when the dialog answered is replaced on screen by another question."""


def _unheard(_seen: Observation) -> None:
    """Nobody to tell that the dialog was replaced."""


class Panes(Protocol):
    """What typing needs of the orchestrator."""

    @property
    def driver(self) -> TmuxDriver: ...

    def pane_for_job(self, job_id: str) -> str | None: ...

    def pane_log(self, job_id: str) -> Path: ...


def output_counter(log: Path) -> Moved:
    """The pane log's size: it grows with every frame the agent draws (tmux pipe-pane),
    so a wait for a redraw looks at a stat, not at the screen (a tmux call)."""

    def size() -> int:
        try:
            return log.stat().st_size
        except OSError:
            return -1

    return size


def type_answer(
    panes: Panes,
    question: Question,
    reply: Answer,
    reread: Callable[[], Job],
    grace_sec: float = DIALOG_GRACE_SEC,
    shows: Callable[[Observation], bool] | None = None,
    replaced: Replaced = _unheard,
) -> tuple[str, Callable[[], bool]]:
    """Type ``reply``'s keys into the job's dialog once it is on screen (again, once,
    if the dialog ignored them). Returns how ("keys y Enter") and a check that the
    dialog has left the screen, for the confirmation. ``reread``: the job as the
    registry has it now. ``shows``: whether the dialog read from the screen is the
    very question answered (the approval policy's: same tool and command); a dialog
    that is not counts as no dialog. ``replaced``: told the screen's question when
    another one took the answered dialog's place (a selection list's)."""
    job = question.job
    keys = question.adapter.keys.answer(reply)
    pane_id = panes.pane_for_job(job.job_id)
    if pane_id is None or not panes.driver.pane_alive(pane_id):
        raise NotWaitingForPermission(f"job {job.job_id} has no live agent pane to answer in")
    rules = [rule for rule in question.adapter.screen_rules if rule.activity == Activity.WAITING]

    def dialog_shown() -> bool:
        seen = match_screen(job.agent, rules, panes.driver.capture(pane_id, SCREEN_LINES))
        return seen is not None and (shows is None or shows(seen))

    deadline = time.monotonic() + grace_sec
    while not dialog_shown():
        if time.monotonic() >= deadline:
            raise NotWaitingForPermission(
                f"job {job.job_id}: its pane {pane_id} shows no question; not typing into it"
            )
        time.sleep(POLL_SEC)
    time.sleep(SETTLE_SEC)
    if question.adapter.selection_list:
        return _by_meaning(panes, question, reply, pane_id, reread, rules, replaced)
    panes.driver.send_key_names(pane_id, keys)
    resend_at = time.monotonic() + RESEND_AFTER_SEC
    while dialog_shown() and reread().activity_at_ms == job.activity_at_ms:
        if time.monotonic() >= resend_at:  # the dialog ignored it: it never saw the key
            panes.driver.send_key_names(pane_id, keys)
            break
        time.sleep(POLL_SEC)
    return "keys " + " ".join(keys), lambda: not dialog_shown()


def _by_meaning(
    panes: Panes,
    question: Question,
    reply: Answer,
    pane_id: str,
    reread: Callable[[], Job],
    rules: Sequence[ScreenRule],
    replaced: Replaced = _unheard,
) -> tuple[str, Callable[[], bool]]:
    """The option meaning ``reply`` chosen (selection.py); its Enter sent once more if
    the same list still shows with the marker on it after RESEND_AFTER_SEC (a key
    Codex dropped): the same option of the same list, so the same answer. Confirmed
    when the dialog answered has left: no question on screen, or another one (Claude
    Code 2.1.332 follows a "no" with an offer to make auto mode the default), which
    ``replaced`` is told of once (another rule's question: the same rule's next
    dialog comes with its own signal)."""
    job = question.job

    def read() -> Sequence[str]:
        return panes.driver.capture(pane_id, SCREEN_LINES)

    asked = match_screen(job.agent, rules, read())

    told: list[Observation] = []

    def moved_on() -> bool:
        now = match_screen(job.agent, rules, read())
        if now is not None and asked is not None and now.source != asked.source and not told:
            told.append(now)
            replaced(now)
        return now is None or now != asked

    moved = output_counter(panes.pane_log(job.job_id))
    screen = read()
    words = question.adapter.answer_words
    how = answer_by_meaning(
        read,
        lambda names: panes.driver.send_key_names(pane_id, names, seen_live=True),
        reply,
        words,
        moved=moved,
        first=screen,
    )
    before = read_dialog(screen)
    plan = plan_answer(before, reply, words) if before is not None else None
    chosen = plan.option.text if isinstance(plan, AnswerPlan) else None

    def answered(screen: Sequence[str]) -> bool:
        now = read_dialog(screen)
        same = before is not None and now is not None and now.options == before.options
        return not (same and now is not None and now.marked.text == chosen)

    if (
        wait_for_screen(read, answered, RESEND_AFTER_SEC, moved) is None
        and reread().activity_at_ms == job.activity_at_ms
    ):
        panes.driver.send_key_names(pane_id, ("Enter",), seen_live=True)
    return how, moved_on

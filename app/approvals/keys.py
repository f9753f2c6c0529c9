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
from collections.abc import Callable
from typing import Protocol

from app.agents.screen import match_screen
from app.approvals.errors import NotWaitingForPermission
from app.approvals.question import Question
from app.approvals.selection import answer_by_meaning
from app.tmux.driver import TmuxDriver
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


class Panes(Protocol):
    """What typing needs of the orchestrator."""

    @property
    def driver(self) -> TmuxDriver: ...

    def pane_for_job(self, job_id: str) -> str | None: ...


def type_answer(
    panes: Panes,
    question: Question,
    reply: Answer,
    reread: Callable[[], Job],
    grace_sec: float = DIALOG_GRACE_SEC,
) -> tuple[str, Callable[[], bool]]:
    """Type ``reply``'s keys into the job's dialog once it is on screen (again, once,
    if the dialog ignored them). Returns how ("keys y Enter") and a check that the
    dialog has left the screen, for the confirmation. ``reread``: the job as the
    registry has it now."""
    job = question.job
    keys = question.adapter.keys.answer(reply)
    pane_id = panes.pane_for_job(job.job_id)
    if pane_id is None or not panes.driver.pane_alive(pane_id):
        raise NotWaitingForPermission(f"job {job.job_id} has no live agent pane to answer in")
    rules = [rule for rule in question.adapter.screen_rules if rule.activity == Activity.WAITING]

    def dialog_shown() -> bool:
        seen = match_screen(job.agent, rules, panes.driver.capture(pane_id, SCREEN_LINES))
        return seen is not None

    deadline = time.monotonic() + grace_sec
    while not dialog_shown():
        if time.monotonic() >= deadline:
            raise NotWaitingForPermission(
                f"job {job.job_id}: its pane {pane_id} shows no question; not typing into it"
            )
        time.sleep(POLL_SEC)
    time.sleep(SETTLE_SEC)
    if question.adapter.selection_list:
        answered = match_screen(job.agent, rules, panes.driver.capture(pane_id, SCREEN_LINES))
        how = answer_by_meaning(
            lambda: panes.driver.capture(pane_id, SCREEN_LINES),
            lambda names: panes.driver.send_key_names(pane_id, names),
            reply,
            question.adapter.answer_words,
        )

        def moved_on() -> bool:
            """The dialog answered left: no question, or another one (Claude Code 2.1.332
            follows a "no" with an offer to make auto mode the default)."""
            now = match_screen(job.agent, rules, panes.driver.capture(pane_id, SCREEN_LINES))
            return now is None or now != answered

        return how, moved_on
    panes.driver.send_key_names(pane_id, keys)
    resend_at = time.monotonic() + RESEND_AFTER_SEC
    while dialog_shown() and reread().activity_at_ms == job.activity_at_ms:
        if time.monotonic() >= resend_at:  # the dialog ignored it: it never saw the key
            panes.driver.send_key_names(pane_id, keys)
            break
        time.sleep(POLL_SEC)
    return "keys " + " ".join(keys), lambda: not dialog_shown()

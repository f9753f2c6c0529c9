"""A question that takes the answered one's place: Claude Code 2.1.332 follows a "no"
(and a turn in manual mode) with "Make auto mode your default permission mode?",
which no hook reports. On a real registry: the hook's answered wait no longer
outranks it, the screen then agrees with it, a newer signal is never overwritten,
and once the offer is declined the idle screen wins as any screen does. The real
CLI runs are in tests/agents/test_claude_latest.py and the self-test."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.approvals.answer import _next_question
from app.approvals.confirm import NEXT_MOVE_SEC, confirm
from app.supervision.observer import SCREEN_CONFIRM_SEC, AgentObserver
from app.tmux.models import PaneStatus
from registry.activity import Observation
from registry.jobs import Registry
from registry.records import Job
from registry.vocabulary import Activity

OFFER = "Make auto mode your default permission mode?"
RECORDED = Path(__file__).parents[1] / "fixtures" / "agents" / "claude" / "recorded"
HOOK_WAIT = Observation(
    Activity.WAITING,
    "hook:claude:PermissionRequest",
    question="Allow Bash?",
    tool="Bash",
    command="touch done.txt",
)
IDLE_2_1_332 = (RECORDED / "idle-manual-mode-2.1.332.txt").read_text(encoding="utf-8")
OFFER_2_1_332 = (RECORDED / "auto-mode-offer-after-no-2.1.332.txt").read_text(encoding="utf-8")


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def asking(registry: Registry) -> Job:
    """A running Claude job whose permission hook waits on a command."""
    job = registry.register("create done.txt", "claude", "alpha")
    registry.set_status(job.job_id, "running", "picked")
    registry.observe(job.job_id, HOOK_WAIT)
    return registry.get(job.job_id)


def offer_on_screen() -> Observation:
    return Observation(Activity.WAITING, "screen:claude.auto_mode_offer", question=OFFER)


def test_the_screen_alone_never_replaces_a_hooks_wait(registry: Registry) -> None:
    """Without an answer, the offer's screen says less than the hook (no command): the
    hook's wait stays (a screen that only repeats a hook never wins)."""
    job = asking(registry)
    assert registry.observe(job.job_id, offer_on_screen()) is None
    assert registry.get(job.job_id).activity_source == HOOK_WAIT.source


def test_the_question_after_an_answer_takes_the_answered_ones_place(registry: Registry) -> None:
    job = asking(registry)
    time.sleep(0.005)  # an answer takes longer than a millisecond: the wait's new mark
    _next_question(registry, job, offer_on_screen())
    now = registry.get(job.job_id)
    assert now.waiting and (now.activity_data or {}).get("question") == OFFER
    assert "command" not in (now.activity_data or {})  # the hook's command is over
    assert "Claude Code control room after the answer, screen rule claude.auto_mode_offer" in (
        registry.why(job.job_id)
    )
    # the screen showing the same offer is no change; the bell's mark is the new wait
    assert registry.observe(job.job_id, offer_on_screen()) is None
    assert now.activity_at_ms != job.activity_at_ms


def test_a_newer_signal_is_never_overwritten(registry: Registry) -> None:
    """The agent moved on before the answer saw the next question (a hook spoke): what
    it said stands."""
    job = asking(registry)
    registry.observe(job.job_id, Observation(Activity.WORKING, "hook:claude:PostToolUse"))
    _next_question(registry, job, offer_on_screen())
    assert registry.get(job.job_id).activity == Activity.WORKING


def test_the_declined_offer_leaves_the_job_idle(registry: Registry, tmp_path: Path) -> None:
    """Observed from the recorded 2.1.332 screens: the offer agrees with the recorded
    wait; once it is gone the idle prompt wins after SCREEN_CONFIRM_SEC."""
    job = asking(registry)
    _next_question(registry, job, offer_on_screen())
    shown = {"lines": OFFER_2_1_332.splitlines()}
    observer = AgentObserver(lambda _pane: shown["lines"])
    log = tmp_path / "pane.log"
    log.write_bytes(b"offer")
    start = time.time()

    def look(at: float) -> None:
        verdict = observer.look(
            registry.get(job.job_id),
            PaneStatus("%1", exists=True, dead=False),
            log,
            at,
            started_at=0.0,
            worked=lambda: True,
        )
        for seen in verdict.observations:
            registry.observe(job.job_id, seen)

    look(start)
    look(start + SCREEN_CONFIRM_SEC)
    assert registry.get(job.job_id).activity_source.startswith("control-room:")  # type: ignore[union-attr]
    shown["lines"] = IDLE_2_1_332.splitlines()
    log.write_bytes(b"offer declined, prompt drawn")
    look(start + 2 * SCREEN_CONFIRM_SEC)
    look(start + 3 * SCREEN_CONFIRM_SEC + 0.1)
    after = registry.get(job.job_id)
    assert after.activity == Activity.IDLE and not after.needs_person


class Moving:
    """A registry whose job moves on at ``moves_at`` (monotonic)."""

    def __init__(self, job: Job, moves_at: float) -> None:
        self.job, self.moves_at = job, moves_at

    def get(self, job_id: str) -> Job:
        if time.monotonic() >= self.moves_at:
            return Job(
                **{**self.job.__dict__, "activity_at_ms": (self.job.activity_at_ms or 0) + 1}
            )
        return self.job


def test_confirmation_looks_on_after_the_dialog_left(registry: Registry) -> None:
    """`orchestrate answer`: the dialog left the screen, and the next question is drawn
    a moment later: the screen is read on (its check records the question), and the
    registry's word within NEXT_MOVE_SEC confirms it."""
    job = asking(registry)
    reads: list[float] = []

    def screen_moved_on() -> bool:
        reads.append(time.monotonic())
        return True

    started = time.monotonic()
    moving = Moving(job, started + NEXT_MOVE_SEC / 2)
    done = confirm(
        moving, job.job_id, job.activity_at_ms, timeout=5, screen_moved_on=screen_moved_on
    )
    assert (done.recorded, done.delivered) == (True, True)
    assert len(reads) > 2  # read on after the first "moved on"
    unmoved = confirm(Moving(job, started + 60), job.job_id, job.activity_at_ms, timeout=5,
                      screen_moved_on=lambda: True)  # fmt: skip
    assert (unmoved.recorded, unmoved.delivered) == (False, True)
    assert time.monotonic() - started < 5  # settled after NEXT_MOVE_SEC, not the deadline

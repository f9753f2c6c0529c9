"""The control room's bell and title count what needs a person, not only what takes an
answer: a job stopped at an auto-mode block, and one whose screen nothing explains
(`unknown`), ring once and are counted in the title, as `status --tmux` and the
background watcher count them (registry/waiting_count.py STUCK); going back to work
takes them out of the count. Driven through the app with Pilot."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.tui.app import ControlRoomApp
from app.tui.needs_you import SignalSettings
from registry.vocabulary import Activity
from tests.tui.fake_source import FakeSource, fixed_clock
from tests.tui.memory_source import FIXED_NOW
from tests.tui.tui_helpers import loaded, wait_until

SIZE = (120, 40)
WAITING = "7b0e99a1"  # codex, waiting at startup (the demo data)
WORKING = "3fa2c1d0"  # claude, running


def signal_app(fake: FakeSource) -> ControlRoomApp:
    return ControlRoomApp(
        fake,
        clock=fixed_clock,
        poll_interval_s=0.05,
        age_refresh_s=3600,
        signals=SignalSettings(),
    )


def sent(app: ControlRoomApp) -> list[str]:
    return [what for _, what in app.signals.sent]


def set_activity(fake: FakeSource, job_id: str, activity: str, detail: str) -> None:
    """The job's agent moved to ``activity``, as a supervision pass records it."""
    with fake.lock:
        fake.seq += 1
        job = fake.jobs[job_id]
        fake._put(
            replace(
                job, activity=activity, progress_detail=detail, updated_at=FIXED_NOW,
                state_since=FIXED_NOW,
            )
        )  # fmt: skip


@pytest.mark.parametrize(
    ("activity", "detail"),
    [
        (Activity.BLOCKED, "auto mode blocked `rm -rf build`"),
        (Activity.UNKNOWN, "no screen rule explains its screen: Wollen Sie fortfahren?"),
    ],
)
async def test_a_stuck_job_rings_and_is_counted_in_the_title(
    activity: Activity, detail: str
) -> None:
    fake = FakeSource.seeded()
    app = signal_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        assert sent(app).count("bell") == 1  # the job found waiting on opening
        assert sent(app)[-1] == "title orchestrate (1 waiting)"

        set_activity(fake, WORKING, activity, detail)
        await wait_until(pilot, lambda: "title orchestrate (2 waiting)" in sent(app))
        assert sent(app).count("bell") == 2
        assert app.main.waiting_jobs == 1  # answerable: the header's and inbox's count

        set_activity(fake, WORKING, Activity.WORKING, "")
        await wait_until(pilot, lambda: sent(app)[-1] == "title orchestrate (1 waiting)")
        assert sent(app).count("bell") == 2


async def test_an_idle_job_does_not_ring() -> None:
    fake = FakeSource.seeded()
    app = signal_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        polls = app.polls_applied
        set_activity(fake, WORKING, Activity.IDLE, "")
        await wait_until(pilot, lambda: app.polls_applied > polls)
        assert sent(app).count("bell") == 1 and sent(app)[-1] == "title orchestrate (1 waiting)"

"""The look of the permission inbox and of the main screen's waiting panel, pinned
like the other screens (120x40, fixed clock, the demo data plus a second waiting
job). Regenerate with `pytest tests/tui --snapshot-update`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from app.tui.app import ControlRoomApp
from tests.tui.fake_source import FakeSource
from tests.tui.memory_source import FIXED_NOW
from tests.tui.test_snapshots import after

SIZE = (120, 40)
Snap = Callable[..., bool]


def two_waiting(fake: FakeSource, make_app: Callable[[], ControlRoomApp]) -> ControlRoomApp:
    """The demo data's waiting job, asked 4 minutes ago, and a second one 45 s ago."""
    fake.emit("5f4e3d2c", "permission_required", "Bash `npm test -- --watch=false`")
    for job_id, ago in (("7b0e99a1", timedelta(minutes=4)), ("5f4e3d2c", timedelta(seconds=45))):
        fake.jobs[job_id] = replace(fake.jobs[job_id], state_since=FIXED_NOW - ago)
    return make_app()


def test_main_screen_with_two_jobs_waiting(
    snap_compare: Snap, fake: FakeSource, make_app: Callable[[], ControlRoomApp]
) -> None:
    """The waiting panel above the jobs: both jobs, what they ask, the keys."""
    assert snap_compare(two_waiting(fake, make_app), terminal_size=SIZE, run_before=after())


def test_inbox(
    snap_compare: Snap, fake: FakeSource, make_app: Callable[[], ControlRoomApp]
) -> None:
    """`w`, then tab to the second job: its question in full and the keys that answer."""
    app = two_waiting(fake, make_app)
    assert snap_compare(app, terminal_size=SIZE, run_before=after("w", "tab"))

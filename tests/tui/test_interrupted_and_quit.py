"""Pilot tests: interrupted jobs in the control room (shown, counted, brought back with
one key) and quitting a control room that started demo agents."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from app.tui.app import ControlRoomApp
from app.tui.widgets.header_bar import HeaderBar
from app.tui.widgets.jobs_table import JobsTable
from tests.tui.fake_source import FakeSource, fixed_clock
from tests.tui.tui_helpers import loaded, notices, select, wait_until

AppFactory = Callable[[], ControlRoomApp]
REASON = "its tmux server is gone (a reboot, or tmux kill-server)"


def interrupt(fake: FakeSource, *job_ids: str) -> None:
    """What the supervisor records when a job's pane vanished with the tmux server."""
    with fake.lock:
        fake.seq += 1
        for job_id in job_ids:
            job = fake.jobs[job_id]
            fake._put(replace(job, activity="interrupted", progress_detail=REASON))


def status_cell(app: ControlRoomApp, job_id: str) -> str:
    """The state word of the job's row (its glyph left out)."""
    table = app.main.query_one("#jobs", JobsTable)
    return str(table.get_row(job_id)[1]).split()[-1]


def header(app: ControlRoomApp) -> str:
    return app.main.query_one(HeaderBar).render().plain


async def test_an_interrupted_job_says_so_with_its_reason_and_is_counted(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """A running job whose pane is gone reads `interrupted` (not `running`), its reason
    where its progress was, and the header counts it."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        assert "interrupted" not in header(app)
        interrupt(fake, "3fa2c1d0", "5f4e3d2c")
        await wait_until(pilot, lambda: status_cell(app, "3fa2c1d0") == "interrupted")
        table = app.main.query_one("#jobs", JobsTable)
        assert REASON in str(table.get_row("3fa2c1d0")[-1])
        assert status_cell(app, "7b0e99a1") == "waiting"  # the others are untouched
        await wait_until(pilot, lambda: "interrupted 2" in header(app), "the header count")


async def test_shift_r_resumes_every_interrupted_job_and_says_which(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """R (the palette's and help's `interrupted`) brings every interrupted job back,
    through the source's one call (`job resume --all-interrupted`'s code)."""
    interrupt(fake, "3fa2c1d0", "5f4e3d2c")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await wait_until(pilot, lambda: "interrupted 2" in header(app))
        await pilot.press("R")
        await wait_until(
            pilot,
            lambda: "Resumed 2 interrupted jobs: 3fa2c1d0, 5f4e3d2c" in notices(app),
            "the resume notice",
        )
        await wait_until(pilot, lambda: status_cell(app, "3fa2c1d0") != "interrupted")
        await wait_until(pilot, lambda: "interrupted" not in header(app))
        await pilot.press("R")
        await wait_until(pilot, lambda: "No interrupted job to resume" in notices(app))


async def test_r_resumes_a_selected_interrupted_job(make_app: AppFactory, fake: FakeSource) -> None:
    """r on an interrupted job resumes it (it is running on record, not errored)."""
    interrupt(fake, "3fa2c1d0")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("r")
        await wait_until(pilot, lambda: ("resume", "3fa2c1d0") in fake.calls)
        await wait_until(pilot, lambda: "Resumed job 3fa2c1d0" in notices(app))


class DemoSource(FakeSource):
    """Records when the demo agents are stopped, and whether the app was still up."""

    def __init__(self) -> None:
        super().__init__()
        self.stopped: list[str] = []
        self.app: ControlRoomApp | None = None
        self.app_running_at_stop: bool | None = None

    def stop_demo(self, job_ids: list[str]) -> int:
        self.stopped = list(job_ids)
        self.app_running_at_stop = self.app is not None and self.app.is_running
        return super().stop_demo(job_ids)


async def test_quitting_stops_the_demo_agents_it_started_then_exits() -> None:
    """q in `watch --demo` stops the demo jobs this app started (and no other), then
    leaves; a control room without demo agents just leaves."""
    source = DemoSource()
    other = source.submit("not a demo", "claude", "alpha")
    app = ControlRoomApp(source, clock=fixed_clock, poll_interval_s=0.05, demo_agents=2)
    source.app = app
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: "Started 2 demo agents" in notices(app))
        demo_ids = list(app.demo_job_ids)
        await pilot.press("q")
        await wait_until(pilot, lambda: not app.is_running, "the app to exit")
    assert source.stopped == demo_ids and len(demo_ids) == 2
    assert source.app_running_at_stop  # stopped before the exit, not after
    assert [source.jobs[job_id].status for job_id in demo_ids] == ["cancelled", "cancelled"]
    assert source.jobs[other].status == "pending"
    assert app.demo_stopped

    plain = DemoSource()
    app = ControlRoomApp(plain, clock=fixed_clock, poll_interval_s=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("q")
        await wait_until(pilot, lambda: not app.is_running, "the app to exit")
    assert plain.stopped == []

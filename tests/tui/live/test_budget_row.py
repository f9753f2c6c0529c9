"""The control room shows a job's spend against its budget in its row and on its page,
and a job its budget paused says why (real SQLite state, the real app under Pilot)."""

from __future__ import annotations

from collections.abc import Callable

from app.tui.app import ControlRoomApp
from app.tui.screens.job_detail import JobDetailScreen
from registry.activity import Observation
from registry.budget import BudgetStore, Spend
from registry.jobs import Registry
from tests.tui.live.live_helpers import jobs_table, select_job, wait_until

SIZE = (140, 40)
MakeApp = Callable[..., ControlRoomApp]


async def test_spend_against_budget_in_the_row_and_on_the_page(
    registry: Registry, make_app: MakeApp
) -> None:
    store = BudgetStore(registry.bus)
    paused = registry.register("spend a lot", "claude", "alpha")
    registry.set_status(paused.job_id, "running", "test")
    store.set_budget(paused.job_id, 500_000)
    store.record_spend(paused.job_id, Spend(530_000))
    why = "budget $0.50 reached ($0.53 spent)"
    registry.observe(paused.job_id, Observation("paused", "budget:claude", question=why))
    calm = registry.register("spend a little", "codex", "beta")
    registry.set_status(calm.job_id, "running", "test")
    store.set_budget(calm.job_id, 2_000_000)
    store.record_spend(calm.job_id, Spend(120_000, measured=True))
    plain = registry.register("no budget", "claude", "gamma")

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        table = jobs_table(app)
        await wait_until(pilot, lambda: plain.job_id in table.jobs, "the rows")
        row = table.jobs[paused.job_id]
        assert row.activity == "paused"
        assert row.progress_detail == f"$0.53 spent (estimated) of $0.50 · {why}"
        assert table.jobs[calm.job_id].progress_detail.startswith("$0.12 spent of $2.00")
        assert "$" not in table.jobs[plain.job_id].progress_detail

        await select_job(pilot, app, paused.job_id)
        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, JobDetailScreen)
        await wait_until(pilot, lambda: screen.detail is not None, "the job page")
        assert screen.detail is not None
        assert f"paused: {why}" in screen.detail.why_text

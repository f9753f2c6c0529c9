"""The jobs table redraws changed cells in place (it bypasses DataTable.update_cell)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from textual.app import App, ComposeResult

from app.tui.source import JobRow
from app.tui.widgets.jobs_table import AGE_INDEX, JobsTable

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def job(n: int, detail: str = "step 1") -> JobRow:
    return JobRow(
        job_id=f"job{n:05d}",
        status="running",
        agent="demo",
        agent_session=f"s{n}",
        created_at=NOW,
        updated_at=NOW,
        last_event="progress",
        progress_detail=detail,
    )


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield JobsTable(id="jobs")


def line_text(table: JobsTable, y: int) -> str:
    return "".join(segment.text for segment in table.render_line(y))


async def test_changed_cell_is_what_is_drawn() -> None:
    """A progress update shows in the drawn row, also after a column had to grow,
    and a detail that looks like markup is shown as written."""
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(JobsTable)
        table.apply([job(n) for n in range(5)], (), NOW)
        await pilot.pause()
        assert "step 1" in line_text(table, 3)  # header, then rows 0, 1, 2
        table.apply([job(2, "step 2")], (), NOW)
        await pilot.pause()
        assert "step 2" in line_text(table, 3) and "step 1" in line_text(table, 2)
        table.apply([job(2, "a much longer [/bold] detail")], (), NOW)
        await pilot.pause()
        assert "a much longer [/bold] detail" in line_text(table, 3)
        table.apply([replace(job(4), status="completed")], (), NOW)
        await pilot.pause()
        assert "completed" in line_text(table, 5)


async def test_new_rows_are_measured_as_they_are_added() -> None:
    """The columns fit a delta's rows when it is applied, without waiting for the
    table's idle pass (which a table gets only after a message of its own)."""
    app = TableApp()
    async with app.run_test(size=(120, 10)):
        table = app.query_one(JobsTable)
        table.apply([job(1, "a detail of twenty-five c")], (), NOW)
        widths = {str(column.key.value): column.content_width for column in table.columns.values()}
        assert (widths["job_id"], widths["session"], widths["progress"]) == (8, 7, 25)
        assert not table._require_update_dimensions  # the idle pass has nothing left


async def test_a_long_label_or_detail_is_clipped_and_missing_events_stay_in_view() -> None:
    """A 40-character session label pushed the columns after it (the ⚠ of missing
    events among them) off an 80-column screen; progress was cut at 28 cells."""
    app = TableApp()
    async with app.run_test(size=(80, 6)) as pilot:
        table = app.query_one(JobsTable)
        long_label = "nowhere-session-with-a-very-long-label-xyz"
        detail = "step 3 of 5: src/api/routes.py and its tests"
        row = replace(job(1, detail), agent_session=long_label, missing_events=1)
        table.apply([row], (), NOW)
        await pilot.pause()
        drawn = line_text(table, 1)
        assert "nowhere-session-with-a-…" in drawn and long_label not in drawn
        assert "⚠ 1" in drawn
    app = TableApp()
    async with app.run_test(size=(120, 6)) as pilot:
        table = app.query_one(JobsTable)
        table.apply([job(1, detail)], (), NOW)
        await pilot.pause()
        assert detail in line_text(table, 1)  # 44 cells: no longer cut at 28


async def test_ages_are_redrawn_and_only_the_changed_cells_are_made_again() -> None:
    """Every `age_refresh_s` the age column is redrawn: a row whose age text moved
    shows the new one, and a row whose age reads the same keeps its cell (a cell
    per row made to compare it stalled the event loop at a thousand rows)."""
    app = TableApp()
    async with app.run_test(size=(120, 10)) as pilot:
        table = app.query_one(JobsTable)
        young = job(1)
        old = replace(job(2), created_at=NOW - timedelta(days=3))
        table.apply([young, old], (), NOW)
        await pilot.pause()
        assert " 3d " in line_text(table, 1) and " 0s " in line_text(table, 2)  # oldest first
        old_cell = table._shown[old.job_id][AGE_INDEX]
        table.refresh_ages(NOW + timedelta(seconds=90))
        await pilot.pause()
        assert " 3d " in line_text(table, 1) and " 1m " in line_text(table, 2)
        assert table._shown[old.job_id][AGE_INDEX] is old_cell

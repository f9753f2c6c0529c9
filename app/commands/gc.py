"""`orchestrate gc`: remove the work trees of jobs merged or discarded more than N days ago."""

from __future__ import annotations

import click

from app.commands.job import emit_json
from app.review.cleanup import DEFAULT_DAYS, collect
from app.review.flow import ReviewFlow
from app.settings import Settings
from app.terminal.output import for_terminal


@click.command()
@click.option(
    "--days",
    type=click.FloatRange(min=0),
    default=DEFAULT_DAYS,
    show_default=True,
    metavar="N",
    help="Only jobs merged or discarded more than N days ago.",
)
@click.option("--dry-run", is_flag=True, help="Say what would go; remove nothing.")
@click.option("--json", "as_json", is_flag=True, help="What was looked at, as JSON.")
@click.pass_obj
def gc(settings: Settings, days: float, dry_run: bool, as_json: bool) -> None:
    """Remove the work trees (and branches) of jobs merged or discarded more than N
    days ago, and list them. A work tree with uncommitted changes is never removed."""
    flow = ReviewFlow(settings)
    flow.follow_jobs()
    results = collect(flow, days, dry_run=dry_run)
    if as_json:
        emit_json([item.to_dict() for item in results], indent=2)
        return
    if not results:
        click.echo(f"(nothing merged or discarded more than {days:g} day(s) ago to remove)")
        return
    for item in results:
        review = item.review
        if item.removed and not dry_run:
            branch = f", branch {review.branch} deleted" if item.branch_deleted else ""
            line = f"removed  {review.job_id}  {review.worktree}{branch}"
        elif item.removed:
            line = f"would remove  {review.job_id}  {review.worktree}"
        else:
            line = f"kept     {review.job_id}  {review.worktree}: {item.reason}"
        click.echo(for_terminal(line))

"""`orchestrate status`: who waits on you, from outside the control room; `--tmux`
prints the one short segment tmux's status line shows (`⚠ 2`).

Reading never creates, migrates or locks anything: a read-only connection, and
no state dir where there was none. The plain `--tmux` form usually never gets
here: app.entry sends it to app.status_line, which prints the same line.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import click

from app.settings import Settings, SettingsError
from app.status_line import calm_problem, open_read_only, segment
from app.terminal.output import cell, dumps
from registry.needs_you import Signal, read_waiting


def _calm_text(value: str) -> str:
    problem = calm_problem(value)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="'--calm'")
    return value


def _failed(error: sqlite3.Error, db_path: Path, busy_timeout_ms: int) -> Exception:
    """The one line a broken, locked or foreign database gets."""
    if "no such table" in str(error):
        return SettingsError(f"{db_path} holds no orchestrate jobs ({error})")
    from bus.db import translate

    return translate(error, db_path, busy_timeout_ms=busy_timeout_ms)


def _age(since_ms: int) -> str:
    seconds = max(0, int(time.time() - since_ms / 1000))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


@click.command()
@click.option("--tmux", "for_tmux", is_flag=True, help="One short segment for tmux's status-right.")
@click.option("--json", "as_json", is_flag=True, help="The waiting jobs as JSON.")
@click.option(
    "--calm",
    default="",
    metavar="TEXT",
    callback=lambda ctx, param, value: _calm_text(value),
    help="With --tmux: what to print when nobody waits (default: nothing).",
)
@click.pass_obj
def status(settings: Settings, for_tmux: bool, as_json: bool, calm: str) -> None:
    """Which jobs wait on you (a permission, a question); `--tmux` for the status line."""
    if for_tmux and as_json:
        raise click.UsageError("--tmux and --json are two different outputs: pick one")
    if calm and not for_tmux:
        raise click.UsageError("--calm only applies with --tmux")
    db_path = settings.db_path
    try:
        if for_tmux:
            click.echo(segment(db_path, settings.busy_timeout_ms, calm))
            return
        conn = open_read_only(db_path, settings.busy_timeout_ms)
        waiting = read_waiting(conn) if conn is not None else []
    except sqlite3.Error as error:
        raise _failed(error, db_path, settings.busy_timeout_ms) from None
    if as_json:
        jobs = [Signal("needs_you", job).payload() for job in waiting]
        click.echo(dumps({"waiting": len(jobs), "jobs": jobs}))
        return
    if not waiting:
        click.echo("Nobody is waiting on you.")
        return
    from registry.wording import counted

    click.echo(f"{counted(len(waiting), 'job')} waiting on you:")
    for job in waiting:
        words = (job.job_id, job.agent, job.agent_session, _age(job.since_ms), job.question)
        click.echo("  " + "  ".join(cell(word) for word in words))
    click.echo("answer: orchestrate answer --job ID yes|no|always (or w in orchestrate watch)")

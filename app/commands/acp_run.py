"""`orchestrate acp-run --job ID ... -- AGENT ARGV`: the first process of an ACP job's
pane (hidden: orchestrate starts it, app/agents/acp.py plans it). It is orchestrate's
ACP client and transcript view for the job: app/agents/acp_session.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from app.commands.workdir import WORKDIR
from app.settings import Settings


@click.command(hidden=True)
@click.option("--job", "job_id", required=True, metavar="ID", help="The ACP job.")
@click.option("--workdir", required=True, type=WORKDIR, help="The session's cwd.")
@click.option(
    "--prompt-file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, readable=True, path_type=Path),
    help="The job's prompt.",
)
@click.option("--agent-log", type=click.Path(dir_okay=False, path_type=Path), help="Agent stderr.")
@click.option("--load-session", metavar="ID", help="Resume this ACP session (session/load).")
@click.argument("agent_argv", nargs=-1, required=True)
@click.pass_obj
def acp_run(
    settings: Settings,
    job_id: str,
    workdir: str,
    prompt_file: Path,
    agent_log: Path | None,
    load_session: str | None,
    agent_argv: tuple[str, ...],
) -> None:
    """Run the job's ACP agent with orchestrate as its client, showing the session."""
    from app.agents import built_in
    from app.agents.acp import Acp
    from app.agents.acp_session import RunOptions, run

    registry = settings.open_registry()
    try:
        job = registry.get(job_id)  # JobNotFound: one line, non-zero
    finally:
        registry.db.close()
    if not isinstance(built_in(job.agent), Acp):
        raise click.UsageError(f"job {job_id} is a {job.agent} job, not an ACP one")
    if load_session is not None and not load_session.strip():
        raise click.UsageError("--load-session must not be empty")
    try:
        prompt = prompt_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"cannot read --prompt-file: {exc}") from None
    options = RunOptions(
        state_dir=settings.state_dir,
        job_id=job.job_id,
        agent=job.agent,
        argv=list(agent_argv),
        workdir=Path(workdir),
        prompt=prompt.rstrip("\n"),
        load_session=load_session,
        agent_log=agent_log,
    )
    sys.exit(run(options, os.environ))

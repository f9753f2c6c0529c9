"""`orchestrate submit`: register a job, start its agent in tmux, wait for it (seed 000 §5.1).

Exit 0 completed, 1 error (the agent's, or its pane died), 2 timeout; with
`--no-wait` it prints the job id and returns at once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from app.agents import adapter_for
from app.agents.versions import VERSION_CACHE, launch_warning
from app.commands.budget_option import BUDGET_HELP, BUDGET_USD, warn_if_day_budgets_broken
from app.commands.job_options import broker_block, job_spec_options, read_prompt
from app.commands.policy import warn_if_broken
from app.commands.workdir import WORKDIR
from app.control import Orchestrator
from app.control.launch import split_command
from app.fleet.placing import NODE_OPTION, placement_line, register_placed, send_placed
from app.review.worktree import WorktreePlan, default_worktree, in_git_repository, plan_worktree
from app.settings import Settings
from registry.budget import BudgetStore
from registry.events import Event
from registry.job_outcome import Verdict

"""In the state dir: each agent executable's --version line, so a job does not wait for it."""


@click.command()
@job_spec_options
@click.option(
    "--agent-cmd",
    metavar="CMD",
    help="Command that runs the agent (shell-like words, never given to a shell): the "
    "prompt goes where a word is {prompt} (as one word) or {prompt_file} (its path), "
    "else it is pasted once the agent is ready. Default: per agent kind.",
)
@click.option(
    "--done-when",
    type=click.Choice(["exit", "idle"]),
    help="When the job is done: the agent exits (0 completes it), or it finished its "
    "turn and stayed idle (the pane is kept). Default: idle for claude, codex, gemini "
    "and aider; exit otherwise.",
)
@click.option(
    "--approvals",
    type=click.Choice(["agent", "control-room"]),
    default="agent",
    show_default=True,
    help="control-room: answers go in structured, no keys typed: Claude Code's "
    "permission hook waits for `orchestrate answer` (or the control room) up to "
    "--approval-wait; Codex runs on an app-server of the job's own, which orchestrate "
    "answers (keys if it does not start).",
)
@click.option(
    "--approval-wait",
    type=click.FloatRange(1, 3600),
    default=120.0,
    show_default=True,
    metavar="SECONDS",
    help="How long a control-room approval waits before the agent's own dialog shows.",
)
@click.option(
    "--workdir", metavar="DIR", type=WORKDIR, help="The agent's working directory (default: here)."
)
@click.option(
    "--worktree/--no-worktree",
    default=None,
    help="Run the agent on its own branch orchestrate/<job> in its own git work tree "
    "(default: $ORCHESTRATE_WORKTREE=auto does inside a git repository).",
)
@click.option("--base", metavar="BRANCH", help="The branch to start from (default: the current).")
@click.option("--no-wait", is_flag=True, help="Print the job id and return at once.")
@click.option("--budget-usd", "budget_usd", type=BUDGET_USD, metavar="USD", help=BUDGET_HELP)
@NODE_OPTION
@click.pass_obj
def submit(
    settings: Settings,
    prompt: str | None,
    prompt_file: Any,
    agent: str,
    agent_session: str,
    agent_cmd: str | None,
    timeout: int,
    idle_timeout: int,
    artifacts: tuple[str, ...],
    workdir: str | None,
    worktree: bool | None,
    base: str | None,
    no_wait: bool,
    no_sign: bool,
    done_when: str | None,
    approvals: str,
    approval_wait: float,
    node: str | None,
    budget_usd: int | None,
) -> None:
    """Register a job, start its agent in a tmux pane, and wait for its end."""
    prompt = read_prompt(prompt, prompt_file)
    if node is not None:
        if budget_usd is not None:
            raise click.UsageError("--budget-usd is for jobs run here, not with --node (yet)")
        if agent_cmd is not None or workdir is not None or worktree or base is not None:
            raise click.UsageError(
                "--node runs the agent on the node's host: not with --agent-cmd, --workdir, "
                "--worktree or --base (yet)"
            )
        created, placement = register_placed(
            settings, node, prompt, agent, agent_session, timeout_sec=timeout,
            idle_timeout_sec=idle_timeout, expected_artifacts=artifacts, sign_events=not no_sign,
            done_when=done_when,
        )  # fmt: skip
        click.echo(created.job_id)
        click.echo(placement_line(placement), err=True)
        send_placed(settings, placement)
        return
    argv = split_command(agent_cmd) if agent_cmd is not None else None
    plan = worktree_request(settings, worktree, base, workdir)
    warn_untested(settings, agent, argv)
    warn_if_broken(settings.state_dir)
    warn_if_day_budgets_broken(settings.state_dir)
    orchestrator = Orchestrator(settings)
    after_seq = orchestrator.registry.bus.latest_seq()
    job = orchestrator.submit(
        prompt,
        agent,
        agent_session,
        agent_cmd=argv,
        timeout_sec=timeout,
        idle_timeout_sec=idle_timeout,
        artifacts=artifacts,
        sign=not no_sign,
        workdir=workdir,
        done_when=done_when,
        approvals=approvals,
        approval_wait_sec=approval_wait,
        broker=broker_block(None, None),
        worktree=plan,
    )
    if budget_usd is not None:
        BudgetStore(orchestrator.registry.bus).set_budget(job.job_id, budget_usd)
    click.echo(job.job_id)
    if no_wait:
        return
    click.echo(
        f"job {job.job_id} started in session {agent_session}; "
        f"watch: {orchestrator.driver.attach_hint(agent_session)}",
        err=True,
    )

    def show(event: Event, verdict: Verdict) -> None:
        if verdict in ("new", "terminal"):
            detail = f": {event.detail}" if event.detail else ""
            click.echo(f"[{event.job_id}] {event.event}{detail}", err=True)

    from app.control.submit_wait import wait_for_job

    outcome = wait_for_job(
        orchestrator,
        job.job_id,
        after_seq=after_seq,
        timeout_sec=timeout,
        idle_timeout_sec=idle_timeout,
        on_event=show,
    )
    if outcome.status == "timeout":
        click.echo(
            f"orchestrate: job {job.job_id} timed out: {outcome.reason} "
            f"(still {orchestrator.registry.get(job.job_id).status}; "
            f"`orchestrate job cancel --job {job.job_id}` to stop it)",
            err=True,
        )
    elif outcome.status == "error":
        click.echo(f"orchestrate: job {job.job_id} failed: {outcome.reason}", err=True)
    elif outcome.status == "cancelled":
        click.echo(f"orchestrate: job {job.job_id} cancelled: {outcome.reason}", err=True)
    else:
        click.echo(f"job {job.job_id} completed", err=True)
        if plan is not None:
            click.echo(f"review it: orchestrate review show {job.job_id}", err=True)
    raise click.exceptions.Exit(outcome.exit_code)


def worktree_request(
    settings: Settings, flag: bool | None, base: str | None, workdir: str | None
) -> WorktreePlan | None:
    """The checked work-tree request (refusals here, before anything is stored):
    --worktree, else the ORCHESTRATE_WORKTREE=auto setting inside a git repository."""
    directory = Path(workdir or Path.cwd())
    if flag is None and base is None:
        return default_worktree(settings, directory)
    if flag is None:
        flag = settings.worktree == "auto" and in_git_repository(directory)
    if not flag:
        if base is not None:
            raise click.UsageError("--base needs --worktree (or ORCHESTRATE_WORKTREE=auto)")
        return None
    return plan_worktree(directory, base)


def warn_untested(settings: Settings, agent: str, argv: list[str] | None) -> None:
    """One line on stderr when the agent's installed version is outside the versions its
    adapter is tested on: the job still runs, but its dialogs may be misread."""
    adapter = adapter_for(agent, settings.state_dir, os.environ)
    cache = settings.state_dir / VERSION_CACHE
    warning = launch_warning(adapter.kind, adapter.executable, adapter.tested_versions, argv, cache)
    if warning:
        click.echo(warning, err=True)

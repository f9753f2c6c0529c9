"""`orchestrate job ...`: the registry by hand (seed 001 §6), exit 0 ok, 1 not found /
bad status / illegal move, 3 nothing to pick."""

from __future__ import annotations

import dataclasses
import getpass
import sys
from datetime import UTC, datetime
from typing import Any

import click

from app.commands.budget_option import BUDGET_USD
from app.commands.job_options import broker_block, job_spec_options, read_prompt
from app.commands.json_option import ALWAYS_JSON_OPTION
from app.fleet.options import WAIT_OPTION
from app.fleet.placing import (
    NODE_OPTION,
    placement_line,
    placement_why,
    register_placed,
    send_placed,
)
from app.settings import Settings
from app.terminal.output import cell, dumps, shown
from registry.errors import InvalidJobInput
from registry.fleet_commands import new_command
from registry.records import DEFAULT_PREFIX, Job, ingest_prefix_for
from registry.states import BY_HAND
from registry.vocabulary import FleetVerb


def emit_json(value: Any, *, indent: int | None = None) -> None:
    """JSON on stdout, flushed so pipes see it at once."""
    sys.stdout.write(dumps(value, indent=indent) + "\n")
    sys.stdout.flush()


JOB_OPTION = click.option("--job", "job_id", required=True, metavar="ID", help="The job id.")


def checked_broker_host(
    _ctx: click.Context, _param: click.Parameter, host: str | None
) -> str | None:
    """--broker as given, refused when blank: an empty host is no broker at all, and
    was then blamed on --port ("--port needs --broker HOST") or silently ignored."""
    if host is not None and not host.strip():
        raise InvalidJobInput("--broker must not be empty (a HOST; leave it out for $MQTT_BROKER)")
    return host


@click.group()
def job() -> None:
    """Register, list, pick and move delegated jobs."""


@job.command()
@job_spec_options
@click.option(
    "--broker",
    metavar="HOST",
    callback=checked_broker_host,
    help="MQTT broker for this job (default: $MQTT_BROKER).",
)
@click.option("--port", type=int, metavar="N", help="MQTT broker port.")
@click.option(
    "--topic-prefix",
    metavar="TOPIC",
    help="Default: jobs/<job_id> (the control room ingests jobs/+/events).",
)
@NODE_OPTION
@click.pass_obj
def register(
    settings: Settings,
    prompt: str | None,
    prompt_file: Any,
    agent: str,
    agent_session: str,
    timeout: int,
    idle_timeout: int,
    artifacts: tuple[str, ...],
    no_sign: bool,
    broker: str | None,
    port: int | None,
    topic_prefix: str | None,
    node: str | None,
) -> None:
    """Register a pending job; prints its job_id."""
    if node is not None:
        if broker or port or topic_prefix:
            raise click.UsageError("--node: the node's own broker carries the job's events")
        created_on, placement = register_placed(
            settings, node, read_prompt(prompt, prompt_file), agent, agent_session,
            timeout_sec=timeout, idle_timeout_sec=idle_timeout, expected_artifacts=artifacts,
            sign_events=not no_sign,
        )  # fmt: skip
        click.echo(created_on.job_id)
        click.echo(placement_line(placement), err=True)
        send_placed(settings, placement)
        return
    registry = settings.open_registry()
    created = registry.register(
        read_prompt(prompt, prompt_file),
        agent,
        agent_session,
        timeout_sec=timeout,
        idle_timeout_sec=idle_timeout,
        expected_artifacts=artifacts,
        broker=broker_block(broker, port),
        sign_events=not no_sign,
        topic_prefix=topic_prefix,
    )
    click.echo(created.job_id)
    if created.broker is not None and topic_prefix is not None:
        warn_if_no_bridge(created)


def warn_if_no_bridge(job: Job) -> None:
    """Say so when the control room's bridge will not hear this job's MQTT events.

    Not an error: ``orchestrate subscribe`` follows any topic, and a second
    ``orchestrate ingest --prefix`` can carry a prefix of two levels or more.
    """
    reach = ingest_prefix_for(job.topic_prefix)
    if reach == DEFAULT_PREFIX:
        return
    listens = f"the control room ingests {DEFAULT_PREFIX}/+/events, not {job.events_topic}"
    if reach is None:
        advice = f"no `orchestrate ingest` can; use a prefix like {DEFAULT_PREFIX}/<name>"
    else:
        advice = f"run `orchestrate ingest --prefix {reach}` to record this job's MQTT events"
    click.echo(f"orchestrate: warning: {listens}; {advice}", err=True)


@job.command("list")
@click.option("--json", "as_json", is_flag=True, help="Full records as a JSON array.")
@click.option("--status", metavar="STATUS", help="Only jobs in this status.")
@click.option("--agent-session", metavar="LABEL", help="Only jobs of this session.")
@click.pass_obj
def list_jobs(
    settings: Settings, as_json: bool, status: str | None, agent_session: str | None
) -> None:
    """List jobs, oldest first (a table, or full records with --json)."""
    jobs = settings.open_registry().list(status=status, agent_session=agent_session)
    if as_json:
        emit_json([j.to_dict() for j in jobs], indent=2)
        return
    click.echo(format_table(jobs))


def format_table(jobs: list[Job], now: datetime | None = None) -> str:
    """The human `job list` table."""
    if not jobs:
        return "(no jobs)"
    moment = now or datetime.now(UTC)
    header = (
        "JOB",
        "STATUS",
        "ACTIVITY",
        "AGENT",
        "SESSION",
        "AGE",
        "LAST EVENT",
        "SEQ",
        "RETRIES",
    )
    rows = [header]
    for item in jobs:
        last = item.last_event or "-"
        if item.missing_count:
            last += f" ({item.missing_count} missing)"
        rows.append(
            (
                item.job_id,
                item.status,
                item.activity or "-",
                _cell(item.agent, 20),
                _cell(item.agent_session, 24),
                _age(item.created_at, moment),
                last,
                str(item.last_seq),
                str(item.retry_count),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _cell(text: str, limit: int) -> str:
    flat = cell(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _age(stamp: str, now: datetime) -> str:
    try:
        seconds = int((now - datetime.fromisoformat(stamp)).total_seconds())
    except ValueError:
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


@job.command()
@JOB_OPTION
@click.option("--show-token", is_flag=True, help="Include auth_token and broker password.")
@ALWAYS_JSON_OPTION
@click.pass_obj
def get(settings: Settings, job_id: str, show_token: bool) -> None:
    """Print one job record as JSON (a job run in its own work tree: with its
    repository, base, branch, work tree and review state under "worktree")."""
    from registry.review import ReviewStore

    registry = settings.open_registry()
    record = registry.get(job_id).to_dict(show_token=show_token)
    review = ReviewStore(registry.bus).find(job_id)
    if review is not None:
        keys = ("repo", "base", "base_commit", "branch", "worktree", "workdir", "state")
        record["worktree"] = {key: review.to_dict()[key] for key in keys}
    emit_json(record, indent=2)


@job.command()
@JOB_OPTION
@click.option("--set", "new_status", required=True, metavar="STATUS", help="Target status.")
@click.option("--reason", default="", help="Why (shown by `job why` and `job logs`).")
@click.pass_obj
def status(settings: Settings, job_id: str, new_status: str, reason: str) -> None:
    """Move a job to STATUS through the job state machine."""
    registry = settings.open_registry()
    before = registry.get(job_id).status
    after = registry.set_status(job_id, new_status, reason, transition=BY_HAND)
    click.echo(f"{job_id}: {before} -> {after.status}")


@job.command()
@click.option("--agent-session", required=True, metavar="LABEL")
@click.pass_obj
def pick(settings: Settings, agent_session: str) -> None:
    """Claim the oldest pending job of LABEL (now running); prints its id, or exit 3."""
    click.echo(settings.open_registry().pick(agent_session).job_id)


@job.command()
@JOB_OPTION
@click.option("--reason", default=None, help="Why (default: who cancelled it).")
@WAIT_OPTION
@click.pass_obj
def cancel(settings: Settings, job_id: str, reason: str | None, wait_s: float | None) -> None:
    """Cancel a pending or running job, and stop its agent (its own exit keys, then its
    pane is killed after a grace period), as the control room's c does. A job on a
    fleet node is cancelled here, then its node is told to stop its agent."""
    from app.control import Orchestrator
    from app.fleet import remote

    by = f"{getpass.getuser()} (cli)"
    node = remote.placed_node(settings, job_id)
    if node is not None:
        done = settings.open_registry().cancel(job_id, reason or f"cancelled by {by}")
        why = reason or f"cancelled by {by}"
        command = new_command(node, job_id, FleetVerb.CANCEL, reason=why)
        remote.say(remote.send(settings, command, wait_s), f"{done.status}")
        return
    done = Orchestrator(settings).cancel(job_id, by=by, reason=reason)
    click.echo(f"{job_id}: {done.status}")


@job.command()
@click.option("--job", "job_id", metavar="ID", help="The job id.")
@click.option(
    "--all-interrupted",
    is_flag=True,
    help="Every job whose agent was lost with its pane (tmux killed, a reboot).",
)
@click.option("--reason", default="resumed by user")
@click.option(
    "--budget-usd",
    "budget_usd",
    type=BUDGET_USD,
    metavar="USD",
    help="Raise the job's budget to this (more than it spent) and let a job paused by "
    "its budget go on.",
)
@WAIT_OPTION
@click.pass_obj
def resume(
    settings: Settings,
    job_id: str | None,
    all_interrupted: bool,
    reason: str,
    budget_usd: int | None,
    wait_s: float | None,
) -> None:
    """Start a failed, cancelled or interrupted job again (same id, a new attempt): its
    agent continues its conversation where it can. A job never started in a pane is
    queued again for a worker to pick; a job on a fleet node is resumed by its node.
    With --budget-usd, a running job paused by its budget goes on in its pane."""
    from app.control import OrchestrationError, Orchestrator
    from app.fleet import remote

    if (job_id is None) == (not all_interrupted):
        raise click.UsageError("give --job ID or --all-interrupted (one of them)")
    if budget_usd is not None and job_id is None:
        raise click.UsageError("--budget-usd is for one job: give --job ID")
    if job_id is not None and (node := remote.placed_node(settings, job_id)) is not None:
        again = remote.resume_here(settings, job_id, reason)
        command = new_command(node, job_id, FleetVerb.RESUME, reason=reason)
        remote.say(remote.send(settings, command, wait_s), f"{again.status}")
        return
    orchestrator = Orchestrator(settings)
    if job_id is not None and budget_usd is not None:
        from app.usage.budget_resume import resume_with_budget

        click.echo(shown(resume_with_budget(orchestrator, job_id, budget_usd, reason)))
        return
    if job_id is not None:
        done = orchestrator.resume_job(job_id, reason=reason)
        click.echo(f"{job_id}: {done.status}")
        return
    failed: dict[str, str] = {}
    resumed = orchestrator.resume_interrupted(failed=failed)
    for job in resumed:
        click.echo(f"{job.job_id}: {job.status}")
    if not resumed and not failed:
        click.echo("no interrupted jobs", err=True)
    if failed:  # those resumed are printed above; the rest in one line, exit 1
        raise OrchestrationError(
            "; ".join(f"job {job_id} not resumed: {why}" for job_id, why in failed.items())
        )


@job.command()
@JOB_OPTION
@click.pass_obj
def why(settings: Settings, job_id: str) -> None:
    """Say why a job is in its current state, from its transition history (and, for a
    job run in its own work tree, where its review is and why)."""
    from app.policy.why import decision_line
    from app.review.flow import review_why

    registry = settings.open_registry()
    click.echo(shown(f"{job_id}: {registry.why(job_id)}"))  # quotes agent text
    decided = decision_line(registry.bus, job_id)
    if decided is not None:
        click.echo(shown(f"{job_id} decision: {decided}"))
    placed = placement_why(settings, job_id)
    if placed is not None:
        click.echo(shown(f"{job_id} placement: {placed}"))
    reviewed = review_why(settings, registry, job_id)
    if reviewed is not None:
        click.echo(shown(f"{job_id} review: {reviewed}"))
    from app.usage.budget_resume import budget_why

    spent = budget_why(registry, job_id)
    if spent is not None:
        click.echo(shown(f"{job_id} {spent}"))


@job.command()
@click.argument("job_id", required=False)
@click.option("--tail", type=click.IntRange(min=0), metavar="N", help="Only the last N entries.")
@click.option("--json", "as_json", is_flag=True, help="Raw JSON lines.")
@click.option("--list", "list_all", is_flag=True, help="Every job with an audit log.")
@click.pass_obj
def logs(
    settings: Settings, job_id: str | None, tail: int | None, as_json: bool, list_all: bool
) -> None:
    """Show a job's durable audit log (timeline), or --list every logged job."""
    from registry.audit import AuditLog, format_job_list, format_timeline

    audit = AuditLog(settings.state_dir)
    if list_all and (job_id is not None or tail is not None):  # they were silently ignored
        raise click.UsageError("--list shows every logged job: give it no JOB_ID and no --tail")
    if list_all:
        if as_json:
            for logged in audit.list_jobs():
                emit_json(dataclasses.asdict(logged))
        else:
            click.echo(shown(format_job_list(audit.list_jobs())))
        return
    if job_id is None:
        raise click.UsageError("give a JOB_ID, or --list")
    entries = list(audit.iter_events(job_id, tail=tail))
    if as_json:
        for entry in entries:
            emit_json(entry)
        return
    click.echo(shown(format_timeline(entries)))  # prompts, details: bidi controls kept
    _warn_missing(settings, job_id)


def _warn_missing(settings: Settings, job_id: str) -> None:
    """Say so when the registry knows of event seqs that never arrived."""
    from registry.errors import JobNotFound

    try:
        record = settings.open_registry().get(job_id)
    except JobNotFound:
        return
    if record.missing_count:
        spans = ", ".join(
            str(first) if first == last else f"{first}-{last}"
            for first, last in record.missing_seqs
        )
        click.echo(f"! {record.missing_count} event(s) missing (seq {spans})")

"""`orchestrate subscribe`: follow jobs until each ends or times out (seed 000's job_subscriber).

Each accepted event is one JSON line on stdout; logs and outcomes go to
stderr. Exit 0 when every job completed, 1 if any ended in error or was
cancelled, 2 on a timeout (the worst wins). A local job that ends with no
terminal event (cancelled, set by hand, failed by the control room) ends the
wait too, from its status in the registry.

Where the events come from: a job in the local registry is followed where
its record says (its broker block overlaid by the MQTT_* env, topic
``<topic_prefix>/events``), verified with its own auth_token; a job without
a broker is followed on the SQLite bus. A job that is not in the local
registry (registered on another host) can be followed over MQTT too: the
broker comes from MQTT_*, the topic is ``jobs/<id>/events`` and the token
from ORCHESTRATE_JOB_TOKEN, which therefore covers one such job at most.
Events are never accepted unverified from MQTT for a signing job.
"""

from __future__ import annotations

import math
import os
import sys
import time

import click

from app.commands.json_option import ALWAYS_JSON_OPTION
from app.settings import JOB_TOKEN_ENV, Settings
from app.terminal.output import json_text
from bus.mqtt import resolve_broker
from registry.errors import InvalidJobInput, JobNotFound
from registry.event_trust import WatchedJob
from registry.events import is_job_id
from registry.job_outcome import JobWaiter, RegistryWatchingWaiter
from registry.jobs import Registry
from registry.mqtt_source import FedEvent, JobEventFeed
from registry.records import DEFAULT_IDLE_TIMEOUT_SEC, DEFAULT_TIMEOUT_SEC, MAX_TIMEOUT_SEC, Job


def watched_job(registry: Registry, job_id: str, env_token_used: list[str]) -> WatchedJob:
    """How to follow ``job_id``: from its local record, else from the env (see module doc)."""
    try:
        job: Job | None = registry.get(job_id)
    except JobNotFound:
        job = None
    if job is not None:
        broker = resolve_broker(os.environ, job.broker) if job.broker is not None else None
        return WatchedJob(job.job_id, job.events_topic, job.auth_token, broker, job.seq_floor)
    if not is_job_id(job_id):
        raise InvalidJobInput(f"{job_id!r} is not a job id (8 lowercase hex digits)")
    token = os.environ.get(JOB_TOKEN_ENV)
    broker = resolve_broker(os.environ, None)
    if not token or broker is None:
        raise JobNotFound(
            f"no job {job_id!r} in {registry.db.state_dir}; to follow a job registered "
            f"elsewhere set MQTT_BROKER and {JOB_TOKEN_ENV} (its auth_token)"
        )
    if env_token_used:
        raise InvalidJobInput(
            f"{JOB_TOKEN_ENV} can verify one job not in the local registry, not "
            f"{env_token_used[0]} and {job_id}"
        )
    env_token_used.append(job_id)
    return WatchedJob(job_id, f"jobs/{job_id}/events", token, broker)


def default_seconds(jobs: list[Job], attribute: str, fallback: int) -> float:
    """The largest per-job value among the local records, else the seed's default."""
    return float(max((getattr(job, attribute) for job in jobs), default=fallback))


def finite_seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Refuse NaN, which FloatRange lets through (every comparison with it is false)
    and whose deadline never comes: the timeout would be silently off."""
    if value is not None and math.isnan(value):
        raise click.BadParameter("must be a number of seconds, not nan", ctx, param)
    return value


SECONDS = click.FloatRange(0, MAX_TIMEOUT_SEC, min_open=True)


@click.command()
@click.option("--job", "job_ids", multiple=True, required=True, metavar="ID", help="Repeatable.")
@click.option(
    "--timeout",
    type=SECONDS,
    callback=finite_seconds,
    help=f"Wall-clock seconds (default: the jobs' timeout, else {DEFAULT_TIMEOUT_SEC}).",
)
@click.option(
    "--idle-timeout",
    type=SECONDS,
    callback=finite_seconds,
    help=f"Seconds without an event (default: the jobs', else {DEFAULT_IDLE_TIMEOUT_SEC}).",
)
@ALWAYS_JSON_OPTION
@click.pass_context
def subscribe(
    ctx: click.Context,
    job_ids: tuple[str, ...],
    timeout: float | None,
    idle_timeout: float | None,
) -> None:
    """Follow jobs' events until each ends: exit 0 completed, 1 error or cancelled, 2 timeout."""
    settings: Settings = ctx.obj
    registry = settings.open_registry()
    ids = list(dict.fromkeys(job_ids))
    env_token_used: list[str] = []
    jobs = [watched_job(registry, job_id, env_token_used) for job_id in ids]
    local = [registry.get(job.job_id) for job in jobs if job.job_id not in env_token_used]
    waiter = RegistryWatchingWaiter(
        registry,
        ids,
        local_ids=[job.job_id for job in local],
        timeout_sec=timeout or default_seconds(local, "timeout_sec", DEFAULT_TIMEOUT_SEC),
        idle_timeout_sec=idle_timeout
        or default_seconds(local, "idle_timeout_sec", DEFAULT_IDLE_TIMEOUT_SEC),
    )
    feed = JobEventFeed(
        jobs,
        bus_factory=settings.open_bus,
    )
    try:
        with feed:
            follow(feed, waiter)
        if all(outcome.status != "timeout" for outcome in waiter.outcomes.values()):
            feed.forget_sessions()
    finally:
        feed.close()
    for outcome in waiter.outcomes.values():
        seq = f" (seq {outcome.event.seq})" if outcome.event is not None else ""
        reason = f": {outcome.reason}" if outcome.reason else ""
        ended = "timed out" if outcome.status == "timeout" else outcome.status
        click.echo(f"orchestrate: job {outcome.job_id} {ended}{seq}{reason}", err=True)
    ctx.exit(waiter.exit_code)


def follow(feed: JobEventFeed, waiter: JobWaiter, patience_s: float = 3.0) -> None:
    """Feed ``waiter`` until it is done, printing each new event as a JSON line.

    Says on stderr once every broker is subscribed (events flow from then on),
    and once if one cannot be reached within ``patience_s`` (paho keeps retrying).
    """
    announced = warned = False
    started = time.monotonic()
    while not waiter.check_deadlines():
        if not announced and feed.connected:
            announced = True
            where = ", ".join(sorted({sub.config.url for sub in feed.subscribers}))
            where = where + (" and " if where and feed.bus_jobs else "")
            where += "the SQLite bus" if feed.bus_jobs else ""
            ids = ", ".join(sorted(waiter.job_ids))
            click.echo(f"orchestrate: following {ids} on {where}", err=True)
        elif not announced and not warned and time.monotonic() - started > patience_s:
            warned = True
            for sub in feed.subscribers:
                if sub.last_error:
                    click.echo(f"orchestrate: {sub.last_error}; retrying", err=True)
        fed = feed.get(timeout=0.1)
        if fed is not None:
            handle(fed, waiter)


def handle(fed: FedEvent, waiter: JobWaiter) -> None:
    """Offer one event; print it if it was news; ack it to the broker once printed."""
    verdict = waiter.offer(fed.event)
    if verdict in ("new", "terminal"):
        sys.stdout.write(json_text(fed.event.to_bytes().decode("utf-8")) + "\n")
        sys.stdout.flush()
    fed.ack()

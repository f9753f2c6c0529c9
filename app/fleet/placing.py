"""``--node NAME|any`` on `submit` and `job register`: register the job and place it.

The job is registered ``pending`` and its placement recorded in the same transaction
(``registry/placement.py``), so no job is ever half-placed. It does not start here:
its node takes it, sent a signed ``take`` at once when the broker is configured here
(``send_placed``) and again by the control room's ingest bridge at each announcement
of the node until the node reports the job (``registry/fleet_feed.py``).
"""

from __future__ import annotations

from typing import Any, Final

import click

from app.settings import Settings
from registry.errors import InvalidJobInput
from registry.fleet_commands import SentCommands
from registry.placement import ANY_NODE, Placement, PlacementStore, check_requested, placed_node
from registry.records import Job


def _checked(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return check_requested(value)
    except InvalidJobInput as exc:
        raise click.BadParameter(str(exc)) from None


NODE_OPTION: Final = click.option(
    "--node",
    metavar="NAME|any",
    callback=_checked,
    help=f"Run it on fleet node NAME, or {ANY_NODE!r} online node with the agent and a free "
    "slot (`orchestrate nodes`); with none it waits, pending (`job why`).",
)


def register_placed(
    settings: Settings, node: str, prompt: str, agent: str, agent_session: str, **job: Any
) -> tuple[Job, Placement]:
    """Register a pending job for ``node`` and choose its node now if one can take it."""
    registry = settings.open_registry()
    placements = PlacementStore(registry.bus)
    with registry.db.transaction():
        created = registry.register(prompt, agent, agent_session, **job)
        placement = placements.request(created.job_id, node, agent)
    return created, placement


def placement_line(placement: Placement) -> str:
    """What the command says on stderr about the placement."""
    return f"job {placement.job_id}: {placement.why()}"


def placement_why(settings: Settings, job_id: str) -> str | None:
    """`job why`'s line about the job's placement, and the last command sent to its
    node and what the node said of it (None: it was not placed)."""
    registry = settings.open_registry()
    if not placed_node(registry.db.conn, job_id)[0]:
        return None  # read only: `job why` of a local job changes nothing
    placement = PlacementStore(registry.bus).get(job_id)
    if placement is None:
        return None
    last = SentCommands(registry.db).last(job_id)
    return placement.why() + (f"; last command: {last.line()}" if last is not None else "")


def send_placed(settings: Settings, placement: Placement) -> None:
    """Send a job placed now to its node, and say so on stderr (a waiting job, or no
    broker here: the ingest bridge sends it when the node announces itself)."""
    from bus.mqtt_config import BrokerConfig

    if placement.node is None:
        return
    if BrokerConfig.from_env() is None:
        click.echo(
            f"job {placement.job_id}: no MQTT_BROKER here; the control room sends it to "
            f"{placement.node} at its next announcement",
            err=True,
        )
        return
    from app.fleet.remote import send_take

    sent = send_take(settings, placement.job_id, placement.node)
    click.echo(f"job {placement.job_id}: sent to node {placement.node} "
               f"(command {sent.command.id})", err=True)  # fmt: skip

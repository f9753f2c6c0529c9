"""`orchestrate nodes`: the fleet's nodes as this control room heard them (registry/nodes.py).

The table is fed by the ingest bridge (the control room, or `orchestrate ingest`)
from the nodes' retained presence; this command only reads it.
"""

from __future__ import annotations

import click

from app.commands.json_option import JSON_OPTION
from app.settings import Settings
from app.terminal.output import cell, dumps
from bus.db import now_ms
from registry.nodes import Node, NodeStore


def _row(node: Node, at_ms: int) -> str:
    left = node.left or "silent"
    state = "online" if node.online else ("stale" if node.stale else f"offline ({left})")
    agents = ",".join(
        f"{kind} {version}" if version else kind for kind, version in node.agents.items()
    )
    seen = f"{(at_ms - node.last_seen_ms) / 1000:.0f}s ago" if node.last_seen_ms else "never"
    load = f"{node.load[0]:.2f}"
    slots = f"{node.slots_used}/{node.slots}"
    return f"{cell(node.name):16} {state:18} {slots:>6} {load:>6} {seen:>10}  {cell(agents) or '-'}"


@click.command()
@JSON_OPTION
@click.pass_obj
def nodes(settings: Settings, as_json: bool) -> None:
    """List the fleet's nodes: online, agents, slots used/free, load, last seen."""
    bus = settings.open_bus()
    try:
        found = NodeStore(bus).nodes()
    finally:
        bus.db.close()
    if as_json:
        click.echo(dumps([node.to_dict() for node in found]))
        return
    if not found:
        click.echo("no nodes heard of (is the control room or `orchestrate ingest` running?)")
        return
    at_ms = now_ms()
    click.echo(f"{'NODE':16} {'STATE':18} {'SLOTS':>6} {'LOAD':>6} {'LAST SEEN':>10}  AGENTS")
    for node in found:
        click.echo(_row(node, at_ms))

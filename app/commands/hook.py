"""`orchestrate hook AGENT`: the command an agent's hooks run (help text only: `app.entry`
runs it before click is imported, see app/agents/hook.py)."""

from __future__ import annotations

import sys

import click


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("agent")
@click.argument("payload", nargs=-1)
def hook(agent: str, payload: tuple[str, ...]) -> None:
    """Record an agent's hook event (JSON on stdin) for the pane's job. Installed per
    job by orchestrate itself; always exits 0 and never blocks the agent."""
    from app.agents.hook import main

    sys.exit(main([agent, *payload]))

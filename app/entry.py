"""The `orchestrate` executable: starts the CLI with the cyclic garbage collector off.

A run begins by importing a hundred-odd modules (click, paho, sqlite3, the
registry). Those imports allocate many objects and no garbage cycles, so the
collector's passes over them are pure startup cost: about 5 ms of a one-shot
`orchestrate publish`, which an agent runs once per event. ``app.cli`` turns
the collector back on before any command that runs for long (everything but
``ONE_SHOT_COMMANDS``).
"""

from __future__ import annotations

import gc
import sys


def main() -> None:
    """Entry point of the `orchestrate` console script and of `python -m app`.

    `orchestrate hook AGENT` skips click altogether: it runs inside an agent's
    turn, once per hook event, and must never fail (see app.agents.hook). So does
    the plain `orchestrate status --tmux`, which tmux runs every status-interval
    (app.status_line; any other form goes on to click).
    """
    gc.disable()
    if sys.argv[1:2] == ["hook"]:
        from app.agents.hook import main as run_hook

        sys.exit(run_hook(sys.argv[2:]))
    if "--tmux" in sys.argv[1:6]:
        from app.status_line import main as status_line

        code = status_line(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    from app.cli import main as run_cli

    run_cli()

"""``--json`` on every command that prints records.

A script should be able to pass ``--json`` to any command whose output is records
(``job list`` took it, ``job get`` refused it though it printed JSON anyway).
Commands with a human form too take :data:`JSON_OPTION` (the flag chooses the
form); commands whose only form is JSON take :data:`ALWAYS_JSON_OPTION`, which is
accepted and changes nothing, so the command's signature stays as it was.
"""

from __future__ import annotations

from typing import Final

import click

JSON_OPTION: Final = click.option(
    "--json", "as_json", is_flag=True, help="Full records as JSON instead of a table."
)
"""``--json`` for a command with a human form: the function takes ``as_json``."""

ALWAYS_JSON_OPTION: Final = click.option(
    "--json",
    "as_json",
    is_flag=True,
    expose_value=False,
    help="JSON (the only form this command prints; taken for scripts that always pass it).",
)
"""``--json`` for a command that only prints JSON: accepted, and changes nothing."""

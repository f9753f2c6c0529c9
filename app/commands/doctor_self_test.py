"""`orchestrate doctor --self-test [AGENT...]`: which agents to test, and what to print.

The run itself is app/selftest/run.py; here the names are checked (an unknown or
uninstalled agent is one line and a non-zero exit, before anything starts), and the
verdicts are printed: a table per agent, or one JSON object per agent, and a last
line on stderr naming what broke.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from app.agents import built_in, built_in_kind
from app.selftest.result import SelfTest
from app.selftest.wiring import WIRINGS
from app.terminal.output import cell, dumps, shown


def chosen_agents(names: Sequence[str], hints: dict[str, str]) -> dict[str, str]:
    """Agent kind -> installed executable, for each name (every installed kind when
    none is named). Refuses an unknown name (click.UsageError) or one not installed
    (click.ClickException), so nothing starts on a typo."""
    if not names:
        found = {kind: path for kind in WIRINGS if (path := installed(kind)) is not None}
        if not found:
            raise click.ClickException(
                f"no agent CLI to self-test is installed (none of {', '.join(WIRINGS)} on PATH)"
            )
        return found
    chosen: dict[str, str] = {}
    for name in names:
        kind = built_in_kind(name)
        if kind not in WIRINGS:
            raise click.UsageError(
                f"unknown agent {name!r} for --self-test (one of {', '.join(WIRINGS)})"
            )
        assert kind is not None
        path = installed(kind)
        if path is None:
            raise click.ClickException(
                f"{kind} is not installed (no `{kind}` on PATH): {hints.get(kind, '')}".rstrip(": ")
            )
        chosen[kind] = path
    return chosen


def installed(kind: str) -> str | None:
    """The agent's executable on PATH: the one the user runs, whatever its version."""
    adapter = built_in(kind)
    return shutil.which(adapter.executable) if adapter is not None else None


def run_self_tests(
    agents: dict[str, str], versions: dict[str, str], as_json: bool, rules: Path | None = None
) -> None:
    """Self-test each agent in turn, print its verdict as it comes, and exit 1 naming
    every signal that broke. ``rules``: the user's screen rules file, tested too."""
    from app.selftest.run import self_test

    results: list[SelfTest] = []
    for kind, path in agents.items():
        if not as_json:
            click.echo(shown(f"self-testing {kind} {versions[kind]} ({path}) offline ..."))
        result = self_test(kind, path, rules=rules)
        results.append(result)
        if as_json:
            click.echo(dumps(as_record(result, versions[kind])))
        else:
            print_table(result, versions[kind])
    broken = [f"{r.agent} ({', '.join(r.broken)})" for r in results if not r.ok]
    if broken:
        click.echo(shown(f"orchestrate doctor: self-test broke: {'; '.join(broken)}"), err=True)
        raise click.exceptions.Exit(1)


def as_record(result: SelfTest, version: str) -> dict[str, object]:
    """One agent's verdict as JSON: its signals by name."""
    return {
        "agent": result.agent,
        "executable": result.executable,
        "version": version,
        "ok": result.ok,
        "seconds": round(result.seconds, 1),
        "signals": {
            str(signal): {"ok": check.ok, "detail": check.detail}
            for signal, check in result.checks.items()
        },
    }


def print_table(result: SelfTest, version: str) -> None:
    """A signal a line: what it is, ok / BROKEN / -, and what was seen (agent text made
    harmless: Text cells are never markup, `cell` shows hidden characters)."""
    verdict = "works" if result.ok else "BROKEN"
    title = Text(f"{result.agent} {cell(version)}: {verdict} ({result.seconds:.0f} s)")
    table = Table(title=title, title_justify="left")
    table.add_column("signal")
    table.add_column("result")
    table.add_column("seen")
    for signal, check in result.checks.items():
        table.add_row(Text(str(signal)), Text(check.word), Text(cell(check.detail)))
    Console(soft_wrap=False, highlight=False).print(table)

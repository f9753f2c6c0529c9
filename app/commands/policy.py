"""`orchestrate policy`: try the approval policy on a question (`check`) or on the
questions of a past period (`replay`) before it answers anyone's agents."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import click

from app.policy.decide import Question, Verdict, decide
from app.policy.rules import (
    SHELL_TOOLS,
    TRUST,
    Policy,
    PolicyError,
    broken_policy_line,
    load_policy,
    policy_path,
)
from app.settings import Settings
from app.terminal.output import shown
from registry.vocabulary import PolicyDecision

MAX_HOURS = 24 * 366
MAX_ARGUMENT = 64 * 1024


@click.group()
def policy() -> None:
    """The approval policy: <state dir>/policy.toml, or --policy FILE."""


def warn_if_broken(state_dir: Path) -> None:
    """One line on stderr when the policy is broken (`watch`, `submit`, `doctor`):
    the person would otherwise wonder why every question still asks."""
    line = broken_policy_line(state_dir, os.environ)
    if line is not None:
        click.echo(shown(f"orchestrate: {line}"), err=True)


def current_policy(settings: Settings) -> Policy:
    """The policy in force; PolicyError (one line, exit 1) when there is none to try."""
    path, named = policy_path(settings.state_dir, os.environ)
    loaded = load_policy(path, named=named)
    if loaded.problem is not None:
        raise PolicyError(f"the policy cannot be used, so every question asks: {loaded.problem}")
    if loaded.policy is None:
        raise PolicyError(f"no policy file at {path}: every question asks")
    return loaded.policy


def describe(verdict: Verdict) -> str:
    """The decision and what made it: "allow by policy rule 'tests'"."""
    if verdict.source is None:
        return f"{verdict.decision}: {verdict.reason} (a person is asked)"
    about = f": {verdict.reason}" if verdict.reason else ""
    return f"{verdict.decision} by {verdict.by}{about}"


@policy.command()
@click.option("--agent", required=True, metavar="KIND", help="The agent kind (claude, codex, …).")
@click.option("--tool", required=True, metavar="TOOL", help='"shell", or a tool name (Edit, …).')
@click.option("--command", "command", metavar="C", help="The shell command (shell tools).")
@click.option("--path", metavar="P", help="The file a file tool touches.")
@click.option(
    "--workdir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="The job's work tree: paths and redirections are judged against it.",
)
@click.pass_obj
def check(
    settings: Settings,
    agent: str,
    tool: str,
    command: str | None,
    path: str | None,
    workdir: Path,
) -> None:
    """Print what the policy decides for one question, and the rule that decides it."""
    for name, value in (("--agent", agent), ("--tool", tool), ("--command", command)):
        if value is not None and (not value.strip() or len(value) > MAX_ARGUMENT):
            raise click.UsageError(f"{name} must be non-empty text of {MAX_ARGUMENT} at most")
    if tool == TRUST:
        raise click.UsageError("trust is decided per job (its work tree and repository), not here")
    if tool in SHELL_TOOLS and command is None:
        raise click.UsageError(f"a shell question needs --command (tool {tool!r})")
    if tool not in SHELL_TOOLS and command is not None:
        raise click.UsageError("--command is for shell tools (--tool shell)")
    if path is not None and (tool in SHELL_TOOLS or not path.strip() or "\x00" in path):
        raise click.UsageError("--path is the file a file tool touches (not for --tool shell)")
    rules = current_policy(settings)
    question = Question(agent, tool, command or "", path or "", workdir.resolve(), Path.cwd())
    from app.policy.reviewer import run_reviewer

    verdict = decide(rules, question, lambda asked: run_reviewer(rules.reviewer, asked))
    click.echo(shown(describe(verdict)))


@policy.command()
@click.option(
    "--hours",
    type=click.FloatRange(min=0, min_open=True, max=MAX_HOURS),
    default=24.0,
    show_default=True,
    help="The period replayed: the questions asked in the last H hours.",
)
@click.pass_obj
def replay(settings: Settings, hours: float) -> None:
    """Run the policy over the questions agents asked in the last H hours and print
    what it would have decided, each with its rule. It answers nothing."""
    from app.policy.replay import replay as run_replay
    from app.policy.replay import tally
    from registry.questions import questions_since

    rules = current_policy(settings)
    registry = settings.open_registry()
    since_ms = int((time.time() - hours * 3600) * 1000)
    replayed = run_replay(rules, questions_since(registry.db.conn, since_ms), settings.state_dir)
    for item in replayed:
        asked = item.asked
        moment = datetime.fromtimestamp(asked.at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
        about = f"{asked.tool} `{asked.command}`" if asked.command else asked.question
        click.echo(
            shown(f"{moment}  {asked.job_id}  {asked.agent}  {about}  ->  {_said(item.verdict)}")
        )
    click.echo(tally(replayed).line())


def _said(verdict: Verdict) -> str:
    if verdict.source is None and verdict.decision is PolicyDecision.ASK:
        return f"ask: {verdict.reason}"
    return describe(verdict)

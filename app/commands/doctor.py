"""`orchestrate doctor`: which agent CLIs are installed, their versions, and whether
orchestrate's hooks work for them (run for real, on a throwaway registry)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click

from app.agents import built_in_adapters
from app.agents.env import orchestrate_command
from app.agents.user_rules import UserRules, load_user_rules
from app.agents.versions import untested_warning
from app.settings import HOME_ENV, JOB_ENV, Settings
from registry.vocabulary import JobStatus

PROBE_PROMPT = "doctor's probe"
# What each agent's hook sends at the end of a turn (Codex's notify: as its last
# argument), and the activity it means.
HOOK_PROBES: dict[str, tuple[dict[str, object], str]] = {
    "claude": ({"hook_event_name": "Stop", "session_id": "doctor"}, "idle"),
    "gemini": ({"hook_event_name": "AfterAgent", "session_id": "doctor"}, "idle"),
    "qwen": ({"hook_event_name": "Stop", "session_id": "doctor"}, "idle"),
    "codex": (
        {"type": "agent-turn-complete", "thread-id": "doctor", "input-messages": [PROBE_PROMPT]},
        "idle",
    ),
}
IN_ARGV = {"codex"}
SIGNALS = {
    "claude": "hooks (per-job --settings), screen rules",
    "codex": "OSC 7501 status in its output, notify, screen rules",
    "gemini": "hooks (per-job GEMINI_CLI_HOME layer), screen rules",
    "aider": "screen rules",
    "acp": "the ACP session (orchestrate is its client: acp-run)",
    "gemini-acp": "the ACP session (orchestrate is its client: acp-run)",
    "qwen": "hooks (per-job QWEN_HOME layer), screen rules",
    "qwen-acp": "the ACP session (orchestrate is its client: acp-run)",
}


@dataclass(frozen=True)
class Check:
    agent: str
    path: str | None
    version: str
    hooks: str
    ok: bool
    approvals: str = "keys only"
    tested: str = "?"
    """The versions the adapter is tested on (app/agents/versions.py)."""
    warning: str | None = None
    """Why this version may be misread: outside the tested ones."""


INSTALL_HINTS = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "codex": "npm install -g @openai/codex",
    "gemini": "npm install -g @google/gemini-cli",
    "aider": "pipx install aider-chat (Python < 3.13)",
    "acp": "any ACP agent: submit --agent acp --agent-cmd 'AGENT --acp'",
    "gemini-acp": "npm install -g @google/gemini-cli",
    "qwen": "npm install -g @qwen-code/qwen-code",
    "qwen-acp": "npm install -g @qwen-code/qwen-code",
}


def version_of(argv: list[str], env: dict[str, str] | None = None) -> str:
    """The first line a version command prints (or why there is none)."""
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=20, check=False, env=env
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"? ({exc.__class__.__name__})"
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0].strip()[:60] if lines else "?"


def probe_hook(kind: str) -> tuple[bool, str]:
    """Run `orchestrate hook KIND` as the agent would, on a throwaway registry."""
    from registry.jobs import Registry

    payload, expected = HOOK_PROBES[kind]
    with tempfile.TemporaryDirectory(prefix="orchestrate-doctor-") as directory:
        state = Path(directory) / "state"
        registry = Registry.open(state)
        job = registry.register(PROBE_PROMPT, kind, "doctor")
        registry.set_status(job.job_id, JobStatus.RUNNING, PROBE_PROMPT)
        env = {**os.environ, HOME_ENV: str(state), JOB_ENV: job.job_id}
        argv = [*orchestrate_command(), "hook", kind]
        if kind in IN_ARGV:
            argv.append(json.dumps(payload))
        started = time.perf_counter()
        result = subprocess.run(
            argv,
            input="" if kind in IN_ARGV else json.dumps(payload),
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
            check=False,
        )
        took_ms = (time.perf_counter() - started) * 1000
        seen = registry.get(job.job_id).activity
        registry.db.close()
    if result.returncode != 0 or seen != expected:
        return False, f"FAILED (exit {result.returncode}, activity {seen})"
    return True, f"ok ({took_ms:.0f} ms a call)"


def checks() -> list[Check]:
    found = []
    for adapter in built_in_adapters():
        kind = adapter.kind
        if kind == "demo":
            continue
        path = shutil.which(adapter.executable) if adapter.executable else None
        version = version_of([path, "--version"]) if path else "not installed"
        if not adapter.executable:  # the acp kind: any agent, its command given at submit
            version = "any ACP agent"
        ok, hooks = probe_hook(kind) if kind in HOOK_PROBES else (True, "not used")
        tested = adapter.tested_versions
        found.append(
            Check(
                kind,
                path,
                version,
                hooks,
                ok,
                approvals_of(kind, path),
                tested=str(tested) if tested else "?",
                warning=untested_warning(kind, tested, version) if path else None,
            )
        )
    return found


def approvals_of(kind: str, path: str | None) -> str:
    """How `submit --approvals control-room` answers this agent."""
    if kind in ("claude", "qwen"):
        return "control-room: permission hook"
    if kind in ("acp", "gemini-acp", "qwen-acp"):
        return "always by decision: session/request_permission"
    if kind != "codex":
        return "keys only"
    if path is None:
        return "keys only (not installed)"
    try:
        result = subprocess.run(
            [path, "app-server", "--help"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return "keys only (its app-server does not answer)"
    if "unix://" in result.stdout + result.stderr:
        return "control-room: app-server (unix socket)"
    return "keys only (its app-server has no unix socket)"


def user_rules() -> UserRules:
    """The user's screen rules file, as supervision will read it (never raises)."""
    settings = click.get_current_context().find_object(Settings)
    return load_user_rules(settings.state_dir if settings is not None else None)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per agent.")
@click.option(
    "--self-test",
    "self_test",
    is_flag=True,
    help="Run each installed agent (or each AGENT) offline through orchestrate and say "
    "which of its signals work with this version.",
)
@click.argument("agents", nargs=-1, metavar="[AGENT]...")
def doctor(as_json: bool, self_test: bool, agents: tuple[str, ...]) -> None:
    """Say which agent CLIs are installed, their versions, and whether hooks work."""
    if agents and not self_test:
        raise click.UsageError("AGENT names are for --self-test")
    from app.commands.policy import warn_if_broken

    settings = click.get_current_context().find_object(Settings)
    if settings is not None:
        warn_if_broken(settings.state_dir)
    if self_test:
        run_self_test(agents, as_json)
        return
    results = checks()
    for check in results:
        if check.warning:
            click.echo(check.warning, err=True)
    rules = user_rules()
    if rules.problem:
        click.echo(f"orchestrate: warning: {rules.describe()}", err=True)
    if as_json:
        for check in results:
            click.echo(json.dumps(check.__dict__))
    else:
        tmux = shutil.which("tmux")
        tmux_version = version_of([tmux, "-V"]) if tmux else "NOT INSTALLED: apt-get install tmux"
        click.echo(f"tmux     {tmux_version}")
        click.echo(rules.describe())
        for check in results:
            click.echo(f"{check.agent:8} {check.version} (tested {check.tested})")
            if check.path is None:
                click.echo(f"         install: {INSTALL_HINTS[check.agent]}")
            else:
                click.echo(f"         {check.path}")
            click.echo(
                f"         state from {SIGNALS[check.agent]}; orchestrate hook: {check.hooks}"
            )
            click.echo(f"         approvals: {check.approvals}")
    if not all(check.ok for check in results):
        raise click.exceptions.Exit(1)


def run_self_test(agents: tuple[str, ...], as_json: bool) -> None:
    """`doctor --self-test`: check the names first, warn for untested versions, run."""
    from app.agents import built_in
    from app.commands.doctor_self_test import chosen_agents, run_self_tests
    from app.selftest.offline import base_env

    chosen = chosen_agents(agents, INSTALL_HINTS)
    for tool, hint in (("tmux", "apt-get install tmux"), ("git", "apt-get install git")):
        if shutil.which(tool) is None:
            raise click.ClickException(f"the self-test needs {tool}: {hint}")
    with tempfile.TemporaryDirectory(prefix="orchestrate-st-home-") as home:
        # even `gemini --version` writes a ~/.gemini: asked with a throwaway home
        env = base_env(Path(home))
        versions = {kind: version_of([path, "--version"], env) for kind, path in chosen.items()}
    for kind, version in versions.items():
        adapter = built_in(kind)
        tested = adapter.tested_versions if adapter is not None else None
        warning = untested_warning(kind, tested, version)
        if warning:
            click.echo(warning, err=True)
    rules = user_rules()  # the user's fixes are tested too; a broken file is said once
    if rules.problem:
        click.echo(f"orchestrate: warning: {rules.describe()}", err=True)
    run_self_tests(chosen, versions, as_json, rules.path if rules.rules else None)

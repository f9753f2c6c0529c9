"""The pane runner: the first process of every agent pane, which starts the agent
without a shell (``app/control/launch.py`` plans a job's start; this runs it).

tmux runs ``python -m app.agents.pane_runner SPEC``. The runner waits until the
pane is piped to its log, reads the launch spec (argv, the exact environment,
where the prompt is) and deletes it (it holds the job's token), prints the
header, and runs the agent with the prompt as one argv word, as a file path, or
pasted through tmux's paste buffer once the agent's screen is ready. It records
the agent's exit status, because tmux 3.3 may not reap a fast-exiting child.

Nothing in the spec is ever given to a shell: the argv list goes to exec as is.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app.agents.base import APP_SERVER, PROMPT_FILE_WORD, PROMPT_WORD
from app.agents.env import SECRET_NAMES
from app.agents.settings_files import write_json
from app.settings import JOB_ENV
from registry.vocabulary import Activity

PASTE_READY_TIMEOUT_SEC = 30.0
PASTE_SETTLE_SEC = 0.5
ENTER_AFTER_PASTE_SEC = 0.4
"""Codex and Gemini take an Enter that comes in the same burst as a paste as a newline."""
NOT_FOUND_STATUS = 127


@dataclass
class LaunchSpec:
    """Everything the pane runner needs, written by the orchestrator as private JSON."""

    job_id: str
    agent: str
    state_dir: str
    argv: list[str]
    env: dict[str, str]
    prompt_file: str
    deliver: str
    header: str
    channel: str
    exit_file: str
    paste_text_file: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def write(self, path: Path) -> Path:
        return write_json(path, asdict(self))

    @classmethod
    def read(cls, path: Path) -> LaunchSpec:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**data)


def window_command(spec_path: Path) -> str:
    """The pane's command line: this Python running the pane runner on ``spec_path``.
    Only quoted paths: tmux gives it to a shell."""
    return shlex.join([sys.executable, "-m", "app.agents.pane_runner", str(spec_path)])


def delivery_of(argv: Sequence[str]) -> str:
    """How a command line takes its prompt: as a word, as a file, or not at all
    (then only a paste, asked for explicitly, brings it)."""
    if PROMPT_WORD in argv:
        return "argv"
    if PROMPT_FILE_WORD in argv:
        return "file"
    return "none"


def final_argv(argv: Sequence[str], prompt_file: Path) -> list[str]:
    """The argv with the prompt placed: ``{prompt}`` becomes the text, one word;
    ``{prompt_file}`` the file's path."""
    words = []
    for word in argv:
        if word == PROMPT_WORD:
            words.append(prompt_file.read_text(encoding="utf-8").rstrip("\n"))
        elif word == PROMPT_FILE_WORD:
            words.append(str(prompt_file))
        else:
            words.append(word)
    return words


def agent_environment(spec_env: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """The pane's own environment without secrets, the spec's laid over it, and what
    tmux set for this pane (TERM, TMUX, TMUX_PANE) kept.

    The pane's own comes from tmux's global environment, i.e. from whichever
    process started the tmux server: it may hold another job's token or the
    broker password, which no agent may inherit.
    """
    env = {
        name: value
        for name, value in own.items()
        if name not in SECRET_NAMES and not name.startswith(JOB_ENV)
    }
    env.update(spec_env)
    env.update({name: own[name] for name in ("TERM", "TMUX", "TMUX_PANE") if own.get(name)})
    return env


def tmux(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """One tmux command on this pane's server ($TMUX tells which)."""
    return subprocess.run(
        [shutil.which("tmux") or "tmux", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def capture(pane: str) -> list[str]:
    result = tmux("capture-pane", "-p", "-t", pane)
    return result.stdout.splitlines() if result.returncode == 0 else []


def wait_until_ready(spec: LaunchSpec, pane: str, deadline: float) -> None:
    """Until the agent's screen says idle (its rules), or has settled after output."""
    from app.agents import adapter_for
    from app.agents.screen import match_screen

    adapter = adapter_for(spec.agent, Path(spec.state_dir))
    rules = [rule for rule in adapter.screen_rules if rule.activity == Activity.IDLE]
    last: list[str] = []
    settled_since = time.monotonic()
    while time.monotonic() < deadline:
        lines = capture(pane)
        seen = match_screen(spec.agent, rules, lines) if rules else None
        if seen is not None and seen.activity == Activity.IDLE:
            return
        if lines != last:
            last, settled_since = lines, time.monotonic()
        elif (
            not rules
            and any(line.strip() for line in lines)
            and time.monotonic() - settled_since >= PASTE_SETTLE_SEC
        ):
            return
        time.sleep(0.1)


def paste(spec: LaunchSpec, pane: str, text_file: Path) -> None:
    """Paste the prompt as a bracketed paste, wait, then Enter (never send-keys of text)."""
    buffer = f"orchestrate-{spec.job_id}"
    # Without its last newline: that would submit it, and the Enter after it would
    # then answer whatever the agent asks next.
    text = text_file.read_text(encoding="utf-8").rstrip("\n")
    tmux("load-buffer", "-b", buffer, "-", stdin=text)
    tmux("paste-buffer", "-p", "-d", "-b", buffer, "-t", pane)
    time.sleep(ENTER_AFTER_PASTE_SEC)
    tmux("send-keys", "-t", pane, "Enter")


def deliver_later(spec: LaunchSpec, text_file: Path) -> threading.Thread | None:
    """Paste the prompt from a thread once the agent is ready (the agent owns the pane)."""
    pane = os.environ.get("TMUX_PANE", "")
    if not pane:
        return None

    def run() -> None:
        try:
            wait_until_ready(spec, pane, time.monotonic() + PASTE_READY_TIMEOUT_SEC)
            paste(spec, pane, text_file)
        except Exception as exc:  # a failed paste must never take the agent down
            print(f"orchestrate: could not paste the prompt: {exc}", file=sys.stderr)

    thread = threading.Thread(target=run, name="paste-prompt", daemon=True)
    thread.start()
    return thread


def with_companion(
    spec: LaunchSpec, env: Mapping[str, str], prompt_file: Path
) -> tuple[list[str], Any]:
    """The agent's argv, and the companion process to stop after it, if its plan has
    one (Codex's own app-server under --approvals control-room). A companion that
    does not start leaves the agent on its own, with the plan's fallback argv."""
    wanted = spec.extra.get(APP_SERVER)
    if not isinstance(wanted, dict):
        return final_argv(spec.argv, prompt_file), None
    from app.agents.codex_bridge import AppServerCompanion

    companion = AppServerCompanion(
        [str(word) for word in wanted["argv"]],
        Path(wanted["socket"]),
        env,
        state_dir=spec.state_dir,
        job_id=spec.job_id,
        log_path=Path(wanted["log"]),
    )
    why = companion.start()
    if why is None:
        return final_argv(spec.argv, prompt_file), companion
    print(f"orchestrate: {why}; its approvals are answered with keys", file=sys.stderr, flush=True)
    return final_argv(wanted["fallback_argv"], prompt_file), None


def _leave(signum: int, _frame: object) -> None:
    """Leave through the `finally` that stops the companion, with a shell's status."""
    raise SystemExit(128 + signum)


def record_exit(path: Path, status: int) -> None:
    with contextlib.suppress(OSError):
        path.write_text(f"{status}\n", encoding="utf-8")


def run(spec_path: Path) -> int:
    """Wait for pipe-pane, read and remove the spec, start the agent, return its status."""
    # A handler, not SIG_IGN: the agent (our child) must still get C-c.
    signal.signal(signal.SIGINT, lambda *_: None)
    spec = LaunchSpec.read(spec_path)
    tmux("wait-for", spec.channel)
    spec_path.unlink(missing_ok=True)  # it holds the job's token
    if spec.header:
        print(spec.header, flush=True)
    prompt_file = Path(spec.prompt_file)
    env = agent_environment(spec.env, os.environ)
    argv, companion = with_companion(spec, env, prompt_file)
    if companion is not None:
        # tmux killed (a hangup) or the pane's group ended (SIGTERM): the companion goes
        # too. Codex's app-server catches SIGHUP and would live on without its TUI.
        for signum in (signal.SIGHUP, signal.SIGTERM):
            signal.signal(signum, _leave)
    if spec.deliver == "paste" and (spec.paste_text_file or spec.prompt_file):
        deliver_later(spec, Path(spec.paste_text_file or spec.prompt_file))
    try:
        status = subprocess.run(argv, env=env, check=False).returncode
    except FileNotFoundError:
        print(f"orchestrate: command not found: {argv[0]}", file=sys.stderr)
        status = NOT_FOUND_STATUS
    except PermissionError:
        print(f"orchestrate: cannot run {argv[0]}: permission denied", file=sys.stderr)
        status = 126
    finally:
        if companion is not None:
            companion.stop()
    if status < 0:  # killed by a signal: as a shell reports it
        status = 128 - status
    record_exit(Path(spec.exit_file), status)
    return status


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m app.agents.pane_runner SPEC", file=sys.stderr)
        sys.exit(2)
    sys.exit(run(Path(args[0])))


if __name__ == "__main__":
    main()

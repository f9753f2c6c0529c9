"""The demo agent's own CLI: a simulated coding agent for tmux panes that prints work
and reports through `orchestrate publish` (its adapter is ``app/agents/demo.py``, as
``claude.py`` is the claude CLI's).

Run as `python -m app.agents.demo_cli [PROMPT_FILE]` (the prompt comes from the file,
else from stdin). It is what `orchestrate demo` and the end-to-end tests drive:
it behaves like a real agent, asking y/n permission on its terminal when told to.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from app.settings import JOB_ENV
from registry.vocabulary import Answer, EventType

PUBLISH_CMD_ENV = "ORCHESTRATE_DEMO_PUBLISH_CMD"

_VERBS = ("Reading", "Analysing", "Editing", "Refactoring", "Testing", "Linting", "Typing")
_FILES = (
    "src/app.py",
    "src/models.py",
    "src/api/routes.py",
    "tests/test_models.py",
    "README.md",
    "src/utils/strings.py",
    "pyproject.toml",
)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Flags, each defaulting from an ORCHESTRATE_DEMO_* variable so a pane's env can set them."""
    env = os.environ
    parser = argparse.ArgumentParser(prog="python -m app.agents.demo_cli", description=__doc__)
    parser.add_argument("prompt_file", nargs="?", help="read the prompt from this file")
    parser.add_argument("--job", default=env.get(JOB_ENV), help="job id to report")
    parser.add_argument("--steps", type=int, default=int(env.get("ORCHESTRATE_DEMO_STEPS", "4")))
    parser.add_argument(
        "--delay", type=float, default=float(env.get("ORCHESTRATE_DEMO_DELAY", "0.5"))
    )
    parser.add_argument(
        "--ask-permission",
        action="store_true",
        default=_env_flag("ORCHESTRATE_DEMO_ASK"),
        help="ask y/n on the terminal half-way through",
    )
    parser.add_argument(
        "--fail",
        action="store_true",
        default=_env_flag("ORCHESTRATE_DEMO_FAIL"),
        help="end with an error event and exit status 1",
    )
    parser.add_argument("--seed", type=int, default=int(env.get("ORCHESTRATE_DEMO_SEED", "0")))
    parser.add_argument(
        "--publish-cmd",
        default=env.get(PUBLISH_CMD_ENV),
        help="command replacing `orchestrate publish` (shell words, split with shlex)",
    )
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.delay < 0:
        parser.error("--delay must not be negative")
    return args


class Reporter:
    """Runs `orchestrate publish` (or its test stand-in) for each event, like a real agent."""

    def __init__(self, job_id: str | None, publish_cmd: str | None) -> None:
        self.job_id = job_id
        self.prefix = (
            shlex.split(publish_cmd) if publish_cmd else [sys.executable, "-m", "app", "publish"]
        )

    def publish(self, event: str, detail: str, data: dict[str, object] | None = None) -> bool:
        """Publish one event; a failure is printed, not fatal, as a real agent would carry on."""
        if not self.job_id:
            print(f"[demo] no ORCHESTRATE_JOB: not publishing {event}", file=sys.stderr)
            return False
        argv = [
            *self.prefix,
            "--job",
            self.job_id,
            "--event",
            event,
            "--detail",
            detail,
            "--data",
            json.dumps(data or {}, sort_keys=True),
        ]
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            print(f"[demo] publish {event} failed: {error}", file=sys.stderr)
            return False
        if result.returncode != 0:
            reason = (result.stderr.strip().splitlines() or ["no message"])[-1]
            print(f"[demo] publish {event} failed: {reason}", file=sys.stderr)
            return False
        return True


def read_prompt(prompt_file: str | None) -> str:
    """The prompt, from the file argument, else all of stdin."""
    if prompt_file:
        return Path(prompt_file).read_text(encoding="utf-8", errors="replace")
    if sys.stdin.isatty():
        return ""
    return sys.stdin.read()


def open_answer_source(prompt_from_stdin: bool) -> TextIO:
    """Where y/n answers are typed: the terminal when stdin carried the prompt."""
    if not prompt_from_stdin:
        return sys.stdin
    try:
        return open("/dev/tty", encoding="utf-8")  # held for the whole run
    except OSError:
        return sys.stdin


def ask(question: str, answers: TextIO, out: TextIO) -> bool | None:
    """Print a y/n prompt and wait for a line; None when the input ends."""
    while True:
        out.write(f"{question} [y/n] ")
        out.flush()
        line = answers.readline()
        if not line:
            return None
        reply = line.strip().lower()
        if reply in ("y", Answer.YES):
            return True
        if reply in ("n", Answer.NO):
            return False
        out.write("please answer y or n\n")


def run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """Simulate the job; returns the process exit status (0 completed, 1 error)."""
    rng = random.Random(args.seed)
    prompt = read_prompt(args.prompt_file)
    answers = open_answer_source(prompt_from_stdin=not args.prompt_file)
    reporter = Reporter(args.job, args.publish_cmd)
    task = prompt.split("--- task ---", 1)[-1]  # skip the reporting instructions header
    summary = " ".join(task.split())[:60] or "(empty prompt)"

    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    say(f"demo agent: job {args.job or '-'}, {args.steps} steps, seed {args.seed}")
    say(f"task: {summary}")
    reporter.publish(EventType.STARTED, "demo agent started", {"steps": args.steps})
    ask_at = max(1, args.steps // 2) if args.ask_permission else None
    for step in range(1, args.steps + 1):
        target = rng.choice(_FILES)
        say(f"{rng.choice(_VERBS)} {target} ...")
        time.sleep(args.delay)
        say(f"  step {step}/{args.steps} done ({rng.randint(3, 120)} lines touched)")
        reporter.publish(
            EventType.PROGRESS,
            f"step {step} of {args.steps}: {target}",
            {"step": step, "of": args.steps, "file": target},
        )
        if step == ask_at:
            question = f"Allow edit of {target}?"
            reporter.publish(
                EventType.PERMISSION_REQUIRED, question, {"file": target, "step": step}
            )
            granted = ask(question, answers, out)
            if not granted:
                say("permission denied: stopping")
                reporter.publish(EventType.ERROR, "permission denied", {"file": target})
                return 1
            say(f"permission granted for {target}")
            reporter.publish(
                EventType.PROGRESS, "permission granted", {"file": target, "step": step}
            )
    if args.fail:
        say("error: simulated failure (tests failed)")
        reporter.publish(EventType.ERROR, "simulated failure", {"steps": args.steps})
        return 1
    say("all steps done")
    reporter.publish(EventType.COMPLETED, "demo agent finished", {"steps": args.steps})
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point for `python -m app.agents.demo_cli`."""
    try:
        sys.exit(run(parse_args(argv)))
    except KeyboardInterrupt:  # C-c from a graceful stop
        print("\ndemo agent interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()

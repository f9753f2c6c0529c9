"""The History screen's rebuild: its steps (export the bus, then the Spark build) run
as child processes in a thread worker, their merged output streams into a log, and a
status line says how far it got."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Log, Static
from textual.worker import Worker, get_current_worker

from app.tui.safe_text import as_text, visible

BUILD_LOG_LINES = 500


@dataclass(frozen=True)
class BuildStep:
    """One process of a rebuild: what the log calls it and the argv that runs it."""

    name: str
    argv: tuple[str, ...]


def default_build_steps(state_dir: Path, full: bool) -> list[BuildStep]:
    """`orchestrate history build`, which exports the bus first (appending only what is
    new) and then runs Spark: a user who just ran demo agents gets a history with one
    key. One step: an `orchestrate export` before it made the build's own export say
    "exported 0 new bus messages", which read like a failure."""
    base = (sys.executable, "-m", "app", "--state-dir", str(state_dir))
    build = (*base, "history", "build", *(("--full",) if full else ()))
    return [BuildStep("history build", build)]


BuildSteps = Callable[[Path, bool], Sequence[BuildStep]]


class BuildPanel(Vertical):
    """Hidden until a build starts; stays up with the outcome afterwards. Posts
    ``Finished`` (which bubbles to the screen) when the last step ends or one fails."""

    DEFAULT_CSS = """
    BuildPanel { display: none; height: 8; border-top: solid $primary-darken-2; }
    BuildPanel.-shown { display: block; }
    BuildPanel #build-status { height: 1; padding: 0 1; }
    BuildPanel #build-status.-error { color: $text-error; }
    BuildPanel #build-log { height: 1fr; }
    """

    class Line(Message):
        """One line of a step's output (stdout and stderr merged)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Finished(Message):
        """The build ended; ``error`` is its one-line reason when it failed."""

        def __init__(self, error: str | None) -> None:
            super().__init__()
            self.error = error

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.building = False
        self.error: str | None = None  # the last build's one-line failure, if it failed
        self._started = 0.0
        self._step = ""
        self._process: subprocess.Popen[str] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="build-status")
        yield Log(max_lines=BUILD_LOG_LINES, id="build-log")

    def start(self, steps: list[BuildStep]) -> None:
        """Run ``steps`` one after the other; the caller checks ``building`` first."""
        self.building = True
        self.error = None
        self._started = time.monotonic()
        self.add_class("-shown")
        self.query_one("#build-status", Static).set_class(False, "-error")
        self.query_one("#build-log", Log).clear()
        self._show_status()
        self._run(steps)

    def on_unmount(self) -> None:
        """The app is closing: stop the build process rather than leave a JVM behind;
        the build's journal makes that safe."""
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()

    def _show_status(self) -> None:
        if not self.building:
            return
        elapsed = time.monotonic() - self._started
        step = f" ({self._step})" if self._step else ""
        self.query_one("#build-status", Static).update(
            f"Building{step}… {elapsed:.0f} s; esc leaves, the build goes on"
        )
        self.set_timer(0.5, self._show_status)

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-build")
    def _run(self, steps: list[BuildStep]) -> None:
        """Each step as a child process, its output merged and streamed line by line."""
        worker = get_current_worker()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for number, step in enumerate(steps, 1):
            self._step = f"{number}/{len(steps)} {step.name}"
            self.post_message(self.Line(f"$ orchestrate {step.name}"))
            last = ""
            try:
                process = subprocess.Popen(
                    step.argv,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    text=True,
                    bufsize=1,
                    env=env,
                )
            except OSError as error:
                self.post_message(self.Finished(f"cannot start {step.name}: {error}"))
                return
            self._process = process
            assert process.stdout is not None
            with process.stdout:
                for line in process.stdout:
                    if line.strip():
                        last = line.rstrip()
                        self.post_message(self.Line(last))
            code = process.wait()
            self._process = None
            if worker.is_cancelled:
                return
            if code != 0:
                reason = last.removeprefix("orchestrate: ") or f"exit status {code}"
                self.post_message(self.Finished(f"{step.name} failed: {reason}"))
                return
        self.post_message(self.Finished(None))

    @on(Line)
    def _line(self, message: Line) -> None:
        self.query_one("#build-log", Log).write_line(visible(message.text))  # Log lets ESC by

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        """Say how it ended, then let the message on to the screen (which reloads)."""
        self.building = False
        self._step = ""
        status = self.query_one("#build-status", Static)
        if message.error is None:
            status.update(f"Build finished in {time.monotonic() - self._started:.1f} s")
            return
        self.error = message.error
        status.set_class(True, "-error")
        status.update(as_text(f"Build failed: {message.error}", one_line=False))  # not markup

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """The build worker raised something unexpected: the build is over, failed."""
        if event.worker.error is not None and self.building:
            self.post_message(self.Finished(str(event.worker.error)))

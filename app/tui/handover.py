"""Handing this terminal to an agent's pane, and getting the control room back.

Outside tmux the app suspends itself and runs a tmux client until the person
comes back (ctrl+q); inside orchestrate's own tmux it switches the client
instead and keeps running. The first attach of a run says first how to return.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from functools import partial
from typing import Any

from textual.app import App, SuspendNotSupported

from app.tmux.attach import RETURN_KEY_LABEL, AttachCommand
from app.tui.screens.attach_hint import AttachHintScreen


class ActionFailed(Exception):
    """An action the source (or tmux) refused, worded for a notice."""


class Handover:
    """The terminal's handover for one app. ``take_terminal`` runs a command that
    needs the terminal and returns its exit status (default: the app suspends)."""

    def __init__(
        self, app: App[Any], take_terminal: Callable[[list[str]], int] | None = None
    ) -> None:
        self.app = app
        self.take_terminal = take_terminal or self._suspended
        self.hint_shown = False  # the first attach of a run explains the return key

    def attach(self, job_id: str, command: AttachCommand) -> None:
        """Step into the job's pane; the first time, after a word on how to return."""
        if self.hint_shown:
            self._step_into(job_id, command)
            return

        def chosen(go: bool | None) -> None:
            self.hint_shown = True
            if go:
                self._step_into(job_id, command)

        self.app.push_screen(AttachHintScreen(job_id, RETURN_KEY_LABEL), chosen)

    def welcome_back(self) -> None:
        """ctrl+q pressed here, not in a pane: say where the person is."""
        self.app.notify(
            f"You are in the control room: {RETURN_KEY_LABEL} comes back from an agent's "
            "pane, q quits"
        )

    def _step_into(self, job_id: str, command: AttachCommand) -> None:
        if command.switches_client:  # inside orchestrate's own tmux: this app keeps running
            self.app.run_worker(
                partial(self._switch_client, command.argv),
                thread=True,
                exit_on_error=False,
                group="attach",
                description="Switching tmux client",
            )
            return
        try:
            status = self.take_terminal(command.argv)
        except SuspendNotSupported:
            self.app.notify(
                "This terminal cannot hand itself over: run orchestrate attach", severity="error"
            )
            return
        if status != 0:
            self.app.notify(
                f"tmux exited with status {status}: {job_id}'s pane may be gone",
                severity="warning",
            )

    def _suspended(self, argv: list[str]) -> int:
        """Run `argv` with the terminal to itself, the app suspended meanwhile (a tmux
        client, attached until the person comes back); the app is redrawn as it was."""
        with self.app.suspend():
            return subprocess.run(argv, check=False).returncode

    @staticmethod
    def _switch_client(argv: list[str]) -> None:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ActionFailed(f"Could not switch to the pane: {done.stderr.strip()}")

"""What every part of the control room shares: the settings, the registry, the
session records and one tmux driver, so jobs, sessions and panes act on the same
server and the same database."""

from __future__ import annotations

import threading
from pathlib import Path

from app.settings import Settings
from app.tmux.driver import TmuxDriver
from registry.sessions import SessionStore


class ControlContext:
    """The registry and the tmux driver the control room's parts act through.

    One per Orchestrator; its parts hold the same one, so a driver made for a
    submit is the driver a later cancel uses.
    """

    def __init__(self, settings: Settings, *, tmux_socket: str | None = None) -> None:
        self.settings = settings
        self.tmux_socket = tmux_socket
        self.registry = settings.open_registry()
        self.sessions = SessionStore(self.registry.bus)
        self.lock = threading.Lock()
        """Guards what is made on first use: the TUI calls in from several worker threads."""
        self._driver: TmuxDriver | None = None

    @property
    def driver(self) -> TmuxDriver:
        """The tmux driver, made on first use (TmuxNotInstalled if there is no tmux)."""
        with self.lock:
            if self._driver is None:
                owner = str(self.settings.state_dir.resolve())
                self._driver = TmuxDriver(self.tmux_socket, owner=owner)
            return self._driver

    def job_dir(self, job_id: str) -> Path:
        """`<state>/logs/<job>/`: prompt, launch script, pane log, next to the audit log."""
        return self.settings.state_dir / "logs" / job_id

    def pane_log(self, job_id: str) -> Path:
        """The job's pane output, kept by tmux pipe-pane; it outlives the pane."""
        return self.job_dir(job_id) / "pane.log"

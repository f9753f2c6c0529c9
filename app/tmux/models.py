"""Plain results the tmux driver hands back (no libtmux objects leak to callers)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaneStatus:
    """One read of a pane: does it exist, has its process exited, with what status."""

    pane_id: str
    exists: bool
    dead: bool
    dead_status: int | None = None
    dead_signal: int | None = None
    current_command: str | None = None
    job_id: str | None = None


@dataclass(frozen=True)
class SessionInfo:
    """A live tmux session orchestrate knows by its agent-session label."""

    label: str
    session_name: str
    session_id: str
    pane_ids: tuple[str, ...]


@dataclass(frozen=True)
class StopResult:
    """What a stop did on the tmux side; the registry state is the caller's to set."""

    label: str
    mode: str
    session_existed: bool
    session_killed: bool = False
    exited_panes: tuple[str, ...] = ()
    still_running_panes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ControlRoom:
    """The seed 003 split: pane log tail on top (70 %), event follow below (30 %)."""

    window_id: str
    log_pane_id: str
    follow_pane_id: str
    created: bool = True

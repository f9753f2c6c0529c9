"""Typed errors of the tmux driver; the CLI prints them as one line with `exit_code`."""

from __future__ import annotations


class TmuxError(Exception):
    """Base of every tmux-side failure; the CLI turns it into `orchestrate: <msg>`, exit 1."""

    exit_code = 1


class TmuxNotInstalled(TmuxError):
    """The `tmux` binary is not on PATH, so no agent pane can ever start."""


class TmuxServerUnreachable(TmuxError):
    """A tmux server socket exists but cannot be talked to (permissions, dead socket)."""


class TmuxCommandFailed(TmuxError):
    """tmux refused a command; the message carries its stderr."""


class InvalidLabel(TmuxError):
    """An agent-session label that cannot name a tmux session (empty, or not SAFE_LABEL)."""


class SessionOwnedElsewhere(TmuxError):
    """The tmux session for a label belongs to another state dir's registry on the same
    tmux server: using it would run, stop or kill that project's agents."""


class SessionNotFound(TmuxError):
    """No tmux session exists for the given agent-session label."""


class PaneNotFound(TmuxError):
    """The pane id names no pane on this server (it was killed or never existed)."""


class PaneDead(TmuxError):
    """The pane exists but its process has exited, so typing into it is pointless."""


class AnswerNotReceived(TmuxError):
    """Keys were sent to a pane twice and its content never changed."""


class InvalidStopMode(TmuxError):
    """A stop mode other than graceful, soft or hard."""

"""Driving tmux through libtmux: agent sessions and panes, liveness, the control-room split."""

from __future__ import annotations

from app.tmux.errors import TmuxError
from app.tmux.names import default_socket_name, label_for, session_name_for

__all__ = ["TmuxError", "default_socket_name", "label_for", "session_name_for"]

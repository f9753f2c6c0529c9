"""The real-tmux fixtures of tests/control, for the answers that run on them."""

from tests.control.conftest import orch, tmux_socket, workdir

__all__ = ["orch", "tmux_socket", "workdir"]

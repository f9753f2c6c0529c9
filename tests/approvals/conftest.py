"""The real-tmux fixtures of tests/orchestration, for the answers that run on them."""

from tests.orchestration.conftest import orch, tmux_socket, workdir

__all__ = ["orch", "tmux_socket", "workdir"]

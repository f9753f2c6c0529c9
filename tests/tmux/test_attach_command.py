"""The command that puts a person into an agent's pane, from each place they can be."""

from __future__ import annotations

import pytest

from app.tmux.attach import RETURN_KEY, attach_command, return_binding
from app.tmux.errors import TmuxCommandFailed


def test_from_a_plain_terminal_it_attaches_with_the_return_key_bound() -> None:
    command = attach_command("orchestrate", "%7", {})
    assert not command.switches_client
    assert command.argv[:3] == ["tmux", "-L", "orchestrate"]
    assert command.argv[3:12] == return_binding()
    shown = ["attach-session", "-t", "%7", ";", "select-window", "-t", "%7"]
    assert command.argv[12:] == [*shown, ";", "select-pane", "-t", "%7"]
    assert return_binding()[:3] == ["bind-key", "-n", RETURN_KEY]


def test_inside_orchestrates_own_server_it_switches_the_client() -> None:
    """The control room runs in a pane of orchestrate's server: switch-client, and the
    return key switches back to the session the client came from."""
    inside = {"TMUX": "/tmp/tmux-0/orchestrate,4242,0"}
    command = attach_command("orchestrate", "%7", inside)
    assert command.switches_client
    assert command.argv[-3:] == ["switch-client", "-t", "%7"]
    assert "switch-client -l" in command.argv  # what the return key does there


def test_inside_another_tmux_server_it_nests_with_tmux_unset() -> None:
    """tmux refuses to attach while $TMUX is set ("sessions should be nested with
    care"): the agent's tmux opens nested in the same pane, $TMUX unset."""
    mine = {"TMUX": "/tmp/tmux-1000/default,99,3"}
    command = attach_command("orchestrate", "%7", mine)
    assert not command.switches_client
    assert command.argv[:3] == ["env", "-u", "TMUX"]
    assert command.argv[3:6] == ["tmux", "-L", "orchestrate"] and "attach-session" in command.argv


@pytest.mark.parametrize("pane_id", ["7", "%7;kill-server", "#(reboot)", ""])
def test_only_a_pane_id_is_accepted(pane_id: str) -> None:
    with pytest.raises(TmuxCommandFailed):
        attach_command("orchestrate", pane_id, {})

"""The tmux command that puts a person into an agent's pane, and the key that brings
them back (`orchestrate attach`, and `enter` in the control room).

Three places a person can be when they ask:

* in a plain terminal: `tmux -L <socket> attach-session -t <pane>`; the control room
  suspends itself meanwhile and is redrawn as it was when the client detaches;
* inside orchestrate's own tmux server (the control room runs in one of its panes):
  `switch-client -t <pane>`; the control room keeps running where it is, and the
  return key switches the client back to the session it came from;
* inside another tmux server (their own): tmux refuses to attach while `$TMUX` is set,
  so the agent's tmux is nested in the same pane with `$TMUX` unset (`env -u TMUX`).
  Its status line shows inside theirs. Their own prefix still reaches their tmux first,
  which is why the return key is a single key tmux binds without a prefix.

The return key, `ctrl+q` as in agent-deck and claude-squad, is bound on orchestrate's
own server only (`bind-key -n`), never on the person's own tmux: in a client that came
from another session of that server it switches back there (`switch-client -l`), in any
other it detaches. The agents there no longer receive ctrl+q, which none of the four
supported CLIs uses. tmux's own detach (prefix, then d) also comes back from an attach.

Only pane ids (`%12`, from tmux itself) and constants go into these commands: no agent
text reaches a tmux format or command string.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from app.tmux.errors import TmuxCommandFailed

RETURN_KEY = "C-q"
"""tmux's name for the key that leaves an agent's pane for the control room."""
RETURN_KEY_LABEL = "ctrl+q"
"""The same key as people read it."""
_PANE_ID = re.compile(r"%[0-9]+")


def return_binding() -> list[str]:
    """`bind-key` arguments for the return key, ending with tmux's command separator."""
    back = ["if-shell", "-F", "#{client_last_session}", "switch-client -l", "detach-client"]
    return ["bind-key", "-n", RETURN_KEY, *back, ";"]


@dataclass(frozen=True)
class AttachCommand:
    """What to run, and how: a client switch returns at once and the control room keeps
    drawing; an attach takes the terminal until the person comes back."""

    argv: list[str]
    switches_client: bool


def attach_command(socket_name: str, pane_id: str, environ: Mapping[str, str]) -> AttachCommand:
    """The command that shows `pane_id` of the server `socket_name` to the person whose
    environment is `environ` (see the module docstring for the three cases)."""
    if not _PANE_ID.fullmatch(pane_id):
        raise TmuxCommandFailed(f"not a tmux pane id: {pane_id!a}")
    base = ["tmux", "-L", socket_name, *return_binding()]
    inside = environ.get("TMUX", "").split(",")[0]
    if inside and Path(inside).name == socket_name:
        return AttachCommand([*base, "switch-client", "-t", pane_id], switches_client=True)
    attach = [*base, "attach-session", "-t", pane_id]
    attach += [";", "select-window", "-t", pane_id, ";", "select-pane", "-t", pane_id]
    argv = ["env", "-u", "TMUX", *attach] if inside else attach
    return AttachCommand(argv, switches_client=False)

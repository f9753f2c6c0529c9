"""Typing a message into an agent's pane: tmux's paste buffer, then Enter.

The text goes in through `load-buffer -` on stdin, never as an argument:
tmux reads a trailing `;` of an argument as a command separator (`set-buffer
'fix this;'` stores "fix this"), and an argument is never the place for text
someone typed. It is pasted with `paste-buffer -p` (bracketed, so an agent
takes it as one paste, not as keys), and Enter follows after a pause: an
Enter sent at once is swallowed into the paste by Codex and Gemini
(/work/shared/AGENTS.md, "Typing into a pane").
"""

from __future__ import annotations

import re
import subprocess
import time
import uuid

from app.tmux.errors import PaneNotFound, TmuxCommandFailed
from app.tmux.panes import PaneControl

PASTE_SETTLE_S = 0.4
MAX_PASTE_CHARS = 20_000
# Escape sequences would end a bracketed paste early (ESC [201~) and then be keys;
# other controls (C-c, C-d...) would act. Newlines and tabs are text.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_PANE_ID = re.compile(r"%[0-9]+")


def pasteable(text: str) -> str:
    """``text`` without control characters (CR LF as LF), refused if empty or huge."""
    cleaned = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).strip()
    if not cleaned:
        raise TmuxCommandFailed("nothing to send: the message is empty")
    if len(cleaned) > MAX_PASTE_CHARS:
        raise TmuxCommandFailed(
            f"the message is {len(cleaned)} characters; at most {MAX_PASTE_CHARS} are sent"
        )
    return cleaned


def paste_into_pane(
    control: PaneControl, pane_id: str, text: str, *, settle_s: float = PASTE_SETTLE_S
) -> None:
    """Paste ``text`` into exactly ``pane_id`` and press Enter there."""
    if not _PANE_ID.fullmatch(pane_id):
        raise PaneNotFound(f"{pane_id!r} is not a tmux pane id (like %3)")
    message = pasteable(text)
    if not control.pane_alive(pane_id):
        raise PaneNotFound(f"pane {pane_id} is gone or has exited: nothing can be pasted into it")
    buffer = f"orchestrate-{uuid.uuid4().hex[:12]}"
    _tmux(control, ["load-buffer", "-b", buffer, "-"], stdin=message.encode("utf-8"))
    try:
        _tmux(control, ["paste-buffer", "-p", "-b", buffer, "-t", pane_id])
    finally:
        _tmux(control, ["delete-buffer", "-b", buffer], check=False)
    time.sleep(settle_s)
    _tmux(control, ["send-keys", "-t", pane_id, "Enter"])


def _tmux(
    control: PaneControl, args: list[str], *, stdin: bytes | None = None, check: bool = True
) -> None:
    completed = subprocess.run(
        ["tmux", "-L", control.socket_name, *args],
        input=stdin,
        capture_output=True,
        check=False,
    )
    if check and completed.returncode != 0:
        reason = completed.stderr.decode("utf-8", "replace").strip() or "no message"
        raise TmuxCommandFailed(f"tmux {args[0]} failed: {reason}")

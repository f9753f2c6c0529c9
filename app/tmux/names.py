"""Reversible mapping between agent-session labels and tmux session names."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from app.settings import TMUX_SOCKET_ENV
from app.tmux.errors import InvalidLabel

DEFAULT_SOCKET_NAME = "orchestrate"
SOCKET_ENV = TMUX_SOCKET_ENV

# The label becomes a tmux session name, which tmux expands as a format (`#(cmd)` runs
# cmd): a label is one short word of these characters, or it is refused.
SAFE_LABEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@%+=/-]{0,99}")

# tmux silently rewrites "." and ":" in session names (they are target
# separators), so they are percent-escaped; "%" itself is escaped first so the
# mapping stays reversible.
_ESCAPES = {"%": "%25", ".": "%2E", ":": "%3A"}


def default_socket_name(env: Mapping[str, str] | None = None) -> str:
    """The tmux socket orchestrate uses: $ORCHESTRATE_TMUX_SOCKET, else "orchestrate".

    A private socket (tmux -L) keeps agent sessions apart from the user's own tmux.
    """
    source = os.environ if env is None else env
    return source.get(SOCKET_ENV) or DEFAULT_SOCKET_NAME


def session_name_for(label: str) -> str:
    """The tmux session name for an agent-session label.

    >>> session_name_for("team.alpha:1")
    'team%2Ealpha%3A1'
    """
    if not label or not label.strip():
        raise InvalidLabel("agent-session label must not be empty")
    if not is_safe_label(label):
        raise InvalidLabel(
            f"agent-session label {label!a} cannot name a tmux session: use at most 100 "
            "letters, digits and _ . : @ % + = / - (starting with a letter, digit or _)"
        )
    return "".join(_ESCAPES.get(char, char) for char in label)


def is_safe_label(label: str) -> bool:
    """Whether ``label`` can name a tmux session (SAFE_LABEL); no tmux session exists for
    any other label, so lookups answer "none" instead of raising.

    >>> is_safe_label("tmux:claude"), is_safe_label("x#(reboot)")
    (True, False)
    """
    return SAFE_LABEL.fullmatch(label) is not None


def label_for(session_name: str) -> str:
    """The agent-session label a tmux session name came from (inverse of session_name_for).

    >>> label_for(session_name_for("a.b%c:d"))
    'a.b%c:d'
    """
    result: list[str] = []
    index = 0
    reverse = {escaped: char for char, escaped in _ESCAPES.items()}
    while index < len(session_name):
        chunk = session_name[index : index + 3]
        if chunk in reverse:
            result.append(reverse[chunk])
            index += 3
        else:
            result.append(session_name[index])
            index += 1
    return "".join(result)

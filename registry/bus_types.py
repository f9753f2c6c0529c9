"""The bus message types and ids the registry owns, and the check that keeps other senders off them.

The SQLite bus is shared: agents and people send their own messages on it
(`orchestrate msg send`). But some messages are facts the registry and the
control room state (a job's accepted event, its status moves, a session's
state, a queue nudge, a control-room start, an answer to an agent's permission
request), and readers act on them: the
TUI, `subscribe`, `submit`'s wait, the history build. A sender must not be
able to write one. ``bus`` knows nothing of jobs, so the reservation lives
here, where a sender's message meets the bus (:func:`send`).

>>> is_reserved_type("job.event"), is_reserved_type(" JOB.Status"), is_reserved_type("status")
(True, True, False)
"""

from __future__ import annotations

import re
from typing import Final

from bus.messages import Bus, Outgoing, Published
from registry.errors import ReservedMessage
from registry.vocabulary import MessageType

JOB_EVENT: Final = MessageType.JOB_EVENT
JOB_REGISTERED: Final = MessageType.JOB_REGISTERED
JOB_STATUS: Final = MessageType.JOB_STATUS
JOB_FLAG: Final = MessageType.JOB_FLAG
JOB_DECISION: Final = MessageType.JOB_DECISION
JOB_USAGE: Final = MessageType.JOB_USAGE
SESSION_STATUS: Final = MessageType.SESSION_STATUS
QUEUE_NUDGE: Final = MessageType.QUEUE_NUDGE
CONTROL_STARTED: Final = MessageType.CONTROL_STARTED
CONTROL_NOTIFIED: Final = MessageType.CONTROL_NOTIFIED

RESERVED_PREFIXES: Final = tuple(sorted({kind.partition(".")[0] + "." for kind in MessageType}))
"""The prefixes of the vocabulary's MessageType (derived, so a new type under a new
prefix is reserved the day it is added): every type the registry and the control room
write, and any they may add, is under one of these. Matched after trimming and
case-folding, so a look-alike ("JOB.EVENT", " job.event") is refused too rather than
confusing a reader."""

# The registry files a job's event under "<job_id>:<seq>" (dedupe by id) and the
# watcher its flags under "<job_id>:flag:<ms>": a sender taking such an id first
# would make the real event a "duplicate".
_REGISTRY_ID: Final = re.compile(r"[0-9a-f]{8}:", re.IGNORECASE)


def event_message_id(job_id: str, seq: int) -> str:
    """The bus id of a job's accepted event: one per (job, seq), so a retry is a no-op."""
    return f"{job_id}:{seq}"


def is_reserved_type(kind: str) -> bool:
    """Whether ``kind`` is (or looks like) a type only the registry may write."""
    return kind.strip().casefold().startswith(RESERVED_PREFIXES)


def check_sendable(message: Outgoing) -> None:
    """Refuse a sender's message that would pass for one of the registry's."""
    if is_reserved_type(message.type):
        raise ReservedMessage(
            f"message type {_shown(message.type)} is reserved: types starting "
            f"{', '.join(RESERVED_PREFIXES)} are written by orchestrate itself"
        )
    if _REGISTRY_ID.match(message.id):
        raise ReservedMessage(
            f"message id {_shown(message.id)} is reserved: ids starting with a job id "
            "and ':' are the registry's (leave --id out for a fresh one)"
        )


def send(bus: Bus, message: Outgoing) -> Published:
    """Publish a sender's own message: ``bus.publish`` after :func:`check_sendable`."""
    check_sendable(message)
    return bus.publish(message)


def _shown(text: str) -> str:
    """``text`` quoted for an error line: short, escapes visible."""
    return repr(text[:40] + ("…" if len(text) > 40 else ""))

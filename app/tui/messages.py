"""Every message the control room's workers post to it, as dataclasses in one place.

Workers run in threads and talk to the app only by ``post_message`` (thread-safe;
``call_from_thread`` blocks, and a worker blocked on an exiting app keeps the
process alive). One module, as toolong's ``messages.py``, so what a worker can
say is read in one screenful and a handler's name (``on_delta_ready``) follows
from its message's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.message import Message
from textual.notifications import SeverityLevel

from app.tmux.attach import AttachCommand


class DeltaReady(Message):
    """Doorbell from the poller: a delta waits in the mailbox. Rung again before it
    is answered, it replaces itself: one redraw however many polls came in between."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, DeltaReady)


@dataclass
class SourceFailed(Message):
    """The source raised while polling (locked or corrupt db, broker down)."""

    error: Exception


@dataclass
class Notice(Message):
    """A line for the user from a worker thread."""

    text: str
    severity: SeverityLevel = "information"


class DemoStopped(Message):
    """The demo agents this app started are stopped: the app may now exit."""


@dataclass
class LogPath(Message):
    """Where a job's pane log is, for the split tail and the inbox's agent screen."""

    job_id: str
    path: Path | None


@dataclass
class AttachReady(Message):
    """The tmux command that shows the job's pane, found by a worker; ``then``: step
    in (attach) or open the talk box (talk)."""

    job_id: str
    command: AttachCommand
    then: str = "attach"


@dataclass
class AgentsFound(Message):
    """The agent kinds installed here, looked up for the New-job dialog."""

    kinds: list[str]

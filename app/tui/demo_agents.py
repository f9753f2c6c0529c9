"""The demo agents one control room starts (`watch --demo N`) and stops when it quits.

They are real jobs in real tmux panes, so starting and stopping them blocks: both
run in the app's thread workers. Quitting stops only the agents this app started,
and waits for their start first when `q` comes while they are still starting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual.message import Message

from app.tui.messages import Notice
from app.tui.source import ControlRoomSource
from registry.wording import counted

START_WAIT_S = 60.0  # quitting while demo agents start: wait for them, to stop them


class DemoAgents:
    """``count`` demo agents over ``source``; ``post`` is the app's ``post_message``."""

    def __init__(
        self, source: ControlRoomSource, count: int, post: Callable[[Message], object]
    ) -> None:
        self.source = source
        self.count = count
        self.post = post
        self.job_ids: list[str] = []
        self.stopped = False  # set once they are (quitting stops them)
        self.started = threading.Event()  # the start is past start_demo (or there is none)

    @property
    def running(self) -> bool:
        """Whether this app has demo agents that quitting must stop first."""
        return bool(self.count) and not self.stopped

    def start(self) -> None:
        """Start them (blocking), saying so before and after; none asked: nothing."""
        try:
            if self.count:
                self.post(Notice(f"Starting {counted(self.count, 'demo agent')} in tmux…"))
                self.job_ids = self.source.start_demo(self.count)
                self.post(Notice(f"Started {counted(len(self.job_ids), 'demo agent')}"))
        finally:
            self.started.set()

    def stop(self) -> None:
        """Stop the ones this app started (blocking), after their start if it is on."""
        self.started.wait(START_WAIT_S)
        self.source.stop_demo(list(self.job_ids))
        self.stopped = True

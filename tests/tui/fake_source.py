"""A recording in-memory source for TUI tests: the demo data plus a call log
and switchable failures (a locked database, a broker that is down)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from app.tui.source import AnswerOutcome, Delta, StopMode
from registry.vocabulary import Answer
from tests.tui.memory_source import FIXED_NOW, InMemorySource, demo_source


class FakeSource(InMemorySource):
    """Every action is recorded in `calls` before the in-memory store applies it."""

    def __init__(self) -> None:
        super().__init__(lambda: FIXED_NOW)
        self.calls: list[tuple[object, ...]] = []
        self.poll_error: Exception | None = None  # raised by every poll while set

    @classmethod
    def seeded(cls, pane_log: Path | None = None) -> FakeSource:
        """The deterministic demo jobs and sessions; `pane_log` for job 3fa2c1d0."""
        fake = cls()
        seed = demo_source(lambda: FIXED_NOW)
        for name in ("jobs", "prompts", "sessions", "events", "job_seq", "changed_at"):
            setattr(fake, name, getattr(seed, name))
        fake.seq = seed.seq
        if pane_log is not None:
            fake.pane_logs["3fa2c1d0"] = pane_log
        return fake

    def poll(self, after_seq: int) -> Delta:
        if self.poll_error is not None:
            raise self.poll_error
        return super().poll(after_seq)

    def cancel(self, job_id: str) -> None:
        self.calls.append(("cancel", job_id))
        super().cancel(job_id)

    def resume(self, job_id: str) -> None:
        self.calls.append(("resume", job_id))
        super().resume(job_id)

    def stop_session(self, label: str, mode: StopMode) -> None:
        self.calls.append(("stop_session", label, mode))
        super().stop_session(label, mode)

    def answer(self, job_id: str, reply: Answer) -> AnswerOutcome:
        self.calls.append(("answer", job_id, reply))
        return super().answer(job_id, reply)

    def submit(self, prompt: str, agent: str, agent_session: str) -> str:
        self.calls.append(("submit", prompt, agent, agent_session))
        return super().submit(prompt, agent, agent_session)

    def open_control_room_split(self, job_id: str) -> str:
        self.calls.append(("open_control_room_split", job_id))
        return super().open_control_room_split(job_id)


def fixed_clock() -> datetime:
    return FIXED_NOW

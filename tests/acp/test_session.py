"""orchestrate's ACP client (app/agents/acp_session.py) against the tiny ACP agent of
tests/acp/fake_agent.py, a real process over stdio, with a real registry: activity from
the protocol, a permission request held until a decision, the option it chose."""

from __future__ import annotations

import asyncio
import io
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.agents.acp_session import JobRecorder, RunOptions, Session
from app.agents.acp_view import YOUR_TURN, Transcript
from app.agents.base import CONTINUE_PROMPT
from app.approvals.decision import decide
from app.approvals.question import Channel, Question
from registry.jobs import Registry
from registry.records import Job
from registry.vocabulary import Activity, Answer, JobStatus

FAKE_AGENT = [sys.executable, "-m", "tests.acp.fake_agent"]
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Running:
    """A session running in its own thread, its typed lines fed from the test."""

    registry: Registry
    job_id: str
    workdir: Path
    out: io.StringIO
    loop: asyncio.AbstractEventLoop | None = None
    typed: asyncio.Queue[str | None] | None = None
    status: list[int] = field(default_factory=list)
    thread: threading.Thread | None = None
    failure: BaseException | None = None

    def type(self, line: str | None) -> None:
        assert self.loop is not None and self.typed is not None
        self.loop.call_soon_threadsafe(self.typed.put_nowait, line)

    def job(self) -> Job:
        return self.registry.get(self.job_id)

    def until(self, holds: Callable[[Job], bool], what: str, timeout: float = 20) -> Job:
        deadline = time.monotonic() + timeout
        while True:
            job = self.job()
            if holds(job):
                return job
            seen = f"{job.activity} {job.activity_source}\n{self.out.getvalue()}"
            assert time.monotonic() < deadline, f"{what}: {seen}"
            time.sleep(0.02)

    def end(self) -> int:
        self.type(None)
        assert self.thread is not None
        self.thread.join(20)
        assert not self.thread.is_alive()
        assert self.failure is None, repr(self.failure)
        return self.status[0]


@pytest.fixture
def start_session(state_dir: Path, tmp_path: Path) -> Iterator[Callable[..., Running]]:
    registry = Registry.open(state_dir)
    started: list[Running] = []

    def start(*flags: str, load_session: str | None = None, agent: str = "acp",
              job: Job | None = None) -> Running:  # fmt: skip
        if job is None:
            job = registry.register("create done.txt", agent, "acp-test")
            registry.set_status(job.job_id, JobStatus.RUNNING, "test")
        workdir = tmp_path / f"work-{len(started)}"
        workdir.mkdir(exist_ok=True)
        running = Running(registry, job.job_id, workdir, io.StringIO())
        options = RunOptions(state_dir, job.job_id, agent, [*FAKE_AGENT, *flags], workdir,
                             "create done.txt", load_session=load_session)  # fmt: skip
        ready = threading.Event()

        def run() -> None:
            async def main() -> int:
                running.loop = asyncio.get_running_loop()
                running.typed = asyncio.Queue()
                ready.set()
                recorder = JobRecorder(state_dir, job.job_id)
                try:
                    env = {**os.environ, "PYTHONPATH": str(REPO)}
                    session = Session(options, Transcript(running.out), recorder, env)
                    return await session.run(running.typed)
                finally:
                    recorder.close()

            try:
                running.status.append(asyncio.run(main()))
            except BaseException as exc:  # shown by end(), not lost in the thread
                running.failure = exc
                raise

        running.thread = threading.Thread(target=run, daemon=True)
        running.thread.start()
        ready.wait(10)
        started.append(running)
        return running

    yield start
    for running in started:
        if running.thread is not None and running.thread.is_alive():
            running.type(None)
            running.thread.join(10)
    registry.db.close()


def waiting(job: Job) -> bool:
    return job.activity == Activity.WAITING


def test_the_session_works_waits_with_its_command_is_answered_yes_and_goes_idle(
    start_session: Callable[..., Running], state_dir: Path
) -> None:
    run = start_session()
    job = run.until(waiting, "the permission request to be recorded")
    assert job.activity_source == "acp:acp:request_permission"
    assert job.activity_data is not None and job.activity_data["command"] == "touch done.txt"
    assert not (run.workdir / "done.txt").exists()
    question = Question.of(job, None, state_dir)  # answered by decision, not keys
    assert question.channel is Channel.ACP and question.answers == tuple(Answer)

    decide(run.registry.bus, run.job_id, Answer.YES, by="test")
    done = run.until(lambda j: j.activity == Activity.IDLE, "the end of the turn")
    assert (run.workdir / "done.txt").exists()
    assert (run.workdir / "answers.txt").read_text() == "once\n"
    assert done.activity_source == "acp:acp:end_turn"
    assert done.agent_session_id  # session/new's id, for resume
    history = [c.activity for c in run.registry.activity_history(run.job_id)]
    assert history.index(Activity.WORKING) < history.index(Activity.WAITING) < len(history) - 1
    shown = run.out.getvalue()
    assert "\x1b" not in shown and "^[]0;pwned^G" in shown
    assert shown.rstrip().splitlines()[-1].startswith(YOUR_TURN)
    assert "+new line" in shown and "create done.txt" in shown  # the diff and the plan
    assert run.end() == 0


@pytest.mark.parametrize(("answer", "option"), [(Answer.NO, "reject"), (Answer.ALWAYS, "always")])
def test_no_runs_nothing_and_always_takes_the_always_option(
    start_session: Callable[..., Running], answer: Answer, option: str
) -> None:
    run = start_session()
    run.until(waiting, "the permission request")
    decide(run.registry.bus, run.job_id, answer, by="test")
    run.until(lambda j: j.activity == Activity.IDLE, "the end of the turn")
    assert (run.workdir / "answers.txt").read_text() == f"{option}\n"
    assert (run.workdir / "done.txt").exists() == (answer == Answer.ALWAYS)
    run.end()


def test_a_decision_from_before_the_question_is_not_its_answer(
    start_session: Callable[..., Running], state_dir: Path
) -> None:
    registry = Registry.open(state_dir)
    job = registry.register("create done.txt", "acp", "acp-test")
    registry.set_status(job.job_id, JobStatus.RUNNING, "test")
    decide(registry.bus, job.job_id, Answer.YES, by="stale")
    run = start_session(job=job)
    run.until(waiting, "the permission request")
    time.sleep(0.3)  # the stale yes is there to be read: it must not be taken
    assert run.job().activity == Activity.WAITING and not (run.workdir / "done.txt").exists()
    decide(registry.bus, job.job_id, Answer.NO, by="test")
    run.until(lambda j: j.activity == Activity.IDLE, "the end of the turn")
    assert not (run.workdir / "done.txt").exists()
    run.end()
    registry.db.close()


def test_typed_lines_answer_and_prompt(start_session: Callable[..., Running]) -> None:
    run = start_session()
    run.until(waiting, "the permission request")
    run.type("maybe")  # not an answer: still waiting
    run.type("y")
    run.until(lambda j: j.activity == Activity.IDLE, "the end of the first turn")
    assert (run.workdir / "done.txt").exists()
    assert "answer y (yes)" in run.out.getvalue()
    first_idle = run.job().activity_at_ms
    run.type("and now the docs")
    run.until(lambda j: waiting(j) and (j.activity_at_ms or 0) > (first_idle or 0), "turn two")
    run.type("n")
    run.until(lambda j: j.activity == Activity.IDLE, "the end of turn two")
    assert (run.workdir / "prompts.txt").read_text() == "create done.txt\nand now the docs\n"
    assert (run.workdir / "answers.txt").read_text() == "once\nreject\n"
    run.end()


def test_resume_loads_the_session_and_continues(start_session: Callable[..., Running]) -> None:
    run = start_session(load_session="sess-1")
    run.until(waiting, "the permission request")
    assert (run.workdir / "loaded.txt").read_text() == "sess-1"
    assert (run.workdir / "prompts.txt").read_text() == CONTINUE_PROMPT + "\n"
    assert "resumed session sess-1" in run.out.getvalue()
    decide(run.registry.bus, run.job_id, Answer.NO, by="test")
    run.until(lambda j: j.activity == Activity.IDLE, "the end of the turn")
    run.end()


def test_without_load_session_it_says_so_and_starts_afresh(
    start_session: Callable[..., Running],
) -> None:
    run = start_session("--no-load", load_session="sess-1")
    run.until(waiting, "the permission request")
    assert not (run.workdir / "loaded.txt").exists()
    assert (run.workdir / "prompts.txt").read_text() == "create done.txt\n"
    assert "does not advertise session/load" in run.out.getvalue()
    decide(run.registry.bus, run.job_id, Answer.NO, by="test")
    run.until(lambda j: j.activity == Activity.IDLE, "the end of the turn")
    run.end()


def test_an_agent_that_exits_at_once_ends_the_session_with_an_error(
    start_session: Callable[..., Running],
) -> None:
    run = start_session("--exit-at-once")
    assert run.thread is not None
    run.thread.join(20)
    assert run.status == [3]
    assert "the ACP session ended" in run.out.getvalue()

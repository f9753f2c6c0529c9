"""Drive one installed agent through orchestrate's own paths, offline, and say which of
its signals worked.

It is what a user runs, not a test double: `Orchestrator.submit` starts the agent in
a private tmux server (its own ``-L`` socket) with a throwaway home, config and state
dir, against a scripted model server on a free loopback port, in a fresh git repo.
Supervision passes (`reconcile`, as `watch` runs them) read hooks, status sequences
and screens; `Orchestrator.answer` answers, as `orchestrate answer` does. The script:
the model asks to run ``touch selftest-yes.txt`` (answered yes: the file appears, the
agent goes idle), then, after a follow-up message, ``touch selftest-no.txt``
(answered no: nothing runs). Every wait has a deadline; the first step that does not
happen stops the run and is named.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

from app.agents import adapter_for
from app.agents.base import AgentAdapter
from app.agents.screen import match_screen
from app.agents.user_rules import RULES_NAME
from app.control import Orchestrator
from app.selftest import offline
from app.selftest.models.script import Reply, RunShell, Script
from app.selftest.models.server import FakeModelServer
from app.selftest.offline import AgentRun
from app.selftest.result import SelfTest, Signal
from app.selftest.wiring import WIRINGS
from app.settings import Settings
from app.supervision.observer import SCREEN_CONFIRM_SEC
from app.supervision.supervisor import SWITCH_ENV
from app.tmux.errors import TmuxError
from registry.activity import ActivityChange, Observation
from registry.errors import RegistryError
from registry.records import Job
from registry.vocabulary import Activity, Answer, JobStatus

STEP_SEC = 90.0
"""How long one step may take: a deadline, not a wait. At a load of 20 on 2 cores
Gemini CLI took 11-18 s from start to its first hook and once over 60 s; a quiet
machine runs a whole self-test in 12-35 s."""
SCREEN_SEC = 10.0
"""How long the screen may take to show what a hook already reported."""
YES_FILE = "selftest-yes.txt"
NO_FILE = "selftest-no.txt"
YES_COMMAND = f"touch {YES_FILE}"
NO_COMMAND = f"touch {NO_FILE}"
LABEL = "selftest"
AFTER_TURN_QUESTIONS = 2
"""How many questions after a turn the self-test declines before it calls the agent stuck."""
IDLE_SETTLE_SEC = SCREEN_CONFIRM_SEC + 1.0
"""How long an idle must last before the turn counts as over: a question drawn after
the Stop hook is recorded by the screen once it has held SCREEN_CONFIRM_SEC."""
ENDED = frozenset({JobStatus.ERROR, JobStatus.CANCELLED})
"""A job that ended so will not go on: no step waits out its deadline for it."""


class Stop(Exception):
    """A step did not happen: the run ends here (the signal is already marked)."""


def script(command: str) -> Script:
    """One dialog: the model asks to run ``command``, then replies and ends its turn.
    A fresh job and model per dialog: how many requests an answered command costs
    differs by agent (Aider may not send its output back), so no script spans two."""
    return Script([RunShell(command), Reply("Done with that command.")])


StartJob = Callable[[str, str], tuple[Job, AgentRun]]
"""(task, the command its model asks for) -> the job started, and how its agent runs."""


def self_test(
    kind: str, executable: str, *, step_sec: float = STEP_SEC, rules: Path | None = None
) -> SelfTest:
    """Run the self-test of agent ``kind`` at ``executable``; never raises for what the
    agent does (that is the verdict), only for a kind with no wiring (KeyError).
    ``rules``: the user's screen rules file, in force in the throwaway state dir too, so
    that a fix a person wrote for a changed screen is what gets tested."""
    wiring = WIRINGS[kind]
    result = SelfTest(kind, executable)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="orchestrate-st-")))
        stack.enter_context(_supervisor_off())
        workdir = root / "work"
        workdir.mkdir()
        git_env = offline.base_env(root / "git-home")
        subprocess.run(["git", "init", "-q", str(workdir)], env=git_env, check=True)
        tmux_socket = f"orchestrate-selftest-{uuid.uuid4().hex[:10]}"
        copied = throwaway_state(root / "state", rules)
        orch = Orchestrator(Settings(state_dir=root / "state"), tmux_socket=tmux_socket)
        stack.callback(_tear_down, orch)

        def start(task: str, command: str) -> tuple[Job, AgentRun]:
            model = stack.enter_context(FakeModelServer(wiring.api(), script(command)))
            label = f"{LABEL}-{len(orch.registry.list()) + 1}"
            run = wiring.config(executable, root / label, workdir, model.base_url)
            job = orch.submit(task, kind, label, agent_cmd=run.argv, env=run.env,
                              workdir=workdir)  # fmt: skip
            return job, run

        _Drive(orch, start, workdir, result, step_sec).run()
    if copied is not None:
        screen = result.checks[Signal.SCREEN_RULES]
        screen.detail = f"{screen.detail}; with your rules file {copied}"
    result.seconds = time.monotonic() - started
    return result


def throwaway_state(state_dir: Path, rules: Path | None) -> Path | None:
    """Make the self-test's state dir, with a copy of the user's screen rules file
    (``rules``) when there is one; returns the file copied (None: built-in rules only).
    Read and written as bytes: the copy is parsed where the user's is (adapter_for)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    if rules is None or not rules.is_file():
        return None
    (state_dir / RULES_NAME).write_bytes(rules.read_bytes())
    return rules


@contextlib.contextmanager
def _supervisor_off() -> Iterator[None]:
    """No background supervisor for the throwaway state dir: the self-test runs the
    passes itself, and leaves no process behind."""
    before = os.environ.get(SWITCH_ENV)
    os.environ[SWITCH_ENV] = "off"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SWITCH_ENV, None)
        else:
            os.environ[SWITCH_ENV] = before


def _tear_down(orch: Orchestrator) -> None:
    """Stop every agent (their process groups: some outlive a hangup), then the private
    tmux server, then the registry."""
    with contextlib.suppress(Exception):
        for job in orch.registry.list():
            with contextlib.suppress(Exception):
                orch.stop_agent(job, grace_sec=2)
    with contextlib.suppress(Exception):
        server = orch.driver.server
        where = server.cmd("display-message", "-p", "#{socket_path}").stdout
        server.cmd("kill-server")
        if where:  # tmux leaves its socket file behind
            Path(where[0].strip()).unlink(missing_ok=True)
    with contextlib.suppress(Exception):
        orch.registry.db.close()


def _command_of(job: Job) -> str:
    return str((job.activity_data or {}).get("command") or "")


class _Drive:
    """One run's steps over one job; each marks its signal and raises Stop if it broke."""

    def __init__(
        self, orch: Orchestrator, start: StartJob, workdir: Path, result: SelfTest, step_sec: float
    ) -> None:
        self.orch = orch
        self.start = start
        self.workdir = workdir
        self.result = result
        self.step_sec = step_sec
        self.kind = result.agent
        self.adapter: AgentAdapter = adapter_for(self.kind, orch.settings.state_dir)
        self.job_id = ""
        self.job_ids: list[str] = []
        self.sequences: dict[str, str] = {}
        """Each finished job's activities, read before its agent was stopped."""
        self.pane_id = ""
        self.screen_seen: list[str] = []

    def run(self) -> None:
        try:
            self.first_dialog()
            self.second_dialog()
        except Stop:
            pass
        except RegistryError as error:  # refused by orchestrate itself (submit, answer)
            self.result.broke(Signal.ACTIVITY, str(error))
        finally:
            self.structured_signals()
            if self.result.checks[Signal.ACTIVITY].ok:
                runs = (self.sequences.get(j) or self.sequence(j) for j in self.job_ids)
                self.result.passed(Signal.ACTIVITY, " | ".join(runs))

    # -- the steps ---------------------------------------------------------------------

    def first_dialog(self) -> None:
        self.begin(f"create {YES_FILE}", YES_COMMAND)
        self.wait_for_dialog(YES_COMMAND)
        self.result.unused(Signal.TITLE, self.title())
        answered = self.answer(Signal.ANSWER_YES, Answer.YES)
        if not self.eventually(lambda: (self.workdir / YES_FILE).exists()):
            self.stop(Signal.ANSWER_YES, f"answered ({answered}) but `{YES_COMMAND}` never ran")
        after = self.wait_for_idle(YES_COMMAND)
        detail = "; ".join(part for part in (answered, f"{YES_FILE} created", after) if part)
        self.result.passed(Signal.ANSWER_YES, detail)
        self.check_activity()

    def second_dialog(self) -> None:
        self.sequences[self.job_id] = self.sequence()
        self.orch.stop_agent(self.orch.registry.get(self.job_id), grace_sec=2)
        self.begin(f"create {NO_FILE}", NO_COMMAND)
        self.wait_for_dialog(NO_COMMAND)
        answered = self.answer(Signal.ANSWER_NO, Answer.NO)
        if not self.supervise(lambda job: not (job.waiting and NO_COMMAND in _command_of(job))):
            self.stop(Signal.ANSWER_NO, f"answered ({answered}) but the job still waits")
        after = self.wait_for_idle(NO_COMMAND)
        if (self.workdir / NO_FILE).exists():
            self.stop(Signal.ANSWER_NO, f"answered ({answered}) but `{NO_COMMAND}` ran")
        detail = "; ".join(part for part in (answered, "nothing ran", after) if part)
        self.result.passed(Signal.ANSWER_NO, detail)

    def begin(self, task: str, command: str) -> None:
        """Submit a job whose model asks for ``command``; history is now this job's."""
        job, _run = self.start(task, command)
        self.job_id = job.job_id
        self.job_ids.append(job.job_id)
        self.pane_id = self.orch.pane_for_job(job.job_id) or ""

    def wait_for_dialog(self, command: str) -> None:
        """The job waits naming ``command``, and the screen rules read the dialog."""
        waiting = self.supervise(lambda job: job.waiting and command in _command_of(job))
        if waiting is None:
            job = self.orch.registry.get(self.job_id)
            if job.status in ENDED:
                why = f"the job ended {job.status} ({job.last_detail})"
            else:
                why = f"none within {self.step_sec:.0f} s, now {job.activity or job.status}"
            self.stop(
                Signal.ACTIVITY,
                f"no waiting naming `{command}`: {why}; seen {self.sequence()}{self.last_line()}",
            )
        self.check_screen(Activity.WAITING, command)

    def wait_for_idle(self, command: str) -> str:
        """The agent idle after its turn; a question it asks once the turn is over, about
        itself rather than the task (Claude Code 2.1.332's offer to make auto mode the
        default), declined first: it covers the prompt until it is answered. The config
        is throwaway, so the answer changes nothing of the user's. Returns what was
        declined ("" for nothing)."""
        declined: list[str] = []
        answered: set[int | None] = set()  # the waits declined (their activity_at_ms)
        for _ in range(AFTER_TURN_QUESTIONS + 1):
            settled = self.supervise(lambda job: self._settled(job, command, answered))
            if settled is None:
                self.stop(Signal.ACTIVITY, f"never idle after the turn (seen: {self.sequence()})")
            if settled.activity == Activity.IDLE:
                self.check_screen(Activity.IDLE, "")
                return "; ".join(declined)
            question = str((settled.activity_data or {}).get("question") or "a question")
            how = self.answer(Signal.ACTIVITY, Answer.NO)
            answered.add(settled.activity_at_ms)
            declined.append(f"declined {question!r} after the turn ({how})")
        self.stop(Signal.ACTIVITY, f"still asking after the turn: {'; '.join(declined)}")

    def _settled(self, job: Job, command: str, answered: set[int | None]) -> bool:
        """Waiting on a question that is neither the command's dialog nor one declined
        already (asked after the turn); or idle after working for IDLE_SETTLE_SEC with
        no question on screen (the offer is drawn a moment after the Stop hook)."""
        if job.waiting:
            return command not in _command_of(job) and job.activity_at_ms not in answered
        if job.activity != Activity.IDLE or not self.orch.registry.has_worked(job.job_id):
            return False
        if time.time() - (job.activity_at_ms or 0) / 1000 < IDLE_SETTLE_SEC:
            return False
        try:
            lines = self.orch.driver.capture(self.pane_id, 60)
        except TmuxError:
            return True  # its pane is gone: the next check names it
        seen = match_screen(self.kind, self.adapter.screen_rules, lines)
        return seen is None or seen.activity != Activity.WAITING  # a question being read

    def answer(self, signal: Signal, reply: Answer) -> str:
        """Answer as `orchestrate answer` does; how it went in, or Stop naming why not."""
        try:
            return self.orch.answer(self.job_id, reply, by="self-test").how
        except RegistryError as error:
            self.stop(signal, str(error))
        raise AssertionError("unreachable")  # pragma: no cover

    # -- the checks --------------------------------------------------------------------

    def check_screen(self, activity: Activity, command: str) -> None:
        """The adapter's rules over the pane read ``activity`` (and ``command``) within
        SCREEN_SEC: a hook may be faster than the screen, never right without it. A
        misreading is marked and the run goes on: hooks may still carry the job."""
        seen: Observation | None = None

        def reads() -> bool:
            nonlocal seen
            try:
                lines = self.orch.driver.capture(self.pane_id, 60)
            except TmuxError:  # a pane that is gone reads nothing
                return False
            seen = match_screen(self.kind, self.adapter.screen_rules, lines)
            return seen is not None and seen.activity == activity

        if not self.eventually(reads, SCREEN_SEC):
            said = f"{seen.activity} by {seen.source}" if seen else "nothing"
            self.result.broke(Signal.SCREEN_RULES, f"read {said} where the screen shows {activity}")
        elif seen is not None and command and seen.command and command not in seen.command:
            self.result.broke(
                Signal.SCREEN_RULES, f"read the {activity} but its command as `{seen.command}`"
            )
        elif seen is not None:
            read = f"{activity} ({seen.source.removeprefix('screen:')})"
            if read not in self.screen_seen:
                self.screen_seen.append(read)
            self.result.passed(Signal.SCREEN_RULES, ", ".join(self.screen_seen))

    def check_activity(self) -> None:
        changes = [change.activity for change in self.history()]
        waiting_at = changes.index(Activity.WAITING) if Activity.WAITING in changes else -1
        if Activity.WORKING not in changes[:waiting_at]:
            self.stop(Signal.ACTIVITY, f"never working before the dialog ({self.sequence()})")
        self.result.passed(Signal.ACTIVITY, self.sequence())

    def structured_signals(self) -> None:
        """Hooks and the status sequence, from the sources the job's activity came from."""
        sources = [
            change.observation.source for job_id in self.job_ids for change in self.history(job_id)
        ]
        for signal, prefix, expected in (
            (Signal.HOOK, "hook:", self.adapter.has_hooks),
            (Signal.STATUS_SEQUENCE, "osc:", self.adapter.reads_osc_status),
        ):
            names = sorted({s.split(":", 2)[-1] for s in sources if s.startswith(prefix)})
            if names:
                self.result.passed(signal, ", ".join(names))
            elif expected and self.job_ids:
                self.result.broke(signal, "the agent never reported through it")
            elif not expected:
                self.result.unused(signal, f"none recorded ({self.kind} is read without it)")

    # -- helpers -----------------------------------------------------------------------

    def history(self, job_id: str | None = None) -> list[ActivityChange]:
        """The recorded activity changes of ``job_id`` (default: the current job)."""
        job_id = job_id or self.job_id
        return list(self.orch.registry.activity_history(job_id)) if job_id else []

    def sequence(self, job_id: str | None = None) -> str:
        """The recorded activities, repeats folded: "working > waiting > idle"."""
        words: list[str] = []
        for change in self.history(job_id):
            if not words or words[-1] != change.activity:
                words.append(change.activity)
        return " > ".join(words) or "no activity"

    def last_line(self) -> str:
        """The pane's last line, for a step that did not happen ("" when none is left)."""
        try:
            lines = self.orch.driver.capture(self.pane_id, 60)
        except TmuxError:
            return ""
        return f"; its screen ends with {lines[-1].strip()!r}" if lines else ""

    def title(self) -> str:
        """The pane's title, as the agent set it (a constant tmux format: no agent text)."""
        result = self.orch.driver.server.cmd(
            "display-message", "-p", "-t", self.pane_id, "#{pane_title}"
        )
        title = result.stdout[0].strip() if result.returncode == 0 and result.stdout else ""
        host = socket.gethostname()
        if title in ("", host, host.split(".")[0]):  # tmux's default title is the host name
            return "none set"
        return f"{title!r} (not read by orchestrate)"

    def supervise(self, holds: Callable[[Job], bool]) -> Job | None:
        """Supervision passes until the job holds, or None after step_sec."""
        deadline = time.monotonic() + self.step_sec
        while True:
            self.orch.reconcile()
            job = self.orch.registry.get(self.job_id)
            if holds(job):
                return job
            if job.status in ENDED or time.monotonic() > deadline:
                return None
            time.sleep(0.2)

    def eventually(self, holds: Callable[[], bool], within: float | None = None) -> bool:
        deadline = time.monotonic() + (self.step_sec if within is None else within)
        while not holds():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def stop(self, signal: Signal, detail: str) -> NoReturn:
        self.result.broke(signal, detail)
        raise Stop(detail)

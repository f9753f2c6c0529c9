"""The observer's judgement between sources, on a real registry with scripted screens:
the best source an agent has wins, and a screen that stops showing a question ends
the wait."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.supervision.observer import SCREEN_CONFIRM_SEC, AgentObserver
from app.tmux.models import PaneStatus
from registry.activity import Observation
from registry.jobs import Registry

CLAUDE_DIALOG = [
    "● Bash(touch done.txt)",
    "  ⎿  Waiting…",
    " Bash command",
    "",
    "   touch done.txt",
    "   Run the command the task needs",
    "",
    " Do you want to proceed?",
    " \u276f 1. Yes",
    "   2. Yes, and always allow access to work/ from this project",
    "   3. No",
    "",
    " Esc to cancel · Tab to amend · ctrl+e to explain",
]


class Screen:
    """What the pane shows now (a test sets it)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, pane_id: str) -> list[str]:
        return list(self.lines)


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def running(registry: Registry, agent: str) -> str:
    job = registry.register("create done.txt", agent, "alpha")
    registry.set_status(job.job_id, "running", "picked")
    return job.job_id


def look(observer: AgentObserver, registry: Registry, job_id: str, log: Path, now: float) -> None:
    """One supervision look, its sightings recorded as a pass records them."""
    job = registry.get(job_id)
    pane = PaneStatus("%1", exists=True, dead=False)
    verdict = observer.look(job, pane, log, now, started_at=0.0, worked=lambda: True)
    for seen in verdict.observations:
        registry.observe(job_id, seen)


def test_a_screen_agreeing_with_a_hook_adds_no_change(registry: Registry, tmp_path: Path) -> None:
    """Claude's hook said waiting (with the command); its dialog on screen says the same
    in other words: one wait, still from the hook (job why names the hook)."""
    job_id = running(registry, "claude")
    hook = Observation("waiting", "hook:claude:PermissionRequest", question="Allow Bash?",
                       tool="Bash", command="touch done.txt")  # fmt: skip
    registry.observe(job_id, hook)
    screen = Screen()
    screen.lines = CLAUDE_DIALOG
    log = tmp_path / "pane.log"
    log.write_bytes(b"dialog")
    observer = AgentObserver(screen)
    for step in range(4):
        look(observer, registry, job_id, log, time.time() + step * SCREEN_CONFIRM_SEC)
    history = registry.activity_history(job_id)
    assert [c.observation.source for c in history][1:] == ["hook:claude:PermissionRequest"]
    assert "Claude Code hook PermissionRequest: Bash `touch done.txt`" in registry.why(job_id)


def test_a_screen_disagreeing_with_a_hook_still_wins_once_it_holds(
    registry: Registry, tmp_path: Path
) -> None:
    """The cross-check stays: hooks said working, the screen shows a dialog for long
    enough (a question no hook reports): waiting, from the screen."""
    job_id = running(registry, "claude")
    registry.observe(job_id, Observation("working", "hook:claude:PreToolUse"))
    screen = Screen()
    screen.lines = CLAUDE_DIALOG
    log = tmp_path / "pane.log"
    log.write_bytes(b"dialog")
    observer = AgentObserver(screen)
    for step in range(4):
        look(observer, registry, job_id, log, time.time() + step * SCREEN_CONFIRM_SEC)
    job = registry.get(job_id)
    assert job.activity == "waiting" and job.activity_source == "screen:claude.dialog"


def test_a_status_sequence_does_not_replace_a_structured_wait(
    registry: Registry, tmp_path: Path
) -> None:
    """Codex's app-server said waiting with the command; its OSC 7501 `blocked` (no
    command) comes after: the wait keeps the app-server's command and source."""
    job_id = running(registry, "codex")
    structured = Observation("waiting", "appserver:codex:requestApproval",
                             question="Run the command the task needs", tool="Shell",
                             command="touch done.txt")  # fmt: skip
    registry.observe(job_id, structured)
    log = tmp_path / "pane.log"
    log.write_bytes(b"\x1b]7501;state=blocked:app=codex:kind=permission\x1b\\")
    observer = AgentObserver(Screen())
    now = time.time()
    look(observer, registry, job_id, log, now)
    log.write_bytes(log.read_bytes() * 2)
    assert observer.look_at_output(registry.get(job_id), log, now + 0.5) == ()
    job = registry.get(job_id)
    assert job.activity_source == "appserver:codex:requestApproval"
    assert (job.activity_data or {})["command"] == "touch done.txt"


def test_a_question_gone_from_the_screen_ends_the_wait(registry: Registry, tmp_path: Path) -> None:
    """An agent known only by its screen (no rule for what it shows next): once its
    question is answered and it prints again, it is working, not waiting for ever."""
    job_id = running(registry, "generic")
    screen = Screen()
    screen.lines = ["thinking... 2", "Run touch done.txt? [y/n]"]
    log = tmp_path / "pane.log"
    log.write_bytes(b"asks")
    observer = AgentObserver(screen)
    now = time.time()
    look(observer, registry, job_id, log, now)
    look(observer, registry, job_id, log, now + 1)
    assert registry.get(job_id).activity == "waiting"
    screen.lines = ["Run touch done.txt? [y/n] y", "ran touch done.txt", "bot>"]
    log.write_bytes(b"asks, answered, ran")
    look(observer, registry, job_id, log, now + 2)
    look(observer, registry, job_id, log, now + 3)
    assert registry.get(job_id).activity == "working"


def test_an_idle_agent_that_just_got_to_work_is_not_completed(
    registry: Registry, tmp_path: Path
) -> None:
    """--done-when idle, a race seen under load: a pass read the job idle (Gemini's
    prompt on screen before its task went in), its hook said working right after, and
    the pass then found it had worked and completed the job. A pass finishes a job
    only if its activity is still the idle it judged."""
    from types import SimpleNamespace

    from app.supervision.observer import Verdict
    from app.supervision.reconcile import Reconciler, ReconcileReport

    job_id = running(registry, "gemini")
    registry.observe(job_id, Observation("idle", "screen:gemini.idle"))
    judged = registry.get(job_id)  # what the pass read
    registry.observe(job_id, Observation("working", "hook:gemini:BeforeAgent"))
    orch = SimpleNamespace(
        settings=SimpleNamespace(state_dir=tmp_path / "state"),
        registry=registry,
        pane_log=lambda job: tmp_path / "pane.log",
        panes_by_job=dict,
        reconcile_sessions=list,
    )
    reconciler = Reconciler(orch, driver=None)  # type: ignore[arg-type]
    done = Verdict(finish=("completed", "agent finished its turn"), idle_done=True)
    report = ReconcileReport()
    reconciler._apply(judged, done, report)
    assert registry.get(job_id).status == "running"
    assert report.completed == {}


def test_a_hook_agents_prompt_before_its_task_is_not_idle(
    registry: Registry, tmp_path: Path
) -> None:
    """Gemini draws its empty prompt before it takes the task given with -i (seconds,
    under load): that screen is no idle; the agent is starting until its hooks speak
    (a job resumed then found no conversation to resume)."""
    job_id = running(registry, "gemini")
    screen = Screen()
    screen.lines = [" >   Type your message or @path/to/file", " ~/work   no sandbox"]
    log = tmp_path / "pane.log"
    log.write_bytes(b"prompt")
    observer = AgentObserver(screen)
    for step in range(5):
        look(observer, registry, job_id, log, time.time() + step * SCREEN_CONFIRM_SEC)
    assert registry.get(job_id).activity == "starting"


def test_a_late_status_sequence_does_not_undo_the_app_servers_wait(
    registry: Registry, tmp_path: Path
) -> None:
    """Seen under load: the app-server's request was recorded, then the pane log's
    older `working` and `blocked` were read and replaced it. Once Codex's app-server
    reports for a job, its status sequences are redundant and may be stale."""
    job_id = running(registry, "codex")
    log = tmp_path / "pane.log"
    log.write_bytes(b"\x1b]7501;state=working:app=codex\x1b\\")
    observer = AgentObserver(Screen())
    now = time.time()
    look(observer, registry, job_id, log, now)
    assert registry.get(job_id).activity == "working"
    registry.observe(job_id, Observation("waiting", "appserver:codex:requestApproval",
                                         tool="Shell", command="touch done.txt"))  # fmt: skip
    log.write_bytes(log.read_bytes() + b"\x1b]7501;state=working:app=codex\x1b\\")
    assert observer.look_at_output(registry.get(job_id), log, now + 0.1) == ()
    log.write_bytes(log.read_bytes() + b"\x1b]7501;state=idle:app=codex\x1b\\")
    look(observer, registry, job_id, log, now + 1)
    job = registry.get(job_id)
    assert job.activity == "waiting" and job.activity_source == "appserver:codex:requestApproval"


def test_the_registry_keeps_the_best_source_whoever_reads_late(registry: Registry) -> None:
    """The rule holds where the change is written (a pass that read the job before the
    app-server spoke must not undo it): weaker sightings that only repeat, or a status
    sequence after the app-server, are no change; a structured source always counts."""
    job_id = running(registry, "codex")
    wait = Observation("waiting", "appserver:codex:requestApproval", tool="Shell",
                       command="touch done.txt")  # fmt: skip
    assert registry.observe(job_id, wait) is not None
    late = [
        Observation("waiting", "osc:codex:blocked", question="needs permission"),
        Observation("working", "osc:codex:working"),
        Observation("waiting", "screen:codex.approval", command="touch done.txt"),
    ]
    assert [registry.observe(job_id, seen) for seen in late] == [None, None, None]
    assert registry.observe(job_id, Observation("working", "appserver:codex:status"))
    assert registry.observe(job_id, Observation("idle", "screen:codex.idle")) is not None


def test_codex_repeating_its_blocked_status_is_one_wait(registry: Registry) -> None:
    """Codex writes `state=blocked` again as it redraws its dialog: once its screen
    named the command, the repeat is no change (it put "needs permission" back and
    started the wait anew: a second bell and notify for one question)."""
    job_id = running(registry, "codex")
    blocked = Observation("waiting", "osc:codex:blocked", question="needs permission")
    named = Observation("waiting", "screen:codex.approval", question="Run it?",
                        command="touch done.txt")  # fmt: skip
    assert registry.observe(job_id, blocked) is not None
    assert registry.observe(job_id, named) is not None
    since = registry.get(job_id).activity_at_ms
    assert registry.observe(job_id, blocked) is None
    job = registry.get(job_id)
    assert (job.activity_data or {})["command"] == "touch done.txt"
    assert job.activity_at_ms == since
    assert registry.observe(job_id, Observation("working", "osc:codex:working")) is not None
    assert registry.observe(job_id, blocked) is not None  # the next question is a new wait


@pytest.mark.parametrize("reader", ["quick", "full"])
def test_a_turn_begun_and_done_between_two_reads_has_worked(
    reader: str, registry: Registry, tmp_path: Path
) -> None:
    """Codex on a fast model: `working` then `done` land in the pane log between two
    reads. Only the newest state counted, so the job had never worked since it started
    and, done when idle, never completed (seen as a flaky resume test on a busy CI)."""
    job_id = running(registry, "codex")
    registry.observe(job_id, Observation("starting", "control-room"))
    log = tmp_path / "pane.log"
    log.write_bytes(b"")
    observer = AgentObserver(Screen())
    now = time.time()
    look(observer, registry, job_id, log, now)  # the pane is up, nothing printed yet
    log.write_bytes(b"\x1b]7501;state=working:app=codex\x1b\\reply\x1b]7501;state=done\x1b\\")
    if reader == "quick":
        for seen in observer.look_at_output(registry.get(job_id), log, now + 0.1):
            registry.observe(job_id, seen)
    else:
        look(observer, registry, job_id, log, now + 1)
    assert [c.activity for c in registry.activity_history(job_id)] == [
        "starting",
        "working",
        "idle",
    ]
    assert registry.has_worked(job_id)


def test_a_screen_does_not_end_a_request_the_app_server_holds(
    registry: Registry, tmp_path: Path
) -> None:
    """Seen on a loaded CI: Codex's remote TUI still showed its prompt two seconds after
    its app-server asked for approval, and the screen's idle ended the pending request.
    The app-server reports every change of the job: the screen waits for it."""
    job_id = running(registry, "codex")
    registry.observe(job_id, Observation("waiting", "appserver:codex:requestApproval",
                                         tool="Shell", command="touch done.txt"))  # fmt: skip
    screen = Screen()
    screen.lines = ["", "\u203a Ask Codex to do anything", "", "  ? for shortcuts"]
    log = tmp_path / "pane.log"
    log.write_bytes(b"prompt")
    observer = AgentObserver(screen)
    now = time.time()
    for step in range(4):
        look(observer, registry, job_id, log, now + step * SCREEN_CONFIRM_SEC)
    job = registry.get(job_id)
    assert job.activity == "waiting" and job.activity_source == "appserver:codex:requestApproval"

"""The notify command (`watch --notify-cmd`, ORCHESTRATE_NOTIFY_CMD): a real script that
appends its stdin to a file, run once per change however often the change is seen."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from app.settings import SettingsError
from app.supervision.notify import Notifier, NotifyCommand, RegistryWatch
from registry.activity import Observation
from registry.jobs import Registry
from registry.needs_you import Signal, Watched, claim, watched
from tests.control.conftest import demo_cmd_text

RECORDER = (
    "import sys\nwith open(sys.argv[1], 'a') as out:\n    out.write(sys.stdin.read() + '\\n')\n"
)
ASKS = Observation("waiting", "hook:claude:PermissionRequest", "Proceed?", "Bash", "rm -rf /tmp/x")


@pytest.fixture
def recorder(tmp_path: Path) -> tuple[str, Path]:
    """(the notify command, the file it appends each run's stdin to)."""
    script = tmp_path / "record.py"
    script.write_text(RECORDER, encoding="utf-8")
    out = tmp_path / "notified.jsonl"
    return f"{sys.executable} {script} {out}", out


def lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("echo 'open", "cannot split"),
        ("no-such-program-here --x", "is not a program on PATH"),
        ("echo hi\x1b]0;x\x07", "control character"),
        ("echo " + "x" * 5000, "longer than"),
    ],
)
def test_a_bad_notify_command_is_one_line(text: str, says: str) -> None:
    with pytest.raises(SettingsError) as refused:
        NotifyCommand.parse(text)
    message = str(refused.value)
    assert says in message and "\n" not in message and message.startswith("--notify-cmd")


def test_words_are_split_and_never_given_to_a_shell(tmp_path: Path) -> None:
    command = NotifyCommand.parse(f"{sys.executable} -c 'import sys' '$(touch {tmp_path}/x)'")
    assert command is not None and command.argv[2:] == ("import sys", f"$(touch {tmp_path}/x)")
    assert NotifyCommand.parse("   ") is None


def test_each_change_runs_the_command_once(tmp_path: Path, recorder: tuple[str, Path]) -> None:
    """A wait seen again and again, by two watchers, is one run with the job as JSON;
    the job's end is another run, told apart by its event."""
    text, out = recorder
    registry = Registry.open(tmp_path / "state")
    job = registry.register("tidy", "claude", "s1", sign_events=False)
    registry.publish(job.job_id, "started", "go")
    registry.observe(job.job_id, ASKS)
    command = NotifyCommand.parse(text)
    assert command is not None
    problems: list[str] = []
    first, second = (
        Notifier(command, lambda s, by=by: claim(registry.bus, s, by=by), problems.append)
        for by in ("control-room", "supervisor")
    )
    waits = Signal("needs_you", watched(registry.get(job.job_id)))
    first.send([waits, waits])
    second.send([waits])
    registry.publish(job.job_id, "error", "tests failed")
    ended = Signal("error", watched(registry.get(job.job_id)))
    first.send([ended])
    first.close(timeout=20)
    second.close(timeout=20)
    # two notifiers' threads: either may claim the wait, so the runs' order is not
    # promised across them, only that each change runs once
    got = {line["event"]: line for line in lines(out)}
    assert len(lines(out)) == 2 and set(got) == {"needs_you", "error"}
    assert {line["job_id"] for line in got.values()} == {job.job_id}
    waited = got["needs_you"]
    assert waited["question"] == "Bash `rm -rf /tmp/x`" and waited["detail"] == "Proceed?"
    assert got["error"]["detail"] == "tests failed" and problems == []


def test_a_failing_command_is_reported_once(tmp_path: Path) -> None:
    command = NotifyCommand.parse(f"{sys.executable} -c 'import sys; sys.exit(\"no route\")'")
    assert command is not None
    problems: list[str] = []
    notifier = Notifier(command, lambda signal: True, problems.append)
    for n in range(3):
        job = Signal("finished", Watched(f"j{n}", "completed", False, 1))
        notifier.send([job])
    notifier.close(timeout=20)
    assert notifier.runs == 3
    assert problems == ["notify command exited with status 1: no route"]


def test_the_background_watch_sees_a_wait_once_and_then_the_end(
    tmp_path: Path, recorder: tuple[str, Path]
) -> None:
    """RegistryWatch (what the supervisor runs after each pass): many passes over the
    same wait, the hook firing again for it: one needs_you, one finished."""
    text, out = recorder
    registry = Registry.open(tmp_path / "state")
    old = registry.register("old", "claude", "s0", sign_events=False)
    registry.publish(old.job_id, "completed", "long ago")
    command = NotifyCommand.parse(text)
    assert command is not None
    notifier = Notifier(command, lambda s: claim(registry.bus, s, by="supervisor"), print)
    watch = RegistryWatch(registry, notifier)
    watch.check()  # starts after what already ended
    job = registry.register("tidy", "claude", "s1", sign_events=False)
    registry.publish(job.job_id, "started", "go")
    watch.check()
    for _ in range(3):
        registry.observe(job.job_id, ASKS)
        watch.check()
    registry.publish(job.job_id, "completed", "done")
    watch.check()
    watch.check()
    notifier.close(timeout=20)
    assert [(line["event"], line["job_id"]) for line in lines(out)] == [
        ("needs_you", job.job_id),
        ("finished", job.job_id),
    ]


@pytest.fixture
def supervised(monkeypatch: pytest.MonkeyPatch, recorder: tuple[str, Path]) -> Path:
    monkeypatch.setenv("ORCHESTRATE_SUPERVISOR", "on")
    monkeypatch.setenv("ORCHESTRATE_NOTIFY_CMD", recorder[0])
    return recorder[1]


def test_the_supervisor_runs_the_notify_command_with_no_control_room(
    supervised: Path, cli, state_dir: Path, tmux_socket: str, wait_for
) -> None:
    """A `submit --no-wait` of a demo agent that asks permission, nobody watching: the
    background supervisor (which inherits ORCHESTRATE_NOTIFY_CMD) announces the wait,
    then, once `orchestrate answer` lets the agent finish, the end."""
    result = cli(
        "submit", "--prompt", "tidy", "--agent", "demo", "--agent-session", "alpha",
        "--agent-cmd", demo_cmd_text("--ask-permission"), "--no-wait",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    wait_for(lambda: [line["event"] for line in lines(supervised)] == ["needs_you"], timeout=30)
    answered = cli("answer", "--job", job_id, "yes")
    assert answered.returncode == 0, answered.stderr
    wait_for(lambda: len(lines(supervised)) == 2, timeout=30, what="the end announced")
    got = lines(supervised)
    assert [(line["event"], line["job_id"]) for line in got] == [
        ("needs_you", job_id),
        ("finished", job_id),
    ]
    assert "Allow edit of" in str(got[0]["text"])

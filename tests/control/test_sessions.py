"""Sessions in tmux and in the registry: stop modes, resume, list reconciled with tmux."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.settings import Settings
from app.tmux.driver import TmuxDriver
from app.tmux.errors import SessionOwnedElsewhere
from app.tmux.names import session_name_for
from registry.errors import IllegalTransition, NoPendingJob
from registry.records import Job
from registry.vocabulary import SessionStatus


def sleeper(orch: Orchestrator, label: str) -> Job:
    return orch.submit("wait", "custom", label, agent_cmd=["sleep", "30"])


def pane_session(orch: Orchestrator, pane_id: str) -> str:
    result = orch.driver.server.cmd("display-message", "-p", "-t", pane_id, "#{session_name}")
    return str(result.stdout[0])


def session_panes(orch: Orchestrator, label: str) -> tuple[str, ...]:
    return next(info.pane_ids for info in orch.driver.list_sessions() if info.label == label)


def test_submit_records_the_session_under_the_drivers_tmux_name(orch: Orchestrator) -> None:
    """The registry records the name the driver really uses (dots and colons escaped)."""
    job = sleeper(orch, "team.alpha:1")
    session = orch.sessions.get("team.alpha:1")
    assert session.state == "running"
    assert session.tmux_session == session_name_for("team.alpha:1")
    assert orch.driver.has_session("team.alpha:1")
    pane = orch.pane_for_job(job.job_id)
    assert pane is not None and pane_session(orch, pane) == session.tmux_session


def test_stop_modes_leave_the_right_tmux_and_registry_state(orch: Orchestrator, wait_for) -> None:
    """graceful: agents exit, tmux kept -> stopped; soft: nothing touched -> archived;
    hard: tmux session killed -> terminated. Graceful and hard cancel the running job."""
    jobs = {mode: sleeper(orch, f"s-{mode}") for mode in ("graceful", "soft", "hard")}
    panes = {mode: orch.pane_for_job(job.job_id) for mode, job in jobs.items()}

    assert orch.stop_session("s-graceful", "graceful").state == "stopped"
    assert orch.driver.has_session("s-graceful")
    assert not orch.driver.pane_alive(str(panes["graceful"]))
    assert orch.registry.get(jobs["graceful"].job_id).status == "cancelled"

    assert orch.stop_session("s-soft", "soft").state == "archived"
    assert orch.driver.pane_alive(str(panes["soft"]))
    assert orch.registry.get(jobs["soft"].job_id).status == "running"

    assert orch.stop_session("s-hard", "hard").state == "terminated"
    assert not orch.driver.has_session("s-hard")
    assert orch.registry.get(jobs["hard"].job_id).status == "cancelled"
    assert "hard" in orch.registry.why(jobs["hard"].job_id)

    # a reconcile pass afterwards does not turn the cancelled jobs into errors
    orch.reconcile()
    assert orch.registry.get(jobs["graceful"].job_id).status == "cancelled"
    with pytest.raises(IllegalTransition, match="terminated"):
        orch.stop_session("s-hard", "graceful")


def test_resume_restarts_the_agent_and_archived_needs_no_tmux(
    orch: Orchestrator, state_dir: Path, wait_for
) -> None:
    sleeper(orch, "g")
    orch.stop_session("g", "graceful")
    resumed = orch.resume_session("g", ["sh", "-c", "echo resumed-conversation; sleep 30"])
    assert resumed.state == "running"
    log = state_dir / "logs" / "sessions" / "g" / "resume.log"
    wait_for(lambda: "resumed-conversation" in log.read_text(), what="resume output")

    sleeper(orch, "s")
    orch.stop_session("s", "soft")
    before = session_panes(orch, "s")
    assert orch.resume_session("s").state == "running"
    assert session_panes(orch, "s") == before  # nothing new started in tmux

    orch.create_session("h")
    orch.stop_session("h", "hard")
    with pytest.raises(IllegalTransition, match="cannot resume from terminated"):
        orch.resume_session("h")


def test_session_list_marks_vanished_tmux_sessions_terminated(orch: Orchestrator, cli) -> None:
    orch.create_session("keep")
    orch.create_session("gone")
    orch.driver.kill_session("gone")
    result = cli("session", "list", "--json")
    assert result.returncode == 0, result.stderr
    states = {row["label"]: row["state"] for row in json.loads(result.stdout)}
    assert states == {"keep": "running", "gone": "terminated"}
    assert "tmux session gone" in orch.sessions.why("gone")
    table = cli("session", "list").stdout
    assert "keep" in table and "terminated" in table


def test_two_labels_only_take_their_own_jobs(orch: Orchestrator, wait_for) -> None:
    """A submit claims exactly its job: another label's pending job, and a pending job of its
    own label registered by hand, stay pending; each pane runs in its label's session."""
    other = orch.registry.register("later", "custom", "beta")
    queued = orch.registry.register("queued", "custom", "alpha")
    script = ["sh", "-c", "echo job=$ORCHESTRATE_JOB; sleep 30"]
    first = orch.submit("a", "custom", "alpha", agent_cmd=script)
    second = orch.submit("b", "custom", "beta", agent_cmd=script)
    for job, label in ((first, "alpha"), (second, "beta")):
        pane = orch.pane_for_job(job.job_id)
        assert pane is not None and pane_session(orch, pane) == label
        wait_for(lambda p=pane, j=job: f"job={j.job_id}" in "\n".join(orch.driver.capture(p)))
    assert orch.registry.get(other.job_id).status == "pending"
    assert orch.registry.get(queued.job_id).status == "pending"
    assert orch.registry.pick("beta").job_id == other.job_id
    assert orch.registry.pick("alpha").job_id == queued.job_id
    with pytest.raises(NoPendingJob):
        orch.registry.pick("alpha")


def test_hard_stop_exits_0_when_a_reconcile_terminated_the_session_first(
    orch: Orchestrator, cli, state_dir: Path, tmux_socket: str
) -> None:
    """Killing the tmux session wakes whatever else watches it (the detached supervisor
    of the session's job): its reconcile may record the session terminated before
    `session stop --mode hard` does. That is the end asked for, not "cannot hard_stop
    from terminated" with exit 1. A tmux hook runs that reconcile inside the kill, so
    the race is lost every time."""
    sleeper(orch, "racy")
    orch.create_session("keeper")  # the server outlives the killed session
    reconcile = shlex.join(
        [sys.executable, "-m", "app", "--state-dir", str(state_dir), "reconcile"]
    )
    hook = f"run-shell {shlex.quote(f'ORCHESTRATE_TMUX_SOCKET={tmux_socket} {reconcile}')}"
    orch.driver.server.cmd("set-hook", "-g", "session-closed", hook)
    stopped = cli("session", "stop", "racy", "--mode", "hard")
    assert (stopped.returncode, stopped.stdout) == (0, "session racy: terminated\n"), stopped
    assert orch.sessions.get("racy").state == SessionStatus.TERMINATED
    assert not orch.driver.has_session("racy")
    again = cli("session", "stop", "racy", "--mode", "hard")  # already ended: still refused
    assert again.returncode == 1 and "cannot hard_stop from terminated" in again.stderr


def test_session_cli_bad_input(orch: Orchestrator, cli) -> None:
    misspelt = cli("session", "stop", "x", "--mode", "hardd")
    assert misspelt.returncode == 2 and "'hardd' is not one of" in misspelt.stderr
    unknown = cli("session", "stop", "nobody", "--mode", "soft")
    assert (unknown.returncode, unknown.stderr) == (1, "orchestrate: no session 'nobody'\n")
    assert cli("session", "resume", "nobody").returncode == 1
    created = cli("session", "create", "dup")
    assert created.returncode == 0, created.stderr
    again = cli("session", "create", "dup")
    assert again.returncode == 1 and again.stderr.count("\n") == 1
    assert "already exists" in again.stderr
    watch = cli("session", "watch", "deadbeef")
    assert (watch.returncode, watch.stderr) == (1, "orchestrate: no job 'deadbeef'\n")


def test_session_watch_opens_the_control_room_split(orch: Orchestrator, cli) -> None:
    """Seed 003 §3.3: window w:<job>, pane log tail on top (70 %), event follow below."""
    job = orch.submit("x", "custom", "alpha", agent_cmd=["sleep", "30"])
    result = cli("session", "watch", job.job_id)
    assert result.returncode == 0, result.stderr
    assert f"w:{job.job_id}" in result.stdout
    panes = orch.driver.server.cmd(
        "list-panes", "-t", f"=control-room:w:{job.job_id}", "-F", "#{pane_height}"
    ).stdout
    top, bottom = (int(height) for height in panes)
    assert top > bottom * 2
    assert cli("session", "watch", job.job_id).returncode == 0  # reused, not duplicated


def test_reconcile_judges_only_sessions_of_its_own_tmux_server(
    orch: Orchestrator, state_dir: Path
) -> None:
    """`session list` run with another ORCHESTRATE_TMUX_SOCKET must not declare the
    sessions of the first server vanished."""
    orch.create_session("alpha")
    other = Orchestrator(Settings(state_dir), tmux_socket=f"{orch.driver.socket_name}-other")
    try:
        assert other.reconcile_sessions() == []
        assert orch.sessions.get("alpha").state == "running"
        orch.driver.kill_session("alpha")
        assert orch.reconcile_sessions() == ["alpha"]
        assert orch.sessions.get("alpha").state == "terminated"
    finally:
        other.driver.server.kill()


def test_a_workdir_that_is_not_a_directory_is_refused_before_anything_starts(
    orch: Orchestrator, cli, tmp_path: Path
) -> None:
    """An agent started in a missing directory ran wherever tmux put it (here), where a
    coding agent would edit the wrong tree: refused in one line, nothing registered."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    for bad in (tmp_path / "missing", a_file):
        for command in (
            ("session", "create", "w1", "--workdir", str(bad)),
            ("submit", "--prompt", "x", "--agent", "custom", "--agent-session", "w2",
             "--agent-cmd", "pwd", "--workdir", str(bad), "--no-wait"),
        ):  # fmt: skip
            refused = cli(*command)
            assert refused.returncode == 2 and refused.stderr.count("\n") == 1
            assert "--workdir" in refused.stderr and str(bad) in refused.stderr
    assert json.loads(cli("session", "list", "--json").stdout) == []
    assert json.loads(cli("job", "list", "--json").stdout) == []


def test_another_projects_session_on_the_same_tmux_server_is_refused(
    orch: Orchestrator, tmux_socket: str, tmp_path: Path
) -> None:
    """Two state dirs on one tmux server and one label: the second project is refused
    (create, submit, stop) instead of taking over, stopping or killing the first's."""
    orch.create_session("shared")
    other = Orchestrator(Settings(state_dir=tmp_path / "other"), tmux_socket=tmux_socket)
    with pytest.raises(SessionOwnedElsewhere, match="belongs to the registry in"):
        other.create_session("shared")
    with pytest.raises(SessionOwnedElsewhere):
        other.submit("p", "custom", "shared", agent_cmd=["true"])
    assert other.sessions.list() == [] and other.registry.list() == []
    with pytest.raises(SessionOwnedElsewhere):
        TmuxDriver(tmux_socket, owner=str(other.settings.state_dir.resolve())).stop(
            "shared", "hard"
        )
    assert orch.driver.has_session("shared")
    assert other.create_session("own").label == "own"  # its own labels are fine
    orch.stop_session("shared", "hard")
    assert not orch.driver.has_session("shared")

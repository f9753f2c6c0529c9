"""The CLI's controls do what the control room's do: cancel stops the agent, resume
starts it again, a killed tmux server leaves jobs interrupted until one command brings
them back, and submit reads the broker as job register does."""

from __future__ import annotations

import os
from pathlib import Path

from libtmux.window import Window

from app.control import Orchestrator
from registry.jobs import Registry


def test_cli_cancel_stops_the_agent_and_says_who(orch: Orchestrator, cli, wait_for) -> None:
    job = orch.submit("x", "custom", "alpha", agent_cmd=["sleep", "60"])
    pane = orch.pane_for_job(job.job_id)
    assert pane is not None and orch.driver.pane_alive(pane)
    result = cli("job", "cancel", "--job", job.job_id)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{job.job_id}: cancelled\n"
    assert not orch.driver.pane_status(pane).exists  # stopped, not just marked
    assert "(cli)" in orch.registry.why(job.job_id) and "cancelled" in orch.registry.why(job.job_id)


def test_cli_resume_starts_the_agent_again(orch: Orchestrator, cli, wait_for) -> None:
    job = orch.submit("x", "custom", "alpha", agent_cmd=["sh", "-c", "exit 4"])
    wait_for(lambda: orch.check_job_pane(job.job_id) is not None, what="the failure")
    assert orch.registry.get(job.job_id).status == "error"
    result = cli("job", "resume", "--job", job.job_id)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{job.job_id}: running\n"
    assert orch.pane_for_job(job.job_id) is not None


def test_a_queue_job_is_only_queued_again(cli, state_dir: Path) -> None:
    """A job a worker picked (never in a pane) goes back to pending for a worker."""
    registry = Registry.open(state_dir)
    job = registry.register("x", "worker", "q1")
    registry.pick("q1")
    registry.cancel(job.job_id)
    result = cli("job", "resume", "--job", job.job_id)
    assert (result.returncode, result.stdout) == (0, f"{job.job_id}: pending\n"), result.stderr


def test_after_tmux_is_killed_interrupted_jobs_come_back_with_one_command(
    orch: Orchestrator, cli, wait_for
) -> None:
    """A reboot, simulated by killing the tmux server: the jobs stay live, listed as
    interrupted with the reason, and `job resume --all-interrupted` restarts them."""
    first = orch.submit("a", "custom", "alpha", agent_cmd=["sleep", "60"])
    second = orch.submit("b", "custom", "beta", agent_cmd=["sleep", "60"])
    for job in (first, second):  # both agents are up (their panes printed their header)
        wait_for(lambda job=job: orch.pane_log(job.job_id).stat().st_size > 0)
    orch.driver.server.cmd("kill-server")
    listed = cli("reconcile")
    assert listed.returncode == 0, listed.stderr
    for job in (first, second):
        record = orch.registry.get(job.job_id)
        assert (record.status, record.activity) == ("running", "interrupted")
        assert f"job {job.job_id} → interrupted" in listed.stdout
        assert (  # listed with the reason, and the way back
            f"job {job.job_id} interrupted (custom in session {job.agent_session}): "
            "its tmux server is gone (a reboot, or tmux kill-server)\n" in listed.stdout
        )
    assert listed.stdout.endswith("bring them back: orchestrate job resume --all-interrupted\n")
    shown = cli("job", "list")
    assert shown.stdout.count("interrupted") == 2
    resumed = cli("job", "resume", "--all-interrupted")
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(resumed.stdout.split()) == sorted(
        [f"{first.job_id}:", "running", f"{second.job_id}:", "running"]
    )
    for job in (first, second):
        pane = orch.pane_for_job(job.job_id)
        assert pane is not None and orch.driver.pane_alive(pane)
        assert orch.registry.get(job.job_id).activity == "starting"
    again = cli("job", "resume", "--all-interrupted")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "no interrupted jobs\n")


def test_resume_needs_a_job_or_all_interrupted(cli) -> None:
    both = cli("job", "resume", "--job", "deadbeef", "--all-interrupted")
    neither = cli("job", "resume")
    for result in (both, neither):
        assert result.returncode == 2
        assert "give --job ID or --all-interrupted" in result.stderr
        assert result.stderr.count("\n") == 1


def test_submit_records_the_broker_of_the_environment(
    cli, state_dir: Path, tmux_socket: str
) -> None:
    """As job register does: MQTT_BROKER/MQTT_PORT become the job's broker block."""
    result = cli(
        "submit", "--prompt", "x", "--agent", "custom", "--agent-session", "alpha",
        "--agent-cmd", "sleep 30", "--no-wait",
        env={"MQTT_BROKER": "127.0.0.1", "MQTT_PORT": "1999"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    job = Registry.open(state_dir).get(result.stdout.strip())
    assert job.broker is not None and (job.broker["host"], job.broker["port"]) == (
        "127.0.0.1",
        1999,
    )


def test_a_built_in_agent_that_is_not_installed_is_refused_and_stores_nothing(
    cli, state_dir: Path, tmux_socket: str, tmp_path: Path
) -> None:
    """`--agent claude` on a machine without claude: one line, nothing stored (it used
    to start a pane that died with status 127)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tmux").symlink_to(Path("/usr/bin/tmux"))
    result = cli(
        "submit", "--prompt", "x", "--agent", "claude", "--agent-session", "alpha",
        env={"PATH": str(bin_dir)},
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr == (
        "orchestrate: Claude Code is not installed here (no 'claude' on PATH); install it, "
        "or give the command with --agent-cmd\n"
    )
    assert Registry.open(state_dir).list() == []


def test_send_gives_the_agent_text_and_records_who(
    orch: Orchestrator, cli, workdir, wait_for
) -> None:
    """`orchestrate send` pastes the text into the agent's pane and presses Enter."""
    script = 'read line; printf "%s" "$line" > got.txt; sleep 30'
    job = orch.submit("x", "custom", "alpha", agent_cmd=["sh", "-c", script, "{prompt}"])
    wait_for(lambda: orch.pane_log(job.job_id).stat().st_size > 0, what="the pane")
    text = "please also run the linter; $(touch pwned) `rm -rf /`"
    result = cli("send", "--job", job.job_id, text)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"job {job.job_id}: sent {len(text)} characters\n"
    got = workdir / "got.txt"
    wait_for(lambda: got.exists() and got.read_text() == text, what="the text to arrive")
    assert not (workdir / "pwned").exists()
    inputs = [m.payload for m in orch.registry.bus.read_after(0) if m.type == "job.event"
              and m.payload["event"] == "input"]  # fmt: skip
    assert inputs[-1]["data"]["kind"] == "message"
    assert inputs[-1]["data"]["chars"] == len(text) and "(cli)" in inputs[-1]["data"]["by"]


def test_send_and_attach_refuse_what_cannot_be_done(orch: Orchestrator, cli) -> None:
    job = orch.submit("x", "custom", "alpha", agent_cmd=["true"])
    empty = cli("send", "--job", job.job_id, "   ")
    assert (empty.returncode, empty.stderr) == (
        1,
        "orchestrate: nothing to send: the text is empty\n",
    )
    neither = cli("send", "--job", job.job_id)
    assert neither.returncode == 2 and "give TEXT or --file FILE" in neither.stderr
    missing = cli("attach", "--job", "deadbeef")
    assert (missing.returncode, missing.stderr) == (1, "orchestrate: no job 'deadbeef'\n")
    shown = cli("attach", "--job", job.job_id, "--print")
    assert shown.returncode == 0 and "attach-session -t %" in shown.stdout


def test_secrets_reach_only_their_own_pane(
    orch: Orchestrator, workdir, wait_for, monkeypatch
) -> None:
    """A submitter with a broker password and a job token of its own in its environment
    (an agent that submits): the panes get their own job's token only, no password, and
    tmux's global environment (what every pane inherits) holds neither."""
    monkeypatch.setenv("MQTT_PASSWORD", "broker-secret-123")
    monkeypatch.setenv("ORCHESTRATE_JOB_TOKEN", "someone-elses-token")
    monkeypatch.setenv("MY_API_KEY", "the-users-own-key")
    script = 'env > "env-$0.txt"; sleep 30'
    first = orch.submit("a", "custom", "alpha", agent_cmd=["sh", "-c", script, "{prompt}"])
    second = orch.submit("b", "custom", "beta", agent_cmd=["sh", "-c", script, "{prompt}"])
    for job, prompt in ((first, "a"), (second, "b")):
        dump = workdir / f"env-{prompt}.txt"
        wait_for(lambda dump=dump: dump.exists() and "PATH=" in dump.read_text())
        env = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
        assert env["ORCHESTRATE_JOB_TOKEN"] == orch.registry.get(job.job_id).auth_token
        assert env["MY_API_KEY"] == "the-users-own-key"  # the user's own environment
        assert "MQTT_PASSWORD" not in env
        assert "someone-elses-token" not in dump.read_text()
    tokens = {orch.registry.get(j.job_id).auth_token for j in (first, second)}
    assert len(tokens) == 2
    glob = orch.driver.server.cmd("show-environment", "-g").stdout
    assert not [line for line in glob if line.startswith(("MQTT_PASSWORD=", "ORCHESTRATE_JOB"))]


def test_resume_all_interrupted_goes_past_one_that_cannot_start(
    orch: Orchestrator, cli, wait_for, tmp_path: Path
) -> None:
    """One interrupted job whose agent is not installed for the resuming user (here:
    a Gemini CLI that was only on the submitter's PATH) does not keep the others down:
    they come back, it stays interrupted, and the command says why in one line, exit 1."""
    bin_dir = tmp_path / "submitter-bin"
    bin_dir.mkdir()
    fake = bin_dir / "gemini"
    fake.write_text("#!/bin/sh\nexec sleep 60\n", encoding="utf-8")
    fake.chmod(0o755)
    submitter = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    lost = orch.submit("b", "gemini", "beta", env=submitter)
    back = orch.submit("a", "custom", "alpha", agent_cmd=["sleep", "60"])
    for job in (lost, back):
        wait_for(lambda job=job: orch.pane_log(job.job_id).stat().st_size > 0)
    orch.driver.server.cmd("kill-server")
    result = cli("job", "resume", "--all-interrupted")
    assert result.returncode == 1
    assert result.stdout == f"{back.job_id}: running\n"
    assert result.stderr == (
        f"orchestrate: job {lost.job_id} not resumed: Gemini CLI is not installed here "
        "(no 'gemini' on PATH); install it, or give the command with --agent-cmd\n"
    )
    assert orch.registry.get(lost.job_id).activity == "interrupted"
    pane = orch.pane_for_job(back.job_id)
    assert pane is not None and orch.driver.pane_alive(pane)


def test_a_pass_while_a_job_resumes_does_not_take_it_for_interrupted(
    orch: Orchestrator, wait_for, monkeypatch
) -> None:
    """A supervision pass that lands while a resumed job's new window opens (the job
    running again, its pane not tagged yet) must wait for the pane as for a first start,
    not read the last attempt's pane log as the new pane's output and mark the job
    interrupted again (the control room's passes run every few seconds beside R)."""
    job = orch.submit("x", "custom", "alpha", agent_cmd=["sleep", "60"])
    wait_for(lambda: orch.pane_log(job.job_id).stat().st_size > 0)
    orch.reconcile()  # the pass has seen this attempt's pane
    orch.driver.server.cmd("kill-server")
    orch.reconcile()
    assert orch.registry.get(job.job_id).activity == "interrupted"
    set_option = Window.set_option
    passes = []

    def pass_first(window: Window, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not passes:  # the new window is open, its pane not yet tagged with the job
            passes.append(orch.reconcile())
        return set_option(window, *args, **kwargs)

    monkeypatch.setattr(Window, "set_option", pass_first)
    orch.resume_interrupted()
    assert passes and passes[0].sampled == {job.job_id: "starting"}
    assert orch.registry.get(job.job_id).activity != "interrupted"
    pane = orch.pane_for_job(job.job_id)
    assert pane is not None and orch.driver.pane_alive(pane)

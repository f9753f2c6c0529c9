"""Signed fleet commands: keys per node, refusals of anything not signed for this node,
commands done once, node events believed only from the node a job is placed on, and
the CLI's bad inputs."""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.fleet.remote import Sent, say
from app.fleet.taking import FleetLink
from app.settings import Settings
from bus.mqtt import ReceivedMessage
from bus.mqtt_config import BrokerConfig
from registry.fleet_commands import (
    Confirmation,
    DoneCommands,
    InvalidCommand,
    SentCommands,
    control_key,
    new_command,
    node_key,
    read_trust,
    signed,
    take_command,
    verify,
)
from registry.fleet_feed import confirmations, node_events
from registry.jobs import Registry
from registry.placement import PlacementStore
from registry.vocabulary import FleetVerb
from tests.conftest import run_cli
from tests.fleet.test_placement import announce

KEY = b"k" * 32


def test_a_command_signed_for_a_node_is_believed_there_only() -> None:
    command = new_command("box1", "0123abcd", FleetVerb.SEND, text="hi")
    wire = signed(command, node_key(KEY, "box1"))
    assert verify(wire, node_key(KEY, "box1"), "box1") == command
    with pytest.raises(InvalidCommand, match="signature mismatch"):
        verify(wire, node_key(KEY, "box2"), "box2")  # box2's key cannot check box1's
    with pytest.raises(InvalidCommand, match="trusts no control room"):
        verify(wire, None, "box1")


def test_a_changed_command_is_refused() -> None:
    wire = json.loads(signed(new_command("box1", "0123abcd", FleetVerb.ANSWER, reply="no"), KEY))
    wire["args"]["reply"] = "yes"
    with pytest.raises(InvalidCommand, match="signature mismatch"):
        verify(json.dumps(wire).encode(), KEY, "box1")
    del wire["sig"]
    with pytest.raises(InvalidCommand, match="unsigned"):
        verify(json.dumps(wire).encode(), KEY, "box1")


def test_a_command_for_another_node_is_refused_even_with_the_right_key() -> None:
    wire = signed(new_command("box2", "0123abcd", FleetVerb.CANCEL), KEY)
    with pytest.raises(InvalidCommand, match="not a v1 command for node box1"):
        verify(wire, KEY, "box1")


@given(st.binary(max_size=2000))
def test_any_payload_is_a_command_or_one_line_refusal(payload: bytes) -> None:
    try:
        verify(payload, KEY, "box1")
    except InvalidCommand as exc:
        assert "\n" not in str(exc)


def test_keys_are_made_once_private_and_read_back(tmp_path: Path) -> None:
    key = control_key(tmp_path)
    assert control_key(tmp_path) == key and len(key) == 32
    path = tmp_path / "fleet" / "control.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    trust = tmp_path / "box1.key"
    trust.write_text(node_key(key, "box1").hex() + "\n")
    assert read_trust(trust) == node_key(key, "box1")
    trust.write_text("not hex")
    with pytest.raises(InvalidCommand, match="cannot read a hex key"):
        read_trust(trust)
    trust.write_text("abcd")
    with pytest.raises(InvalidCommand, match="at least 16 bytes"):
        read_trust(trust)


def test_a_command_is_recorded_once_with_its_confirmation(tmp_path: Path) -> None:
    registry = Registry.open(tmp_path)
    done = DoneCommands(registry.db)
    job = registry.register("p", "demo", "s")
    take = take_command(job, "box1")
    assert take.id == f"take{job.job_id}"  # sent again at each announcement: taken once
    assert take.args["token"] == job.auth_token
    said = Confirmation(take.id, job.job_id, "take", True, "started")
    done.record(take, said)
    done.record(take, Confirmation(take.id, job.job_id, "take", False, "again"))
    assert done.confirmation(take.id) == said.to_json()
    assert done.taken_jobs() == [job.job_id]


def test_a_node_confirms_only_the_commands_sent_to_it(tmp_path: Path) -> None:
    """Recorded before sending; a confirmation from another node changes nothing, and
    a later copy of the node's own does not overwrite the first."""
    registry = Registry.open(tmp_path)
    sent = SentCommands(registry.db)
    command = new_command("box1", "0123abcd", FleetVerb.CANCEL)
    sent.sent(command)
    waiting = sent.last("0123abcd")
    assert waiting is not None and "not confirmed yet" in waiting.line()
    said = Confirmation(command.id, "0123abcd", "cancel", True, "cancelled")
    sub = FakeSub()
    batch = [received("jobs/nodes/box2/confirms", said.to_json())]
    assert confirmations(sent, "jobs", sub, batch) == []  # type: ignore[arg-type]
    still = sent.last("0123abcd")
    assert still is not None and still.confirmed_at_ms is None
    assert sent.confirmed("box1", said)
    assert not sent.confirmed("box1", Confirmation(command.id, "0123abcd", "cancel", False, "x"))
    done = sent.last("0123abcd")
    assert done is not None and done.line().endswith("done: cancelled")


@dataclass
class FakeSub:
    """The subscriber's ack, which is all node_events uses of it."""

    acked: list[str] = field(default_factory=list)

    def ack(self, message: ReceivedMessage) -> bool:
        self.acked.append(message.topic)
        return True


def received(topic: str, payload: bytes = b"{}") -> ReceivedMessage:
    return ReceivedMessage(topic, payload, 1, False, False, 1, 1)


def test_node_events_are_believed_from_the_node_the_job_is_placed_on(tmp_path: Path) -> None:
    registry = Registry.open(tmp_path)
    announce(PlacementStore(registry.bus).nodes, "box1", agents=("demo",))
    placements = PlacementStore(registry.bus)
    job = registry.register("p", "demo", "s")
    placements.request(job.job_id, "box1", "demo")
    sub = FakeSub()
    own = received(f"jobs/nodes/box1/jobs/{job.job_id}/events")
    other = received(f"jobs/nodes/box2/jobs/{job.job_id}/events")
    unknown = received("jobs/nodes/box1/jobs/feedbeef/events")
    plain = received(f"jobs/{job.job_id}/events")
    kept = node_events(placements, "jobs", sub, [own, other, unknown, plain])  # type: ignore[arg-type]
    assert [m.topic for m in kept] == [job.events_topic, plain.topic]
    assert sub.acked == [other.topic, unknown.topic]  # refused for good, not redelivered


def test_a_placed_job_is_never_picked_locally(state_dir: Path) -> None:
    placed = run_cli(
        "job", "register", "--prompt", "p", "--agent", "demo", "--agent-session", "s",
        "--node", "box9", state_dir=state_dir,
    )  # fmt: skip
    assert placed.returncode == 0, placed.stderr
    picked = run_cli("job", "pick", "--agent-session", "s", state_dir=state_dir)
    assert picked.returncode == 3 and placed.stdout.strip() not in picked.stdout


def test_a_hostile_confirmation_reaches_the_terminal_as_plain_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    command = new_command("box1", "0123abcd", FleetVerb.SEND, text="hi")
    hostile = "sent \x1b]52;c;cHduZWQ=\x07 \x1b[2J\u202e done"
    say(Sent(command, Confirmation(command.id, "0123abcd", "send", True, hostile)), "sent")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert out.startswith("job 0123abcd: sent on node box1: sent")


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["node", "key", "bad/name"], "node name"),
        (["node", "key", "any"], "cannot be 'any'"),
        (["node", "run", "--name", "box1", "--trust", "/nonexistent/key"], "--trust"),
        (["answer", "--job", "0123abcd", "yes", "--wait", "-1"], "--wait"),
        (["send", "--job", "0123abcd", "hi", "--wait", "x"], "--wait"),
        (["job", "cancel", "--job", "0123abcd", "--wait", "99999"], "--wait"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(args: list[str], reason: str, state_dir: Path) -> None:
    env = {"MQTT_BROKER": "127.0.0.1", "MQTT_PORT": "1", "ORCHESTRATE_TMUX_SOCKET": "unused"}
    result = run_cli(*args, state_dir=state_dir, env=env, timeout=30)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0], result.stderr


def test_a_trust_file_that_is_no_key_is_refused(state_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "key"
    bad.write_text("zz")
    env = {"MQTT_BROKER": "127.0.0.1", "MQTT_PORT": "1", "ORCHESTRATE_TMUX_SOCKET": "unused"}
    result = run_cli(
        "node", "run", "--name", "box1", "--trust", str(bad), state_dir=state_dir, env=env
    )
    assert result.returncode == 2 and "cannot read a hex key" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_node_key_prints_a_key_per_node(state_dir: Path) -> None:
    one = run_cli("node", "key", "box1", state_dir=state_dir)
    two = run_cli("node", "key", "box2", state_dir=state_dir)
    assert one.returncode == 0 and two.returncode == 0
    assert len(bytes.fromhex(one.stdout.strip())) == 32 and one.stdout != two.stdout
    assert run_cli("node", "key", "box1", state_dir=state_dir).stdout == one.stdout


def test_a_node_refuses_what_it_cannot_do_and_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A take of an agent not installed on the node, and a command on a job it never
    took: each confirmed as refused, in one line, nothing registered on the node."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no agent CLI here
    control = Registry.open(tmp_path / "control")
    job = control.register("p", "codex", "s")
    settings = Settings(state_dir=tmp_path / "node")
    link = FleetLink(
        settings, BrokerConfig("127.0.0.1", 1), "box1", "jobs", "unused_socket", KEY, print
    )
    refused = link.execute(take_command(job, "box1"))
    assert not refused.ok and "\n" not in refused.detail and "codex" in refused.detail
    assert link.orchestrator.registry.list() == []
    never = link.execute(new_command("box1", job.job_id, FleetVerb.CANCEL))
    assert not never.ok and "never taken by node box1" in never.detail

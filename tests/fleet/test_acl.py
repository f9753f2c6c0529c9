"""Node broker users: each may use only the topics under its own name."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from bus.broker_config import acl_text
from bus.broker_users import BrokerUser
from bus.errors import BrokerSetupError, InvalidTopic
from bus.fleet_topics import check_node_name, node_of_presence, presence_topic
from tests.conftest import run_cli


def test_node_users_get_only_their_own_topics() -> None:
    users = [
        BrokerUser.parse("box1:pw1", "node"),
        BrokerUser.parse("box2:pw2", "node"),
        BrokerUser.parse("ctl:pw", "control"),
    ]
    acl = acl_text(users, "jobs")
    sections = {block.split("\n")[0]: block for block in acl.split("\n\n") if block}
    box1 = sections["user box1"]
    assert "topic write jobs/nodes/box1/presence" in box1
    assert "topic write jobs/nodes/box1/jobs/+/events" in box1
    assert "box2" not in box1 and "+/presence" not in box1
    assert "%u" not in acl and "pattern" not in acl  # patterns apply to every user
    assert "topic read jobs/nodes/+/presence" in sections["user ctl"]


@pytest.mark.parametrize("spec", ["bad/name:pw", "a+b:pw", "-x:pw", "box1:pw:job1", "box1:"])
def test_bad_node_users_are_refused(spec: str) -> None:
    with pytest.raises(BrokerSetupError):
        BrokerUser.parse(spec, "node")


@pytest.mark.parametrize("name", ["", "a/b", "#", "a b", "x" * 64, "é", "a\x1b"])
def test_bad_node_names(name: str) -> None:
    with pytest.raises(InvalidTopic):
        check_node_name(name)


def test_presence_topic_round_trip() -> None:
    assert node_of_presence("team/jobs", presence_topic("team/jobs", "box.2")) == "box.2"
    assert node_of_presence("jobs", "jobs/nodes/box2/commands") is None
    assert node_of_presence("jobs", "other/nodes/box2/presence") is None


def test_broker_config_writes_node_users(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`broker config --node NAME:PASS` gives the node its login and its topics only,
    and says how a node logs in."""
    directory = Path(tempfile.mkdtemp(prefix="orchestrate-fleet-"))  # mosquitto must reach it
    directory.chmod(0o755)
    state = tmp_path_factory.mktemp("state")
    result = run_cli(
        "broker", "config", "--dir", str(directory / "b"), "--port", "18999",
        "--node", "box2:pw2", "--control", "ctl:pw", state_dir=state,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "orchestrate node start --name box2" in result.stdout
    acl = (directory / "b" / "acl").read_text()
    assert "user box2\ntopic write jobs/nodes/box2/presence" in acl
    logins = (directory / "b" / "passwd").read_text().splitlines()
    assert any(line.startswith("box2:$7$") for line in logins)
    shutil.rmtree(directory, ignore_errors=True)

"""The fleet's test hosts: nodes as separate processes (own state dir, HOME, tmux socket)
on a real Mosquitto with an ACL, and the control room's ingest bridge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bus.broker import BrokerUser
from tests.conftest import Result, run_cli
from tests.plugin.mosquitto import RunningBroker
from tests.polling import poll_until

AGENT_BIN = Path(__file__).resolve().parents[2] / ".venv" / "agent-bin"
PASSWORDS = {"ctl": "ctl-secret", "box1": "box1-secret", "box2": "box2-secret"}


@dataclass
class NodeHost:
    """One simulated host: its own state dir, HOME, tmux socket and PATH."""

    name: str
    state: Path
    env: dict[str, str]
    process: subprocess.Popen[str] | None = None

    def cli(self, *args: str) -> Result:
        return run_cli(*args, state_dir=self.state, env=self.env)

    def run(self, *args: str) -> subprocess.Popen[str]:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app", "node", "run", "--name", self.name, *args],
            env={**self.env, "ORCHESTRATE_HOME": str(self.state)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        return self.process


def _path_without_agents(extra: Path | None) -> str:
    """PATH without the agent CLIs the test run may have on it, ``extra`` first."""
    kept = [p for p in os.environ.get("PATH", "").split(os.pathsep) if "agent-bin" not in p]
    return os.pathsep.join([str(extra), *kept] if extra else kept)


@pytest.fixture
def make_host(
    tmp_path: Path, private_tmux: Callable[..., str], state_dir: Path
) -> Iterator[Callable[..., NodeHost]]:
    """``make_host(name, broker, with_claude=False)``: a host of its own for a node."""
    hosts: list[NodeHost] = []

    def make(name: str, broker: RunningBroker | None, *, with_claude: bool = False) -> NodeHost:
        root = tmp_path / name
        (root / "home").mkdir(parents=True)
        bin_dir: Path | None = None
        if with_claude:
            bin_dir = root / "bin"
            bin_dir.mkdir()
            (bin_dir / "claude").symlink_to(AGENT_BIN / "claude")
        env = {
            **os.environ,
            "HOME": str(root / "home"),
            "ORCHESTRATE_TMUX_SOCKET": private_tmux(f"node_{name}"),
            "PATH": _path_without_agents(bin_dir),
        }
        if broker is not None:
            env |= {"MQTT_BROKER": "127.0.0.1", "MQTT_PORT": str(broker.port)}
            if broker.users:
                env |= {"MQTT_USERNAME": name, "MQTT_PASSWORD": PASSWORDS[name]}
        host = NodeHost(name, root / "state", env)
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        if host.process is None:  # started in the background, if at all
            run_cli("node", "stop", "--timeout", "10", state_dir=host.state, env=host.env)
        elif host.process.poll() is None:
            host.process.kill()
            host.process.wait(10)


@pytest.fixture
def fleet_broker(make_broker: Callable[..., RunningBroker]) -> RunningBroker:
    users = [BrokerUser("ctl", PASSWORDS["ctl"], "control")]
    users += [BrokerUser(name, PASSWORDS[name], "node") for name in ("box1", "box2")]
    return make_broker(users=users)


@pytest.fixture
def ingest(fleet_broker: RunningBroker, state_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """The control room's ingest bridge, logged in as the control user."""
    env = {
        **os.environ,
        "ORCHESTRATE_HOME": str(state_dir),
        "MQTT_BROKER": "127.0.0.1",
        "MQTT_PORT": str(fleet_broker.port),
        "MQTT_USERNAME": "ctl",
        "MQTT_PASSWORD": PASSWORDS["ctl"],
    }
    log = state_dir.parent / "ingest.log"  # a file: a pipe nobody reads could fill up
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "app", "ingest", "--quiet"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=output,
            text=True,
        )
    poll_until(lambda: "ingesting" in log.read_text() or process.poll() is not None, 60)
    assert "ingesting" in log.read_text(), log.read_text()
    yield process
    process.terminate()
    process.wait(15)


def fleet(state_dir: Path) -> dict[str, dict[str, Any]]:
    """`orchestrate nodes --json` of the control room, by node name."""
    result = run_cli("nodes", "--json", state_dir=state_dir)
    assert result.returncode == 0, result.stderr
    return {node["name"]: node for node in json.loads(result.stdout)}


def wait_fleet(
    state_dir: Path, check: Callable[[dict[str, dict[str, Any]]], bool], what: str
) -> Any:
    return poll_until(lambda: (seen := fleet(state_dir)) and check(seen) and seen, 60, what)

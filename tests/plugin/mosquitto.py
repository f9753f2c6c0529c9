"""Real Mosquitto fixtures for every test tier (a pytest plugin loaded by tests/conftest.py).

Each test gets its own broker on a free loopback port, with a temp config and data dir.

The broker directory lives under /tmp (not pytest's 0700 tmp tree) so that a
root-started Mosquitto can drop to user ``mosquitto`` and still reach it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bus.broker import (
    BrokerUser,
    Mosquitto,
    TlsFiles,
    create_test_ca,
    free_port,
    read_settings,
    write_config,
)
from bus.mqtt import BrokerConfig, MqttSubscriber, ReceivedMessage
from tests.ci import missing_part

MOSQUITTO = shutil.which(
    "mosquitto", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"])
)


@dataclass
class RunningBroker:
    """A started Mosquitto and how to reach it."""

    directory: Path
    process: Mosquitto
    tls: bool = False
    users: Sequence[BrokerUser] = field(default_factory=tuple)

    @property
    def port(self) -> int:
        settings = read_settings(self.directory)
        assert settings is not None
        return settings.port

    @property
    def ca_cert(self) -> str:
        return str(self.directory / "certs" / "ca.crt")

    def config(self, user: str | None = None, password: str | None = None) -> BrokerConfig:
        """A client config for this broker (TLS with the test CA when on)."""
        if self.tls:
            return BrokerConfig(
                "localhost", self.port, tls=True, ca_certs=self.ca_cert,
                username=user, password=password,
            )  # fmt: skip
        return BrokerConfig("127.0.0.1", self.port, username=user, password=password)

    def terminate(self) -> None:
        """SIGTERM: Mosquitto writes its persistence file before exiting."""
        self.process.stop()

    def kill(self) -> None:
        """SIGKILL: a crash; everything since the last autosave is gone."""
        self.process.kill()

    def start(self) -> None:
        """(Re)start on the same port and data dir; returns once it listens."""
        self.process.start()


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """One test CA and localhost server cert for the whole run (RSA keygen is slow)."""
    return create_test_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def make_broker(test_ca: TlsFiles) -> Iterator[Callable[..., RunningBroker]]:
    """``make_broker(tls=False, users=[...], allow_anonymous=None, require_certificate=False)``
    starts a Mosquitto for this test."""
    if MOSQUITTO is None:
        missing_part("mosquitto is not installed (apt-get install mosquitto)")
    started: list[RunningBroker] = []

    def make(
        *,
        tls: bool = False,
        users: Sequence[BrokerUser] = (),
        allow_anonymous: bool | None = None,
        require_certificate: bool = False,
    ) -> RunningBroker:
        """Anonymous clients are let in (loopback) unless ``users`` are given."""
        directory = Path(tempfile.mkdtemp(prefix="orchestrate-mqtt-"))
        if tls:  # write_config keeps certificates it finds in place
            shutil.copytree(test_ca.ca_cert.parent, directory / "certs")
        write_config(
            directory, port=free_port(), tls=tls, users=users,
            allow_anonymous=not users if allow_anonymous is None else allow_anonymous,
            require_certificate=require_certificate,
        )  # fmt: skip
        broker = RunningBroker(directory, Mosquitto(directory, binary=MOSQUITTO), tls, users)
        started.append(broker)
        broker.start()
        return broker

    yield make
    for broker in started:
        broker.process.stop()
        shutil.rmtree(broker.directory, ignore_errors=True)


@pytest.fixture
def broker(make_broker: Callable[..., RunningBroker]) -> RunningBroker:
    """A plain anonymous loopback broker with persistence."""
    return make_broker()


# -- polling helpers: deadlines, never fixed sleeps ---------------------------


def collect(sub: MqttSubscriber, count: int, timeout: float = 10.0) -> list[ReceivedMessage]:
    """Take messages until ``count`` arrived or ``timeout`` passed."""
    deadline = time.monotonic() + timeout
    got: list[ReceivedMessage] = []
    while len(got) < count and time.monotonic() < deadline:
        message = sub.get(timeout=0.1)
        if message is not None:
            got.append(message)
    return got


def until_payload(sub: MqttSubscriber, payload: bytes, timeout: float = 10.0) -> list[bytes]:
    """Payloads received up to and including ``payload`` (a sentinel published
    last, so everything that was going to arrive before it has arrived)."""
    deadline = time.monotonic() + timeout
    seen: list[bytes] = []
    while time.monotonic() < deadline:
        message = sub.get(timeout=0.1)
        if message is None:
            continue
        seen.append(message.payload)
        if message.payload == payload:
            return seen
    raise AssertionError(f"sentinel {payload!r} never arrived; saw {seen!r}")


@pytest.fixture(name="collect")
def collect_fixture() -> Callable[..., list[ReceivedMessage]]:
    """``collect(sub, count, timeout=10)``: messages until count or deadline."""
    return collect


@pytest.fixture(name="until_payload")
def until_payload_fixture() -> Callable[..., list[bytes]]:
    """``until_payload(sub, sentinel)``: payloads up to a sentinel published last."""
    return until_payload

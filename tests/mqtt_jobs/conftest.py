"""Helpers for job-level MQTT tests: real `orchestrate` processes over a real Mosquitto."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from registry.ingest import IngestBridge
from tests.plugin.mosquitto import RunningBroker
from tests.polling import poll_until as wait_for


@dataclass
class Running:
    """A background `orchestrate` process whose stdout/stderr lines are collected live."""

    proc: subprocess.Popen[str]
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    readers: list[threading.Thread] = field(default_factory=list)

    def wait_stderr(self, text: str, timeout: float = 15.0) -> str:
        """The first stderr line containing ``text``; fails if the process exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.stderr):
                if text in line:
                    return line
            if self.proc.poll() is not None:
                for reader in self.readers:  # drained: each has read to the pipe's end
                    reader.join(5)
                break
            time.sleep(0.02)
        hit = [line for line in self.stderr if text in line]
        assert hit, f"{text!r} never on stderr; got {self.stderr!r}"
        return hit[0]

    def wait(self, timeout: float = 30.0) -> int:
        """The exit code, once the output is fully read; fails (with the output) on timeout."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(
                f"still running after {timeout:g} s; stdout {self.stdout!r}, stderr {self.stderr!r}"
            ) from None
        for thread in self.readers:
            thread.join(5)
        return code


def _drain(stream: object, into: list[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.append(line.rstrip("\n"))


@pytest.fixture
def spawn(state_dir: Path) -> Iterator[object]:
    """``spawn("subscribe", "--job", X, env={...})``: start orchestrate in the background."""
    started: list[Running] = []

    def start(*args: str, env: dict[str, str] | None = None, home: Path | None = None) -> Running:
        full_env = {**os.environ, "ORCHESTRATE_HOME": str(home or state_dir), **(env or {})}
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=full_env,
        )
        running = Running(proc)
        for stream, into in ((proc.stdout, running.stdout), (proc.stderr, running.stderr)):
            reader = threading.Thread(target=_drain, args=(stream, into), daemon=True)
            reader.start()
            running.readers.append(reader)
        started.append(running)
        return running

    yield start
    for running in started:
        if running.proc.poll() is None:
            running.proc.kill()
            running.proc.wait(10)


def raw_publish(broker: RunningBroker, topic: str, payload: bytes, retain: bool = False) -> None:
    """Publish bytes with bare paho, as an agent on another host (or an attacker) would."""
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    try:
        client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(5)
    finally:
        client.disconnect()
        client.loop_stop()


class BridgeThread:
    """An IngestBridge running in a thread, as the TUI runs it in a worker."""

    def __init__(self, bridge: IngestBridge) -> None:
        self.bridge = bridge
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=bridge.run, args=(self.stop_event,), daemon=True)

    def start(self) -> BridgeThread:
        self.thread.start()
        assert wait_for(lambda: self.bridge.state == "connected", 15)
        return self

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


@pytest.fixture
def run_bridge(state_dir: Path) -> Iterator[object]:
    """``run_bridge(broker, **kwargs)``: a started bridge for this test's state dir."""
    running: list[BridgeThread] = []

    def start(broker: RunningBroker, **kwargs: object) -> BridgeThread:
        bridge = IngestBridge(state_dir, broker.config(), **kwargs)  # type: ignore[arg-type]
        assert bridge.state == "none"
        running.append(BridgeThread(bridge).start())
        return running[-1]

    yield start
    for bridge in running:
        if bridge.thread.is_alive():
            bridge.stop()

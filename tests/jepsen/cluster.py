"""The system under test for the Jepsen-style suite, as real processes, and the faults.

* a real Mosquitto (``tests/plugin/mosquitto.py``: the product's own config);
* the control room: a registry in its state dir and ``orchestrate ingest``;
* agents on "other hosts": state dirs without a registry, each event one real
  ``orchestrate publish`` process (its outbox and background flusher included).

Faults (the nemesis): publisher kill -9, broker SIGTERM, broker kill -9 with
ingest down, ingest kill -9, a partition (the broker stopped with SIGSTOP).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bus.broker import BrokerUser, control_password
from registry.jobs import Registry
from tests.agent_host import stop_flushers
from tests.jepsen.checker import History, Op
from tests.plugin.mosquitto import RunningBroker


@dataclass
class Ingest:
    """`orchestrate ingest` for the control room's state dir, as its own process."""

    state_dir: Path
    env: dict[str, str]
    proc: subprocess.Popen[str] | None = None
    log: list[str] = field(default_factory=list)

    def start(self) -> None:
        assert self.proc is None, "ingest already runs"
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", "--state-dir", str(self.state_dir), "ingest", "--quiet"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=self.env,
        )  # fmt: skip
        assert proc.stderr is not None
        for line in proc.stderr:  # "ingesting ..." once subscribed
            self.log.append(line.rstrip("\n"))
            if "ingesting" in line:
                break
        else:
            raise AssertionError(f"ingest did not start: {self.log}")
        threading.Thread(target=self._drain, args=(proc,), daemon=True).start()
        self.proc = proc

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.log.append(line.rstrip("\n"))

    def kill(self) -> None:
        """kill -9: whatever it received but did not commit is redelivered later."""
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.kill()
            proc.wait(10)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def register_jobs(
    control: Path, count: int, homes: list[Path]
) -> tuple[dict[str, str], dict[str, Path]]:
    """``count`` signed jobs on the control room (tokens), spread over agent ``homes``."""
    registry = Registry.open(control)
    tokens, placed = {}, {}
    for index in range(count):
        job = registry.register(f"jepsen job {index}", "demo", "tmux:jepsen")
        assert job.auth_token is not None
        tokens[job.job_id] = job.auth_token
        placed[job.job_id] = homes[index % len(homes)]
    registry.db.close()
    return tokens, placed


def broker_users(homes: list[Path], placed: dict[str, Path]) -> list[BrokerUser]:
    """One worker account per agent host, allowed its own jobs' topics (the control
    room's account is the one `broker config` generates)."""
    users = []
    for index, home in enumerate(homes):
        mine = ",".join(job for job, where in placed.items() if where == home)
        users.append(BrokerUser.parse(f"agent{index}:agent{index}-pass:{mine}"))
    return users


@dataclass
class Fault:
    """When a fault ran (``end`` None: it still runs)."""

    name: str
    start: float
    end: float | None = None


@dataclass
class Cluster:
    """A broker, a control room and agent hosts; jobs registered, faults at hand."""

    broker: RunningBroker
    control: Path
    agent_homes: list[Path]
    ingest: Ingest
    tokens: dict[str, str] = field(default_factory=dict)
    homes: dict[str, Path] = field(default_factory=dict)
    history: History = field(default_factory=History)
    faults: list[Fault] = field(default_factory=list)
    rng: random.Random = field(default_factory=lambda: random.Random(23))

    jobs: list[str] = field(default_factory=list)

    def agent_env(self, job_id: str) -> dict[str, str]:
        """An agent host's environment: the broker, its worker account, the job's token."""
        home = self.agent_homes.index(self.homes[job_id])
        return {
            **os.environ, "MQTT_BROKER": "127.0.0.1", "MQTT_PORT": str(self.broker.port),
            "MQTT_USERNAME": f"agent{home}", "MQTT_PASSWORD": f"agent{home}-pass",
            "ORCHESTRATE_JOB_TOKEN": self.tokens[job_id],
        }  # fmt: skip

    # -- the client: one `orchestrate publish` per event ----------------------

    def publish(self, job_id: str, event: str, detail: str, kill_after: float | None) -> Op:
        """Run one publish; with ``kill_after``, kill -9 it after that many seconds."""
        env = self.agent_env(job_id)
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", "--state-dir", str(self.homes[job_id]), "publish",
             "--job", job_id, "--event", event, "--detail", detail, "--attempts", "6"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        killed = False
        if kill_after is not None:
            try:
                proc.wait(kill_after)
            except subprocess.TimeoutExpired:
                proc.kill()
                killed = True
        stdout, _stderr = proc.communicate(timeout=120)
        printed = None
        for line in stdout.splitlines():
            if line.startswith("{"):
                printed = json.loads(line)
        outcome = "crashed" if killed else "ok" if proc.returncode == 0 else "failed"
        op = Op(job_id, event, outcome, printed, proc.returncode, self.overlapping(started))
        self.history.add(op)
        return op

    def agent(self, job_id: str, keep_going: Callable[[], bool], kill_rate: float) -> None:
        """A job's agent: started, progress while ``keep_going()``, then completed.
        Progress publishes are killed at random (``kill_rate``); the terminal one never
        is (an agent that does not know whether its end landed could only send another)."""
        self.publish(job_id, "started", "begin", None)
        step = 0
        while keep_going() and step < 500:
            step += 1
            kill = self.rng.uniform(0.05, 0.6) if self.rng.random() < kill_rate else None
            self.publish(job_id, "progress", f"step {step}", kill)
        self.publish(job_id, "completed", "done", None)

    # -- the nemesis --------------------------------------------------------

    @contextmanager
    def _fault(self, name: str) -> Iterator[None]:
        """Record when the fault ran, to name it on the publishes it overlapped."""
        fault = Fault(name, time.monotonic())
        self.faults.append(fault)
        try:
            yield
        finally:
            fault.end = time.monotonic()

    def overlapping(self, since: float) -> str:
        """The faults that ran at some point between ``since`` and now."""
        return ", ".join(f.name for f in self.faults if f.end is None or f.end >= since)

    def broker_sigterm(self) -> None:
        """SIGTERM: Mosquitto saves its state on the way out; restarted 1 s later."""
        with self._fault("broker SIGTERM"):
            self.broker.terminate()
            time.sleep(1.0)
            self.broker.start()

    def ingest_kill(self) -> None:
        """kill -9 of the control room's ingest; restarted 1 s later."""
        with self._fault("ingest kill -9"):
            self.ingest.kill()
            time.sleep(1.0)
            self.ingest.start()

    def broker_kill_with_ingest_down(self, until: Callable[[], bool]) -> None:
        """Ingest stopped, publishes acknowledged by the broker only (until ``until()``),
        then kill -9 of the broker before it saved them; both restarted."""
        with self._fault("broker kill -9, ingest down"):
            self.ingest.kill()
            deadline = time.monotonic() + 20
            while not until() and time.monotonic() < deadline:
                time.sleep(0.05)
            self.broker.kill()
            time.sleep(0.5)
            self.broker.start()
            self.ingest.start()

    def partition(self, seconds: float = 8.0) -> None:
        """The broker stopped (SIGSTOP) for ``seconds``: connections hang, nothing answers."""
        pid = self.broker.process.running_pid()
        assert pid is not None
        with self._fault(f"partition {seconds:g} s"):
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(seconds)
            finally:
                os.kill(pid, signal.SIGCONT)

    def heal(self) -> None:
        """Everything up again (a fault that failed half-way must not skew the check)."""
        if self.broker.process.running_pid() is None:
            self.broker.start()
        if self.ingest.proc is None:
            self.ingest.start()

    def converged(self, jobs: list[str]) -> bool:
        """Every job ended with no seq missing (what the checker then examines)."""
        registry = Registry.open(self.control)
        try:
            return all(
                (job := registry.get(job_id)).status == "completed" and job.missing_count == 0
                for job_id in jobs
            )
        finally:
            registry.db.close()

    def control_env(self) -> dict[str, str]:
        """The control room's environment: the broker and the generated control account."""
        password = control_password(self.broker.directory)
        assert password is not None
        return {
            **os.environ, "MQTT_BROKER": "127.0.0.1", "MQTT_PORT": str(self.broker.port),
            "MQTT_USERNAME": "orchestrate-control", "MQTT_PASSWORD": password,
        }  # fmt: skip

    def shutdown(self) -> None:
        self.ingest.stop()
        for home in self.agent_homes:
            stop_flushers(home)

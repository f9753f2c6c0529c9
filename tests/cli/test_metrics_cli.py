"""`orchestrate metrics` as a real process: Prometheus text on stdout, `--serve` over
HTTP, hostile agent names as labels, and bad input (one line, nothing stored)."""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from registry.activity import Observation
from registry.jobs import Registry

Cli = Callable[..., Any]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> tuple[Samples, dict[str, str]]:
    """Every sample by (name, labels), and each family's type."""
    samples: Samples = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in samples, f"sample {key} twice"
            samples[key] = sample.value
    return samples, types


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def fill(state_dir: Path) -> Registry:
    """Two agents' jobs: one working, one waiting for a person, one done, one pending."""
    registry = Registry.open(state_dir)
    working = registry.register("build it", "claude", "s1").job_id
    registry.set_status(working, "running")
    registry.observe(working, Observation("working", "hook:claude:PreToolUse"))
    registry.publish(working, "progress", "half way")
    asking = registry.register("ask first", "codex", "s2").job_id
    registry.set_status(asking, "running")
    registry.publish(asking, "permission_required", "may I run rm?")
    done = registry.register("finish", "codex", "s2").job_id
    registry.set_status(done, "running")
    registry.publish(done, "completed", "all good")
    registry.register("later", "claude", "s1")
    return registry


def one_line_error(result: Any, code: int, text: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1, result.stderr
    assert text in result.stderr
    assert result.stdout == ""


def test_stdout_is_prometheus_text_with_the_registry_s_numbers(state_dir: Path, cli: Cli) -> None:
    registry = fill(state_dir)
    [(messages,)] = registry.db.conn.execute("SELECT count(*) FROM messages").fetchall()
    events = {
        agent: n
        for agent, n in registry.db.conn.execute(
            "SELECT j.agent, count(*) FROM messages m JOIN jobs j ON j.job_id = m.from_agent "
            "WHERE m.type = 'job.event' GROUP BY j.agent"
        )
    }

    result = cli("metrics")

    assert result.returncode == 0 and result.stderr == ""
    samples, types = parse(result.stdout)
    assert value(samples, "orchestrate_up") == 1
    assert value(samples, "orchestrate_jobs", agent="claude", status="running") == 1
    assert value(samples, "orchestrate_jobs", agent="claude", status="pending") == 1
    assert value(samples, "orchestrate_jobs", agent="codex", status="running") == 1
    assert value(samples, "orchestrate_jobs", agent="codex", status="completed") == 1
    assert value(samples, "orchestrate_jobs", agent="codex", status="error") == 0
    assert value(samples, "orchestrate_running_jobs", agent="claude", activity="working") == 1
    assert value(samples, "orchestrate_running_jobs", agent="codex", activity="waiting") == 1
    assert value(samples, "orchestrate_jobs_waiting") == 1
    assert events == {"claude": 2, "codex": 2}
    for agent, count in events.items():
        assert value(samples, "orchestrate_events_ingested_total", agent=agent) == count
    assert value(samples, "orchestrate_bus_messages") == messages
    assert value(samples, "orchestrate_export_backlog_messages") == messages
    assert 0 <= value(samples, "orchestrate_last_event_age_seconds") < 600
    assert value(samples, "orchestrate_storage_bytes", file="state.db") > 0
    assert types["orchestrate_events_ingested"] == "counter"
    assert types["orchestrate_jobs"] == "gauge"


def test_agent_names_are_escaped_label_values(state_dir: Path, cli: Cli) -> None:
    """An agent name is hostile text: quotes, backslashes, braces and commas stay inside
    their label value (prometheus_client escapes them), and so does a newline in a row
    the registry never wrote itself; parsed back, each is exactly the stored name and
    no extra sample appears."""
    registry = Registry.open(state_dir)
    names = ['x"}\\evil{a="1",b=', "ok\\n", "émoji-🤖", "#TYPE"]
    for name in names:
        registry.register("task", name, "s1")
    forged = registry.register("task", "placeholder", "s1").job_id
    registry.db.conn.execute(
        "UPDATE jobs SET agent = ? WHERE job_id = ?",
        ('bad\n# TYPE orchestrate_up counter\norchestrate_up{a="b"} 9', forged),
    )
    names.append('bad\n# TYPE orchestrate_up counter\norchestrate_up{a="b"} 9')

    result = cli("metrics")

    assert result.returncode == 0, result.stderr
    samples, types = parse(result.stdout)
    pending = {
        dict(labels)["agent"]: v
        for (name, labels), v in samples.items()
        if name == "orchestrate_jobs" and dict(labels)["status"] == "pending"
    }
    assert pending == dict.fromkeys(names, 1)
    assert [key for key in samples if key[0] == "orchestrate_up"] == [
        ("orchestrate_up", frozenset())
    ]
    assert types["orchestrate_up"] == "gauge"


def test_missing_damaged_and_locked_databases_are_one_line_and_exit_1(
    state_dir: Path, tmp_path: Path, cli: Cli
) -> None:
    nowhere = tmp_path / "nowhere"
    result = cli("--state-dir", str(nowhere), "metrics")
    one_line_error(result, 1, "no state database")
    assert not nowhere.exists()  # nothing created

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "state.db").write_bytes(b"\x00garbage" * 512)
    result = cli("--state-dir", str(damaged), "metrics")
    one_line_error(result, 1, "not an orchestrate database")
    assert (damaged / "state.db").read_bytes() == b"\x00garbage" * 512

    fill(state_dir).db.close()
    holder = sqlite3.connect(state_dir / "state.db", isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE jobs SET updated_at = updated_at")
        holder.execute("COMMIT")
        result = cli("metrics", env={"ORCHESTRATE_BUSY_TIMEOUT_MS": "50"})
        one_line_error(result, 1, "is locked by another process")
    finally:
        holder.close()


@pytest.mark.parametrize(
    ("port", "says"),
    [
        ("http", "not a port"),
        ("65536", "not a port"),
        ("-1", "not a port"),
        ("0.0.0.0:9100", "loopback"),
        ("192.168.1.10:9100", "loopback"),
        ("[::]:9100", "loopback"),
    ],
)
def test_bad_ports_are_usage_errors(cli: Cli, port: str, says: str) -> None:
    result = cli("metrics", "--serve", port)
    one_line_error(result, 2, says)
    assert result.stderr.startswith("orchestrate metrics: ")


def test_a_port_in_use_is_one_line_and_exit_1(state_dir: Path, cli: Cli) -> None:
    fill(state_dir)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("metrics", "--serve", str(port))
    one_line_error(result, 1, f"cannot serve on 127.0.0.1:{port}")


class Server:
    """A real `orchestrate metrics --serve` process; its stderr read by a thread."""

    def __init__(self, state_dir: Path, port: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app",
                "--state-dir",
                str(state_dir),
                "metrics",
                "--serve",
                port,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "ORCHESTRATE_BUSY_TIMEOUT_MS": "200"},  # a locked read gives up fast
        )
        self.lines: list[str] = []
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.url = re.search(r"http://\S+", self.wait_for_line("serving")).group(0)  # type: ignore[union-attr]

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self.changed:
                self.lines.append(line)
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def wait_for_line(self, text: str, timeout: float = 30) -> str:
        """The first stderr line holding ``text``: waits on the reader, never sleeps."""
        with self.changed:
            found = self.changed.wait_for(
                lambda: (
                    next((line for line in self.lines if text in line), None)
                    or self.proc.poll() is not None
                ),
                timeout,
            )
            line = next((line for line in self.lines if text in line), None)
        assert line is not None, f"no {text!r} on stderr ({found}): {self.lines}"
        return line

    def scrape(self) -> Samples:
        with urllib.request.urlopen(self.url, timeout=30) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain")
            return parse(response.read().decode("utf-8"))[0]

    def stop(self) -> int:
        """SIGTERM, as a service manager stops it; its exit status."""
        self.proc.terminate()
        return self.proc.wait(timeout=30)


@pytest.fixture
def server(state_dir: Path) -> Iterator[Server]:
    fill(state_dir).db.close()
    running = Server(state_dir, "0")
    yield running
    assert running.stop() == 0


def test_serve_answers_each_scrape_with_fresh_numbers(state_dir: Path, server: Server) -> None:
    """A scrape reads the registry when it comes: a job registered between two
    scrapes is in the second. The server listens on loopback only."""
    assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/metrics")
    first = server.scrape()
    assert value(first, "orchestrate_up") == 1
    assert value(first, "orchestrate_jobs", agent="claude", status="pending") == 1

    Registry.open(state_dir).register("one more", "claude", "s1")
    second = server.scrape()
    assert value(second, "orchestrate_jobs", agent="claude", status="pending") == 2
    assert value(second, "orchestrate_bus_messages") > value(first, "orchestrate_bus_messages")


def test_serve_keeps_serving_through_a_locked_database(state_dir: Path, server: Server) -> None:
    """A scrape that cannot read the registry is logged in one line and answered
    with orchestrate_up 0; the next one, once the lock is gone, reads again."""
    assert value(server.scrape(), "orchestrate_up") == 1
    holder = sqlite3.connect(state_dir / "state.db", isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE jobs SET updated_at = updated_at")
        holder.execute("COMMIT")
        locked = server.scrape()
    finally:
        holder.close()
    assert value(locked, "orchestrate_up") == 0
    assert not any(name == "orchestrate_jobs" for name, _ in locked)
    line = server.wait_for_line("could not read the registry")
    assert "locked" in line and line.startswith("orchestrate: ERROR")
    assert server.proc.poll() is None
    assert value(server.scrape(), "orchestrate_up") == 1

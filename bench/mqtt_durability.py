"""The cost of end-to-end durability per event, for bench/mqtt.py (one table, one run).

An agent on another host publishes one event at a time (one connection per
event, as `orchestrate publish` does). Compared, interleaved in the same run
against the same broker and the same `orchestrate ingest`:

* PUBACK only: ``publish_once`` (what `publish` did before: the broker has it,
  and a broker kill -9 before its autosave loses it);
* outbox + PUBACK: the event stored in the agent's SQLite outbox (fsync) and
  PUBACKed (what `publish` now waits for before it exits 0);
* outbox + confirmed: the same, then waiting for the control room's
  confirmation, i.e. until the event is committed in the registry (paced 60 ms
  apart, as `publish` processes come: the control room confirms a job at once
  after a quiet spell, at most every 50 ms in a burst);
* PUBACK only against a broker saving after every change
  (``autosave_on_changes true``, ``autosave_interval 1``): the broker-side
  alternative. It narrows the window, it does not close it: Mosquitto sends
  PUBACK before that save.
* the real `orchestrate publish` process from an agent host (outbox path)
  against a PUBACK-only one-shot process (``publish_once`` under ``python -c``).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bus.broker import Mosquitto, free_port, write_config
from bus.delivery_sender import deliver
from bus.mqtt import BrokerConfig, MqttPublisher, MqttSubscriber, publish_once
from registry.delivery import AgentOutbox, applied_topic
from registry.events import build_event
from registry.jobs import Registry
from registry.signing import sign

ROOT = Path(__file__).resolve().parent.parent
PAST_TERMINAL = b'{"schema_version":1,"seq":9,"event":"completed","detail":"' + b"x" * 200 + b'"}'
PACE_S = 0.06  # consecutive `orchestrate publish` processes are at least this far apart
ONE_SHOT = """
import sys
from bus.mqtt import BrokerConfig, publish_once
publish_once(BrokerConfig("127.0.0.1", int(sys.argv[1])), sys.argv[2], sys.argv[3].encode())
"""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def start_ingest(state: Path, port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ORCHESTRATE_HOME": str(state),
           "MQTT_BROKER": "127.0.0.1", "MQTT_PORT": str(port)}  # fmt: skip
    bridge = subprocess.Popen(
        [sys.executable, "-m", "app", "ingest", "--quiet"],
        env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert bridge.stderr is not None
    while "ingesting" not in (line := bridge.stderr.readline()):
        if not line:
            raise SystemExit("ingest bridge did not start")
    threading.Thread(target=lambda: [None for _ in bridge.stderr or ()], daemon=True).start()
    return bridge


def saving_broker(directory: Path, retained: int) -> tuple[Mosquitto, int]:
    """A broker that writes its persistence file after every change, holding
    ``retained`` retained messages (a control room's past jobs' terminal events:
    every save writes them all again)."""
    port = free_port()
    conf = write_config(directory, port=port, allow_anonymous=True)
    broker = Mosquitto(directory)
    broker.start()
    if retained:
        with MqttPublisher(BrokerConfig("127.0.0.1", port)) as pub:
            for n in range(retained):
                pub.publish(f"jobs/{n:08x}/events", PAST_TERMINAL, retain=True, wait=False)
            pub.flush(timeout=60)
    broker.stop()  # SIGTERM: saved
    text = conf.read_text().replace("autosave_interval 100", "autosave_interval 1")
    conf.write_text(text + "autosave_on_changes true\n")
    broker.start()
    return broker, port


class Job:
    """A signed job on the control room, published to by one variant."""

    def __init__(self, registry: Registry, port: int) -> None:
        job = registry.register(
            "bench", "bench", "bench", broker={"host": "127.0.0.1", "port": port}
        )
        assert job.auth_token is not None
        self.job_id, self.token, self.seq = job.job_id, job.auth_token, 0
        self.topic = job.events_topic

    def next_bytes(self) -> bytes:
        self.seq += 1
        return sign(
            build_event(self.job_id, self.seq, "progress", f"step {self.seq}"), self.token
        ).to_bytes()


def durability_rows(port: int, events: int, runs: int, retained: int) -> list[tuple[str, str, str]]:
    """Publish ``events`` events per variant, interleaved in chunks; return table rows."""
    work = Path(tempfile.mkdtemp(prefix="orchestrate-bench-durable-"))
    work.chmod(0o711)  # as root, the second broker (user mosquitto) lives under it
    config = BrokerConfig("127.0.0.1", port)
    state = work / "control"
    registry = Registry.open(state)
    jobs = {name: Job(registry, port) for name in ("puback", "outbox", "confirmed", "saving")}
    bridge = start_ingest(state, port)
    saver, saver_port = saving_broker(work / "saving-broker", retained)
    drain = MqttSubscriber(BrokerConfig("127.0.0.1", saver_port), ["jobs/+/events"],
                           client_id="bench-saving-consumer")  # fmt: skip
    drain.start()
    drain.wait_connected(10)
    threading.Thread(target=lambda: [None for _ in drain.messages(3600)], daemon=True).start()
    box = AgentOutbox(work / "agent-host")
    saving_config = BrokerConfig("127.0.0.1", saver_port)

    def outbox_send(job: Job, confirm_wait: float) -> None:
        queued = box.queue(
            job.job_id, job.topic, config.url,
            lambda seq: sign(build_event(job.job_id, seq, "progress", f"step {seq}"), job.token),
        )  # fmt: skip
        confirmation = deliver(config, queued, applied_topic(job.topic), confirm_wait=confirm_wait)
        box.outbox.mark_sent([queued])
        if confirm_wait and (confirmation is None or not confirmation.has(queued.position)):
            raise SystemExit(f"no confirmation of seq {queued.position} within {confirm_wait} s")
        if confirmation is not None:
            box.outbox.confirm(queued.stream, confirmation)

    last_confirmed = [0.0]

    def paced_confirmed() -> None:
        """One event per PACE_S at most, as consecutive `publish` processes come (the
        control room confirms a job at most every 50 ms during a burst)."""
        time.sleep(max(0.0, last_confirmed[0] + PACE_S - time.perf_counter()))
        outbox_send(jobs["confirmed"], 10.0)
        last_confirmed[0] = time.perf_counter()

    variants: dict[str, Callable[[], None]] = {
        "puback": lambda: publish_once(config, jobs["puback"].topic, jobs["puback"].next_bytes()),
        "outbox": lambda: outbox_send(jobs["outbox"], 0.0),
        "confirmed": paced_confirmed,
        "saving": lambda: publish_once(
            saving_config, jobs["saving"].topic, jobs["saving"].next_bytes()
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    chunk = 25
    try:
        for _ in range(0, events, chunk):  # interleaved: background load hits all alike
            for name, send in variants.items():
                for _ in range(chunk):
                    if name == "confirmed":  # the pause before it is not its cost
                        time.sleep(max(0.0, last_confirmed[0] + PACE_S - time.perf_counter()))
                    start = time.perf_counter()
                    send()
                    times[name].append((time.perf_counter() - start) * 1000)
        cli = cli_times(port, state, registry, work, runs)
    finally:
        drain.stop()
        saver.stop()
        bridge.terminate()
        bridge.wait(10)
        box.close()
        shutil.rmtree(work, ignore_errors=True)
    labels = {
        "puback": "PUBACK only (publish_once: lost if the broker dies)",
        "outbox": "outbox (fsync) + PUBACK  [what `publish` exits 0 on]",
        "confirmed": "outbox + PUBACK + confirmed in the registry (paced)",
        "saving": f"PUBACK only, broker saves every change ({retained} retained)",
        "cli-puback": f"one-shot process, PUBACK only (python -c), {runs} runs",
        "cli-outbox": f"`orchestrate publish` agent host (outbox), {runs} runs",
    }
    times |= cli
    base_p50 = percentile(times["puback"], 0.5)
    rows = []
    for name, values in times.items():
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        per_s = 1000 / statistics.mean(values)  # back to back (the paced row: if it were)
        base = base_p50 if not name.startswith("cli") else percentile(times["cli-puback"], 0.5)
        rows.append((labels[name], f"{p50:7.2f} {p99:8.2f} {per_s:8.0f}", f"{p50 / base:.2f}x"))
    return rows


def cli_times(
    port: int, state: Path, registry: Registry, work: Path, runs: int
) -> dict[str, list[float]]:
    """Wall time of fresh processes (ms): the agent's real publish vs a PUBACK-only one."""
    job = Job(registry, port)
    home = work / "cli-agent-host"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MQTT_BROKER": "127.0.0.1",
           "MQTT_PORT": str(port), "ORCHESTRATE_JOB_TOKEN": job.token}  # fmt: skip
    orchestrate = str(Path(sys.executable).with_name("orchestrate"))
    commands = {
        "cli-puback": [sys.executable, "-c", ONE_SHOT, str(port), job.topic, "x"],
        "cli-outbox": [orchestrate, "--state-dir", str(home), "publish", "--job", job.job_id,
                       "--event", "progress", "--detail", "step"],
    }  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, check=True, env=env, capture_output=True)
            times[name].append((time.perf_counter() - start) * 1000)
    # Whatever is unconfirmed goes now; a background flusher, if one started, then
    # finds its outbox empty and exits.
    flush = [orchestrate, "--state-dir", str(home), "publish", "--flush", "--wait", "30"]
    subprocess.run(flush, check=True, env=env, capture_output=True)
    return times


def print_table(rows: list[tuple[str, str, str]], events: int) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"\ndurability per event ({events} events per library row, interleaved; "
          f"one connection per event)")  # fmt: skip
    print(f"{'path':<{width}}   p50 ms   p99 ms  events/s  p50 vs PUBACK only")
    print("-" * (width + 50))
    for name, numbers, ratio in rows:
        print(f"{name:<{width}}  {numbers}  {ratio}")


def main() -> None:
    """Standalone: its own broker (bench/mqtt.py --durability-only calls this)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--retained", type=int, default=1000)
    args = parser.parse_args()
    run(args.events, args.runs, args.retained)


def run(events: int, runs: int, retained: int) -> None:
    directory = Path(tempfile.mkdtemp(prefix="orchestrate-bench-broker-"))
    port = free_port()
    write_config(directory, port=port, allow_anonymous=True)
    broker = Mosquitto(directory)
    broker.start()
    try:
        print_table(durability_rows(port, events, runs, retained), events)
    finally:
        broker.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()

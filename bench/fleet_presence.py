"""Benchmark fleet presence: a node started or killed -> the control room's nodes table.

Run:  .venv/bin/python -m bench.fleet_presence [--nodes 5]

Starts a Mosquitto with an ACL (a control user, one user per node), the control
room's `orchestrate ingest`, and ``--nodes`` `orchestrate node run` processes, each
with its own state dir and tmux socket. Measures, per node:

* start -> online: from spawning the node to its row online in the registry
  (process start, agent detection, connect, announce, ingest, commit);
* kill -9 -> offline: from SIGKILL to its row offline (the broker's last will,
  ingest, commit);
* an idle node's RSS and CPU (a share of one core over ``--idle`` seconds).

Baselines in the same run, the floor of each path: a bare paho process that
connects with a will and publishes one retained message (spawn -> a bare
subscriber here has it), and its kill -9 -> the will at that subscriber.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bus.broker import BrokerUser, Mosquitto, free_port, write_config
from bus.mqtt import BrokerConfig, MqttSubscriber

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
BARE_CLIENT = """
import sys, time, paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
port, name = int(sys.argv[1]), sys.argv[2]
topic = f"jobs/nodes/{name}/presence"
c = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
c.username_pw_set(name, name)
c.will_set(topic, b"gone", qos=1, retain=True)
c.connect("127.0.0.1", port)
c.publish(topic, b"here", qos=1, retain=True)
c.loop_forever()
"""


def rows(db: Path) -> dict[str, int]:
    """Each node's online flag in the control room's registry."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return dict(conn.execute("SELECT name, online FROM nodes").fetchall())
    except sqlite3.Error:
        return {}


def wait(condition: object, timeout: float = 120.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return time.monotonic()
        time.sleep(0.01)
    raise SystemExit(f"timed out waiting for {condition}")


def usage(pid: int) -> tuple[float, int]:
    """CPU seconds and RSS bytes of ``pid`` (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return cpu, rss


def bare_floor(port: int, count: int) -> tuple[list[float], list[float]]:
    """Spawn -> retained at a subscriber, and kill -9 -> will, for bare paho processes
    logged in as node users b0, b1, ... on their presence topics (the control room's
    ingest refuses what they send: not its business here)."""
    arrivals: dict[str, tuple[bytes, float]] = {}
    seen = threading.Event()
    sub = MqttSubscriber(BrokerConfig("127.0.0.1", port, username="ctl", password="ctl"),
                         ["jobs/nodes/+/presence"], session_expiry_s=0)  # fmt: skip
    sub.start()
    sub.wait_connected(10)

    def read() -> None:
        while not seen.is_set():
            message = sub.get(0.05)
            if message is not None:
                arrivals[message.topic] = (message.payload, time.monotonic())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    up, down = [], []
    for index in range(count):
        topic = f"jobs/nodes/b{index}/presence"
        began = time.monotonic()
        process = subprocess.Popen([sys.executable, "-c", BARE_CLIENT, str(port), f"b{index}"])
        arrived = wait(lambda t=topic: arrivals.get(t, (b"",))[0] == b"here")
        up.append(arrived - began)
        began = time.monotonic()
        process.send_signal(signal.SIGKILL)
        process.wait()
        arrived = wait(lambda t=topic: arrivals.get(t, (b"",))[0] == b"gone")
        down.append(arrived - began)
    seen.set()
    reader.join(2)
    sub.stop()
    return up, down


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds to sample idle CPU")
    args = parser.parse_args()
    mosquitto = shutil.which("mosquitto", path=f"{os.environ.get('PATH', '')}:/usr/sbin")
    if mosquitto is None:
        raise SystemExit("mosquitto is not installed (apt-get install mosquitto)")
    work = Path(tempfile.mkdtemp(prefix="orchestrate-bench-fleet-"))
    work.chmod(0o755)  # as root, mosquitto runs as its own user and must reach its dir
    names = [f"n{index}" for index in range(args.nodes)]
    bare = [f"b{index}" for index in range(args.nodes)]
    users = [BrokerUser("ctl", "ctl", "control")]
    users += [BrokerUser(name, name, "node") for name in names + bare]
    port = free_port()
    write_config(work / "broker", port=port, users=users)
    broker = Mosquitto(work / "broker", binary=mosquitto)
    broker.start()
    base = {**os.environ, "MQTT_BROKER": "127.0.0.1", "MQTT_PORT": str(port)}
    base.pop("ORCHESTRATE_JOB", None)
    control = work / "control"
    ingest = subprocess.Popen(
        [sys.executable, "-m", "app", "--state-dir", str(control), "ingest", "--quiet"],
        env={**base, "MQTT_USERNAME": "ctl", "MQTT_PASSWORD": "ctl"},
        stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert ingest.stderr is not None
    ingest.stderr.readline()  # "ingesting ..."
    db = control / "state.db"
    nodes: dict[str, subprocess.Popen[bytes]] = {}
    up: list[float] = []
    down: list[float] = []
    try:
        for name in names:
            began = time.monotonic()
            nodes[name] = subprocess.Popen(
                [sys.executable, "-m", "app", "--state-dir", str(work / name), "node", "run",
                 "--name", name, "--period", "30"],
                env={**base, "MQTT_USERNAME": name, "MQTT_PASSWORD": name,
                     "ORCHESTRATE_TMUX_SOCKET": f"bench-fleet-{os.getpid()}-{name}"},
                stderr=subprocess.DEVNULL, cwd=ROOT,
            )  # fmt: skip
            up.append(wait(lambda n=name: rows(db).get(n) == 1) - began)
        time.sleep(1.0)  # past the start: what an idle node costs
        first = {name: usage(process.pid) for name, process in nodes.items()}
        time.sleep(args.idle)
        cpu = [(usage(p.pid)[0] - first[n][0]) / args.idle for n, p in nodes.items()]
        rss = [usage(p.pid)[1] for p in nodes.values()]
        for name, process in nodes.items():
            began = time.monotonic()
            process.send_signal(signal.SIGKILL)
            process.wait()
            down.append(wait(lambda n=name: rows(db).get(n) == 0) - began)
        bare_up, bare_down = bare_floor(port, args.nodes)
    finally:
        for process in nodes.values():
            if process.poll() is None:
                process.kill()
        ingest.terminate()
        ingest.wait(15)
        broker.stop()
        for name in names:
            subprocess.run(["tmux", "-L", f"bench-fleet-{os.getpid()}-{name}", "kill-server"],
                           capture_output=True, check=False)  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:8.0f} {max(values) * 1000:8.0f}"

    print(f"fleet presence, {args.nodes} nodes (load {os.getloadavg()[0]:.1f})")
    print(f"{'path':28} {'p50 ms':>8} {'max ms':>8}   {'floor p50':>9} {'ratio':>6}")
    for label, got, floor in (
        ("start -> online", up, bare_up),
        ("kill -9 -> offline", down, bare_down),
    ):
        ratio = statistics.median(got) / max(statistics.median(floor), 1e-6)
        print(f"{label:28} {ms(got)}   {statistics.median(floor) * 1000:9.0f} {ratio:6.1f}x")
    print(f"idle node: CPU {statistics.mean(cpu) * 100:.1f}% of a core, "
          f"RSS {statistics.mean(rss) / 2**20:.0f} MiB (mean of {len(cpu)})")  # fmt: skip


if __name__ == "__main__":
    main()

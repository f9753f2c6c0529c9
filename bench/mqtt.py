"""Benchmark the MQTT transport against bare paho and mosquitto_pub on a local broker.

Run: .venv/bin/python bench/mqtt.py [--messages 20000] [--runs 15]
Starts its own Mosquitto (bus.broker) on a free loopback port.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import paho.mqtt.client as mqtt

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bus.broker import Mosquitto, find_program, free_port, write_config  # noqa: E402
from bus.mqtt import BrokerConfig, MqttPublisher  # noqa: E402

PAYLOAD = b'{"schema_version":1,"seq":1,"job_id":"ab12cd34","event":"progress","detail":"x"}'
TOPIC = "jobs/ab12cd34/events"

BARE_ONE_SHOT = """
import sys
import paho.mqtt.client as mqtt
c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
c.connect("127.0.0.1", int(sys.argv[1]))
c.loop_start()
info = c.publish("jobs/ab12cd34/events", sys.argv[2].encode(), qos=1)
info.wait_for_publish(5)
c.disconnect()
c.loop_stop()
"""

OUR_ONE_SHOT = """
import sys
from bus.mqtt import BrokerConfig, publish_once
publish_once(BrokerConfig("127.0.0.1", int(sys.argv[1])), "jobs/ab12cd34/events",
             sys.argv[2].encode())
"""


def publisher_throughput(port: int, count: int) -> float:
    """Messages/s through MqttPublisher: pipelined QoS 1, then flush."""
    with MqttPublisher(BrokerConfig("127.0.0.1", port)) as pub:
        start = time.perf_counter()
        for _ in range(count):
            pub.publish(TOPIC, PAYLOAD, wait=False)
        pub.flush(timeout=30)
        return count / (time.perf_counter() - start)


def bare_paho_throughput(port: int, count: int) -> float:
    """The same with paho alone: loop_start, max_inflight 20, wait for every info."""
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.max_inflight_messages_set(20)
    client.connect("127.0.0.1", port)
    client.loop_start()
    try:
        start = time.perf_counter()
        infos = [client.publish(TOPIC, PAYLOAD, qos=1) for _ in range(count)]
        for info in infos:
            info.wait_for_publish(30)
        return count / (time.perf_counter() - start)
    finally:
        client.disconnect()
        client.loop_stop()


def wall_ms(commands: dict[str, list[str]], runs: int) -> dict[str, float]:
    """Median wall time of a fresh process per command, in ms. Runs are
    interleaved (a, b, c, a, b, c, ...) so background load hits all alike."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, check=True, env=env, capture_output=True)
            times[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=15, help="one-shot runs per variant")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds (best kept)")
    args = parser.parse_args()

    directory = Path(tempfile.mkdtemp(prefix="orchestrate-bench-"))
    port = free_port()
    write_config(directory, port=port)
    broker = Mosquitto(directory)
    broker.start()
    try:
        ours_runs, bare_runs = [], []
        for _ in range(args.rounds):  # interleaved, best of each kept
            ours_runs.append(publisher_throughput(port, args.messages))
            bare_runs.append(bare_paho_throughput(port, args.messages))
        ours, bare = max(ours_runs), max(bare_runs)
        py = sys.executable
        payload = PAYLOAD.decode()
        mosquitto_pub = find_program("mosquitto_pub")
        one_shot = wall_ms(
            {
                "ours": [py, "-c", OUR_ONE_SHOT, str(port), payload],
                "bare": [py, "-c", BARE_ONE_SHOT, str(port), payload],
                "cli": [mosquitto_pub, "-h", "127.0.0.1", "-p", str(port), "-q", "1",
                        "-V", "mqttv5", "-t", TOPIC, "-m", payload],
            },
            args.runs,
        )  # fmt: skip
        one_ours, one_bare, one_cli = one_shot["ours"], one_shot["bare"], one_shot["cli"]
    finally:
        broker.stop()
        shutil.rmtree(directory, ignore_errors=True)

    n = f"{args.messages:,}"
    rows = [
        (f"MqttPublisher, persistent, QoS 1, N={n}", f"{ours:,.0f} msg/s",
         f"{ours / bare:.2f}x bare"),
        (f"bare paho loop, QoS 1, N={n}", f"{bare:,.0f} msg/s", "1.00x"),
        (f"publish_once (python -c), median of {args.runs}", f"{one_ours:.1f} ms",
         f"{one_ours / one_bare:.2f}x bare"),
        (f"bare paho one-shot (python -c), median of {args.runs}", f"{one_bare:.1f} ms", "1.00x"),
        (f"mosquitto_pub -q 1, median of {args.runs}", f"{one_cli:.1f} ms",
         f"{one_cli / one_bare:.2f}x bare"),
    ]  # fmt: skip
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'result':>14}  ratio")
    print("-" * (width + 28))
    for name, value, ratio in rows:
        print(f"{name:<{width}}  {value:>14}  {ratio}")
    print(f"\ntargets: publisher >= 0.8x bare paho ({ours / bare:.2f}x); "
          f"one-shot <= 1.3x bare script ({one_ours / one_bare:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()

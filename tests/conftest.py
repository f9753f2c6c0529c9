"""Fixtures shared by every test tier: an isolated state directory and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from tests.polling import poll_until

# What the generated-input suites check is what the code does with an input, not how
# fast one example runs: on a loaded machine an example past Hypothesis's 200 ms
# deadline, fast again on its replay, failed as "Flaky" (seen at load average ~25).
settings.register_profile("orchestrate", deadline=None)
settings.load_profile("orchestrate")

# The shared fixtures, each written once (tests/plugin): a private tmux server, a real
# Mosquitto, scripted fake model servers and an Orchestrator, for every tier.
pytest_plugins = [
    "tests.plugin.tmux",
    "tests.plugin.mosquitto",
    "tests.plugin.models",
    "tests.plugin.orchestrator",
]


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The test run's own ORCHESTRATE_CACHE_DIR (the JVM class archive lives there),
    so no test writes to the user's ~/.cache."""
    directory = tmp_path_factory.mktemp("cache")
    saved = os.environ.get("ORCHESTRATE_CACHE_DIR")
    os.environ["ORCHESTRATE_CACHE_DIR"] = str(directory)
    yield directory
    if saved is None:
        os.environ.pop("ORCHESTRATE_CACHE_DIR", None)
    else:
        os.environ["ORCHESTRATE_CACHE_DIR"] = saved


@pytest.fixture(scope="session", autouse=True)
def no_background_supervisor() -> Iterator[None]:
    """Tests judge supervision passes themselves: a background supervisor beside them
    would take their observations first (tests/supervision/test_supervisor.py
    switches it on for its own state dir)."""
    saved = os.environ.get("ORCHESTRATE_SUPERVISOR")
    os.environ["ORCHESTRATE_SUPERVISOR"] = "off"
    yield
    if saved is None:
        os.environ.pop("ORCHESTRATE_SUPERVISOR", None)
    else:
        os.environ["ORCHESTRATE_SUPERVISOR"] = saved


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh state directory, also exported as ORCHESTRATE_HOME for subprocesses."""
    directory = tmp_path / "state"
    monkeypatch.setenv("ORCHESTRATE_HOME", str(directory))
    monkeypatch.delenv("ORCHESTRATE_JOB", raising=False)
    for name in (
        "MQTT_BROKER",
        "MQTT_PORT",
        "MQTT_TLS",
        "MQTT_USERNAME",
        "MQTT_PASSWORD",
        "MQTT_CA_CERTS",
        "MQTT_CERTFILE",
        "MQTT_KEYFILE",
        "ORCHESTRATE_JOB_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    yield directory


@dataclass
class Result:
    """What a real `orchestrate` process did."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(
    *args: str,
    state_dir: Path | None = None,
    input: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> Result:
    """Run `orchestrate ARGS` as a real subprocess (the way a user or agent does)."""
    full_env = {**os.environ, **(env or {})}
    if state_dir is not None:
        full_env["ORCHESTRATE_HOME"] = str(state_dir)
    proc = subprocess.run(
        [sys.executable, "-m", "app", *args],
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli(state_dir: Path):  # type: ignore[no-untyped-def]
    """`cli("msg", "poll")` runs orchestrate against this test's state dir."""

    def invoke(*args: str, **kwargs: object) -> Result:
        return run_cli(*args, state_dir=state_dir, **kwargs)  # type: ignore[arg-type]

    return invoke


@pytest.fixture
def wait_for() -> Callable[..., object]:
    """`wait_for(condition, timeout, what)`: ``poll_until`` as a fixture."""
    return poll_until

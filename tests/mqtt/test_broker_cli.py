"""`orchestrate broker config/start/stop/status` as a user runs it (real subprocesses)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from bus.broker import free_port
from bus.mqtt import BrokerConfig, publish_once
from tests.mqtt.conftest import MOSQUITTO

CONFIG_FILES = ("mosquitto.conf", "broker.json")


def one_line_error(result) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("orchestrate: "), result.stderr
    return str(lines[0])


def test_config_writes_hardened_files(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """TLS, password file and ACL, persistence traps handled, secrets 0600."""
    target = tmp_path / "b"
    result = cli(
        "broker", "config", "--dir", str(target), "--tls",
        "--control", "hq:hq-pass", "--user", "w1:w1-pass:0000aaaa", "--user", "w2:w2-pass",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "MQTT_TLS=1" in result.stdout and "MQTT_PORT=8883" in result.stdout
    conf = (target / "mosquitto.conf").read_text()
    for line in (
        "persistence true", "autosave_interval 100", "max_queued_messages 0",
        "allow_anonymous false", "listener 8883 127.0.0.1", "tls_version tlsv1.2",
    ):  # fmt: skip
        assert line in conf.splitlines()
    acl = (target / "acl").read_text()
    assert "user hq\ntopic read jobs/+/events" in acl
    assert "user w1\ntopic write jobs/0000aaaa/events" in acl
    assert "user w2\ntopic write jobs/w2/events" in acl
    passwd = (target / "passwd").read_text()
    assert passwd.startswith("w1:") and "w1-pass" not in passwd
    for secret in ("passwd", "acl", "certs/server.key", "certs/ca.key"):
        assert stat.S_IMODE((target / secret).stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["broker", "config", "--port", "70000"], "port must be in 1-65535"),
        (["broker", "config", "--dir", "/proc/orchestrate"], "cannot write broker directory"),
        (["broker", "config", "--user", "nopass"], "user must be NAME:PASS"),
        (["broker", "start", "--port", "0"], "port must be in 1-65535"),
    ],
)
def test_bad_input_is_one_line(cli, args: list[str], fragment: str) -> None:  # type: ignore[no-untyped-def]
    assert fragment in one_line_error(cli(*args))


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--bind", "not an ip"], "bind address must be an IP address or a host name"),
        (["--bind", "300.1.1.1"], "got '300.1.1.1'"),
        (["--bind", "127.0.0.1\nallow_anonymous true"], "bind address must be"),
        (["--user", "w1:p", "--user", "w1:q"], "broker user 'w1' is given twice"),
        (["--user", "hq:p", "--control", "hq:q"], "broker user 'hq' is given twice"),
    ],
)
def test_config_refuses_a_bad_bind_or_a_user_named_twice(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, flags: list[str], fragment: str
) -> None:
    """Either was written as given: `listener 1883 not an ip`, two passwords for w1."""
    target = tmp_path / "b"
    assert cli("broker", "config", "--dir", str(target)).returncode == 0
    before = {path.name: path.read_bytes() for path in target.iterdir() if path.is_file()}
    assert fragment in one_line_error(cli("broker", "config", "--dir", str(target), *flags))
    assert {path.name: path.read_bytes() for path in target.iterdir() if path.is_file()} == before


@pytest.mark.parametrize("bind", ["0.0.0.0", "::1", "localhost", "broker.example.org"])
def test_config_takes_ip_addresses_and_host_names(cli, tmp_path: Path, bind: str) -> None:  # type: ignore[no-untyped-def]
    result = cli("broker", "config", "--dir", str(tmp_path / "b"), "--bind", bind)
    assert result.returncode == 0, result.stderr
    assert f"listener 1883 {bind}" in (tmp_path / "b" / "mosquitto.conf").read_text()


def test_config_exports_are_shell_quoted(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The export lines are meant to be pasted into a shell: a path with a space stays one word."""
    target = tmp_path / "my broker"
    result = cli("broker", "config", "--dir", str(target), "--tls")
    assert result.returncode == 0, result.stderr
    assert f"export MQTT_CA_CERTS='{target / 'certs' / 'ca.crt'}'" in result.stdout.splitlines()


def test_start_without_mosquitto_is_one_line(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("broker", "start", env={"ORCHESTRATE_MOSQUITTO": "/nonexistent/mosquitto"})
    assert "mosquitto is not installed" in one_line_error(result)


@pytest.mark.skipif(MOSQUITTO is None, reason="mosquitto is not installed")
def test_start_status_stop(cli, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """A dev broker in the state dir: started detached, reachable, stopped by pid file."""
    port = free_port()
    started = cli("broker", "start", "--port", str(port))
    try:
        assert started.returncode == 0, started.stderr
        assert f"MQTT_PORT={port}" in started.stdout
        assert (state_dir / "broker" / "mosquitto.pid").exists()
        assert cli("broker", "status").returncode == 0
        assert "already running" in one_line_error(cli("broker", "start"))
        files = {name: (state_dir / "broker" / name).read_text() for name in CONFIG_FILES}
        other_port = str(free_port())
        refused = cli("broker", "start", "--port", other_port)  # refused: changes nothing
        assert "already running" in one_line_error(refused)
        assert {name: (state_dir / "broker" / name).read_text() for name in CONFIG_FILES} == files
        assert f"on 127.0.0.1:{port}" in cli("broker", "status").stdout
        publish_once(BrokerConfig("127.0.0.1", port), "jobs/0000aaaa/events", b"hello")
    finally:
        stopped = cli("broker", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    status = cli("broker", "status")
    assert status.returncode == 1 and "not running" in status.stdout
    assert not (state_dir / "broker" / "mosquitto.pid").exists()

"""The MQTT tests' fixtures live in ``tests/mosquitto_fixture.py`` (a plugin shared by
every tier); the names tests import from here are re-exported."""

from __future__ import annotations

from tests.mosquitto_fixture import MOSQUITTO, RunningBroker, collect, until_payload
from tests.polling import poll_until as wait_for

__all__ = ["MOSQUITTO", "RunningBroker", "collect", "until_payload", "wait_for"]

"""Fixtures for the bus tests: a real state database in a temp directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from bus.db import BusDB
from bus.messages import Bus


@pytest.fixture
def bus(tmp_path: Path) -> Bus:
    return Bus(BusDB(tmp_path / "state"))

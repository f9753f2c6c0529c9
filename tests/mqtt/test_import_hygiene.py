"""The MQTT modules stay in the bus layer and stay light for one-shot publishing."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY_OR_HIGHER = {"textual", "libtmux", "pyspark", "registry", "app", "click", "rich", "sqlite3"}


@pytest.mark.parametrize("module", ["bus.mqtt", "bus.broker"])
def test_mqtt_modules_import_nothing_above_bus(module: str) -> None:
    code = f"import sys, {module}; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in out.stdout.split()}
    assert not loaded & HEAVY_OR_HIGHER, f"{module} imported {sorted(loaded & HEAVY_OR_HIGHER)}"

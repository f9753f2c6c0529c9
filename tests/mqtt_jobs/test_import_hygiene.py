"""The bridge and the MQTT event source are registry code: no Textual, tmux, Spark or app."""

from __future__ import annotations

import subprocess
import sys

import pytest

FORBIDDEN = {"textual", "libtmux", "pyspark", "app", "click", "rich"}


@pytest.mark.parametrize("module", ["registry.ingest", "registry.mqtt_source"])
def test_registry_mqtt_modules_stay_below_app(module: str) -> None:
    code = f"import sys, {module}; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in out.stdout.split()}
    assert not loaded & FORBIDDEN, f"{module} imported {sorted(loaded & FORBIDDEN)}"

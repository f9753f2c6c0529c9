"""The layers stay layered: importing a lower layer never drags in a higher one."""

from __future__ import annotations

import subprocess
import sys

import pytest

FORBIDDEN = {
    "bus": ("textual", "libtmux", "pyspark", "registry", "app"),
    "registry": ("textual", "libtmux", "pyspark", "app"),
}
BUS_MODULES = ["bus", "bus.db", "bus.messages", "bus.claims", "bus.heartbeats", "bus.export"]
REGISTRY_MODULES = ["registry", "registry.errors"]


def loaded_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in out.stdout.split()}


@pytest.mark.parametrize("module", BUS_MODULES + REGISTRY_MODULES)
def test_lower_layers_do_not_import_higher_ones(module: str) -> None:
    layer = module.split(".")[0]
    leaked = loaded_after_import(module) & set(FORBIDDEN[layer])
    assert not leaked, f"importing {module} also imported {sorted(leaked)}"

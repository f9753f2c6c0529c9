"""The layers stay layered: importing a lower layer never drags in a higher one.

Each module is imported in a fresh interpreter, as harlequin's import hygiene
test does, so one module's imports cannot hide another's.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import bus
import registry

FORBIDDEN = {
    "bus": {"textual", "libtmux", "pyspark", "registry", "app"},
    "registry": {"textual", "libtmux", "pyspark", "app"},
}
# The Spark job is the one registry module whose purpose is to drive Spark.
ALLOWED = {
    "registry.history.spark_job": {"pyspark"},
    "registry.history.spark_sql": {"pyspark"},
    "registry.history.spark_session": {"pyspark"},
}


def modules_of(package: object) -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")  # type: ignore[attr-defined]
    ]


def loaded_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in out.stdout.split()}


@pytest.mark.parametrize("module", ["bus", "registry", *modules_of(bus), *modules_of(registry)])
def test_lower_layers_do_not_import_higher_ones(module: str) -> None:
    layer = module.split(".")[0]
    forbidden = FORBIDDEN[layer] - ALLOWED.get(module, set())
    leaked = loaded_after_import(module) & forbidden
    assert not leaked, f"importing {module} also imported {sorted(leaked)}"


def test_publish_path_stays_light() -> None:
    """`orchestrate publish` runs once per event inside agents: no UI or Spark on that path."""
    leaked = loaded_after_import("app.commands.publish") & {"textual", "pyspark", "libtmux"}
    assert not leaked

"""The examples in the product's docstrings run, so they stay true.

Only the modules whose source holds a ``>>>`` are imported, and only when their test
runs: collection reads text and imports nothing (``--doctest-modules`` over app,
registry and bus would import every module, the Spark and Textual ones included, in
every xdist worker before the first test).
"""

from __future__ import annotations

import doctest
import importlib
import io
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "registry", "bus")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_with_examples() -> list[str]:
    """Every product module whose text holds a docstring example."""
    return sorted(
        module_name(path)
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if ">>> " in path.read_text(encoding="utf-8")
    )


@pytest.mark.parametrize("name", modules_with_examples())
def test_docstring_examples_hold(name: str) -> None:
    """Each example's output is what the code prints today."""
    module = importlib.import_module(name)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.write)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, report.getvalue()

"""Is this run CI, and what a test does when a part it needs is missing.

A part the tests need (an agent CLI, Java, Mosquitto, one of the project's own
modules) that is missing on a developer's machine is a skip: they may not have
installed it. Under CI it is a failure, with one line saying what is missing: CI's
image is meant to hold every part, so a skip there would hide a broken setup.

The one place that decides "is this CI": ``CI`` set to a true-ish value. Runners set
``CI=true`` (GitHub, GitLab) or ``CI=1``; ``CI=false``, ``CI=0``, ``CI=no`` and an
empty ``CI`` are how a person says "not CI", so they do not count.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

NOT_CI = frozenset({"", "0", "false", "no", "off", "n", "f"})
"""Values of ``CI`` (lower-cased, stripped) that mean "not CI"."""


def under_ci() -> bool:
    """True when the ``CI`` environment variable is set to a true-ish value."""
    return os.environ.get("CI", "").strip().lower() not in NOT_CI


def missing_part(what: str) -> NoReturn:
    """Skip the test (locally) or fail it (under CI), saying ``what`` is missing."""
    if under_ci():
        pytest.fail(f"missing under CI: {what}", pytrace=False)
    pytest.skip(what)


def require_module(name: str) -> ModuleType:
    """Import one of the project's own modules; its absence is a missing part.

    Replaces ``pytest.importorskip`` for the project's own code: a module renamed or
    broken by a refactor must fail under CI, not turn its tests into silent skips.
    """
    try:
        return importlib.import_module(name)
    except ImportError as error:
        missing_part(f"the project's module {name} does not import: {error}")

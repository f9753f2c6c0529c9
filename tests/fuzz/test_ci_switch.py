"""The fuzz tests' CI mode (ORCHESTRATE_FUZZ=ci: ten times the inputs, at random) is
switched on by scripts/test when, and only when, CI says a CI run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def fuzz_mode(ci: str | None, fuzz: str | None = None) -> str:
    """ORCHESTRATE_FUZZ after scripts/test's CI settings, with CI (and ORCHESTRATE_FUZZ)
    as given (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "ORCHESTRATE_FUZZ")}
    env.update({k: v for k, v in (("CI", ci), ("ORCHESTRATE_FUZZ", fuzz)) if v is not None})
    result = subprocess.run(
        ["bash", "-euc", '. "$1"; printf %s "${ORCHESTRATE_FUZZ:-}"', "-", SCRIPTS / "ci-env"],
        env=env, capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    return result.stdout


@pytest.mark.parametrize("ci", ["true", "1", "yes", "TRUE", "github-actions"])
def test_a_ci_run_fuzzes_ten_times_as_much(ci: str) -> None:
    assert fuzz_mode(ci) == "ci"


@pytest.mark.parametrize("ci", [None, "", "0", "false", "False", "no", "off"])
def test_ci_false_is_not_a_ci_run(ci: str | None) -> None:
    assert fuzz_mode(ci) == ""


def test_an_explicit_setting_wins() -> None:
    assert fuzz_mode("true", fuzz="local") == "local"


def test_scripts_test_reads_the_ci_settings() -> None:
    assert ". scripts/ci-env" in (SCRIPTS / "test").read_text()

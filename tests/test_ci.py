"""tests/ci.py: what counts as CI, and a missing part skipped locally, failed under CI."""

from __future__ import annotations

import pytest

from tests.ci import missing_part, require_module, under_ci


@pytest.mark.parametrize("value", ["true", "1", "yes", "True", "on", "github"])
def test_a_true_ish_ci_is_ci(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", value)
    assert under_ci()


@pytest.mark.parametrize("value", ["false", "0", "", "no", "FALSE", "off", " 0 "])
def test_ci_false_zero_or_empty_is_not_ci(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", value)
    assert not under_ci()


def test_an_unset_ci_is_not_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert not under_ci()


def test_a_missing_part_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="Java"):
        missing_part("Java is not installed")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="missing under CI: Java is not installed"):
        missing_part("Java is not installed")


def test_a_project_module_that_does_not_import_is_a_missing_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert require_module("registry.vocabulary").__name__ == "registry.vocabulary"
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match=r"app\.no_such_room"):
        require_module("app.no_such_room")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=r"app\.no_such_room"):
        require_module("app.no_such_room")

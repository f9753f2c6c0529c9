"""Errors of the history pipeline; each message is one line a person can act on."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from registry.errors import RegistryError


def java_binary() -> Path | None:
    """The `java` Spark's launcher (bin/spark-class) will run: $JAVA_HOME/bin/java
    when JAVA_HOME is set, else `java` on PATH; None when there is none."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home, "bin", "java")
        return java if java.is_file() else None
    found = shutil.which("java")
    return Path(found) if found else None


def java_available() -> bool:
    """True when Spark can start a JVM at all."""
    return java_binary() is not None


class HistoryError(RegistryError):
    """Base of every error raised by ``registry.history``."""


class JavaNotFound(HistoryError):
    """Spark needs a Java runtime and none is on PATH or under JAVA_HOME."""

    def __init__(self) -> None:
        super().__init__(
            "history build needs Java (Spark runs on the JVM) and none was found: "
            "install it with `apt-get install -y default-jre-headless`"
        )


class NoHistoryInput(HistoryError):
    """The bus export (or the given input) is missing or holds no message."""


class HistoryNotBuilt(HistoryError):
    """No aggregates on disk yet: `orchestrate history build` has not run."""


class CorruptHistory(HistoryError):
    """The parquet or state files under history/ cannot be read."""


class BuildAlreadyRunning(HistoryError):
    """Another build holds this state dir's build lock."""


class HistoryBuildFailed(HistoryError):
    """Spark itself failed (bad master URL, executor lost, unreadable input)."""

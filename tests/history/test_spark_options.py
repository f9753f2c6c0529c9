"""`history build --master/--driver-memory`: what passes to Spark, what is refused before
any JVM starts (the command's side: tests/history/test_cli.py)."""

from __future__ import annotations

import pytest

from registry.history.spark_options import check_driver_memory, check_master

GOOD_MASTERS = [
    "local",
    "local[*]",
    "local[4]",
    "local[*,3]",
    "local[2, 0]",
    "local-cluster[2,1,1024]",
    "local-cluster[ 2, 1, 1024 ]",
    "spark://host:7077",
    "spark://a.example:7077,b.example:7078",
    "spark://[::1]:7077",
    "yarn",
    "k8s://https://kube.example:443",
]
BAD_MASTERS = [
    "", "banana", "local[0]", "local[x]", "local[]", "local-cluster[2,1]",
    "spark://host", "spark://", "spark://host:7077/", "mesos://host:5050", "yarn-client",
]  # fmt: skip


@pytest.mark.parametrize("master", GOOD_MASTERS)
def test_masters_spark_takes_pass(master: str) -> None:
    assert check_master(master) == master


@pytest.mark.parametrize("master", BAD_MASTERS)
def test_other_masters_are_refused_naming_the_forms(master: str) -> None:
    with pytest.raises(ValueError, match=r"is not a Spark master: use local\[\*\]"):
        check_master(master)


@pytest.mark.parametrize("memory", ["2g", "512m", "512M", "600mb", "1024", "524288k", "1t"])
def test_driver_memory_spark_reads(memory: str) -> None:
    assert check_driver_memory(memory) == memory


@pytest.mark.parametrize(
    ("memory", "why"),
    [
        ("lots", "is not a memory size"),
        ("1.5g", "is not a memory size"),
        ("-2g", "is not a memory size"),
        ("2 g", "is not a memory size"),
        ("", "is not a memory size"),
        ("100m", "at least 512m"),
        ("511", "at least 512m"),  # no unit: MiB, as Spark reads it
        ("536870911b", "at least 512m"),
    ],
)
def test_driver_memory_refused(memory: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        check_driver_memory(memory)

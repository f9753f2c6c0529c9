"""What `history build` accepts as Spark's master and driver memory, checked before a
JVM starts: a typo costs a line at once, not seconds of JVM start and then a message
that blames the wrong option. Nothing here imports pyspark."""

from __future__ import annotations

import re

_HOST_PORT = r"(\[[0-9a-fA-F:]+\]|[^\s/,:\[\]]+):\d+"
# The masters Spark 4 itself accepts ("Master must either be yarn or start with
# spark, k8s, or local"), with the local forms spelled out as SparkContext parses them.
_MASTER = re.compile(
    r"local(\[(\*|[1-9]\d*)(,\s*\d+)?\])?"
    r"|local-cluster\[\s*[1-9]\d*\s*,\s*[1-9]\d*\s*,\s*[1-9]\d*\s*\]"
    rf"|spark://{_HOST_PORT}(,{_HOST_PORT})*"
    r"|yarn"
    r"|k8s://\S+"
)
MASTER_FORMS = "local[*], local[N], local-cluster[N,CORES,MB], spark://HOST:PORT, yarn or k8s://URL"
# JavaUtils.byteStringAs, as spark.driver.memory is read: a whole number and a unit,
# MiB when the unit is left out.
_MEMORY = re.compile(r"(\d+)([kmgtp]b?|b)?", re.IGNORECASE)
_UNIT_BYTES = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
# Spark refuses a driver heap under 450 MiB ("System memory ... must be at least
# 471859200"), and the JVM reports a little less than -Xmx: 512m is the least that starts.
MIN_DRIVER_BYTES = 512 << 20


def check_master(master: str) -> str:
    """``master`` if Spark would accept it, else ValueError naming the forms it takes."""
    if not _MASTER.fullmatch(master.strip()):
        raise ValueError(f"{master!r} is not a Spark master: use {MASTER_FORMS}")
    return master.strip()


def check_driver_memory(memory: str) -> str:
    """``memory`` (``2g``, ``512m``, ``1024``) if the driver can start with it."""
    match = _MEMORY.fullmatch(memory.strip())
    if match is None:
        raise ValueError(
            f"{memory!r} is not a memory size: use a whole number and a unit, 2g or 512m"
        )
    unit = (match.group(2) or "m")[0].lower()
    if int(match.group(1)) * _UNIT_BYTES[unit] < MIN_DRIVER_BYTES:
        raise ValueError(f"{memory!r} is too little: Spark's driver needs at least 512m")
    return memory.strip()

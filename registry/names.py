"""Names the registry makes addressable on the bus before they ever speak."""

from __future__ import annotations

import contextlib
import sqlite3

from bus.messages import Bus


def known_names(bus: Bus) -> set[str]:
    """Job ids and session labels: valid ``msg send --to`` recipients."""
    conn = bus.db.conn
    names: set[str] = set()
    for sql in ("SELECT job_id FROM jobs", "SELECT label FROM sessions"):
        with contextlib.suppress(sqlite3.OperationalError):  # no registry tables yet
            names.update(row[0] for row in conn.execute(sql))
    return names

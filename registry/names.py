"""Names the registry makes addressable on the bus before they ever speak."""

from __future__ import annotations

import sqlite3

from bus.messages import Bus


def known_names(bus: Bus) -> set[str]:
    """Job ids and session labels: valid ``msg send --to`` recipients."""
    conn = bus.db.conn
    names: set[str] = set()
    for sql in ("SELECT job_id FROM jobs", "SELECT label FROM sessions"):
        try:
            names.update(row[0] for row in conn.execute(sql))
        except sqlite3.OperationalError:  # registry tables not created yet
            pass
    return names

"""The fleet's fixtures (tests/fleet/hosts.py): a broker with node users, node hosts,
the control room's ingest bridge."""

from tests.fleet.hosts import fleet_broker, ingest, make_host

__all__ = ["fleet_broker", "ingest", "make_host"]

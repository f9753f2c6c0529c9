"""The fleet: nodes on many hosts, one control room (see app/fleet/node.py)."""

"""Transports for orchestrate: the SQLite WAL message bus and the MQTT client.

This package knows topics, messages, cursors, leases and bytes; it knows
nothing of jobs, Textual or tmux (import-linter's contracts in pyproject.toml).
"""

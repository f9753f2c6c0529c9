"""Holds ``answering.py`` until it moves into the approvals room (issue 32).

The rest of what was here now lives in ``app/control/`` (jobs, sessions, panes,
the Orchestrator) and ``app/supervision/`` (observer, reconcile, supervisor, notify).
"""

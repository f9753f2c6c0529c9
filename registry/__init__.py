"""The domain of orchestrate: jobs, sessions, the task queue, state machines,
the event protocol and its signing, the audit log and the history pipeline.

Builds on ``bus``; never imports ``app``, Textual or libtmux.
"""

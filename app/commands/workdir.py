"""The ``--workdir`` option's type, shared by `submit` and `session create`."""

from __future__ import annotations

import click

# An agent started in a directory that is not there runs wherever tmux starts it
# instead (here), where a coding agent would edit the wrong tree: refused up front,
# and stored absolute so the session starts there whatever the caller's cwd was.
WORKDIR = click.Path(exists=True, file_okay=False, dir_okay=True, resolve_path=True)

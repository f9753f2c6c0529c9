"""Where a state directory's local broker lives when no ``--dir`` is given.

Normally ``<state dir>/broker``. But started as root, Mosquitto drops to user
``mosquitto``, and the state directory is private (0700, root's): once any
command has made it, that user can reach nothing under it, and the broker
could neither read its password file nor save its persistence file. Opening
the state directory to other users would expose what it holds, so root's
broker lives instead under :data:`ROOT_BROKER_HOME`, whose directories are
traversable (0711) but not listable, in a directory named for the state
directory (so two state directories never share a broker). A broker already
configured under the state directory keeps its place.
"""

from __future__ import annotations

import hashlib
import os
import pwd
from pathlib import Path
from typing import Final

from bus.broker_config import CONFIG_NAME
from bus.broker_tls import BROKER_USER
from bus.errors import BrokerSetupError

ROOT_BROKER_HOME: Final = Path("/var/lib/orchestrate/broker")
"""Root's brokers, one directory per state directory (its path's digest)."""

TRAVERSE_ONLY: Final = 0o711
"""Others may pass through to a name they know, never list what is there."""


def default_broker_dir(state_dir: Path) -> Path:
    """The broker directory of ``state_dir`` (see the module docstring)."""
    private = state_dir / "broker"
    if os.geteuid() != 0 or (private / CONFIG_NAME).exists():
        return private
    try:
        pwd.getpwnam(BROKER_USER)
    except KeyError:  # no user to drop to: the config step says so in one line
        return private
    digest = hashlib.sha256(str(state_dir).encode()).hexdigest()[:16]
    return ROOT_BROKER_HOME / digest


def prepare_root_home(home: Path = ROOT_BROKER_HOME) -> None:
    """Create ``home`` and its missing parents traversable but not listable.

    ``mkdir``'s mode is masked by the umask, so each new directory is chmod'ed.
    """
    missing = [home, *(parent for parent in home.parents if not parent.exists())]
    for directory in reversed(missing):
        if directory.exists():
            continue
        try:
            directory.mkdir(mode=TRAVERSE_ONLY)
            directory.chmod(TRAVERSE_ONLY)
        except OSError as exc:
            raise BrokerSetupError(
                f"cannot create broker directory {directory}: {exc.strerror} "
                "(pass --dir somewhere user mosquitto can reach)"
            ) from exc

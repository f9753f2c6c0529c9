"""What a broker config may hold, checked before anything is written: the port, the
address a listener binds to (it goes into mosquitto.conf as one word), the users."""

from __future__ import annotations

import contextlib
import ipaddress
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bus.errors import BrokerSetupError

if TYPE_CHECKING:
    from bus.broker import BrokerUser


def check_port(port: int) -> int:
    """``port`` if it is a TCP port number, else ``BrokerSetupError``."""
    if not 1 <= port <= 65535:
        raise BrokerSetupError(f"port must be in 1-65535, got {port}")
    return port


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def check_bind(address: str) -> str:
    """``address`` if a listener can bind to it: an IP address (v4 or v6), or a host
    name made of valid labels; else ``BrokerSetupError``. It goes into
    mosquitto.conf as one word, so anything else would break or bend the config."""
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(address))
    labels = address.removesuffix(".").split(".")
    if (
        len(address) <= 253
        and all(_HOST_LABEL.fullmatch(label) for label in labels)
        and not labels[-1].isdigit()  # 300.1.1.1 is a bad IP address, not a host name
    ):
        return address
    raise BrokerSetupError(f"bind address must be an IP address or a host name, got {address!r}")


def check_users(users: Sequence[BrokerUser]) -> Sequence[BrokerUser]:
    """``users`` if no name appears twice (the password file would keep only the
    last password, and the ACL would grant the name both roles' topics)."""
    seen: set[str] = set()
    for user in users:
        if user.name in seen:
            raise BrokerSetupError(f"broker user {user.name!r} is given twice")
        seen.add(user.name)
    return users

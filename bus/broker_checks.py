"""What a broker config may hold, checked before anything is written: the port and the
address a listener binds to (it goes into mosquitto.conf as one word)."""

from __future__ import annotations

import contextlib
import ipaddress
import re

from bus.errors import BrokerSetupError


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


def is_loopback(address: str) -> bool:
    """Whether a listener on ``address`` is reachable from this machine only."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False

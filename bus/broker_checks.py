"""What a broker config may hold, checked before anything is written: the port, the
address a listener binds to (it goes into mosquitto.conf as one word; a client's host is
checked the same way), the paths and the topic prefix written into mosquitto.conf and
the ACL (one line each: a newline in them would add lines of its own, such as
`allow_anonymous true` or a `plugin`)."""

from __future__ import annotations

import contextlib
import ipaddress
import re
from pathlib import Path

from bus.errors import BrokerSetupError
from bus.text import find_hidden


def check_port(port: int) -> int:
    """``port`` if it is a TCP port number, else ``BrokerSetupError``."""
    if not 1 <= port <= 65535:
        raise BrokerSetupError(f"port must be in 1-65535, got {port}")
    return port


# A DNS label; "_" too, as container networks name hosts after services ("my_broker").
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")


def host_or_none(address: str) -> str | None:
    """``address`` as a host a client can connect to or a listener bind to: an IP
    address (v4 or v6, normalised) or a host name of valid labels; else None.

    >>> host_or_none("::1"), host_or_none("mq.example."), host_or_none("-x")
    ('::1', 'mq.example.', None)
    """
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(address))
    labels = address.removesuffix(".").split(".")
    if (
        len(address) <= 253
        and all(_HOST_LABEL.fullmatch(label) for label in labels)
        and not labels[-1].isdigit()  # 300.1.1.1 is a bad IP address, not a host name
    ):
        return address
    return None


def check_bind(address: str) -> str:
    """``address`` if a listener can bind to it (`host_or_none`), else
    ``BrokerSetupError``. It goes into mosquitto.conf as one word, so anything else
    would break or bend the config."""
    host = host_or_none(address)
    if host is None:
        raise BrokerSetupError(
            f"bind address must be an IP address or a host name, got {address!r}"
        )
    return host


def is_loopback(address: str) -> bool:
    """Whether a listener on ``address`` is reachable from this machine only."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


# What would end or bend a line of mosquitto.conf or the ACL is a hidden character
# (bus/text.py): C0 controls (a newline above all), DEL and C1 controls, separators.


def check_config_path(path: Path) -> Path:
    """``path`` if it can stand on one line of mosquitto.conf, else ``BrokerSetupError``.

    >>> check_config_path(Path("/srv/broker dir"))
    PosixPath('/srv/broker dir')
    """
    if find_hidden(str(path)) is not None:
        raise BrokerSetupError(
            f"broker directory {str(path)!r} holds a control character (a newline would "
            "add lines to mosquitto.conf): pick another --dir"
        )
    return path


def check_topic_prefix(prefix: str) -> str:
    """``prefix`` without its outer slashes, if it is one MQTT topic without wildcards,
    spaces or control characters, else ``BrokerSetupError``.

    >>> check_topic_prefix("/team/jobs/")
    'team/jobs'
    """
    stripped = prefix.strip("/")
    spaced = any(char.isspace() for char in stripped)
    if not stripped or set(stripped) & set("#+") or spaced or find_hidden(stripped) is not None:
        raise BrokerSetupError(
            f"topic prefix must be a topic without '#', '+', spaces or control characters, "
            f"got {prefix!r}"
        )
    return stripped

"""The fleet's MQTT topics: what a node (one host's supervisor) and a control room say where.

Every topic sits under the broker's topic prefix (``jobs`` by default), so two
installations sharing a broker keep apart. A node's topics are one level deeper
than a job's (``<prefix>/<job>/events``), so the control room's ``<prefix>/+/events``
never matches them, whatever a job or node is called::

    <prefix>/nodes/<node>/presence            node -> control   retained; the node's last
                                                                will (offline) on the same topic
    <prefix>/nodes/<node>/jobs/<job>/events   node -> control   its placed jobs' events
    <prefix>/nodes/<node>/jobs/<job>/applied  control -> node   what the registry committed (later)
    <prefix>/nodes/<node>/commands            control -> node   signed commands (QoS 1, queued in
                                                                the node's persistent session)
    <prefix>/nodes/<node>/confirms            node -> control   a command done or refused
    <prefix>/nodes/<node>/screens/<job>       node -> control   sanitised snapshots (later)

The broker's ACL (``bus.broker_config.acl_text``) gives each node user exactly its own
``<prefix>/nodes/<its name>/...`` topics, written out by name for every node: Mosquitto's
``pattern`` lines (``%u``, ``%c``) apply to *every* user of the file, so a worker account
whose name happened to be a node's could pose as that node; ``topic`` lines under a
``user`` line apply to that user alone. The broker user of a node therefore has the
node's name. Which job runs on which node is the registry's to check (a static ACL file
cannot know placements): it takes a job's events only from the node it placed it on.
"""

from __future__ import annotations

import re
from typing import Final

from bus.errors import InvalidTopic

NODES_LEVEL: Final = "nodes"
NODE_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
"""A node's name: one topic level, a broker user name and a file name at once."""


def check_node_name(name: str) -> str:
    """``name`` if it can name a node (``InvalidTopic`` with the reason otherwise).

    >>> check_node_name("box2")
    'box2'
    """
    if not NODE_NAME.fullmatch(name):
        shown = name.encode("unicode_escape").decode("ascii")[:80]
        raise InvalidTopic(
            "a node name is 1-63 letters, digits, '.', '_' or '-', starting with a letter "
            f"or digit, got {shown!r}"
        )
    return name


def node_root(prefix: str, node: str) -> str:
    """``<prefix>/nodes/<node>``: everything of one node lies under it."""
    return f"{prefix}/{NODES_LEVEL}/{check_node_name(node)}"


def presence_topic(prefix: str, node: str) -> str:
    """Where ``node`` announces itself (retained), and where its last will lands.

    >>> presence_topic("jobs", "box2")
    'jobs/nodes/box2/presence'
    """
    return f"{node_root(prefix, node)}/presence"


def all_presence(prefix: str) -> str:
    """The control room's subscription to every node's presence."""
    return f"{prefix}/{NODES_LEVEL}/+/presence"


def node_of_presence(prefix: str, topic: str) -> str | None:
    """The node a presence topic belongs to, or None when ``topic`` is not one.

    >>> node_of_presence("jobs", "jobs/nodes/box2/presence"), node_of_presence("jobs", "jobs/x")
    ('box2', None)
    """
    return _node_of(prefix, topic, "presence")


def _node_of(prefix: str, topic: str, leaf: str) -> str | None:
    parts = topic.split("/")
    head = prefix.split("/")
    if len(parts) != len(head) + 3 or parts[: len(head)] != head:
        return None
    if parts[len(head)] != NODES_LEVEL or parts[-1] != leaf:
        return None
    name = parts[len(head) + 1]
    return name if NODE_NAME.fullmatch(name) else None


def node_of_confirms(prefix: str, topic: str) -> str | None:
    """The node a confirms topic belongs to, or None when ``topic`` is not one.

    >>> node_of_confirms("jobs", "jobs/nodes/box2/confirms")
    'box2'
    """
    return _node_of(prefix, topic, "confirms")


def all_confirms(prefix: str) -> str:
    """The control room's subscription to every node's confirmations."""
    return f"{prefix}/{NODES_LEVEL}/+/confirms"


def node_job_events_topic(prefix: str, node: str, job_id: str) -> str:
    """Where ``node`` publishes the events of its placed job ``job_id``.

    >>> node_job_events_topic("jobs", "box2", "j1")
    'jobs/nodes/box2/jobs/j1/events'
    """
    return f"{node_root(prefix, node)}/jobs/{job_id}/events"


def all_node_job_events(prefix: str) -> str:
    """The control room's subscription to every node's job events."""
    return f"{prefix}/{NODES_LEVEL}/+/jobs/+/events"


def node_and_job_of_events(prefix: str, topic: str) -> tuple[str, str] | None:
    """(node, job) of a node's job-events topic, or None when ``topic`` is not one.

    >>> node_and_job_of_events("jobs", "jobs/nodes/box2/jobs/j1/events")
    ('box2', 'j1')
    >>> node_and_job_of_events("jobs", "jobs/j1/events") is None
    True
    """
    parts = topic.split("/")
    head = prefix.split("/")
    n = len(head)
    if len(parts) != n + 5 or parts[:n] != head or parts[n] != NODES_LEVEL:
        return None
    if parts[n + 2] != "jobs" or parts[n + 4] != "events":
        return None
    node, job = parts[n + 1], parts[n + 3]
    return (node, job) if NODE_NAME.fullmatch(node) and job else None


def commands_topic(prefix: str, node: str) -> str:
    """Where the control room sends ``node`` its signed commands."""
    return f"{node_root(prefix, node)}/commands"


def confirms_topic(prefix: str, node: str) -> str:
    """Where ``node`` says each command it was sent is done or refused."""
    return f"{node_root(prefix, node)}/confirms"


def node_acl_lines(prefix: str, node: str) -> list[str]:
    """The ACL ``topic`` lines of node user ``node`` (placed under its ``user`` line)."""
    root = node_root(prefix, node)
    return [
        f"topic write {root}/presence",
        f"topic write {root}/jobs/+/events",
        f"topic read {root}/jobs/+/applied",
        f"topic read {root}/commands",
        f"topic write {root}/confirms",
        f"topic write {root}/screens/+",
    ]


def control_acl_lines(prefix: str) -> list[str]:
    """What a control user may do with the fleet's topics, besides the jobs' own."""
    nodes = f"{prefix}/{NODES_LEVEL}/+"
    return [
        f"topic read {nodes}/presence",
        f"topic read {nodes}/jobs/+/events",
        f"topic write {nodes}/jobs/+/applied",
        f"topic write {nodes}/commands",
        f"topic read {nodes}/confirms",
        f"topic read {nodes}/screens/+",
    ]

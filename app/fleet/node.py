"""A fleet node: one host's supervisor, announcing itself on the shared broker.

``orchestrate node run`` holds the host's state dir and tmux server
(``app/fleet/daemon.py``), keeps the supervisor's passes going over that server's
panes (``app/supervision/supervisor.py``, started again whenever it ends for lack of
work, since a node outlives its jobs), and keeps its presence retained on
``<prefix>/nodes/<name>/presence`` (``bus.fleet_topics``, ``registry/presence.py``):
at once on every (re)connection, whenever its agents or busy slots change, and every
``period_s`` for the load. Its last will marks it offline if it dies; a clean stop
says goodbye itself. It logs in as its own broker user, named as the node: the ACL
gives that user the node's topics and nothing else. Its link (``app/fleet/taking.py``)
takes the jobs placed on it, executes the commands signed with the key it trusts and
sends its jobs' events to the control room.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from app.control import Orchestrator
from app.fleet.daemon import node_locks, write_status
from app.fleet.inventory import HostState, installed_agents, look
from app.fleet.options import NodeOptions
from app.fleet.taking import FleetLink
from app.settings import Settings
from app.supervision.supervisor import IDLE_EXIT_SEC
from app.supervision.supervisor import running as supervisor_running
from app.supervision.supervisor import supervise as supervise_passes
from bus.db import now_ms
from bus.fleet_topics import presence_topic
from bus.mqtt_config import BrokerConfig
from bus.mqtt_presence import Announcer
from registry.presence import Presence, departure
from registry.vocabulary import NodeLeft

log = logging.getLogger(__name__)

LOOK_INTERVAL_S = 1.0
"""How often the node looks for a change (a job started or ended) to announce."""
SUPERVISOR_RESTART_S = 2.0
"""After the supervisor's passes end (no job ran for a while), or while another
supervisor of the state dir (started by a `submit` here) does them."""
STOP_TIMEOUT_S = 5.0


class Node:
    """The running node: its announcer, its supervision thread and its main loop."""

    def __init__(
        self,
        settings: Settings,
        config: BrokerConfig,
        options: NodeOptions,
        report: Callable[[str], None],
        key: bytes | None = None,
    ) -> None:
        self.settings = settings
        self.key = key
        self.config = config
        self.options = options
        self.report = report
        self.boot = now_ms()
        self._seq = 0
        self._lock = threading.Lock()
        self._state: HostState | None = None
        self.orchestrator = Orchestrator(settings, tmux_socket=options.tmux_socket)
        self.announcer = Announcer(
            config,
            presence_topic(options.prefix, options.name),
            departure(options.name, self.boot, NodeLeft.LOST).to_json(),
            payload=self._presence,
            client_id=f"orch-node-{options.name}"[:64],
        )

    def _presence(self) -> bytes:
        """The next announcement (called by paho's thread on connect, too)."""
        with self._lock:
            state = self._state
            self._seq += 1
            seq = self._seq
        if state is None:
            state = HostState("?", {}, 0, (0.0, 0.0, 0.0))
        return Presence(
            node=self.options.name,
            online=True,
            boot=self.boot,
            seq=seq,
            host=state.host,
            agents=state.agents,
            slots=self.options.slots,
            slots_used=state.slots_used,
            load=state.load,
            period_s=self.options.period_s,
        ).to_json()

    def run(self, stop: threading.Event) -> int:
        """Until ``stop``: 0 after a clean goodbye (``NodeBusy`` if another node runs)."""
        state_dir = self.settings.state_dir
        with node_locks(state_dir, self.options.tmux_socket):
            self._write_status(connected=False)
            agents = installed_agents(state_dir)
            self._state = look(state_dir, self.orchestrator.registry, agents)
            threading.Thread(
                target=self._supervise, args=(stop,), name="node-supervisor", daemon=True
            ).start()
            link = FleetLink(
                self.settings, self.config, self.options.name, self.options.prefix,
                self.options.tmux_socket, self.key, self.report,
            )  # fmt: skip
            linking = threading.Thread(target=link.run, args=(stop,), name="node-link", daemon=True)
            linking.start()
            self.announcer.start()
            self.report(
                f"node {self.options.name}: {len(agents)} agent(s), {self.options.slots} "
                f"slot(s); connecting to {self.config.url}"
            )
            try:
                self._loop(stop)
            finally:
                stop.set()
                linking.join(STOP_TIMEOUT_S)  # the command in hand finished and recorded
                said = self.announcer.stop(
                    departure(self.options.name, self.boot, NodeLeft.STOPPED).to_json(),
                    STOP_TIMEOUT_S,
                )
                if self.announcer.refused is None:
                    unsaid = "" if said else " (no goodbye: not connected)"
                    self.report(f"node {self.options.name}: stopped{unsaid}")
                self.orchestrator.registry.db.close()
        return 0

    def _loop(self, stop: threading.Event) -> None:
        state_dir = self.settings.state_dir
        connected = False
        announced_at = time.monotonic()
        agents_at = time.monotonic()
        agents = self._state.agents if self._state else {}
        while not stop.wait(LOOK_INTERVAL_S):
            if self.announcer.refused is not None:
                raise self.announcer.refused  # the command says it in one line, exit 1
            if self.announcer.connected != connected:
                connected = self.announcer.connected
                self._write_status(connected=connected)
                word = "announced on" if connected else "lost"
                self.report(f"node {self.options.name}: {word} {self.config.url}")
                announced_at = time.monotonic()
            now = time.monotonic()
            if now - agents_at >= self.options.period_s:
                agents, agents_at = installed_agents(state_dir), now
            fresh = look(state_dir, self.orchestrator.registry, agents)
            changed = not fresh.same_as(self._state)
            with self._lock:
                self._state = fresh
            due = changed or now - announced_at >= self.options.period_s
            if due and self.announcer.announce():
                announced_at = now

    def _supervise(self, stop: threading.Event) -> None:
        """The supervisor's passes over this host's panes, started again whenever they
        end (no job for a while, or no tmux server yet): the node stays."""
        while not stop.is_set():
            if supervisor_running(self.settings.state_dir):  # one a submit here started
                stop.wait(SUPERVISOR_RESTART_S)
                continue
            try:
                supervise_passes(self.orchestrator, idle_exit_sec=IDLE_EXIT_SEC, report=self.report)
            except Exception as exc:  # a pass that cannot run now: said, tried again
                self.report(f"node {self.options.name}: supervision failed: {exc}")
            stop.wait(SUPERVISOR_RESTART_S)

    def _write_status(self, *, connected: bool) -> None:
        write_status(
            self.settings.state_dir,
            name=self.options.name,
            pid=os.getpid(),
            boot=self.boot,
            broker=self.config.url,
            connected=connected,
            slots=self.options.slots,
        )

"""Link control through a cluster's own Toxiproxy: one proxy per directed link of its topology
(:class:`~harness.backend.LinkControl`), for the backends that start the proxy themselves (the
local one, and the compose one built on it). The external backend has its own: there only the
links the operator's file names exist."""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from highwater.core.errors import ClusterError

from ..lifecycle import accepts_connection
from ..topology import Link, Listener, ProxyPlan, Topology, client_party
from ..toxiproxy import ByteCounters, ToxiproxyAPI
from ..waiting import wait_until

log = logging.getLogger(__name__)


class ProxyLinks:
    """The links of ``topo``, each behind its proxy in ``toxiproxy`` (None until started)."""

    toxiproxy: ToxiproxyAPI | None

    @property
    def topo(self) -> Topology:
        raise NotImplementedError

    def replication_links(self, broker_id: int, direction: str = "both") -> list[Link]:
        """Replication links of a broker: ``out`` (it fetches from peers), ``in`` (peers fetch
        from it) or ``both``."""
        name = self.topo.node(broker_id).name
        links = [lk for lk in self.topo.links() if lk.listener == Listener.REPLICATION]
        return [
            lk
            for lk in links
            if (direction in ("out", "both") and lk.src == name) or (direction in ("in", "both") and lk.dst == name)
        ]

    def client_link(self, rack: str, broker_id: int) -> Link:
        return Link(client_party(rack), self.topo.node(broker_id).name, Listener.CLIENT)

    def links(self) -> list[Link]:
        """Every directed link, each behind its own proxy."""
        return self.topo.links()

    def _api(self) -> ToxiproxyAPI:
        if self.toxiproxy is None:
            raise ClusterError("cluster is not started")
        return self.toxiproxy

    def set_links_enabled(self, links: Iterable[Link], enabled: bool) -> None:
        """Disable (cut: listener closed, open connections dropped) or re-enable proxies."""
        api = self._api()
        for link in links:
            api.set_enabled(link.proxy_name, enabled)

    def add_toxic(
        self, link: Link, *, name: str, type: str, stream: str, toxicity: float, attributes: Mapping[str, Any]
    ) -> None:
        self._api().add_toxic(
            link.proxy_name, name=name, type=type, stream=stream, toxicity=toxicity, attributes=dict(attributes)
        )

    def remove_toxic(self, link: Link, name: str) -> None:
        self._api().remove_toxic(link.proxy_name, name)

    def reset_links(self) -> None:
        """Every proxy enabled, every toxic removed (Toxiproxy's reset)."""
        self._api().reset()

    def ensure_links_healthy(self, links: Iterable[Link], toxic_prefix: str = "", keep: Collection[str] = ()) -> None:
        """Each link's proxy is enabled, has no toxic named ``toxic_prefix...`` but those in
        ``keep`` (another fault's, still active), and accepts a connection; a proxy that does not
        (a wedged one) is deleted and recreated from the plan, with the toxics of ``keep`` it had."""
        wanted = set(links)
        self._repair_proxies([p for p in self.topo.proxies() if p.link in wanted], toxic_prefix, frozenset(keep))

    def _repair_proxies(self, plans: list[ProxyPlan], toxic_prefix: str, keep: frozenset[str] = frozenset()) -> None:
        api = self._api()
        for plan in plans:
            name = plan.link.proxy_name
            kept: list[dict[str, Any]] = []
            try:
                state = api.proxy(name)
                toxics = state.get("toxics", [])
                kept = [t for t in toxics if t["name"] in keep]
                healthy = (
                    state.get("enabled")
                    and not any(t["name"].startswith(toxic_prefix) and t["name"] not in keep for t in toxics)
                    and accepts_connection(plan.listen_host, plan.listen_port)
                )
            except Exception as exc:  # noqa: BLE001 - any failure to confirm means: recreate
                log.warning("proxy %s could not be checked: %s", name, exc)
                healthy = False
            if healthy:
                continue
            log.warning("proxy %s is wedged; recreating it", name)
            try:
                api.delete(name)
            except Exception as exc:  # noqa: BLE001 - it may already be gone
                log.info("deleting %s: %s", name, exc)
            api.create(name, plan.listen, plan.upstream, enabled=True)
            for t in kept:  # another fault's toxics go back: that fault is still on
                api.add_toxic(
                    name,
                    name=t["name"],
                    type=t["type"],
                    stream=t.get("stream", "downstream"),
                    toxicity=float(t.get("toxicity", 1.0)),
                    attributes=dict(t.get("attributes") or {}),
                )
            wait_until(
                functools.partial(accepts_connection, plan.listen_host, plan.listen_port),
                10,
                f"proxy {name} accepts connections",
            )

    def link_bytes(self) -> dict[Link, ByteCounters]:
        """Bytes through every link's proxy (see the note on ``ByteCounters``: a connection's
        bytes are counted when it closes)."""
        counters = self._api().byte_counters()
        return {lk: counters.get(lk.proxy_name, ByteCounters(0, 0)) for lk in self.links()}

    def client_bytes(self, rack: str) -> dict[int, ByteCounters]:
        """Bytes through the proxies of ``rack``'s clients, per broker: who served them."""
        counters = self._api().byte_counters()
        out: dict[int, ByteCounters] = {}
        for b in self.topo.brokers:
            out[b.node_id] = counters.get(self.client_link(rack, b.node_id).proxy_name, ByteCounters(0, 0))
        return out

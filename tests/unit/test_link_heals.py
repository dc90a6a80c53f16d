"""A link fault's heal ends that fault only. The heal checks its links are healthy and rebuilds
one that is not; it used to count another active fault's toxic, or its cut, as "wedged" and
rebuild the proxy without it, so the other fault ended early while the history said it went on
(seen in the 2-hour hunt of 2026-12-06: a slow-close's heal took a latency's toxics off
kafka-1<->kafka-3 ten seconds before that latency's recorded heal)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from highwater.faults.inject import TOXIC_PREFIX, Injector
from highwater.faults.spec import parse_fault
from highwater.harness.backend import LinkControl
from highwater.harness.topology import Link
from highwater.harness.toxiproxy import ByteCounters
from tests.unit.test_backend import FakeBackend


class FakeProxies(FakeBackend):
    """Toxiproxy as the local backend drives it: per link, enabled or not and its toxics; a link
    found unhealthy is rebuilt enabled, with only the toxics ``keep`` names (``rebuilt`` counts)."""

    backend_name = "local"

    def __init__(self) -> None:
        super().__init__()
        self.enabled: dict[Link, bool] = {lk: True for lk in self.links()}
        self.toxics: dict[Link, list[str]] = {lk: [] for lk in self.links()}
        self.rebuilt: list[Link] = []

    def links(self) -> list[Link]:
        return [p.link for p in self.topo.proxies()]

    def set_links_enabled(self, links: Iterable[Link], enabled: bool) -> None:
        for lk in links:
            self.enabled[lk] = enabled

    def add_toxic(
        self, link: Link, *, name: str, type: str, stream: str, toxicity: float, attributes: Mapping[str, Any]
    ) -> None:
        self.toxics[link].append(name)

    def remove_toxic(self, link: Link, name: str) -> None:
        self.toxics[link].remove(name)

    def reset_links(self) -> None:
        self.ensure_links_healthy(self.links())

    def ensure_links_healthy(self, links: Iterable[Link], toxic_prefix: str = "", keep: Collection[str] = ()) -> None:
        for lk in links:
            foreign = [t for t in self.toxics[lk] if t.startswith(toxic_prefix) and t not in keep]
            if self.enabled[lk] and not foreign:
                continue
            self.rebuilt.append(lk)
            self.enabled[lk] = True
            self.toxics[lk] = [t for t in self.toxics[lk] if t in keep]

    def link_bytes(self) -> dict[Link, ByteCounters]:
        return {}

    def client_bytes(self, rack: str) -> dict[int, ByteCounters]:
        return {}


def _between(links: Iterable[Link], a: str, b: str) -> list[Link]:
    return [lk for lk in links if {lk.src, lk.dst} == {a, b}]


def test_the_fake_is_a_link_control() -> None:
    assert isinstance(FakeProxies(), LinkControl)


def test_healing_one_toxic_leaves_another_fault_s_toxic_on_the_same_links() -> None:
    proxies = FakeProxies()
    with Injector(proxies) as injector:
        latency = injector.apply(parse_fault("latency --target broker:3"))
        slow = injector.apply(parse_fault("slow-close --target broker:3"))
        shared = _between(latency.links, "kafka-1", "kafka-3")
        assert shared and all(len(proxies.toxics[lk]) == 2 for lk in shared)
        injector.heal(slow)
        for lk in shared:
            assert [t for _, t in latency.toxics if _ == lk] == proxies.toxics[lk]
        assert proxies.rebuilt == []
        injector.heal(latency)
        assert all(proxies.toxics[lk] == [] for lk in shared)
        assert proxies.rebuilt == []


def test_healing_a_toxic_leaves_a_link_another_fault_cuts_cut() -> None:
    proxies = FakeProxies()
    with Injector(proxies) as injector:
        cut = injector.apply(parse_fault("cut --target broker:3"))
        latency = injector.apply(parse_fault("latency --target broker:3"))
        injector.heal(latency)
        assert all(not proxies.enabled[lk] for lk in cut.links)
        assert all(proxies.toxics[lk] == [] for lk in latency.links)
        injector.heal(cut)
        assert all(proxies.enabled[lk] for lk in cut.links)


def test_a_wedged_link_is_still_rebuilt_and_a_leftover_toxic_of_no_active_fault_removed() -> None:
    """The look-alike that must still be repaired: a toxic no active fault holds."""
    proxies = FakeProxies()
    with Injector(proxies) as injector:
        latency = injector.apply(parse_fault("latency --target broker:3"))
        some = sorted(latency.links)[0]
        proxies.toxics[some].append(f"{TOXIC_PREFIX}f99-downstream")  # left by a crashed run
        injector.heal(latency)
    assert proxies.toxics[some] == [] and proxies.rebuilt == [some]


class FakeToxiproxyAPI:
    """Toxiproxy's HTTP API as ``ProxyLinks`` calls it, for one proxy."""

    def __init__(self, name: str, toxics: list[dict[str, Any]]) -> None:
        self.name, self.state = name, {"enabled": True, "toxics": toxics}
        self.calls: list[str] = []

    def proxy(self, name: str) -> dict[str, Any]:
        return self.state

    def delete(self, name: str) -> None:
        self.calls.append("delete")
        self.state = {"enabled": False, "toxics": []}

    def create(self, name: str, listen: str, upstream: str, enabled: bool = True) -> None:
        self.calls.append("create")
        self.state = {"enabled": enabled, "toxics": []}

    def add_toxic(self, proxy: str, *, name: str, type: str, stream: str, toxicity: float, attributes: Any) -> None:
        self.calls.append(f"add {name}")
        self.state["toxics"].append({"name": name, "type": type, "stream": stream, "toxicity": toxicity})


def test_a_truly_wedged_proxy_is_rebuilt_with_the_toxics_other_faults_hold(monkeypatch: Any) -> None:
    """The local backend's own repair: a proxy that accepts no connection is rebuilt, and the
    toxic of a fault still on goes back on it; a leftover of no fault does not."""
    import highwater.harness.local.proxy_links as proxy_links

    fake = FakeProxies()
    plan = fake.topo.proxies()[0]
    held = {"name": "hw-f2-upstream", "type": "latency", "stream": "upstream", "toxicity": 1.0, "attributes": {}}
    stale = {"name": "hw-f9-upstream", "type": "timeout", "stream": "upstream", "toxicity": 1.0, "attributes": {}}
    api = FakeToxiproxyAPI(plan.link.proxy_name, [held, stale])

    class Links(proxy_links.ProxyLinks):
        toxiproxy = api  # type: ignore[assignment]

        @property
        def topo(self) -> Any:
            return fake.topo

    monkeypatch.setattr(proxy_links, "accepts_connection", lambda host, port: "create" in api.calls)
    Links().ensure_links_healthy([plan.link], TOXIC_PREFIX, keep={"hw-f2-upstream"})
    assert api.calls == ["delete", "create", "add hw-f2-upstream"]
    assert [t["name"] for t in api.state["toxics"]] == ["hw-f2-upstream"]

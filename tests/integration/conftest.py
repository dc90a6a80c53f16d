"""Every test here runs against real Kafka brokers and a real Toxiproxy server.

The modules that take the ``cluster`` fixture share one 3-broker, 3-rack cluster (booted once,
not once per module): each module gets it checked healed (every node running, every proxy
enabled with no toxic, every broker registered and answering through every client rack's
proxies), and must leave it so: a module that leaves a fault behind fails its teardown, and the
cluster is healed for the next. Each test takes its own topics. Those modules run last in this
package, one after the other, so no other test's cluster runs beside the shared one (except
where a test starts a second one on purpose, as ``test_cluster.py``'s dedicated-controller test
always did), and it is stopped before the next package starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.backend import ClusterBackend, LinkControl, NodeState, ProcessControl, start_backend
from harness.config import ClusterSpec


def _uses_shared_cluster(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.get("cluster", ()) if info is not None else ()
    return bool(defs) and getattr(defs[-1].func, "__module__", None) == __name__


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
    # The modules on the shared cluster go last in this package (order otherwise kept), so the
    # package-scoped cluster lives only while they run.
    shared_modules = {item.module for item in items if _uses_shared_cluster(item)}  # type: ignore[attr-defined]
    inside = [i for i, item in enumerate(items) if "tests/integration" in str(item.fspath)]
    if not inside or not shared_modules:
        return
    block = [items[i] for i in inside]
    reordered = [it for it in block if it.module not in shared_modules] + [  # type: ignore[attr-defined]
        it
        for it in block
        if it.module in shared_modules  # type: ignore[attr-defined]
    ]
    for i, item in zip(inside, reordered):
        items[i] = item


def _unhealed(c: ClusterBackend) -> list[str]:
    """What is not healed on the cluster: nodes not running, proxies disabled or with toxics."""
    out: list[str] = []
    if isinstance(c, ProcessControl):
        out += [f"{n.name} is {n.state.value}" for n in c.nodes.values() if n.state != NodeState.RUNNING]
    api = getattr(c, "toxiproxy", None)
    if isinstance(c, LinkControl) and api is not None:
        for plan in c.topo.proxies():
            state = api.proxy(plan.link.proxy_name)
            if not state.get("enabled") or state.get("toxics"):
                out.append(f"proxy {plan.link.proxy_name}: enabled={state.get('enabled')} toxics={state.get('toxics')}")
    return out


def _heal(c: ClusterBackend) -> None:
    """Undo every fault and wait until every broker is registered and answers."""
    if isinstance(c, ProcessControl):
        for node in c.nodes.values():
            if node.state == NodeState.PAUSED:
                node.resume()
            elif node.state == NodeState.STOPPED:
                node.start()
    if isinstance(c, LinkControl):
        c.reset_links()
        c.ensure_links_healthy(c.links())
    c.wait_for_brokers(90)


@pytest.fixture(scope="package")
def _shared_cluster(request: pytest.FixtureRequest, kafka_version: str, backend: str) -> Iterator[ClusterBackend]:
    """The one 3-broker, 3-rack cluster of the modules that take ``cluster`` (the plugin's
    ``cluster`` fixture, booted once for all of them); its logs are collected when a test that
    used it failed."""
    from highwater.pytest_plugin import _failed, _progress

    c = start_backend(backend, ClusterSpec(brokers=3, racks=3, kafka_version=kafka_version), _progress)
    try:
        yield c
    finally:
        failed = any(_failed(item) for item in request.session.items if _uses_shared_cluster(item))
        logs_root = Path(request.config.getoption("--highwater-logs"))
        c.stop(collect_logs_to=logs_root / "tests.integration.shared-cluster" if failed else None)


@pytest.fixture(scope="module")
def cluster(_shared_cluster: ClusterBackend, request: pytest.FixtureRequest) -> Iterator[ClusterBackend]:
    """The shared cluster for one module: healed and checked before the module, checked after
    it (a fault left behind fails the module's teardown; the cluster is healed all the same)."""
    _heal(_shared_cluster)
    left = _unhealed(_shared_cluster)
    assert not left, f"the shared cluster is not healed before {request.module.__name__}: {left}"
    yield _shared_cluster
    left = _unhealed(_shared_cluster)
    _heal(_shared_cluster)
    assert not left, f"{request.module.__name__} left the shared cluster unhealed: {left}"

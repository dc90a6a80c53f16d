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

import pytest

from highwater.harness.backend import ClusterBackend
from highwater.pytest_plugin import healed_for_module, shared_cluster


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


@pytest.fixture(scope="package")
def _shared_cluster(request: pytest.FixtureRequest, kafka_version: str, backend: str) -> Iterator[ClusterBackend]:
    """The one 3-broker, 3-rack cluster of the modules that take ``cluster``."""
    yield from shared_cluster(request, kafka_version, backend, _uses_shared_cluster, "tests.integration.shared-cluster")


@pytest.fixture(scope="module")
def cluster(_shared_cluster: ClusterBackend, request: pytest.FixtureRequest) -> Iterator[ClusterBackend]:
    """The shared cluster for one module, healed and checked (``healed_for_module``)."""
    yield from healed_for_module(_shared_cluster, request)

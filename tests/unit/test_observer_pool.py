"""``ObserverPool``: one observer per client rack, made once, and closed together even when one
observer's close fails (a cluster's teardown must not stop halfway)."""

from __future__ import annotations

import pytest

from highwater.harness import observe
from highwater.harness.security import PLAINTEXT


class FakeObserver:
    made: list[FakeObserver] = []

    def __init__(self, bootstrap: list[str], client_id: str, security: object) -> None:
        self.bootstrap, self.client_id, self.closed = bootstrap, client_id, False
        FakeObserver.made.append(self)

    def close(self) -> None:
        self.closed = True
        if self.client_id.endswith("rack-a"):
            raise OSError("socket already gone")


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> observe.ObserverPool:
    FakeObserver.made = []
    monkeypatch.setattr(observe, "Observer", FakeObserver)
    return observe.ObserverPool(lambda rack: [f"127.0.0.1:{9000 + len(rack)}", rack], lambda: PLAINTEXT)


def test_one_observer_per_rack_made_on_first_use(pool: observe.ObserverPool) -> None:
    a = pool.get("rack-a")
    assert pool.get("rack-a") is a
    b = pool.get("rack-bb")
    assert a is not b
    assert [o.client_id for o in FakeObserver.made] == ["highwater-observer-rack-a", "highwater-observer-rack-bb"]
    assert pool.open() == [a, b]


def test_close_closes_every_observer_and_returns_what_failed(pool: observe.ObserverPool) -> None:
    pool.get("rack-a")
    pool.get("rack-b")
    errors = pool.close()
    assert all(o.closed for o in FakeObserver.made)
    assert errors == ["close observer rack-a: OSError: socket already gone"]
    assert pool.open() == []
    assert pool.close() == []

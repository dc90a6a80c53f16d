"""The Toxiproxy server (built from its Go module) and our one thin client for its HTTP API.

Why not toxiproxy-python alone (0.1.1, the release on PyPI): it keeps the API host and port as
*class attributes* of ``APIConsumer`` shared by every ``Toxiproxy``/``Proxy`` object in the
process, so two clusters in one process would talk to one server; its ``requests`` calls have
no timeout, so a wedged server hangs a test forever; it only knows POST for updates (no PATCH)
and has no call for ``/metrics``. So this module speaks HTTP itself through one
``requests.Session`` with a timeout on every call, bound to one server, and reuses the library
where it is sound: ``toxiproxy.api.validate_response`` maps 400/404/409 to its
``InvalidToxic``/``NotFound``/``ProxyExists`` exceptions, which callers may catch.
Nothing else in highwater talks to Toxiproxy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from toxiproxy.api import validate_response
from toxiproxy.exceptions import NotFound, ProxyExists  # noqa: F401 - re-exported for callers

from highwater.core.errors import SetupError

from .paths import home

TOXIPROXY_VERSION = "v2.12.0"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
REQUEST_TIMEOUT_S = 10.0


def toxiproxy_binary() -> Path:
    return home() / "toxiproxy" / TOXIPROXY_VERSION / "toxiproxy-server"


def ensure_toxiproxy(progress: Callable[[str], None] = lambda _: None) -> Path:
    """Build ``toxiproxy-server`` once from its Go module into the cache (idempotent)."""
    target = toxiproxy_binary()
    if target.is_file() and os.access(target, os.X_OK):
        return target
    go = shutil.which("go")
    if not go:
        raise SetupError("Go not found on PATH: it builds the Toxiproxy server; install golang")
    progress(f"building Toxiproxy {TOXIPROXY_VERSION} from its Go module into {target.parent}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as gobin:
        env = {**os.environ, "GOBIN": gobin, "CGO_ENABLED": "0"}
        res = subprocess.run(
            [go, "install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if res.returncode != 0:
            raise SetupError(f"go install of Toxiproxy failed: {res.stderr.strip()[-400:]}")
        os.replace(Path(gobin) / "server", target)
    return target


@dataclass(frozen=True)
class ByteCounters:
    """Bytes through one proxy, as Toxiproxy counts them: v2.12 adds a connection's bytes to its
    counters only when that direction of the connection *ends* (``link.go``: after ``io.Copy``
    returns), a moment after the client closed it, so close the client and wait for the counters
    to settle (``harness.waiting.wait_until_steady``) before reading them. These are the bytes
    the proxy *received* from the sending side: Toxiproxy drops a direction's whole *sent* count
    when its last write fails (a fetch response arriving after the consumer closed), which lost a
    3 MB consumer connection in one CI run; the received count is added either way.
    ``downstream`` flows from the upstream (a broker) back to the party that opened the
    connection: for a consumer's proxy it is mostly fetch responses."""

    upstream: int
    downstream: int


_METRIC = re.compile(r"^toxiproxy_proxy_(received|sent)_bytes_total\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def parse_metrics(text: str) -> dict[str, ByteCounters]:
    """Per-proxy *received* byte counters from Toxiproxy's Prometheus text (``-proxy-metrics``):
    what each direction read from its source (see ``ByteCounters`` for why not *sent*)."""
    up: dict[str, float] = {}
    down: dict[str, float] = {}
    for line in text.splitlines():
        m = _METRIC.match(line)
        if not m or m.group(1) != "received":
            continue
        labels = dict(_LABEL.findall(m.group("labels")))
        bucket = up if labels.get("direction") == "upstream" else down
        bucket[labels["proxy"]] = bucket.get(labels["proxy"], 0.0) + float(m.group("value"))
    return {name: ByteCounters(int(up.get(name, 0)), int(down.get(name, 0))) for name in set(up) | set(down)}


class ToxiproxyAPI:
    """A client bound to one Toxiproxy server; every request has a timeout."""

    def __init__(self, host: str, port: int, timeout: float = REQUEST_TIMEOUT_S) -> None:
        self.base = f"http://{host}:{port}"
        self.timeout = timeout
        self._http = requests.Session()
        self._http.trust_env = False  # never route loopback API calls through an HTTP proxy

    def _call(self, method: str, path: str, json: Any = None) -> requests.Response:
        resp = self._http.request(method, self.base + path, json=json, timeout=self.timeout)
        validate_response(resp)
        if resp.status_code >= 400:
            raise SetupError(f"Toxiproxy {method} {path}: HTTP {resp.status_code}: {resp.text[:200]}")
        return resp

    def version(self) -> str:
        return self._call("GET", "/version").text.strip()

    def populate(self, proxies: list[dict[str, Any]]) -> None:
        """Create (or replace) many proxies in one call: ``{"name","listen","upstream","enabled"}``."""
        self._call("POST", "/populate", json=proxies)

    def proxies(self) -> dict[str, dict[str, Any]]:
        return self._call("GET", "/proxies").json()

    def proxy(self, name: str) -> dict[str, Any]:
        return self._call("GET", f"/proxies/{name}").json()

    def create(self, name: str, listen: str, upstream: str, enabled: bool = True) -> None:
        self._call("POST", "/proxies", json={"name": name, "listen": listen, "upstream": upstream, "enabled": enabled})

    def delete(self, name: str) -> None:
        self._call("DELETE", f"/proxies/{name}")

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Disabling a proxy closes its listener and every open connection through it."""
        self._call("PATCH", f"/proxies/{name}", json={"enabled": enabled})

    def add_toxic(
        self,
        proxy: str,
        *,
        name: str,
        type: str,
        stream: str = "downstream",
        toxicity: float = 1.0,
        attributes: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        body = {"name": name, "type": type, "stream": stream, "toxicity": toxicity, "attributes": attributes or {}}
        return self._call("POST", f"/proxies/{proxy}/toxics", json=body).json()

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/proxies/{proxy}/toxics").json()

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._call("POST", "/reset")

    def byte_counters(self) -> dict[str, ByteCounters]:
        return parse_metrics(self._call("GET", "/metrics").text)

    def close(self) -> None:
        self._http.close()

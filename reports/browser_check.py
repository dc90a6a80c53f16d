"""Open a report in headless Chromium and say what a person would see: console errors,
network requests, and the verdict matrix as rendered.

Talks the DevTools protocol over ``--remote-debugging-pipe`` (fd 3: commands in, fd 4: events
out, NUL-separated JSON), so no port, no websocket library and no new dependency. Used by the
report's browser test; also by hand: ``python -m highwater.reports.browser_check report.html``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--mute-audio",
]

#: evaluated in the page: the matrix cells and the overall badge, as JSON
_EXTRACT = """JSON.stringify({
  overall: (document.getElementById('overall')||{}).dataset ? document.getElementById('overall').dataset.valid : null,
  cells: Array.from(document.querySelectorAll('#matrix-table td.cell[data-check]')).map(function(td){
    return {check: td.dataset.check, col: +td.dataset.col, valid: td.dataset.valid, text: td.textContent};}),
  columns: Array.from(document.querySelectorAll('#matrix-table thead tr:first-child th')).slice(1)
    .map(function(th){return th.textContent;}),
  runs: Array.from(document.querySelectorAll('#runs tbody tr')).map(function(tr){
    return {run: tr.dataset.run, valid: tr.dataset.valid};}),
  attribution: Array.from(document.querySelectorAll('#matrix-table td.attr[data-attribution]')).map(function(td){
    return {group: td.dataset.group, verdict: td.dataset.attribution, text: td.textContent};}),
  charts: document.querySelectorAll('svg.chart').length,
  failures: document.querySelectorAll('div.failure').length
})"""


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


@dataclass
class PageReport:
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    content: dict[str, Any] = field(default_factory=dict)
    loaded: bool = False


class _Pipe:
    """A DevTools session over the pipe: send commands, collect every event seen."""

    def __init__(self, proc: subprocess.Popen[bytes], wfd: int, rfd: int) -> None:
        self.proc, self.wfd, self.rfd = proc, wfd, rfd
        self.next_id = 0
        self.buf = b""
        self.events: list[dict[str, Any]] = []

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.wfd, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self._read()
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)
        raise TimeoutError(f"no answer to {method} within {timeout}s")

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for m in self.events:
            if m.get("method") == method:
                return m
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self._read()
            self.events.append(m)
            if m.get("method") == method:
                return m
        raise TimeoutError(f"no {method} within {timeout}s")

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self.buf:
            chunk = os.read(self.rfd, 65536)
            if not chunk:
                raise ConnectionError(f"chromium closed the pipe (exit {self.proc.poll()})")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)


def check_page(html: Path, chromium: str | None = None, settle_s: float = 1.0) -> PageReport:
    """Load ``html`` in a fresh headless Chromium profile and report what happened."""
    exe = chromium or find_chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed (apt-get install -y chromium)")
    url = html.resolve().as_uri()
    out = PageReport()
    with tempfile.TemporaryDirectory(prefix="hw-chromium-") as profile:
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()

        def child_fds() -> None:  # Chromium expects the pipe on fds 3 (in) and 4 (out)
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)  # safe if either is 3 or 4
            os.dup2(a, 3)
            os.dup2(b, 4)

        proc = subprocess.Popen(
            [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,
            pass_fds=(3, 4, to_chrome_r, from_chrome_w),
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        cdp = _Pipe(proc, to_chrome_w, from_chrome_r)
        try:
            target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            sid = cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Runtime", "Log", "Network", "Page"):
                cdp.send(f"{domain}.enable", session=sid)
            cdp.events.clear()  # about:blank's own events are not the report's
            cdp.send("Page.navigate", {"url": url}, session=sid)
            cdp.wait_event("Page.loadEventFired")
            out.loaded = True
            time.sleep(settle_s)  # let late scripts and console messages arrive
            res = cdp.send("Runtime.evaluate", {"expression": _EXTRACT, "returnByValue": True}, session=sid)
            out.content = json.loads(res["result"]["value"])
            _collect(cdp.events, out)
            cdp.send("Browser.close")
        finally:
            os.close(to_chrome_w)
            os.close(from_chrome_r)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    return out


def _collect(events: list[dict[str, Any]], out: PageReport) -> None:
    for m in events:
        method, p = m.get("method"), m.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.console_errors.append(" ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.console_errors.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.console_errors.append(p["entry"].get("text", ""))
        elif method == "Network.requestWillBeSent":
            out.requests.append(p.get("request", {}).get("url", ""))


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print("usage: python -m highwater.reports.browser_check REPORT.html", file=sys.stderr)
        return 2
    page = Path(args[0])
    r = check_page(page)
    others = [u for u in r.requests if u != page.resolve().as_uri()]
    print(json.dumps({"console_errors": r.console_errors, "requests": r.requests, "content": r.content}, indent=2))
    return 1 if r.console_errors or others else 0


if __name__ == "__main__":
    sys.exit(main())

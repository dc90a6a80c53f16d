"""The nightly tests: those ``make test`` leaves out for its budget (``@nightly(reason, seconds)``,
``highwater.suites.nightly``), collected as ``make test`` collects them, and their table in
docs/contributing.md, which ``python -m tests.nightly`` (from the checkout) writes from the marks
and ``tests/unit/test_nightly.py`` keeps equal to them."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRIBUTING = ROOT / "docs" / "contributing.md"
BEGIN, END = "<!-- nightly tests: python -m tests.nightly -->", "<!-- end of the nightly tests -->"


@dataclass(frozen=True)
class NightlyTest:
    nodeid: str
    reason: str
    seconds: float
    group: str  # its --shard group (the tests of one shared run share it)


class _Collector:
    def __init__(self) -> None:
        self.tests: list[NightlyTest] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        from highwater.pytest_plugin import shard_group

        for item in items:
            mark = item.get_closest_marker("nightly")
            if mark is not None:
                reason, seconds = mark.kwargs.get("reason", ""), float(mark.kwargs.get("seconds", 0))
                self.tests.append(NightlyTest(item.nodeid, reason, seconds, shard_group(item)))


def makefile_value(name: str) -> str:
    """A ``NAME ?= value`` of the Makefile (what ``make test`` passes)."""
    found = re.search(rf"^{name} \?= (.*)$", (ROOT / "Makefile").read_text(), re.M)
    if found is None:
        raise LookupError(f"the Makefile has no {name} ?=")
    return found.group(1).strip()


def collect() -> list[NightlyTest]:
    """Every nightly test over make test's paths, with make test's options, in collection order."""
    collector = _Collector()
    args = [
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(ROOT),
        *(str(ROOT / p) for p in makefile_value("TEST_PATHS").split()),
        "--profile",
        makefile_value("PROFILE"),
        "--client-rotation",
        makefile_value("CLIENT_ROTATION"),
    ]
    code = pytest.main(args, plugins=[collector])
    if code != 0:
        raise RuntimeError(f"collecting the nightly tests exited {code}")
    return collector.tests


def ci_slices() -> int:
    """``NIGHTLY_SLICES`` of ``.ci/run``."""
    found = re.search(r"^NIGHTLY_SLICES=(\d+)$", (ROOT / ".ci" / "run").read_text(), re.M)
    if found is None:
        raise LookupError(".ci/run sets no NIGHTLY_SLICES")
    return int(found.group(1))


def table(tests: list[NightlyTest]) -> str:
    """The Markdown table of docs/contributing.md: test, about how long, and why make test may
    leave it out."""
    rows = ["| test | takes | why `make test` can leave it out |", "|---|---|---|"]
    rows += [f"| `{t.nodeid}` | ~{t.seconds:g} s | {t.reason} |" for t in tests]
    return "\n".join(rows)


def section(text: str) -> str:
    """What stands between the markers of docs/contributing.md."""
    begin, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[begin:end].strip()


def main() -> int:
    text = CONTRIBUTING.read_text()
    begin, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    CONTRIBUTING.write_text(f"{text[:begin]}\n\n{table(collect())}\n\n{text[end:]}")
    print(f"{CONTRIBUTING}: the nightly table written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

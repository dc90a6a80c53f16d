"""The registry's column forms of the group checks (``*_of``: fast paths over the commit columns,
``move_events``) give the verdicts of their event forms on every case of test_group_checks: each
case runs with the event form wrapped so that it also runs the column form and compares."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

import tests.unit.test_group_checks as cases
from highwater.core.checks import groups
from highwater.core.checks.data import HistoryData, from_events
from highwater.core.checks.verdict import Verdict

EventCheck = Callable[..., Verdict]

#: the event form's name in test_group_checks -> its column form
COLUMN_FORMS: dict[str, Callable[[HistoryData], Verdict]] = {
    "commit_regression": groups.commit_regression_of,
    "rebalance_skip": groups.rebalance_skip_of,
    "rebalance_rewind": groups.rebalance_rewind_of,
    "commit_ahead": groups.commit_ahead_of,
    "group_delivery": groups.group_delivery_of,
}


def _both(name: str, compared: list[str]) -> EventCheck:
    by_events: EventCheck = getattr(groups, name)

    def check(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]], *rest: Any) -> Verdict:
        want = by_events(header, events, *rest)
        if not rest:  # the column form reads the final logs from the history itself
            got = COLUMN_FORMS[name](from_events(header, list(events)))  # type: ignore[arg-type]
            assert got.to_json() == want.to_json(), name
            compared.append(name)
        return want

    return check


@pytest.mark.parametrize("case", sorted(n for n in dir(cases) if n.startswith("test_")))
def test_column_forms_agree_with_event_forms(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[str] = []
    for name in COLUMN_FORMS:
        if hasattr(cases, name):
            monkeypatch.setattr(cases, name, _both(name, compared))
    getattr(cases, case)()
    assert compared, f"{case} ran no group check"

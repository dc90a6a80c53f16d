"""The ``nightly`` mark: a test this repository's ``make test`` leaves out to stay within its
35-minute budget, with the reason (what in ``make test`` already covers its promise, or where it
runs instead) and about how many seconds it takes on the 2-core CI machine. ``.ci/run`` runs the
nightly tests after ``make test`` in rotating slices (``--shard`` weighted by these seconds);
docs/contributing.md lists them (a unit test keeps that list equal to the marks)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest


def nightly(reason: str, seconds: int) -> pytest.MarkDecorator:
    """The mark, for a test, a module's ``pytestmark`` or one parameter (``cases``)."""
    return pytest.mark.nightly(reason=reason, seconds=seconds)


def cases(values: Iterable[object], marked: Mapping[object, pytest.MarkDecorator]) -> list[object]:
    """A ``parametrize`` list whose values in ``marked`` carry their mark (the others as given)."""
    return [pytest.param(v, marks=marked[v]) if v in marked else v for v in values]

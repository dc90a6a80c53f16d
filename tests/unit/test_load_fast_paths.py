"""The loader's fast paths answer exactly as the plain calls they replace: ``decode_event`` as
``json.loads`` of the line, ``search``/``member`` as ``np.searchsorted``/``np.isin``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from highwater.core.checks.data import member, search
from highwater.core.history import decode_event

LINES = [
    b'{"index":0,"time_ns":1,"process":"p","type":"ok","f":"send","value":{"value":"v\\u00e9"},"error":null}\n',
    '{"a":"\u00e9\u4e2d"}\n'.encode(),
    b'{"a":1}',  # no newline: a cut-off last line
    b'  {"a":1}\n',  # leading whitespace
    b'{"a":1}  \n',  # trailing whitespace
    b'{"a":1}\r\n',
    b'{"a":1}\n\n',
    b"[1,2]\n",
    b"null\n",
    b"5\n",
    b'"s"\n',
]
BAD = [b'{"a":1}{"b":2}\n', b"not json\n", b"\n", b"   \n", b"", b'{"a":\n', b'{"a":1} x\n', b"\xff\n"]


@pytest.mark.parametrize("raw", LINES)
def test_decode_event_is_json_loads(raw: bytes) -> None:
    assert decode_event(raw) == json.loads(raw.decode())


@pytest.mark.parametrize("raw", BAD)
def test_decode_event_rejects_what_json_loads_rejects(raw: bytes) -> None:
    with pytest.raises(ValueError):
        json.loads(raw.decode())
    with pytest.raises(ValueError):
        decode_event(raw)


def test_search_and_member_agree_with_numpy() -> None:
    rng = np.random.default_rng(7)
    for n, m in ((0, 3), (1, 1), (7, 2), (2000, 500), (500, 2000)):
        a = rng.integers(-50, 50, n)
        b = rng.integers(-50, 50, m)
        s = np.sort(b)
        assert (search(s, a) == np.minimum(np.searchsorted(s, a), len(s) - 1)).all()
        assert (member(a, b) == np.isin(a, b)).all()
        assert (member(a.astype(np.int32), b) == np.isin(a, b)).all()
    grid = rng.integers(0, 9, (3, 4))
    assert (member(grid, [1, 2, 3]) == np.isin(grid, [1, 2, 3])).all()
    assert member(grid, []).shape == (3, 4) and not member(grid, []).any()
    assert bool(member(5, [5])) and not bool(member(4, [5]))

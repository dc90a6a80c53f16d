"""One reading of release numbers (``core.versions``) for Kafka and every client library."""

from __future__ import annotations

import pytest

from highwater.core.versions import exact_release, leading_numbers, major_minor, release_at_least
from highwater.harness.clients.base import UnknownClientError
from highwater.harness.clients.java import _release as java_release
from highwater.harness.distribution import UnknownKafkaVersion, parse_version


@pytest.mark.parametrize(
    "version, numbers",
    [
        ("2.3.0", (2, 3, 0)),
        ("2.12.0rc1", (2, 12)),
        ("4.0.0-SNAPSHOT", (4, 0)),
        (" 3.9.1 ", (3, 9, 1)),
        ("latest", ()),
        ("", ()),
    ],
)
def test_leading_numbers_stop_at_the_first_part_that_is_not_one(version: str, numbers: tuple[int, ...]) -> None:
    assert leading_numbers(version) == numbers


def test_versions_order_by_their_numbers_not_their_text() -> None:
    assert leading_numbers("3.10.0") > leading_numbers("3.9.2") > leading_numbers("3.9.1rc1")
    assert major_minor("4.4.0") == (4, 4) and major_minor("2.12.0rc1") == (2, 12)
    assert major_minor("4") is None and major_minor("main") is None
    assert release_at_least("4.0.0-SNAPSHOT", (4, 0)) and release_at_least("3.10.0", (3, 9))
    assert not release_at_least("3.8.1", (3, 9)) and not release_at_least("", (3, 9))


@pytest.mark.parametrize("text", ["4.1", "4.1.0.1", "4.1.0-SNAPSHOT", "v4.1.0", "4.x.0", ""])
def test_an_exact_release_is_three_numbers_and_nothing_else(text: str) -> None:
    assert exact_release(text) is None
    with pytest.raises(UnknownKafkaVersion, match="expected MAJOR.MINOR.PATCH"):
        parse_version(text)
    with pytest.raises(UnknownClientError, match="expected MAJOR.MINOR.PATCH"):
        java_release(text)


def test_an_exact_release_reads_as_its_numbers() -> None:
    assert exact_release("3.3.1") == parse_version(" 3.3.1\n") == java_release("3.3.1") == (3, 3, 1)

"""Release numbers as tuples, read one way for Kafka and for every client library.

Two readings, for two needs: ``leading_numbers`` orders any version a registry or a user may
name (a pre-release or snapshot suffix ends it), and ``exact_release`` accepts exactly
``MAJOR.MINOR.PATCH``, for the places that refuse anything else with their own one-line error
(a Kafka release to download, a Java client version to build against). Hand-written rather than
``packaging.version``: Kafka and Maven versions are not PEP 440 (``4.0.0-SNAPSHOT``), and an
ordering by leading numbers is all the callers compare.
"""

from __future__ import annotations

import re

_EXACT = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def leading_numbers(version: str) -> tuple[int, ...]:
    """``"2.3.0"`` -> ``(2, 3, 0)``; a part that is not a number ends it (``"2.3.0rc1"`` ->
    ``(2, 3)``, ``"4.0.0-SNAPSHOT"`` -> ``(4, 0)``, ``"latest"`` -> ``()``)."""
    parts: list[int] = []
    for part in version.strip().split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def major_minor(version: str) -> tuple[int, int] | None:
    """(major, minor) of a version (``"4.4.0"``, ``"2.12.0rc1"``), None if it names none."""
    numbers = leading_numbers(version)
    return (numbers[0], numbers[1]) if len(numbers) >= 2 else None


def release_at_least(version: str, since: tuple[int, int]) -> bool:
    """Whether ``version`` is ``since`` (major, minor) or later; False when it names no release."""
    ours = major_minor(version)
    return ours is not None and ours >= since


def exact_release(text: str) -> tuple[int, int, int] | None:
    """``MAJOR.MINOR.PATCH`` and nothing else, None otherwise."""
    m = _EXACT.fullmatch(text)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None

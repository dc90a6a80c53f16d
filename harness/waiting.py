"""Polling with a deadline: the only way highwater waits for something."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from highwater.core.errors import HighwaterError, WaitTimeout

T = TypeVar("T")


def wait_until(
    cond: Callable[[], T | None],
    timeout: float,
    message: str | Callable[[], str],
    interval: float = 0.2,
) -> T:
    """Poll ``cond`` until it returns a truthy value and return that value.

    Exceptions raised by ``cond`` count as "not yet" (the cluster is often mid-change); the last
    one is attached to the ``WaitTimeout`` so a timeout still says what went wrong. Our own
    errors (``HighwaterError``, e.g. "the broker process exited") are final and propagate.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = cond()
            if value:
                return value
        except HighwaterError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported below if the deadline passes
            last_error = exc
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            suffix = f" (last error: {type(last_error).__name__}: {last_error})" if last_error else ""
            raise WaitTimeout(f"timed out after {timeout:.1f}s waiting until {text}{suffix}") from last_error
        time.sleep(interval)


def wait_until_steady(
    read: Callable[[], T],
    quiet: float,
    timeout: float,
    message: str,
    interval: float = 0.1,
) -> T:
    """Read ``read()`` until it returns the same value for ``quiet`` seconds, and return it.

    For counters that catch up a moment after the event that fixes them (Toxiproxy adds a
    connection's bytes when the connection has ended, after our client closed it): the value
    is final once it stops moving. A value still moving at ``timeout`` raises ``WaitTimeout``.
    """
    deadline = time.monotonic() + timeout
    value = read()
    since = time.monotonic()
    while True:
        now = time.monotonic()
        if now - since >= quiet:
            return value
        if now >= deadline:
            raise WaitTimeout(f"timed out after {timeout:.1f}s waiting until {message} stop changing")
        time.sleep(interval)
        latest = read()
        if latest != value:
            value, since = latest, time.monotonic()

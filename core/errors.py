"""Errors meant for people: each carries one clear line that says what is wrong and what to do."""

from __future__ import annotations


def error_text(exc: BaseException) -> str:
    """An exception as the history and the worker protocol write it: ``"Class: message"``, or
    the class alone when the message is empty."""
    text = str(exc)
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__


class HighwaterError(Exception):
    """Base of every error the CLI prints as one line (no traceback)."""


class SetupError(HighwaterError):
    """A Kafka distribution or the Toxiproxy server could not be set up."""


class JavaError(HighwaterError):
    """Java is missing or too old for the requested Kafka version."""


class PortInUseError(HighwaterError):
    """An address the cluster must listen on is already taken."""


class ClusterError(HighwaterError):
    """A cluster could not be started or an operation on it failed."""


class WaitTimeout(HighwaterError):
    """A condition did not become true before its deadline."""

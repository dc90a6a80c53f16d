"""Suite profiles: how long and how many. ``ci`` must finish the whole conformance set plus a
short chaos run well under 20 minutes on a 2-core machine; ``nightly`` runs longer, more seeds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    run_seconds: float  # workload length of one conformance scenario run
    chaos_seconds: float  # length of one chaos run
    chaos_seeds: tuple[int, ...]
    rate: float  # sends per second per producer


PROFILES = {
    # ci chaos: 90 s hold two fault windows that outlast every timed check's bound (~30 s each)
    "ci": Profile("ci", run_seconds=20, chaos_seconds=90, chaos_seeds=(1,), rate=50),
    "nightly": Profile("nightly", run_seconds=60, chaos_seconds=300, chaos_seeds=(1, 2, 3, 4, 5), rate=200),
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        from highwater.core.errors import HighwaterError

        raise HighwaterError(f"unknown profile {name!r} (known: {', '.join(PROFILES)})") from None

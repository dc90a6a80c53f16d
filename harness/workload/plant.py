"""A planted anomaly, for highwater's own tests of its hunt and shrink (never for a real run): a
run whose spec says ``extra["test_plant"] = {"skip_under": KIND}`` gets consumers that, once per
fault of that kind while it is active, drop the first record of a poll (neither recorded nor
returned), so ``poll-skip`` says no exactly when the schedule holds such a fault. The shrinker's
integration test needs a failure that real faults cause by construction; a real bug does not
come when called. It is recorded with the spec, so a replay plants it too."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: the key of ``RunSpec.extra`` that asks for a plant
PLANT_KEY = "test_plant"


def planted_kind(extra: Mapping[str, Any]) -> str | None:
    """The fault kind whose faults make a planted skip, if the run asks for one."""
    plant = extra.get(PLANT_KEY)
    if plant is None:
        return None
    if not isinstance(plant, Mapping) or not isinstance(plant.get("skip_under"), str):
        raise ValueError(f'{PLANT_KEY} must be {{"skip_under": "<fault kind>"}}, got {plant!r}')
    return str(plant["skip_under"])


def skip_under(kind: str, active: Callable[[], Iterable[tuple[str, str]]]) -> Callable[[], bool]:
    """A consumer's plant: true once for each fault of ``kind`` among ``active()`` (id, kind) pairs."""
    seen: set[str] = set()

    def due() -> bool:
        for fault_id, fault_kind in active():
            if fault_kind == kind and fault_id not in seen:
                seen.add(fault_id)
                return True
        return False

    return due

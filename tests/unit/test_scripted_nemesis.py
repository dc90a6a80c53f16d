"""The scripted nemesis's order of faults and heals: steps one after the other, and a step
``during`` the one before (started while it is on, each healed at its own time)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from highwater.core.manifest import ScriptedStep
from highwater.nemesis import Step, scripted, step_record
from highwater.run_spec import RunSpec


class Recorder:
    """An injector and a cluster that only write down what the nemesis asks of them."""

    def __init__(self) -> None:
        self.done: list[str] = []

    def apply(self, spec: Any) -> str:
        self.done.append(f"fault {spec.kind.value}")
        return spec.kind.value

    def heal(self, fault: str) -> None:
        self.done.append(f"heal {fault}")

    def partition_state(self, topic: str, partition: int, offsets: bool = True) -> Any:
        return SimpleNamespace(leader=1, replicas=[1, 2, 3])


def play(steps: list[Step]) -> list[str]:
    r = Recorder()
    scripted(steps).play(r, r, RunSpec(suite="unit", scenario="order"))  # type: ignore[arg-type]
    return r.done


def test_steps_one_after_the_other_are_each_healed_before_the_next() -> None:
    steps = [Step(0, "kill --target broker:1", 0.05), Step(0, "cut --target broker:2", 0.05)]
    assert play(steps) == ["fault kill", "heal kill", "fault cut", "heal cut"]


def test_a_step_during_the_previous_one_starts_while_it_is_on_and_is_healed_at_its_own_time() -> None:
    steps = [
        Step(0, "kill --target controller", 1.5),
        Step(0.1, "finalize --target controller", 0.05, during=True),  # healed long before the kill
        Step(0, "cut --target broker:2", 0.05),  # after both are healed
    ]
    assert play(steps) == ["fault kill", "fault finalize", "heal finalize", "heal kill", "fault cut", "heal cut"]


def test_during_is_recorded_only_when_set_and_read_back() -> None:
    plain, during = Step(1, "kill --target broker:1", 2), Step(1, "kill --target broker:2", 2, during=True)
    assert "during" not in step_record(plain)
    assert ScriptedStep.from_json(step_record(during)).during is True
    assert ScriptedStep.from_json(step_record(plain)).during is False

"""Why a node would not start: the cause its log names, not the shutdown lines after it."""

from __future__ import annotations

from highwater.harness.local.node import exit_cause

SHUTDOWN = "\n".join(
    f"2026-12-07T00:47:03.99{i} [kafka-shutdown-hook] INFO org.apache.kafka.server.quota.ClientQuotaManager - Stopped"
    for i in range(15)
)


def test_the_error_before_the_shutdown_lines_is_the_cause() -> None:
    log = (
        "2026-12-07T00:47:02.100 [main] INFO kafka.server.KafkaRaftServer - starting\n"
        "2026-12-07T00:47:03.500 [main] ERROR kafka.server.KafkaRaftServer - Exiting Kafka due to fatal exception\n"
        "java.lang.RuntimeException: Invalid cluster.id in meta.properties\n" + SHUTDOWN
    )
    assert exit_cause(log) == (
        "2026-12-07T00:47:03.500 [main] ERROR kafka.server.KafkaRaftServer - Exiting Kafka due to fatal exception"
    )


def test_the_last_three_errors_are_named_in_order() -> None:
    log = "\n".join(f"t{i} [main] ERROR x - cause {i}" for i in range(5)) + "\n" + SHUTDOWN
    assert exit_cause(log) == "t2 [main] ERROR x - cause 2 | t3 [main] ERROR x - cause 3 | t4 [main] ERROR x - cause 4"


def test_a_log_without_errors_gives_its_last_line_and_an_empty_one_says_so() -> None:
    assert exit_cause("a [main] INFO x - up\nb [main] INFO x - Stopped") == "b [main] INFO x - Stopped"
    assert exit_cause("") == "(an empty log)"

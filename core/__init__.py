"""The ground floor: a run's records and what judges them, touching nothing in the world.

``core.history`` (the history format, its writer, reader and Parquet codec), ``core.manifest``
(what a run was), ``core.checks`` (the checks over a history and their verdict), ``core.policy``
(which checks apply to a run) and ``core.errors`` (the errors every floor raises for people).
Nothing here starts a process, opens a socket or imports a package above it; the backends,
clients and faults (``harness``, ``faults``), the reports and the orchestration import this
floor, never the other way round (``tests/unit/test_layers.py``).
"""

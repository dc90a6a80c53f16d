"""Fault injection, beside the world it acts on: faults as data (``spec.py``) aimed at targets
(``target.py``), partition topologies as pure functions, seeded schedules, the injector, and the
client, disk, clock and corruption faults. It imports ``core`` and ``harness``, never
``reports`` or ``highwater``."""

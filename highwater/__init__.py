"""Orchestration, the top floor: the run orchestrator, the ``highwater`` CLI and the pytest plugin.

It imports ``core`` (records and checks), ``harness`` (backends, clients), ``faults`` and
``reports``; nothing in those packages imports it (``tests/unit/test_layers.py`` holds that line).
"""

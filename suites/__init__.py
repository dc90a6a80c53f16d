"""The test programs users run: conformance per KIP (``conformance/``), seeded chaos
(``chaos/``) and the sweep's scenarios (``sweep/``), with scenarios as data in ``scenario.py``.
The orchestrator runs them through pytest by path; no product package imports them."""

"""The sweep scenario set: short scenarios, one replication rule each (``suites.scenario.SWEEP_PLANS``),
run by ``highwater sweep`` / ``highwater bisect`` next to ``suites/conformance``."""

"""Synthetic histories and result stores for the tests and benchmarks (never used by real runs).

* ``tests.synth.histories``: ``HistoryBuilder``, small histories built event by event.
* ``tests.synth.reports``: small result stores (runs with history, verdict.json, run.json) with
  planted anomalies, for the report's tests.

The report benchmark's large Parquet histories are its own (``benchmarks/bulk_histories.py``):
benchmarks import nothing from the tests (``tests/unit/test_layers.py``).
"""

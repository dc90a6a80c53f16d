"""Synthetic histories and result stores for the tests and benchmarks (never used by real runs).

* ``tests.synth.histories``: ``HistoryBuilder``, small histories built event by event.
* ``tests.synth.reports``: small result stores (runs with history, verdict.json, run.json) with
  planted anomalies, for the report's tests.
* ``tests.synth.bulk``: large Parquet histories written column-wise, for the report benchmark.
"""

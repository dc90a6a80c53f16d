"""Reports over many runs: Spark aggregation, the HTML page (Jinja2 templates), ``summary.json``
and JUnit, and results as pandas DataFrames. It reads what ``core`` defines (histories,
manifests, verdicts) and never imports ``faults`` or ``highwater``."""

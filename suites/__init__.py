"""suites package of highwater."""

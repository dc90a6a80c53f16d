"""harness package of highwater."""

"""faults package of highwater."""

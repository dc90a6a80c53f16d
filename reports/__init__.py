"""reports package of highwater."""

"""The world highwater acts on: backends, client drivers and workers, workloads and observations.

It builds on the ground floor (``core``: history, manifest, checks, policy, errors) and never on
what sits above it (``faults``, ``reports``, ``highwater``).
"""

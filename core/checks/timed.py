"""The names of the timed checks, apart from the checks themselves so that the policy table
(``core.policy``, which ``core.checks.run_checks`` applies) can name them without an import loop."""

#: the timed checks: each judges time against a bound derived from the settings (a stall, a
#: follower's lag, the ISR's churn), where the others judge what was read and written
TIMED_CHECKS = ("follower-fetch", "progress", "isr-stability", "follower-latency", "rebalance-barrier")

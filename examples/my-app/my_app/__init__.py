"""my-app: a tiny order-audit service, the application this example tests under faults."""

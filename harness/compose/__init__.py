"""The Docker Compose backend: images built locally, compose files rendered from ``compose/``."""

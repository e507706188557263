"""Clients for tests and tools: in-memory against a ``Server``, or a stdio subprocess."""

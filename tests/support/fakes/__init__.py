"""Fakes of the project's own ports, shared by the tests: jobs' execution starter, the answer engine's
search port, search connectors."""

"""Checking: every drafted claim verified against its quotes, critiqued, red-teamed and gated."""

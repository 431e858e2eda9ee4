"""Outbound calls: the one guarded HTTP client, upstream turns, fair shares, rate limits, breakers."""

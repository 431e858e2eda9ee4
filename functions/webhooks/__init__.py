"""Webhooks: signed POSTs of a job's completion (and a scheduled run's digest) to its callback URL.

See docs/living-reviews.md: `signing` (the `X-Research-Signature` header), `urls` (what a callback URL may
be), `sender` (delivery with retries through the SSRF-guarded client), `deliveries` (the per-team log of
every attempt), `notify` (what is sent when a job finishes), `routes` (`GET /api/webhooks/deliveries`).
"""

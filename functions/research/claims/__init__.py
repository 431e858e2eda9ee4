"""Claim verification (`POST /v1/claims/verify`): a claim weighed against the evidence of its sources."""

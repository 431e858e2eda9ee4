"""Metering and money: what each team uses per month, what each job costs, quotes and budgets.

Domain modules (no FastAPI, no boto3): `prices` (the price table), `usage` (quantities and their cost),
`meter` (what one step or request uses, collected while it runs), `store` (the usage store's protocol,
keys and in-memory twin), `estimate` (cost quotes), `budget` (job and monthly budgets), `report` (the
usage report and its CSV). Adapters: `dynamodb` (the usage table), `aws_calls` (boto3 call counting),
`steps` (the step-Lambda hook), `middleware` (requests by route), `routes` (`GET /api/usage`),
`wiring` (the composition root). See docs/usage.md.
"""

"""How webhooks are delivered: attempts, time limits and backoff (environment `WEBHOOK_*`)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class WebhookSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WEBHOOK_", case_sensitive=False, extra="ignore")

    # Attempts per delivery; a 5xx, 408, 429, a time-out or a refused connection is retried.
    max_attempts: int = Field(default=3, ge=1, le=10)
    # One attempt's limit, connecting to the last byte of the answer.
    attempt_timeout_seconds: float = Field(default=5.0, gt=0, le=30)
    # Wait before attempt n+1: backoff_seconds * 2**(n-1), with jitter; a Retry-After is honoured up
    # to the same cap.
    backoff_seconds: float = Field(default=1.0, ge=0, le=10)
    max_backoff_seconds: float = Field(default=4.0, ge=0, le=30)
    # Everything (all attempts and waits) ends within this; it runs inside a 45 s workflow step.
    budget_seconds: float = Field(default=20.0, gt=0, le=40)
    # How long the delivery log keeps an attempt (DynamoDB TTL).
    log_retention_days: int = Field(default=30, ge=1, le=365)

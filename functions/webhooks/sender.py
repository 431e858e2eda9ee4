"""One webhook delivery: a signed POST, retried with backoff, every attempt reported to the caller.

The POST goes through `functions.common.outbound.http.HttpClient`, the one guarded client: the destination is
resolved and must be public unless allow-listed (`WEBHOOK_ALLOW_PRIVATE_HOSTS`), redirects are not
followed (a 3xx is a failed attempt), and each attempt is bounded by `WEBHOOK_ATTEMPT_TIMEOUT_SECONDS`.
A 5xx, 408 or 429 answer, a time-out and a failed connection are retried (`WEBHOOK_MAX_ATTEMPTS`, waits
of `WEBHOOK_BACKOFF_SECONDS * 2**(n-1)` with jitter, a Retry-After honoured up to
`WEBHOOK_MAX_BACKOFF_SECONDS`), all within `WEBHOOK_BUDGET_SECONDS`; a refusal by the SSRF guard and
any other answer are final. Nothing here raises for a failed delivery.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from functions.common.errors import FetchBlocked, FetchError, FetchTimeout, FetchTooLarge
from functions.common.outbound.http import HttpClient, Resolver, retry_after_seconds
from functions.common.settings import Settings, get_settings
from functions.webhooks.deliveries import Outcome
from functions.webhooks.settings import WebhookSettings
from functions.webhooks.signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signature_header

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504}) | frozenset(range(505, 600))
MAX_ANSWER_BYTES = 1024 * 1024


@dataclass(frozen=True)
class AttemptResult:
    attempt: int
    outcome: Outcome
    status_code: int | None
    error: str | None
    duration_ms: float


Report = Callable[[AttemptResult], None]


@dataclass
class WebhookSender:
    settings: Settings = field(default_factory=get_settings)
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    resolver: Resolver | None = None  # tests resolve names without DNS
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    clock: Callable[[], float] = time.time  # the signature's `t`

    async def deliver(
        self, url: str, *, event: str, delivery_id: str, body: bytes, secret: str, report: Report
    ) -> Outcome:
        """POST `body` to `url` until it is delivered or a final outcome; `report` hears every attempt."""
        client = HttpClient(self.settings, purpose="webhook", resolver=self.resolver)
        started = time.monotonic()
        try:
            attempt = 0
            while True:
                attempt += 1
                result, retry_after = await self._attempt(
                    client, url, event, delivery_id, body, secret, attempt
                )
                last = attempt >= self.webhook.max_attempts
                wait = 0.0
                if result.outcome == "retrying" and not last:
                    wait = self._backoff(attempt, retry_after)
                    elapsed = time.monotonic() - started
                    # another attempt must fit, waiting included, in the budget
                    if elapsed + wait + self.webhook.attempt_timeout_seconds > self.webhook.budget_seconds:
                        last = True
                if result.outcome == "retrying" and last:
                    result = AttemptResult(
                        result.attempt, "failed", result.status_code, result.error, result.duration_ms
                    )
                report(result)
                if result.outcome != "retrying":
                    return result.outcome
                await self.sleep(wait)
        finally:
            await client.aclose()

    async def _attempt(
        self,
        client: HttpClient,
        url: str,
        event: str,
        delivery_id: str,
        body: bytes,
        secret: str,
        attempt: int,
    ) -> tuple[AttemptResult, float | None]:
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: signature_header(secret, int(self.clock()), body),
            EVENT_HEADER: event,
            DELIVERY_HEADER: delivery_id,
        }
        timeout = self.webhook.attempt_timeout_seconds
        started = time.perf_counter()

        def result(outcome: Outcome, status: int | None, error: str | None) -> AttemptResult:
            return AttemptResult(attempt, outcome, status, error, (time.perf_counter() - started) * 1000)

        try:
            response = await client.request(
                "POST",
                url,
                content=body,
                headers=headers,
                timeout=timeout,
                total_timeout=timeout,
                retries=0,
                max_redirects=0,
                max_bytes=MAX_ANSWER_BYTES,
            )
        except FetchBlocked as exc:
            return result("blocked", None, exc.message), None
        except FetchTimeout as exc:
            return result("retrying", None, f"timeout: {exc.message}"), None
        except FetchTooLarge as exc:
            return result("failed", None, exc.message), None
        except FetchError as exc:
            if "redirect" in exc.message:
                return result("failed", None, "redirects are not followed: answer with 2xx"), None
            return result("retrying", None, exc.message), None
        status = response.status_code
        if 200 <= status < 300:
            return result("delivered", status, None), None
        if status in RETRIED_STATUSES:
            return result("retrying", status, f"HTTP {status}"), retry_after_seconds(response.headers)
        return result("failed", status, f"HTTP {status}"), None

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        cap = self.webhook.max_backoff_seconds
        if retry_after is not None:
            return min(retry_after, cap)
        base: float = self.webhook.backoff_seconds * 2.0 ** (attempt - 1)
        return min(cap, base * (0.5 + random.random() / 2))  # noqa: S311 (jitter, not security)

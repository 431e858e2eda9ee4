"""What a callback URL may be, checked when a job or schedule is submitted (400 otherwise).

- `https://…`, or `http://…` only for a host the deployment allow-lists for callbacks
  (`WEBHOOK_ALLOW_PRIVATE_HOSTS`, `host` or `host:port`; the connectors' list does not count);
- no credentials in the URL, at most 2048 characters;
- a literal IP address must be public unless allow-listed (loopback, private, link-local and metadata
  addresses are refused here already).

A host *name* is not resolved at submission: the SSRF guard of `functions.common.outbound.http` resolves and
checks it at every delivery (names can change what they point at), and a refused delivery is logged.
"""

from __future__ import annotations

import ipaddress

import httpx

from functions.common.errors import InvalidInput

MAX_URL_CHARS = 2048


def _allowed(host: str, port: int | None, allowlist: frozenset[str]) -> bool:
    host = host.lower().strip("[]")
    return host in allowlist or (port is not None and f"{host}:{port}" in allowlist)


def check_callback_url(url: str, allowlist: frozenset[str], field: str = "callback_url") -> str:
    """The URL as given, or InvalidInput naming `field`."""
    # here, not at import: functions.common.outbound.http loads httpcore, h11 and h2, which the job models that
    # import this module (every job and step handler) do not otherwise need (bench/cold_start.py)
    from functions.common.outbound.http import is_public_address

    if len(url) > MAX_URL_CHARS:
        raise InvalidInput(f"{field} must be at most {MAX_URL_CHARS} characters", field=field)
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise InvalidInput(f"{field} is not a valid URL: {exc}", field=field) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InvalidInput(f"{field} must be an https:// URL with a host", field=field)
    if parsed.userinfo:
        raise InvalidInput(f"{field} must not carry credentials", field=field)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    allowed = _allowed(parsed.host, port, allowlist)
    if parsed.scheme == "http" and not allowed:
        raise InvalidInput(
            f"{field} must use https (http only for hosts in WEBHOOK_ALLOW_PRIVATE_HOSTS)", field=field
        )
    try:
        address = ipaddress.ip_address(parsed.host.strip("[]"))
    except ValueError:
        return url
    if not allowed and not is_public_address(str(address)):
        raise InvalidInput(f"{field} points at a private or reserved address", field=field)
    return url

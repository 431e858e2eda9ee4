"""The MCP function's composition root: which REST client its tools call.

`MCP_API_BASE_URL` set (CDK sets it to the API's own stage URL): the deployed API over HTTPS through
the guarded outbound client, one per container. Unset: the gateway the app is served behind in this
process (the local runtime's, which sets `app.state.gateway` on each app it routes to).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic_settings import BaseSettings, SettingsConfigDict

from functions.mcp.rest import HttpRest, InProcessRest, RestClient


class McpSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MCP_", case_sensitive=False, extra="ignore")

    # the REST API the tools mirror, e.g. https://<id>.execute-api.<region>.amazonaws.com/prod
    api_base_url: str | None = None
    # a whole mirrored call, a streamed answer included (the function's own timeout bounds it too)
    call_timeout_seconds: float = 55.0


@cache
def mcp_settings() -> McpSettings:
    return McpSettings()


class MissingRestTarget(RuntimeError):
    """Neither MCP_API_BASE_URL nor a gateway: a deployment error."""


@cache
def _deployed_rest(base_url: str, timeout: float) -> HttpRest:
    from functions.common.outbound.http import HttpClient

    return HttpRest(base_url, HttpClient(purpose="fetch"), timeout)


def rest_client(gateway: Any | None) -> RestClient:
    """The deployed API when its URL is configured, else `gateway` in process."""
    settings = mcp_settings()
    if settings.api_base_url:
        return _deployed_rest(settings.api_base_url, settings.call_timeout_seconds)
    if gateway is None:
        raise MissingRestTarget("MCP_API_BASE_URL is not set and the app is served behind no gateway")
    return InProcessRest(gateway)

"""AWS client factories. Domain code receives adapters; only adapters call these."""

from __future__ import annotations

import threading
from functools import cache
from typing import TYPE_CHECKING, Any, cast

import boto3
from botocore.config import Config

from functions.common import snapstart
from functions.common.settings import get_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import DynamoDBServiceResource
    from mypy_boto3_events.client import EventBridgeClient
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_stepfunctions.client import SFNClient

_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5, read_timeout=30)
# boto3's default session is not thread-safe while it creates clients, and step handlers run on
# several threads locally (a Map's iterations) and in the extract step's pool.
_CREATING = threading.Lock()


def _endpoint_kwargs() -> dict[str, Any]:
    settings = get_settings()
    kwargs: dict[str, Any] = {"region_name": settings.aws_region, "config": _CONFIG}
    if settings.aws_endpoint_url:
        kwargs["endpoint_url"] = settings.aws_endpoint_url
    return kwargs


@cache
def generic_client(service: str) -> Any:
    """A client for `service`, one per container like the typed ones below."""
    with _CREATING:
        return boto3.client(service, **_endpoint_kwargs())  # type: ignore[call-overload]


@cache
def llm_runtime_client(read_timeout_seconds: float) -> Any:
    """Bedrock Runtime for the LLM port: a generation may take as long as the LLM budget, and a
    retried generation is billed twice, so one attempt with the budget as its read timeout."""
    kwargs = _endpoint_kwargs()
    kwargs["config"] = Config(
        retries={"mode": "standard", "total_max_attempts": 1},
        connect_timeout=5,
        read_timeout=read_timeout_seconds,
    )
    with _CREATING:
        return boto3.client("bedrock-runtime", **kwargs)


def s3_client() -> S3Client:
    return cast("S3Client", generic_client("s3"))


def sfn_client() -> SFNClient:
    return cast("SFNClient", generic_client("stepfunctions"))


def events_client() -> EventBridgeClient:
    return cast("EventBridgeClient", generic_client("events"))


@cache
def dynamodb_resource() -> DynamoDBServiceResource:
    with _CREATING:
        return boto3.resource("dynamodb", **_endpoint_kwargs())


def reset_clients() -> None:
    """Drop cached clients (tests and the local runtime switch endpoints)."""
    generic_client.cache_clear()
    llm_runtime_client.cache_clear()
    dynamodb_resource.cache_clear()


@snapstart.after_restore
def reset_after_restore() -> None:
    """After a SnapStart restore: clients (and boto3's default session, with its credential resolver) built
    during init hold the init phase's credentials; drop them so the first call builds fresh ones."""
    with _CREATING:
        boto3.DEFAULT_SESSION = None
    reset_clients()

"""AWS client factories. Domain code receives adapters; only adapters call these.

boto3 and botocore's client machinery (about 0.1 s) are imported by the first client built, not with a
handler (bench/cold_start.py); under SnapStart that happens during init, before the snapshot.
"""

from __future__ import annotations

import sys
import threading
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from functions.common import snapstart
from functions.common.settings import get_settings

if TYPE_CHECKING:
    from botocore.config import Config
    from mypy_boto3_dynamodb.service_resource import DynamoDBServiceResource
    from mypy_boto3_events.client import EventBridgeClient
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_stepfunctions.client import SFNClient

# boto3's default session is not thread-safe while it creates clients, and step handlers run on
# several threads locally (a Map's iterations) and in the extract step's pool.
_CREATING = threading.Lock()


@cache
def _client_config() -> Config:
    from botocore.config import Config

    return Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5, read_timeout=30)


def _endpoint_kwargs() -> dict[str, Any]:
    settings = get_settings()
    kwargs: dict[str, Any] = {"region_name": settings.aws_region, "config": _client_config()}
    if settings.aws_endpoint_url:
        kwargs["endpoint_url"] = settings.aws_endpoint_url
    return kwargs


@cache
def generic_client(service: str) -> Any:
    """A client for `service`, one per container like the typed ones below."""
    import boto3

    with _CREATING:
        return boto3.client(service, **_endpoint_kwargs())  # type: ignore[call-overload]


@cache
def llm_runtime_client(read_timeout_seconds: float) -> Any:
    """Bedrock Runtime for the LLM port: a generation may take as long as the LLM budget, and a
    retried generation is billed twice, so one attempt with the budget as its read timeout."""
    import boto3
    from botocore.config import Config

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
    import boto3

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
    boto3 = sys.modules.get("boto3")  # not imported yet: no session, no client to drop
    if boto3 is not None:
        with _CREATING:
            boto3.DEFAULT_SESSION = None  # type: ignore[attr-defined]
    reset_clients()

"""The step Lambdas' grants, held locally as IAM holds them on AWS.

Each step declares what of the registry it reaches (`StepFunctionSpec.uses`, functions/common/resources.py)
and the CDK app grants exactly that. Locally every handler shares one process and one set of settings,
so the runtime checks the declaration instead: while a step runs (`acting_as`), each DynamoDB, S3 and
EventBridge call it makes on a registry table, bucket or the event bus must be declared, reads as read or
read/write, writes as read/write, and events as `events`. Anything else is refused with AccessDenied, as
IAM would refuse it, and recorded in `denied`: a step that swallows the error still leaves the record,
which the embedded runtime reports when it stops (functions/local_runtime/aws.py).

Calls on names outside the registry (a table a test made) and calls made outside a step are not
checked; nor are threads a step starts without copying its context (asyncio's `to_thread` copies it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from botocore.client import BaseClient
from botocore.exceptions import ClientError

from functions.common import resources
from functions.common.settings import get_settings
from functions.local_runtime.patching import MethodPatch

# DynamoDB operations that only read; every other operation on a table writes.
_DYNAMODB_READS = frozenset(
    {"GetItem", "BatchGetItem", "Query", "Scan", "DescribeTable", "TransactGetItems", "DescribeTimeToLive"}
)
# S3 operations that only read: Get*, Head*, List*; every other operation on a bucket writes.
_S3_READ_PREFIXES = ("Get", "Head", "List")


@dataclass(frozen=True)
class Denial:
    function: str
    service: str
    operation: str
    resource: str  # the registry setting ("jobs_table") or "event_bus"

    def __str__(self) -> str:
        return f"{self.function}: {self.service}:{self.operation} on {self.resource} (not declared)"


class UndeclaredUse(AssertionError):
    """A step reached a registry resource its declaration does not name."""


_acting: ContextVar[tuple[str, resources.Uses] | None] = ContextVar("local_grants_acting", default=None)
_lock = threading.Lock()
_declared: dict[str, resources.Uses] = {}  # by function name (the step's logical id)
denied: list[Denial] = []


def declare(function: str, uses: resources.Uses) -> None:
    with _lock:
        _declared[function] = uses


def declared(function: str) -> resources.Uses | None:
    """The declaration of a function the embedded runtime created; None for any other (unchecked)."""
    with _lock:
        return _declared.get(function)


@contextmanager
def invoking(function: str) -> Iterator[None]:
    """Holds an invocation of `function` to its declaration, if it has one."""
    uses = declared(function)
    if uses is None:
        yield
        return
    with acting_as(function, uses):
        yield


@contextmanager
def acting_as(function: str, uses: resources.Uses) -> Iterator[None]:
    """Calls made in this context (and in tasks and `to_thread` calls it starts) are held to `uses`."""
    token = _acting.set((function, uses))
    try:
        yield
    finally:
        _acting.reset(token)


def take_denied() -> list[Denial]:
    """The denials recorded since the last call, cleared."""
    with _lock:
        taken = list(denied)
        denied.clear()
    return taken


def forget() -> None:
    """Drops every declaration and denial (the embedded runtime stops)."""
    with _lock:
        _declared.clear()
        denied.clear()


def _registry_names() -> dict[str, str]:
    """Resource name -> its registry setting, in the current settings."""
    settings = get_settings()
    names = [spec.setting for spec in resources.TABLES] + [spec.setting for spec in resources.BUCKETS]
    return {str(getattr(settings, name)): name for name in names if hasattr(settings, name)}


def _dynamodb_tables(operation: str, params: Mapping[str, Any]) -> Iterable[tuple[str, bool]]:
    """(table name, writes) of each table a DynamoDB call names."""
    if "TableName" in params:
        yield str(params["TableName"]), operation not in _DYNAMODB_READS
    for name in params.get("RequestItems") or {}:
        yield str(name), operation == "BatchWriteItem"
    for item in params.get("TransactItems") or []:
        for kind, action in item.items():
            yield str(action.get("TableName")), kind not in ("Get", "ConditionCheck")


def _s3_buckets(operation: str, params: Mapping[str, Any]) -> Iterable[tuple[str, bool]]:
    if "Bucket" in params:
        yield str(params["Bucket"]), not operation.startswith(_S3_READ_PREFIXES)
    source = params.get("CopySource")
    if isinstance(source, dict) and "Bucket" in source:
        yield str(source["Bucket"]), False
    elif isinstance(source, str):
        yield source.lstrip("/").split("/", 1)[0], False


def refusal(function: str, uses: resources.Uses, service: str, operation: str, params: Any) -> Denial | None:
    """Why IAM, granted `uses`, would refuse this call; None when it would allow it (or is not ours to check)."""
    if service == "events" and operation == "PutEvents":
        return None if uses.events else Denial(function, service, operation, "event_bus")
    if service == "dynamodb":
        named = _dynamodb_tables(operation, params)
    elif service == "s3":
        named = _s3_buckets(operation, params)
    else:
        return None
    registry = _registry_names()
    for name, writes in named:
        setting = registry.get(name)
        if setting is None:
            continue
        access = uses.access(setting)
        if access is None or (writes and access != "read_write"):
            return Denial(function, service, operation, setting)
    return None


def _checked(original: Callable[..., Any]) -> Callable[..., Any]:
    def make_api_call(self: BaseClient, operation_name: str, api_params: Any) -> Any:
        acting = _acting.get()
        if acting is not None:
            service = self.meta.service_model.service_name
            denial = refusal(*acting, service, operation_name, api_params)
            if denial is not None:
                with _lock:
                    denied.append(denial)
                raise ClientError(
                    {"Error": {"Code": "AccessDeniedException", "Message": str(denial)}}, operation_name
                )
        return original(self, operation_name, api_params)

    return make_api_call


_PATCH = MethodPatch(BaseClient, "_make_api_call", _checked)
install = _PATCH.install
uninstall = _PATCH.uninstall

"""Lambda SnapStart runtime hooks (docs/infra.md, "SnapStart").

Every function is deployed with SnapStart on its published versions: Lambda runs the init phase (imports,
settings, the app) once when a version is published, snapshots the microVM, and resumes new execution
environments from that snapshot. Whatever init left in memory is then shared by every environment
restored from it, so state that must be unique per environment, or that goes stale, is refreshed after
restore by the hooks registered here:

- boto3 clients and resources (functions/common/aws.py) and boto3's default session: their credentials
  are those of the init phase; they are dropped and rebuilt on first use after restore;
- the `random` module's state (webhook retry jitter, functions/webhooks/sender.py): reseeded from
  os.urandom, so restored environments do not draw the same jitter;
- `uuid.uuid4` and `secrets` read os.urandom on every call and need nothing.

Network connections need no hook: init opens none (the HTTP clients, functions/common/outbound/http.py, connect on a
request's first call), so a snapshot holds no socket.

The hooks library (`snapshot_restore_py`) is part of the Lambda Python managed runtime, not a dependency
of ours: outside Lambda the hooks are only recorded, and `run_after_restore` runs them (tests). Under the
Lambda Web Adapter that runtime does not run at all; the adapter relays the restore to the app over HTTP
and the route it calls runs `run_after_restore` (functions/common/web/web_adapter.py).
"""

from __future__ import annotations

import importlib
import os
import random
from collections.abc import Callable
from typing import Any

# Provided by the Lambda Python runtime (3.12+), never bundled: named through a variable so that
# infra/bundling.py, which follows literal `import_module` names, does not look for a wheel of it.
RUNTIME_HOOKS_MODULE = "snapshot_restore_py"
_after_restore: list[Callable[[], None]] = []


def _runtime_registrar(name: str = "register_after_restore") -> Callable[..., Any] | None:
    """`snapshot_restore_py.<name>` on Lambda; None where the runtime lacks it."""
    try:
        module = importlib.import_module(RUNTIME_HOOKS_MODULE)
    except ImportError:
        return None
    registrar = getattr(module, name, None)
    return registrar if callable(registrar) else None


def after_restore(hook: Callable[[], None]) -> Callable[[], None]:
    """Register `hook` to run when Lambda resumes this function from a snapshot (in registration order).

    Usable as a decorator; returns the hook unchanged."""
    _after_restore.append(hook)
    registrar = _runtime_registrar()
    if registrar is not None:
        registrar(hook)
    return hook


# Every function's AWS clients are built by its first call (functions/common/aws.py), the SDK with them.
AWS_SDK_MODULES = ("boto3", "botocore.config", "boto3.dynamodb.conditions")


def prime_before_snapshot(*modules: str) -> None:
    """Under SnapStart, import `modules` (and the AWS SDK) before the snapshot is taken.

    Handler modules import the heavy libraries a route needs lazily, where it first uses them, so that a
    cold start without SnapStart does not pay for them at import (bench/cold_start.py). Under SnapStart
    init is paid once per published version, so the lazily imported modules are imported there too and
    live in the snapshot: a restored environment's first request does not import them. Under the Lambda
    Web Adapter (no `snapshot_restore_py`, and the adapter relays no before-snapshot hook) they are
    imported at once when Lambda says this init is SnapStart's (`AWS_LAMBDA_INITIALIZATION_TYPE`).
    Elsewhere (outside Lambda, an on-demand init without the runtime library) this does nothing."""
    modules = (*AWS_SDK_MODULES, *modules)
    registrar = _runtime_registrar("register_before_snapshot")
    if registrar is None:
        if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":
            for module in modules:
                importlib.import_module(module)
        return

    def prime() -> None:
        for module in modules:
            importlib.import_module(module)

    registrar(prime)


def registered_hooks() -> tuple[Callable[[], None], ...]:
    return tuple(_after_restore)


def run_after_restore() -> None:
    """Run the registered hooks as the Lambda Python runtime does after a restore: where that runtime is not
    the process serving requests (the Lambda Web Adapter's restore route), and in tests."""
    for hook in _after_restore:
        hook()


@after_restore
def reseed_random() -> None:
    """Every environment restored from one snapshot would otherwise continue the same `random` sequence."""
    random.seed()

"""The entry uvicorn serves under the Lambda Web Adapter: the function's app plus the adapter's SnapStart
restore hook (docs/infra.md, "Cold starts and SnapStart").

Under the adapter the Lambda Python runtime does not run: `snapshot_restore_py` hooks never fire. The
adapter (v1.1.0+) relays the restore instead: after a restore, before any traffic, it sends an empty
`POST $AWS_LWA_SNAPSTART_AFTER_RESTORE_PATH` to the app and fails the restore unless the answer is 2xx.
That route runs the same hooks as the runtime would (`snapstart.run_after_restore`).

The route is not part of the function's app, so neither the OpenAPI document nor the API Gateway route
table (infra/routes.py, read from the apps) has it; `with_restore_hook` dispatches it before the app. It
serves only the adapter's own call: from loopback and without the `x-amzn-lambda-context` /
`x-amzn-request-context` headers that the adapter sets on every invocation it forwards (overwriting any
a caller sent). The adapter also answers 403 itself to any invocation that targets a hook path.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from functions.common import snapstart

RESTORE_PATH = "/_lwa/snapstart/after-restore"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1"})
# The adapter adds both to each invocation it relays (lambda_web_adapter `fetch_response`).
INVOCATION_HEADERS = ("x-amzn-lambda-context", "x-amzn-request-context")


def is_adapter_hook_call(request: Request) -> bool:
    """The adapter's own lifecycle call: from loopback, not a relayed invocation."""
    host = request.client.host if request.client else ""
    return host in LOOPBACK_HOSTS and not any(name in request.headers for name in INVOCATION_HEADERS)


def after_restore(request: Request) -> Response:
    if request.method != "POST":
        return JSONResponse({"detail": "Method Not Allowed"}, 405, headers={"Allow": "POST"})
    if not is_adapter_hook_call(request):
        return JSONResponse({"detail": "Forbidden"}, 403)
    snapstart.run_after_restore()
    return Response(status_code=204)


def with_restore_hook(app: ASGIApp) -> ASGIApp:
    """`app`, with `RESTORE_PATH` answered by the restore hook (every other request and the lifespan go
    to `app` unchanged)."""

    async def entry(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == RESTORE_PATH:
            await after_restore(Request(scope, receive))(scope, receive, send)
        else:
            await app(scope, receive, send)

    return entry

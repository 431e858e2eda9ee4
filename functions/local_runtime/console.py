"""The research console's static files (`console/dist/`, built by `make console`) at `/console/`.

`/console` redirects to `/console/`; `/console/` is `index.html`; every file is served with the same
Content-Security-Policy the CloudFront distribution applies, so a console that needed an inline script
or style would break here first. When the console is not built, `/console/...` answers 503 saying how
to build it (not a traceback). `config.json`, which the deployed stack writes beside the build, is
answered here as the API on this origin (no 404 on every load).
"""

from __future__ import annotations

from pathlib import Path

from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.types import Receive, Scope, Send

CONSOLE_PREFIX = "/console"
DEFAULT_CONSOLE_DIR = Path(__file__).resolve().parents[2] / "console" / "dist"
# as the CloudFront distribution's (infra/components/console.py), the API being on this origin here
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
# The console's configuration where the build has none: the API on this origin.
LOCAL_CONFIG = {"apiBaseUrl": ""}
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def is_console_path(path: str) -> bool:
    return path == CONSOLE_PREFIX or path.startswith(CONSOLE_PREFIX + "/")


class ConsoleFiles:
    """ASGI app serving `directory` under `/console/`."""

    def __init__(self, directory: Path = DEFAULT_CONSOLE_DIR) -> None:
        self.directory = directory

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.response(scope)(scope, receive, send)

    def response(self, scope: Scope) -> Response:
        path: str = scope["path"]
        if scope.get("method", "GET") not in ("GET", "HEAD"):
            return JSONResponse({"detail": "Method Not Allowed"}, 405, headers={"Allow": "GET, HEAD"})
        if path == CONSOLE_PREFIX:
            query = scope.get("query_string", b"").decode("latin-1")
            return RedirectResponse(f"{CONSOLE_PREFIX}/" + (f"?{query}" if query else ""), 308)
        root = self.directory.resolve()
        if not (root / "index.html").is_file():
            message = f"The research console is not built ({self.directory} is missing): run `make console`"
            return JSONResponse({"detail": message}, 503, headers={"Retry-After": "60"})
        relative = path[len(CONSOLE_PREFIX) + 1 :] or "index.html"
        candidate = (root / relative).resolve()
        if relative == "config.json" and not candidate.is_file():
            return JSONResponse(LOCAL_CONFIG, headers=SECURITY_HEADERS)
        if not candidate.is_relative_to(root) or not candidate.is_file():
            return JSONResponse({"detail": "Not Found"}, 404)
        return FileResponse(candidate, headers=SECURITY_HEADERS)

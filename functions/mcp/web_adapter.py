"""What run.sh's uvicorn serves under the Lambda Web Adapter (infra/config.py `ApiFunctionSpec.asgi_app`):
the MCP app with the adapter's SnapStart restore hook (functions/common/web/web_adapter.py)."""

from __future__ import annotations

from functions.common.web.web_adapter import with_restore_hook
from functions.mcp.app import app as mcp_app

app = with_restore_hook(mcp_app)

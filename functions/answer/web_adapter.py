"""What run.sh's uvicorn serves under the Lambda Web Adapter (infra/config.py `ApiFunctionSpec.asgi_app`):
the answer app with the adapter's SnapStart restore hook (functions/common/web/web_adapter.py)."""

from __future__ import annotations

from functions.answer.app import app as answer_app
from functions.common.web.web_adapter import with_restore_hook

app = with_restore_hook(answer_app)

"""The answer app's routers, one module per public face: `research` (multi-source) and `trust`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends

from functions.answer.wiring import answer_service

if TYPE_CHECKING:  # the service and the pipeline are imported by the first answer (bench/cold_start.py)
    from functions.answer.service import AnswerService

# The container's answer service, which every route of both faces depends on.
ServiceDep = Annotated["AnswerService", Depends(answer_service)]

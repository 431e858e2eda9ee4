"""Where a job's large step data lives in the data bucket (`payloads/<team_id>/<job_id>/`, expiring):
only these keys travel between states (the state machine's 256 KB payload limit)."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from functions.common.storage import BlobStore, get_json, put_json
from functions.orchestrate.models import JobRecord
from functions.research.job.inputs import ScreeningPayload

Payload = TypeVar("Payload", bound=BaseModel)


def load(data: BlobStore, key: str, model: type[Payload]) -> Payload | None:
    """The payload stored at `key`, as `model`; None when there is none."""
    found = get_json(data, key)
    return model.model_validate(found) if found is not None else None


def store(data: BlobStore, key: str, payload: BaseModel) -> None:
    put_json(data, key, payload.model_dump(mode="json"))


# The job's single payloads, by name under its prefix (`payload_key`).
SCREENING = "screening.json"
SCREEN_VECTORS = "screen-vectors.npz"
SYNTHESIS = "synthesis.json"


def payload_key(team_id: str, job_id: str, name: str) -> str:
    return f"payloads/{team_id}/{job_id}/{name}"


def search_key(team_id: str, job_id: str, query_id: str) -> str:
    return payload_key(team_id, job_id, f"search/{query_id}.json")


def extracted_key(team_id: str, job_id: str, source_id: str) -> str:
    return payload_key(team_id, job_id, f"extracted/{source_id}.json")


def screened(data: BlobStore, job: JobRecord) -> ScreeningPayload:
    """The job's screening payload (empty before screening)."""
    found = load(data, job.screening_key, ScreeningPayload) if job.screening_key else None
    return found or ScreeningPayload()

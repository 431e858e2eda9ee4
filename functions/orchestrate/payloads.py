"""Where a job's large step data lives in the data bucket (`payloads/<team_id>/<job_id>/`, expiring):
only these keys travel between states (the state machine's 256 KB payload limit)."""

from __future__ import annotations

from typing import Any

from functions.common.storage import BlobStore, get_json
from functions.orchestrate.contracts import JobRecord
from functions.research.retrieval.screening import Candidate


def _prefix(team_id: str, job_id: str) -> str:
    return f"payloads/{team_id}/{job_id}/"


def search_key(team_id: str, job_id: str, query_id: str) -> str:
    return f"{_prefix(team_id, job_id)}search/{query_id}.json"


def screening_key(team_id: str, job_id: str) -> str:
    return f"{_prefix(team_id, job_id)}screening.json"


def screen_vectors_key(team_id: str, job_id: str) -> str:
    return f"{_prefix(team_id, job_id)}screen-vectors.npz"


def extracted_key(team_id: str, job_id: str, source_id: str) -> str:
    return f"{_prefix(team_id, job_id)}extracted/{source_id}.json"


def synthesis_key(team_id: str, job_id: str) -> str:
    return f"{_prefix(team_id, job_id)}synthesis.json"


def screened(data: BlobStore, job: JobRecord) -> tuple[dict[str, Any], dict[str, Candidate]]:
    """The job's screening payload and its candidates by source id (empty before screening)."""
    screening = get_json(data, job.screening_key) if job.screening_key else None
    screening = screening or {"candidates": [], "selected": []}
    return screening, {c["source_id"]: Candidate.from_dict(c) for c in screening["candidates"]}

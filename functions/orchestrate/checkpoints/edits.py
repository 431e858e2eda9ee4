"""The body of POST /api/agent/checkpoint/{job_id}/approve, one model per phase: fields a phase does not
take are refused by name (`extra="forbid"`); ids that the waiting checkpoint does not show are refused by
name when the edits are applied (functions/orchestrate/checkpoints/review.py)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from functions.common.errors import InvalidInput
from functions.research.planning.request import CheckpointPhase

MAX_IDS = 200
# What a reviewer may add at screening: a DOI, an arXiv id (new or old style) or a library document.
ADDED_SOURCE = re.compile(
    r"^(doi:10\.\d{4,9}/\S+|arxiv:(\d{4}\.\d{4,5}|[a-z][a-z.-]+(\.[A-Z]{2})?/\d{7})(v\d+)?|library:doc-[0-9a-f]{8,64})$"
)


class _Edits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(default=None, max_length=500)


class PlanEdits(_Edits):
    """The connectors to query (omit one to drop it, name a new one to add it), each connector's queries
    (replacing its planned ones) and the publication window."""

    connectors: list[str] | None = Field(default=None, min_length=1, max_length=20)
    queries: dict[str, list[str]] | None = None
    publication_window_years: int | None = Field(default=None, ge=1, le=10)

    @field_validator("queries")
    @classmethod
    def _queries(cls, value: dict[str, list[str]] | None) -> dict[str, list[str]] | None:
        if value is None:
            return None
        cleaned = {name: [" ".join(q.split()) for q in texts] for name, texts in value.items()}
        for name, texts in cleaned.items():
            if not texts or len(texts) > 10 or any(not q or len(q) > 300 for q in texts):
                raise ValueError(f"queries of {name}: 1 to 10 non-empty queries of at most 300 characters")
        return cleaned


class ScreeningEdits(_Edits):
    exclude: list[str] = Field(default_factory=list, max_length=MAX_IDS)
    add: list[str] = Field(default_factory=list, max_length=20)
    max_sources: int | None = Field(default=None, ge=1, le=50)
    # the candidates whose citations the job chases (citation_chasing), in place of the best selected
    chase_seeds: list[str] | None = Field(default=None, max_length=20)

    @field_validator("add")
    @classmethod
    def _added(cls, value: list[str]) -> list[str]:
        cleaned = [item.strip() for item in value]
        unknown = [item for item in cleaned if not ADDED_SOURCE.match(item)]
        if unknown:
            raise ValueError(f"not a doi:…, arxiv:… or library:doc-… identifier: {', '.join(unknown)}")
        return list(dict.fromkeys(cleaned))


class ExtractionEdits(_Edits):
    strike: list[str] = Field(default_factory=list, max_length=MAX_IDS)
    not_relevant: list[str] = Field(default_factory=list, max_length=MAX_IDS)


class SynthesisEdits(_Edits):
    """`strike`: claims whose evidence the synthesis must not use again; striking sends the synthesis
    back (`resynthesize` defaults to true then, and cannot be false)."""

    strike: list[str] = Field(default_factory=list, max_length=MAX_IDS)
    resynthesize: bool | None = None

    @property
    def sends_back(self) -> bool:
        return bool(self.strike) if self.resynthesize is None else self.resynthesize


EDITS_BY_PHASE: dict[str, type[_Edits]] = {
    "plan": PlanEdits,
    "screening": ScreeningEdits,
    "extraction": ExtractionEdits,
    "synthesis": SynthesisEdits,
}


def parse_edits(phase: CheckpointPhase, body: dict[str, Any] | None) -> _Edits:
    """The edits for `phase`; InvalidInput naming every unknown field and every invalid value."""
    model = EDITS_BY_PHASE[phase]
    try:
        edits = model.model_validate(body or {})
    except ValidationError as exc:
        unknown = [".".join(map(str, e["loc"])) for e in exc.errors() if e["type"] == "extra_forbidden"]
        invalid = [
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
            for e in exc.errors()
            if e["type"] != "extra_forbidden"
        ]
        parts = [f"unknown field(s) for the {phase} checkpoint: {', '.join(unknown)}"] if unknown else []
        raise InvalidInput("; ".join(parts + invalid), field=unknown[0] if unknown else None) from None
    if isinstance(edits, SynthesisEdits) and edits.strike and edits.resynthesize is False:
        raise InvalidInput("struck claims are removed by a new synthesis: resynthesize cannot be false")
    return edits


def unknown_ids(what: str, given: list[str], known: set[str]) -> None:
    """InvalidInput naming the ids in `given` that the waiting checkpoint does not show."""
    missing = [item for item in dict.fromkeys(given) if item not in known]
    if missing:
        raise InvalidInput(f"unknown {what}: {', '.join(missing)}", field=what)

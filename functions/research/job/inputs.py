"""What a job's results and artifacts are built from, as its steps record it: each query's result (the
Search state), the screening payload (the Screen step's, in the data bucket) and each source's
extraction (the Extract step's output, or the Map's record of a source that failed)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)

from functions.research.retrieval.chasing import ChasingRecord
from functions.research.retrieval.screening import Candidate


class GivenFields(BaseModel):
    """Dumped with exactly the fields it was given: a flag a record does not have is not written as a
    default (the state machine's payloads carry what the step said, no more)."""

    @model_serializer(mode="wrap")
    def _given_fields(self, dump: SerializerFunctionWrapHandler) -> dict[str, Any]:
        given = self.model_fields_set | set(self.model_extra or {})
        return {name: value for name, value in dump(self).items() if name in given}


class QueryResult(GivenFields):
    """One planned query's outcome in the Search state: where its hits are (`key`), how many, and the
    connectors that failed; `not_run` when its turn never came within the search time, `budget_skipped`
    when the budget refused its iteration."""

    query_id: str
    connector: str
    query: str = ""
    upstream_query: str = ""
    terms: list[str] = Field(default_factory=list)
    key: str | None = None
    count: int = 0
    failed_connectors: dict[str, str] = Field(default_factory=dict)
    error: str | None = None
    not_run: bool = False
    budget_skipped: bool = False


class Extraction(GivenFields):
    """One source's outcome: the Extract step's output, or the Map's SourceFailed record (`caught`, with
    the error's `cause`). Dumped with exactly the fields it was given (a budget skip says `budget_skipped`,
    others do not)."""

    model_config = ConfigDict(extra="allow")

    source_id: str | None = None
    url: str | None = None
    success: bool = False
    failure_reason: str | None = None
    parsed_key: str | None = None
    evidence_count: int = 0
    unavailable: bool = False
    budget_skipped: bool = False
    caught: bool = False
    confidence_score: float | None = None


def _candidate(value: Any) -> Candidate:
    return value if isinstance(value, Candidate) else Candidate.from_dict(value)


# A screened candidate, stored as its `to_dict()`.
StoredCandidate = Annotated[
    Candidate,
    PlainValidator(_candidate),
    PlainSerializer(lambda candidate: candidate.to_dict()),
    WithJsonSchema({"type": "object"}),
]


class ScreeningPayload(BaseModel):
    """The Screen step's payload: every unique candidate, the ids selected (a reviewer's selection after a
    screening or extraction checkpoint), those the budget left unextracted, those a reviewer found not
    relevant once they were read (at the extraction checkpoint), and the screening's counts. Empty
    before screening."""

    candidates: list[StoredCandidate] = Field(default_factory=list)
    selected: list[str] = Field(default_factory=list)
    budget_skipped: list[str] = Field(default_factory=list)
    not_relevant: list[str] = Field(default_factory=list)
    discovered: int = 0  # hits before de-duplication
    duplicates: int = 0
    validated: int = 0  # unique candidates
    passed: int = 0  # passed every policy
    rejection_counts: dict[str, int] = Field(default_factory=dict)
    # Citation chasing: the seeds a reviewer chose at the screening checkpoint (None: the best selected),
    # and what the Chase step did (None: it has not run, or the job does not chase).
    chase_seeds: list[str] | None = None
    chasing: ChasingRecord | None = None

    def by_id(self) -> dict[str, Candidate]:
        return {candidate.source_id: candidate for candidate in self.candidates}

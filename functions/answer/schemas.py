"""Request and response bodies of both answer faces, field for field as the seed contracts say.

`/api/v1/*` is the multi-source research API (its seed: multisource-search-research-api.md), `/v1/*` the
trust platform's API (trust-platform-plan-and-api.md §8). Responses carry every seed field; a few
extension fields (refusal, trace id, claim verifications, chunk locations) are added and described.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from functions.common.validation import JsonInt, integral_number
from functions.references import MAX_REFERENCE_CHARS, MAX_REFERENCES
from functions.search.schemas import (
    CONNECTOR_NAMES,
    CONNECTORS_SCHEMA,
    NON_BLANK_PATTERN,
    ConnectorName,
)

QUERY_MAX_CHARS = 2000
MAX_SOURCES_CAP = 30  # the planner's own cap (functions/research/planning/answer.py)

PresetName = Literal["fast", "comprehensive", "contracrow", "academic", "tutorial"]
FocusModeName = Literal["general", "academic", "documentation", "comparison", "debugging", "tutorial", "news"]
# a source count (1..MAX_SOURCES_CAP); 5.0 is 5 (functions/common/validation.py `JsonInt`)
SourceCount = Annotated[int, Field(ge=1, le=MAX_SOURCES_CAP), BeforeValidator(integral_number)]
ReasoningEffort = Literal["low", "medium", "high"]
Freshness = Literal["day", "week", "month", "year"]
# (tests check these Literals against functions/research/presets.py)


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain at least one non-space character")
    return value


QueryText = Annotated[
    str,
    Field(min_length=1, max_length=QUERY_MAX_CHARS, json_schema_extra={"pattern": NON_BLANK_PATTERN}),
    AfterValidator(_non_blank),
]
# a search_provider: one connector, or "all" (or null) for every one (functions/answer/service.py)
SearchProvider = Annotated[str, Field(json_schema_extra={"enum": [*CONNECTOR_NAMES, "all"]})]


class _Request(BaseModel):
    # Wrong JSON types are errors ("10" is not a number); unknown fields are ignored.
    model_config = ConfigDict(strict=True, extra="ignore")


# ---- multi-source face: /api/v1/research, /api/v1/ask ---------------------------------------------


class ResearchRequest(_Request):
    query: QueryText = Field(description="Research query")
    top_k: JsonInt = Field(default=10, ge=1, le=50, description="Results per source (1-50)")
    connectors: list[ConnectorName] | None = Field(
        default=None,
        description="Specific connectors to use (default: all configured)",
        json_schema_extra=CONNECTORS_SCHEMA,
    )
    reasoning_effort: ReasoningEffort = Field(
        default="medium",
        description='Analysis depth: "low", "medium", "high" (ignored by /api/v1/ask, which uses "low")',
    )
    preset: PresetName | None = Field(default=None, description="Synthesis preset (GET /api/v1/presets)")
    focus_mode: FocusModeName | None = Field(
        default=None, description="Discovery focus mode (GET /api/v1/focus-modes)"
    )


class SourceCitation(BaseModel):
    id: str = Field(description="Source ID")
    title: str
    url: str
    number: int = Field(description="Extension: the [n] marking this citation in `content`")
    snippet: str = Field(description="Extension: the cited evidence, verbatim")


class Source(BaseModel):
    id: str = Field(description='"{connector_prefix}_{hash of the URL}", e.g. "ax_1a2b3c4d"')
    title: str
    url: str
    content: str = Field(description="Snippet/content (the abstract)")
    score: float = Field(description="RRF fusion score")
    connector: str
    published_at: str | None = Field(
        default=None, description="Extension: ISO 8601 (January 1st of the year)"
    )
    relevance: float = Field(default=0.0, description="Extension: calibrated relevance to the query, 0..1")


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int


class QualityGate(BaseModel):
    model_config = ConfigDict(extra="allow")

    decision: Literal["proceed", "refuse"]
    passed_sources: int
    filtered_sources: int


class RcsSummary(BaseModel):
    model_config = ConfigDict(extra="allow")

    source_title: str
    summary: str
    relevance_score: float


class ClaimVerification(BaseModel):
    claim_id: str
    claim_text: str
    verdict: str = Field(description='"supported", "partially_supported" or "unsupported"')
    evidence_chunk_ids: list[str]
    confidence: float
    notes: str


class ResearchResponse(BaseModel):
    query: str
    content: str
    citations: list[SourceCitation]
    sources: list[Source]
    connectors_used: list[str]
    model: str
    usage: Usage
    preset_used: str | None = Field(description='The preset\'s display name, e.g. "Comprehensive"')
    focus_mode_used: str | None
    quality_gate: QualityGate
    contradictions: list[dict[str, Any]]
    rcs_summaries: list[RcsSummary]
    # extensions
    refusal: bool = Field(description="Extension: true when the engine declined to answer (still a 200)")
    refusal_reason: str | None = Field(default=None, description="Extension: why it declined")
    refusal_code: str | None = Field(default=None, description="Extension: machine-readable reason")
    confidence_score: float = Field(description="Extension: 0..1")
    claim_verifications: list[ClaimVerification] = Field(description="Extension: one verdict per claim")
    failed_connectors: dict[str, str] = Field(
        default_factory=dict, description="Extension: connector -> reason"
    )
    trace_id: str = Field(description="Extension: GET /v1/traces/{trace_id} returns the agent trace")


class PresetInfo(BaseModel):
    name: str
    description: str
    features: list[str]


class PresetsResponse(BaseModel):
    presets: list[PresetInfo]


class FocusModeInfo(BaseModel):
    name: str
    description: str


class FocusModesResponse(BaseModel):
    focus_modes: list[FocusModeInfo]


# ---- trust face: /v1/query, /v1/query/stream ----------------------------------------------------


class QueryOptions(_Request):
    stream: bool = Field(
        default=False, description="true answers as /v1/query/stream does (text/event-stream)"
    )
    max_sources: SourceCount | None = Field(
        default=None,
        description="Sources the answer may draw on (default: by effort)",
    )
    temperature: float | None = Field(
        default=None, ge=0.0, le=2.0, description="The writer model's temperature (default 0.2)"
    )
    embedding_model: str | None = Field(
        default=None,
        description="Accepted for compatibility and recorded in the trace; sources are always ranked with "
        "the bundled all-MiniLM-L6-v2 (or the lexical model when its weights are absent)",
    )
    search_provider: SearchProvider | None = Field(
        default=None, description='One search connector (e.g. "arxiv", "openalex"), or "all"/null for all'
    )
    enable_verifier: bool = Field(
        default=True,
        description="The LLM judge of claims; lexical and numeric verification of every claim always run",
    )
    # extensions
    preset: PresetName | None = Field(
        default=None, description="Extension: answer preset (GET /api/v1/presets)"
    )
    focus_mode: FocusModeName | None = Field(
        default=None, description="Extension: discovery focus mode (GET /api/v1/focus-modes)"
    )
    reasoning_effort: ReasoningEffort = Field(
        default="medium", description="Extension: how much is searched and read: low, medium, high"
    )
    min_confidence: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Extension: refuse below this confidence (default: 0.3 when the preset has a quality gate)",
    )
    min_sources: SourceCount | None = Field(
        default=None,
        description="Extension: refuse unless this many sources support the answer",
    )


class QueryRequest(_Request):
    query: QueryText
    user_id: str | None = Field(default=None, max_length=200, description="Recorded in the trace")
    session_id: str | None = Field(default=None, max_length=200, description="Recorded in the trace")
    documents: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=20, description="Uploaded document ids (POST /v1/documents)"
    )
    options: QueryOptions = Field(default_factory=QueryOptions)


class QueryCitation(BaseModel):
    citation_id: str
    source_id: str
    title: str
    url: str
    published_at: str | None
    snippet: str = Field(description="The cited evidence, verbatim")
    chunk_start: int = Field(description="snippet == text[chunk_start:chunk_end] of the text named by origin")
    chunk_end: int
    # extensions
    chunk_id: str = Field(description="Extension: the evidence chunk (claim_verifications refer to it)")
    page: int | None = Field(description="Extension: the PDF page, for full-text evidence")
    origin: str = Field(
        description='Extension: "abstract" (the source\'s abstract) or "page" (that page\'s text)'
    )


class QuerySource(BaseModel):
    """A cited source as a reader cites it (the console's source list); dated as the citations are."""

    source_id: str
    title: str
    url: str
    published_at: str | None
    authors: list[str]
    venue: str | None
    doi: str | None


class QueryResponse(BaseModel):
    answer_id: str
    query: str
    answer: str
    citations: list[QueryCitation]
    claim_verifications: list[ClaimVerification]
    confidence_score: float
    refusal: bool
    trace_id: str
    # extensions
    refusal_reason: str | None = Field(default=None, description="Extension: why the engine declined")
    refusal_code: str | None = Field(default=None, description="Extension: machine-readable reason")
    sources: list[QuerySource] = Field(
        default_factory=list, description="Extension: the cited sources, in the order first cited"
    )
    failed_connectors: dict[str, str] = Field(
        default_factory=dict, description="Extension: connector -> why it could not be searched"
    )


# ---- trust face: /v1/claims/verify -----------------------------------------------------------------

CLAIM_MAX_CHARS = 2000
CLAIM_MAX_SOURCES = 20
CLAIM_SOURCE_MAX_CHARS = 2048  # the extraction service's own limit on an address

ClaimText = Annotated[
    str,
    Field(min_length=1, max_length=CLAIM_MAX_CHARS, json_schema_extra={"pattern": NON_BLANK_PATTERN}),
    AfterValidator(_non_blank),
]
NamedSourceText = Annotated[
    str,
    Field(min_length=1, max_length=CLAIM_SOURCE_MAX_CHARS, json_schema_extra={"pattern": NON_BLANK_PATTERN}),
    AfterValidator(_non_blank),
]
ClaimVerdictName = Literal[
    "supported", "partially_supported", "unsupported", "contradicted", "insufficient_evidence"
]
EvidenceStance = Literal["supports", "contradicts", "partially_supports", "related"]


class ClaimVerifyRequest(_Request):
    claim: ClaimText = Field(description=f"The claim to check (at most {CLAIM_MAX_CHARS} characters)")
    sources: list[NamedSourceText] | None = Field(
        default=None,
        max_length=CLAIM_MAX_SOURCES,
        description="Where to look (URLs, DOIs, arXiv ids or library document ids, mixed; at most "
        f"{CLAIM_MAX_SOURCES}); omitted or empty: the scholarly search finds the evidence",
    )


class ClaimEvidence(BaseModel):
    quote: str = Field(
        description="The passage, verbatim: text[char_start:char_end] of the text named by origin"
    )
    stance: EvidenceStance = Field(description="What the passage does to the claim")
    note: str = Field(description="Why (the check's reason)")
    source: str = Field(description="The source as the request named it (its URL when the search found it)")
    page: int | None = Field(description="The PDF page (null for an abstract)")
    char_start: int
    char_end: int
    origin: str = Field(description='"abstract" (the source\'s abstract) or "page" (that page\'s text)')
    source_id: str
    title: str
    url: str


class ClaimSource(BaseModel):
    source: str = Field(description="As the request named it (its URL when the search found it)")
    read: bool = Field(description="False: it could not be read (see note); the verdict does without it")
    note: str | None = None
    source_id: str
    title: str
    url: str


class ClaimVerifyResponse(BaseModel):
    claim: str
    verdict: ClaimVerdictName
    confidence: float = Field(description="0..1, how sure the verdict is (docs/claims.md)")
    evidence: list[ClaimEvidence] = Field(description="The passages the verdict rests on, strongest first")
    notes: list[str]
    sources: list[ClaimSource] = Field(description="Every source looked at, read or not")


# ---- trust face: /v1/search, /v1/traces, /v1/health ------------------------------------------------


class TrustSearchRequest(_Request):
    query: QueryText
    search_provider: SearchProvider | None = Field(
        default=None, description='One search connector (e.g. "arxiv"), or "all"/null for every connector'
    )
    freshness: Freshness | None = Field(
        default=None,
        description="Scholarly records carry a publication year, not a date: day, week and month keep this "
        "year's works, year keeps this year's and last year's",
    )
    max_results: JsonInt = Field(default=10, ge=1, le=50)


class TrustSearchResult(BaseModel):
    source_id: str
    title: str
    url: str
    published_at: str | None
    snippet: str


class TrustSearchResponse(BaseModel):
    results: list[TrustSearchResult]


class TraceEventBody(BaseModel):
    event_id: str
    agent: str
    event_type: str
    timestamp: str
    payload: dict[str, Any]
    name: str = Field(description="Extension: the event's name (plan_created, search_completed, ...)")


class TraceResponse(BaseModel):
    trace_id: str
    query: str
    events: list[TraceEventBody]


class TrustHealthResponse(BaseModel):
    status: Literal["ok"]
    version: str
    llm_configured: bool = Field(description="Extension: an LLM writes the answers (else: extractive)")
    connectors: list[str] = Field(description="Extension: the configured search connectors")


class DetailResponse(BaseModel):
    detail: str


# ---- trust face: /v1/references/check ------------------------------------------------------------

ReferenceText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_REFERENCE_CHARS,
        json_schema_extra={"pattern": NON_BLANK_PATTERN},
        description="A formatted reference (any style), a bare DOI (any spelling) or one BibTeX entry",
    ),
    AfterValidator(_non_blank),
]
ReferenceStatus = Literal["verified", "doi_title_mismatch", "not_found", "retracted", "ambiguous"]


class ReferenceCheckRequest(_Request):
    references: list[ReferenceText] = Field(
        min_length=1, max_length=MAX_REFERENCES, description=f"1 to {MAX_REFERENCES} references, in order"
    )


class MatchedWork(BaseModel):
    """The registry's record of the work the reference was matched to."""

    title: str
    authors: list[str]
    year: int | None
    venue: str | None
    doi: str | None
    url: str | None = Field(description="The work's landing page (the DOI's resolver when it has one)")


class CheckedReference(BaseModel):
    input: str = Field(description="The reference as sent (or as read from the upload)")
    status: ReferenceStatus
    matched: MatchedWork | None = Field(description="The matched record; null when nothing matched")
    confidence: float = Field(ge=0, le=1)
    notes: list[str] = Field(description="How the verdict was reached: lookups, matches, failures")


class ReferenceCheckResponse(BaseModel):
    references: list[CheckedReference] = Field(description="One entry per reference, in their order")

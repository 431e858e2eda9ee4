"""The MCP tools, one declaration each: its name, its argument model, the REST route it mirrors, that
route's output model and the one-line summary of a result (see the package docstring for adding one).

A declaration's `route` is `"<METHOD> <path>"` with `{name}` parameters. Its call is built from the
validated arguments: parameters fill the path (URL-quoted), `body` (when given) shapes the JSON body from
the arguments, otherwise the remaining arguments that are set are the body of a POST (a GET sends none).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from functions.answer.schemas import (
    CLAIM_MAX_SOURCES,
    ClaimText,
    ClaimVerifyResponse,
    NamedSourceText,
    PresetName,
    QueryResponse,
    ReferenceCheckResponse,
    ReferenceText,
)
from functions.answer.schemas import QueryText as QuestionText
from functions.common.validation import JsonInt
from functions.mcp.outputs import ExtractResponse
from functions.mcp.rest import RestCall
from functions.orchestrate.models import ExecuteResponse, JobResults, JobStatusResponse
from functions.rag.api_models import (
    K_DEFAULT,
    K_MAX,
    K_MIN,
    EntityResponse,
    SearchFiltersBody,
    SemanticSearchResponse,
)
from functions.rag.model import EntityType
from functions.references import MAX_REFERENCES
from functions.research.planning.request import ScopeParameters
from functions.search.schemas import QueryText, ToolsSearchResponse

Summary = Callable[[dict[str, Any]], str]


class Arguments(BaseModel):
    """A tool's arguments: unknown ones are refused, like the REST bodies' unknown fields."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    arguments: type[Arguments]
    route: str  # "POST /api/tools/search": the REST route the tool mirrors
    output: type[BaseModel]  # the route's response model: the tool's outputSchema
    summary: Summary  # the text content of a result: one short line from the route's body
    body: Callable[[Any], dict[str, Any]] | None = None
    # the call's body when the client asked for progress: the same route, answering as a stream of
    # Server-Sent Events whose `final` event is the body it answers otherwise
    streamed: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    @property
    def method(self) -> str:
        return self.route.split(" ", 1)[0]

    @property
    def path(self) -> str:
        return self.route.split(" ", 1)[1]

    def input_schema(self) -> dict[str, Any]:
        return self.arguments.model_json_schema()

    def output_schema(self) -> dict[str, Any]:
        return self.output.model_json_schema(mode="serialization")

    def call(self, arguments: Arguments) -> RestCall:
        values = arguments.model_dump(mode="json", exclude_none=True)
        path = self.path
        for name in list(values):
            if "{" + name + "}" in path:
                path = path.replace("{" + name + "}", quote(str(values.pop(name)), safe=""))
        if self.body is not None:
            return RestCall(self.method, path, json=self.body(arguments))
        return RestCall(self.method, path, json=values if self.method != "GET" else None)


# --- arguments ---------------------------------------------------------------------------------------


class SearchPapers(Arguments):
    query: QueryText = Field(description="What to search for")
    max_results: JsonInt = Field(default=20, ge=1, le=100, description="How many papers (1-100)")
    year_start: JsonInt | None = Field(default=None, description="Published in or after this year")
    year_end: JsonInt | None = Field(default=None, description="Published in or before this year")


class ReadPaper(Arguments):
    source_url: StrictStr = Field(
        min_length=1,
        max_length=2048,
        description="An http(s) URL, a DOI, an arXiv id or library://<document_id>",
    )


class Ask(Arguments):
    question: QuestionText = Field(description="The question to answer from the literature")
    preset: PresetName | None = Field(default=None, description="Answer preset (default: the service's)")
    documents: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=20, description="Library document ids to draw on as well"
    )


class VerifyClaim(Arguments):
    claim: ClaimText = Field(description="The claim to check against the literature")
    sources: list[NamedSourceText] | None = Field(
        default=None,
        max_length=CLAIM_MAX_SOURCES,
        description="Where to look: URLs, DOIs, arXiv ids or library document ids (omitted: search)",
    )


class CheckReferences(Arguments):
    references: list[ReferenceText] = Field(
        min_length=1,
        max_length=MAX_REFERENCES,
        description=f"1 to {MAX_REFERENCES} references: formatted, bare DOIs or BibTeX entries",
    )


class StartResearch(Arguments):
    research_goal: StrictStr = Field(min_length=10, max_length=500, description="The research goal")
    scope_parameters: ScopeParameters = Field(default_factory=ScopeParameters)


class JobId(Arguments):
    job_id: StrictStr = Field(min_length=1, max_length=200, description="The job's id (start_research)")


class KbSearch(Arguments):
    query: StrictStr = Field(description="Natural-language query (3 to 1000 characters)")
    k: JsonInt = Field(default=K_DEFAULT, ge=K_MIN, le=K_MAX, description="How many passages and items")
    traverse_types: list[EntityType] | None = Field(default=None, description="Only these entity types")
    filters: SearchFiltersBody | None = None


class KbEntity(Arguments):
    entity_type: StrictStr = Field(
        min_length=1, max_length=40, description="formula | algorithm | table | figure"
    )
    number: StrictStr = Field(min_length=1, max_length=40, description='e.g. "3.2", "A.1"')


# --- request bodies and summaries ------------------------------------------------------------------


def _search_body(arguments: SearchPapers) -> dict[str, Any]:
    body: dict[str, Any] = {"query": arguments.query, "max_results": arguments.max_results}
    years = {"start": arguments.year_start, "end": arguments.year_end}
    if any(year is not None for year in years.values()):
        body["filters"] = {"year_range": {key: year for key, year in years.items() if year is not None}}
    return body


def _ask_body(arguments: Ask) -> dict[str, Any]:
    body: dict[str, Any] = {"query": arguments.question, "documents": list(arguments.documents)}
    if arguments.preset is not None:
        body["options"] = {"preset": arguments.preset}
    return body


def _streamed_query(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "options": {**body.get("options", {}), "stream": True}}


def _titles(items: list[dict[str, Any]], key: str = "title", limit: int = 3) -> str:
    titles = [str(item.get(key) or "") for item in items[:limit] if item.get(key)]
    return "; ".join(titles)


def _search_summary(body: dict[str, Any]) -> str:
    results = body.get("results", [])
    failed = body.get("failed_sources") or {}
    line = f"{len(results)} papers (of {body.get('total_found', len(results))} found)"
    line += f": {_titles(results)}" if results else ""
    return line + (f". Sources that failed: {', '.join(sorted(failed))}" if failed else "")


def _extract_summary(body: dict[str, Any]) -> str:
    content, metadata = body.get("extracted_content", {}), body.get("metadata", {})
    if not metadata.get("extraction_success"):
        return f"Could not read the paper: {metadata.get('failure_reason', 'extraction failed')}"
    pages = metadata.get("page_count")
    return (
        f"{content.get('title') or 'Untitled'}"
        + (f" ({pages} pages)" if pages else "")
        + f": {len(content.get('evidence', []))} page-located quotes"
    )


def _ask_summary(body: dict[str, Any]) -> str:
    if body.get("refusal"):
        return f"No answer: {body.get('refusal_reason') or 'the evidence does not support one'}"
    citations = body.get("citations", [])
    return f"{body.get('answer', '')} ({len(citations)} verified citations)"


def _claim_summary(body: dict[str, Any]) -> str:
    evidence = body.get("evidence", [])
    return (
        f"{body.get('verdict', '').replace('_', ' ')} (confidence {float(body.get('confidence', 0)):.2f}, "
        f"{len(evidence)} quoted passages)"
    )


def _references_summary(body: dict[str, Any]) -> str:
    statuses: dict[str, int] = {}
    for entry in body.get("references", []):
        statuses[entry.get("status", "")] = statuses.get(entry.get("status", ""), 0) + 1
    counts = ", ".join(f"{count} {status.replace('_', ' ')}" for status, count in sorted(statuses.items()))
    return f"{sum(statuses.values())} references checked: {counts}"


def _job_summary(body: dict[str, Any]) -> str:
    phase = body.get("current_phase") or {}
    described = phase.get("description") if isinstance(phase, dict) else None
    return f"Job {body.get('job_id')}: {body.get('status')}" + (f", {described}" if described else "")


def _results_summary(body: dict[str, Any]) -> str:
    if body.get("refusal"):
        return f"Job {body.get('job_id')}: {body.get('status')}, refused: {body.get('refusal_reason')}"
    return (
        f"Job {body.get('job_id')}: {body.get('status')}, {len(body.get('sources', []))} sources, "
        f"{len(body.get('claims', []))} claims, confidence {body.get('confidence_score')}"
    )


def _kb_summary(body: dict[str, Any]) -> str:
    results = body.get("results", [])
    return f"{len(results)} passages and items" + (f": {_titles(results)}" if results else "")


def _entity_summary(body: dict[str, Any]) -> str:
    return f"{body.get('type', '')} {body.get('number', '')}: {body.get('title') or ''}".strip(": ")


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search_papers",
        "Search arXiv, Semantic Scholar, OpenAlex, Crossref and your team's library for papers.",
        SearchPapers,
        "POST /api/tools/search",
        ToolsSearchResponse,
        _search_summary,
        body=_search_body,
    ),
    ToolSpec(
        "read_paper",
        "Fetch and read one paper: its metadata, findings and page-located evidence quotes.",
        ReadPaper,
        "POST /api/tools/extract",
        ExtractResponse,
        _extract_summary,
    ),
    ToolSpec(
        "ask",
        "Answer a question from the literature; every sentence cites a verified, page-located quote "
        "(or the answer is refused when the evidence is thin).",
        Ask,
        "POST /v1/query",
        QueryResponse,
        _ask_summary,
        body=_ask_body,
        streamed=_streamed_query,
    ),
    ToolSpec(
        "verify_claim",
        "Check a claim against the literature: supported, partially supported, unsupported, "
        "contradicted or insufficient evidence, with the verbatim, page-located passages it rests on.",
        VerifyClaim,
        "POST /v1/claims/verify",
        ClaimVerifyResponse,
        _claim_summary,
    ),
    ToolSpec(
        "check_references",
        "Check references (formatted, bare DOIs or BibTeX) against Crossref and OpenAlex: verified, "
        "DOI-title mismatch, not found, retracted or ambiguous, with the registry's record.",
        CheckReferences,
        "POST /v1/references/check",
        ReferenceCheckResponse,
        _references_summary,
    ),
    ToolSpec(
        "start_research",
        "Start a research job (search, screen, read, synthesise with located evidence); returns its job_id.",
        StartResearch,
        "POST /api/agent/execute",
        ExecuteResponse,
        _job_summary,
    ),
    ToolSpec(
        "research_status",
        "A research job's status, phase, progress and decisions.",
        JobId,
        "GET /api/agent/status/{job_id}",
        JobStatusResponse,
        _job_summary,
    ),
    ToolSpec(
        "research_results",
        "A finished research job's synthesis, sources, evidence and claims; its artifacts are the "
        "resources research://jobs/{job_id}/{artifact}.",
        JobId,
        "GET /api/agent/results/{job_id}",
        JobResults,
        _results_summary,
    ),
    ToolSpec(
        "kb_search",
        "Search the textbook knowledge base's passages and numbered items.",
        KbSearch,
        "POST /search/semantic",
        SemanticSearchResponse,
        _kb_summary,
    ),
    ToolSpec(
        "kb_entity",
        "One numbered formula, algorithm, table or figure of the textbook knowledge base.",
        KbEntity,
        "GET /entity/{entity_type}/{number}",
        EntityResponse,
        _entity_summary,
    ),
)

TOOLS_BY_NAME: dict[str, ToolSpec] = {tool.name: tool for tool in TOOLS}

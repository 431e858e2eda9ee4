"""A job's PRISMA 2020 flow (`execution_summary.prisma_flow`): how many records each source identified,
the duplicates removed, screened and excluded, sought, not retrieved, read and included, derived from
what the job's steps recorded (each query's result, the screening payload, each source's extraction).

Each stage is the one before it less its exclusions: screened = identified - duplicates removed;
sought for retrieval = screened - excluded at screening; assessed = sought - not retrieved; included =
assessed - excluded after the full text, i.e. the results' sources that were read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from functions.research.job.inputs import Extraction, QueryResult, ScreeningPayload
from functions.research.retrieval.screening import Candidate

CITATION_CHASING = "citation_chasing"
REVIEWER = "reviewer"  # papers a reviewer added at the screening checkpoint
# How a chased work was found (`discovered_via.method`); "search" is the queries'.
CHASING_METHODS = frozenset({"references", "citations"})
EXCLUDED_BY_REVIEWER = "excluded_by_reviewer"
BUDGET_REACHED = "budget_reached"
NO_OPEN_FULL_TEXT = "no_open_full_text"
EXTRACTION_FAILED = "extraction_failed"


class ExclusionReasons(BaseModel):
    """Reason -> count, per stage: the screening's rejection reasons (a reviewer's deselection is
    `excluded_by_reviewer`), why a sought report was not retrieved, why a read one was not included."""

    screening: dict[str, int] = Field(default_factory=dict)
    not_retrieved: dict[str, int] = Field(default_factory=dict)
    full_text: dict[str, int] = Field(default_factory=dict)


class PrismaFlow(BaseModel):
    """The PRISMA 2020 flow of a job, one count per box of the diagram."""

    identified: dict[str, int] = Field(default_factory=dict)  # connector (or citation_chasing) -> records
    duplicates_removed: int = 0
    screened: int = 0
    excluded_screening: int = 0
    sought_for_retrieval: int = 0
    not_retrieved: int = 0
    assessed_full_text: int = 0
    excluded_full_text: int = 0
    included: int = 0
    exclusion_reasons: ExclusionReasons = Field(default_factory=ExclusionReasons)

    @property
    def total_identified(self) -> int:
        return sum(self.identified.values())


def chasing_method(candidate: Candidate) -> str | None:
    """`discovered_via.method` of a candidate citation chasing added (on it or on its paper), else None."""
    stored = candidate.to_dict()
    via = stored.get("discovered_via") or stored["paper"].get("discovered_via")
    method = via.get("method") if isinstance(via, dict) else None
    return method if method in CHASING_METHODS else None


def source_label(name: str) -> str:
    """How the report and the diagram name a source of records."""
    return {CITATION_CHASING: "citation searching", REVIEWER: "added by a reviewer"}.get(name, name)


def identified_by_other_methods(candidate: Candidate) -> str | None:
    """How a candidate no query returned was identified: `citation_chasing`, `reviewer` (added at the
    screening checkpoint) or its connector; None for a search's (its hits are counted per query)."""
    if chasing_method(candidate):
        return CITATION_CHASING
    if candidate.query_ids:
        return None
    return REVIEWER if "added" in candidate.explanations else candidate.paper.source


def identified_records(searches: Sequence[QueryResult], candidates: Sequence[Candidate]) -> dict[str, int]:
    """Records identified per connector (every hit a query stored, before de-duplication), and those
    identified otherwise: by citation chasing (de-duplicated against the candidates as it added them)
    or by a reviewer."""
    counts: Counter[str] = Counter()
    for search in searches:
        if search.key:
            counts[search.connector] += search.count
    counts.update(method for candidate in candidates if (method := identified_by_other_methods(candidate)))
    return dict(sorted(counts.items()))


def _not_retrieved_reason(outcome: Extraction | None) -> str:
    if outcome is None:
        return EXTRACTION_FAILED
    if outcome.budget_skipped:
        return BUDGET_REACHED
    return NO_OPEN_FULL_TEXT if outcome.unavailable else EXTRACTION_FAILED


def prisma_flow(
    searches: Sequence[QueryResult], screening: ScreeningPayload, extractions: Sequence[Extraction]
) -> PrismaFlow:
    """`screening.selected` is the final selection (a reviewer's, after a checkpoint); a source a
    reviewer found not relevant after reading it (`screening.not_relevant`) was sought and assessed."""
    candidates = screening.candidates
    selected = set(screening.selected)
    read_then_dropped = set(screening.not_relevant)
    outcomes = {item.source_id: item for item in extractions if item.source_id}
    attempted = selected | read_then_dropped | set(outcomes)
    sought = [c for c in candidates if c.source_id in attempted]
    sought_ids = {c.source_id for c in sought}
    read = {c.source_id for c in sought if c.source_id in read_then_dropped or _was_read(outcomes, c)}
    not_retrieved = Counter(
        BUDGET_REACHED
        if c.source_id in screening.budget_skipped and c.source_id not in outcomes
        else _not_retrieved_reason(outcomes.get(c.source_id))
        for c in sought
        if c.source_id not in read
    )
    included = len(read & selected)
    identified = identified_records(searches, candidates)
    return PrismaFlow(
        identified=identified,
        duplicates_removed=sum(identified.values()) - len(candidates),
        screened=len(candidates),
        excluded_screening=len(candidates) - len(sought),
        sought_for_retrieval=len(sought),
        not_retrieved=sum(not_retrieved.values()),
        assessed_full_text=len(read),
        excluded_full_text=len(read) - included,
        included=included,
        exclusion_reasons=ExclusionReasons(
            screening=_counted(
                c.rejection or EXCLUDED_BY_REVIEWER for c in candidates if c.source_id not in sought_ids
            ),
            not_retrieved=_counted(not_retrieved.elements()),
            full_text=_counted(EXCLUDED_BY_REVIEWER for _ in range(len(read) - included)),
        ),
    )


def _was_read(outcomes: dict[str, Extraction], candidate: Candidate) -> bool:
    outcome = outcomes.get(candidate.source_id)
    return outcome is not None and outcome.success


def _counted(reasons: Iterable[str]) -> dict[str, int]:
    return dict(sorted(Counter(reasons).items()))


def _reasons(reasons: dict[str, int]) -> str:
    return "; ".join(f"{reason.replace('_', ' ')}: {count}" for reason, count in reasons.items())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def flow_markdown(flow: PrismaFlow) -> list[str]:
    """The report's section: the flow as a table, each stage with its exclusions and their reasons."""
    reasons = flow.exclusion_reasons
    sources = ", ".join(f"{source_label(name)} {count}" for name, count in flow.identified.items())
    rows = [
        ("Records identified", flow.total_identified, sources),
        ("Duplicate records removed", flow.duplicates_removed, ""),
        ("Records screened", flow.screened, ""),
        ("Records excluded", flow.excluded_screening, _reasons(reasons.screening)),
        ("Reports sought for retrieval", flow.sought_for_retrieval, ""),
        ("Reports not retrieved", flow.not_retrieved, _reasons(reasons.not_retrieved)),
        ("Reports assessed for eligibility", flow.assessed_full_text, ""),
        ("Reports excluded", flow.excluded_full_text, _reasons(reasons.full_text)),
        ("Studies included in review", flow.included, ""),
    ]
    return [
        "## PRISMA 2020 flow",
        "",
        "| stage | n | detail |",
        "|---|---|---|",
        *(f"| {stage} | {count} | {_cell(detail)} |" for stage, count, detail in rows),
        "",
        "The diagram: `prisma_flow.svg`.",
        "",
    ]

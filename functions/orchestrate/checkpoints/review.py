"""A reviewer's edits applied: the state the job goes on with (the approval's output replaces the state,
ResultPath "$"), what the job record keeps of them, and a summary for the audit trail. Every id an edit
names must be one the checkpoint shows (InvalidInput naming the others)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from functions.common.models import Paper
from functions.orchestrate.checkpoints.edits import (
    ExtractionEdits,
    PlanEdits,
    ScreeningEdits,
    SynthesisEdits,
    unknown_ids,
)
from functions.orchestrate.checkpoints.views import CheckpointContext, window_years
from functions.orchestrate.payloads import store
from functions.research.job.inputs import ScreeningPayload
from functions.research.planning.job import QueryWording, Renderer
from functions.research.planning.plan import PlannedQuery
from functions.research.retrieval.screening import Candidate, source_id_for

DEFAULT_MAX_RESULTS = 20


@dataclass
class Review:
    state: dict[str, Any]
    record: dict[str, Any] = field(default_factory=dict)  # job record fields to set
    changes: list[str] = field(default_factory=list)  # what changed, in words (the audit entry)


# --- plan ----------------------------------------------------------------------------------------------


def review_plan(
    context: CheckpointContext, edits: PlanEdits, available: tuple[str, ...], render: Renderer
) -> Review:
    unknown_ids("connectors", list(edits.connectors or []) + list(edits.queries or {}), set(available))
    state = dict(context.state)
    search = dict(state.get("search") or {})
    pending = [dict(query) for query in search.get("pending") or []]
    planned = list(dict.fromkeys(str(query["connector"]) for query in pending))
    connectors = list(dict.fromkeys(edits.connectors or planned + list(edits.queries or {})))
    unknown_ids(
        "connectors in queries (not among the connectors)", list(edits.queries or {}), set(connectors)
    )
    review = Review(state)
    plan = context.job.research_plan
    years = _years(context, edits, review)
    queries: list[dict[str, Any]] = []
    for name in connectors:
        own = [query for query in pending if query["connector"] == name]
        texts = (edits.queries or {}).get(name) or [q["query"] for q in own] or [plan.settings.topic]
        template = own[0] if own else {"max_results": DEFAULT_MAX_RESULTS}
        for rank, text in enumerate(texts):
            kept = next((q for q in own if q["query"] == text), None)
            query = (
                dict(kept)
                if kept
                else _new_query(name, text, rank, int(template["max_results"]), render, years)
            )
            query.update(year_start=years[0], year_end=years[1], priority=rank)
            queries.append(query)
    dropped = [name for name in planned if name not in connectors]
    if dropped:
        review.changes.append(f"dropped connectors {', '.join(dropped)}")
    if edits.queries:
        review.changes.append(f"set the queries of {', '.join(edits.queries)}")
    search["pending"] = queries
    state["search"] = search
    stored = plan.to_dict()
    review.record["plan"] = {
        **stored,
        "queries": queries,
        "policies": {**stored["policies"], "year_start": years[0]},
    }
    return review


def _years(context: CheckpointContext, edits: PlanEdits, review: Review) -> tuple[int | None, int | None]:
    """The publication years the searches ask for (and screening holds to), after the window's edit."""
    job = context.job
    policies = job.research_plan.settings.policies
    start, end = policies.year_start, policies.year_end
    window = edits.publication_window_years
    if window is not None and window != window_years(job):
        start = end - window
        review.changes.append(f"publication window set to {window} years ({start}-{end})")
        scope = dict(job.scope_parameters)
        scope["temporal_boundary"] = {
            **(scope.get("temporal_boundary") or {}),
            "publication_window_years": window,
        }
        review.record["scope_parameters"] = scope
    return start, end


def _new_query(
    connector: str, text: str, rank: int, limit: int, render: Renderer, years: tuple[int | None, int | None]
) -> dict[str, Any]:
    """A query the reviewer wrote: sent as they wrote it (no concept groups of ours)."""
    return PlannedQuery(
        query_id=f"h{rank + 1}-{connector}",  # h: a human's (r: refinement's, q: the plan's)
        connector=connector,
        query=text,
        upstream_query=render(connector, QueryWording(text, [], years[0], years[1], limit)),
        terms=[text],
        year_start=years[0],
        year_end=years[1],
        max_results=limit,
    ).to_dict()


# --- screening -----------------------------------------------------------------------------------------


def added_candidate(identifier: str) -> Candidate:
    """A paper the reviewer added by identifier: extracted (and citable) like a screened one."""
    kind, _, value = identifier.partition(":")
    url = {
        "doi": f"https://doi.org/{value}",
        "arxiv": f"https://arxiv.org/abs/{value}",
        "library": f"library://{value}",
    }[kind]
    paper = Paper(
        title=identifier,
        url=url,
        doi=value.lower() if kind == "doi" else None,
        arxiv_id=value.split("v")[0] if kind == "arxiv" and "/" not in value else None,
        source="library" if kind == "library" else "reviewer",
    )
    return Candidate(
        paper=paper, source_id=source_id_for(identifier), explanations={"added": "by the reviewer"}
    )


def review_screening(context: CheckpointContext, edits: ScreeningEdits) -> Review:
    screening = context.screening()
    candidates = screening.by_id()
    unknown_ids("candidates", edits.exclude, set(candidates))
    unknown_ids("candidates", edits.chase_seeds or [], set(candidates))
    state = dict(context.state)
    screen = dict(state.get("screen") or {})
    chosen = [str(item["source_id"]) for item in screen.get("selected") or []]
    excluded = set(edits.exclude)
    kept = [source_id for source_id in chosen if source_id not in excluded]
    if edits.max_sources is not None:
        spare = sorted(
            (
                c
                for c in candidates.values()
                if c.rejection is None and c.source_id not in excluded | set(kept)
            ),
            key=lambda c: -c.weighted_score,
        )
        kept = (kept + [c.source_id for c in spare])[: max(0, edits.max_sources - len(edits.add))]
    added = [added_candidate(identifier) for identifier in edits.add]
    by_id = {**candidates, **{c.source_id: c for c in added}}
    selection = list(dict.fromkeys([c.source_id for c in added] + kept))
    screen["selected"] = [
        {"source_id": i, "url": by_id[i].paper.url, "title": by_id[i].paper.title[:300]} for i in selection
    ]
    state["screen"] = screen
    review = Review(state, record={"extract_total": len(selection)})
    if edits.chase_seeds is not None:
        screening = screening.model_copy(update={"chase_seeds": list(dict.fromkeys(edits.chase_seeds))})
        review.changes.append(f"chasing the citations of {', '.join(edits.chase_seeds) or 'no source'}")
    _store_selection(context, screening, selection, added)
    if added:
        review.changes.append(f"added {', '.join(edits.add)}")
    if excluded:
        review.changes.append(f"excluded {', '.join(edits.exclude)}")
    if edits.max_sources is not None:
        review.changes.append(f"extracting {len(selection)} sources")
    return review


def _store_selection(
    context: CheckpointContext, screening: ScreeningPayload, selection: list[str], added: list[Candidate]
) -> None:
    """The screening as Synthesize and Finalize read it: the reviewer's selection, added papers included."""
    candidates = [*screening.candidates, *added]
    store(
        context.data,
        str(context.job.screening_key),
        screening.model_copy(update={"candidates": candidates, "selected": selection}),
    )


# --- extraction and synthesis ----------------------------------------------------------------------------


def review_extraction(context: CheckpointContext, edits: ExtractionEdits) -> Review:
    unknown_ids("evidence", edits.strike, {item.chunk_id for item in context.evidence()})
    unknown_ids("sources", edits.not_relevant, {str(item.source_id) for item in context.extractions()})
    state = dict(context.state)
    dropped = set(edits.not_relevant)
    state["extractions"] = [
        item for item in state.get("extractions") or [] if item.get("source_id") not in dropped
    ]
    review = Review(state)
    if dropped:
        screening = context.screening()
        selection = [source_id for source_id in screening.selected if source_id not in dropped]
        read = [
            item.source_id for item in context.extractions() if item.success and item.source_id in dropped
        ]
        # the PRISMA flow counts these as excluded after their full text was assessed
        read_then_dropped = list(dict.fromkeys([*screening.not_relevant, *(i for i in read if i)]))
        _store_selection(
            context, screening.model_copy(update={"not_relevant": read_then_dropped}), selection, []
        )
    _strike(context, review, edits.strike)
    if dropped:
        review.changes.append(f"not relevant: {', '.join(edits.not_relevant)}")
    return review


def review_synthesis(context: CheckpointContext, edits: SynthesisEdits) -> Review:
    synthesis = context.synthesis()
    claims = {claim.claim_id: claim for claim in synthesis.claims} if synthesis else {}
    unknown_ids("claims", edits.strike, set(claims))
    review = Review({**context.state, "resynthesize": edits.sends_back})
    _strike(context, review, [i for claim_id in edits.strike for i in claims[claim_id].evidence_chunk_ids])
    if edits.strike:
        review.changes[-1:] = [f"struck claims {', '.join(edits.strike)} (and their evidence)"]
    review.changes.append("sent back to synthesis" if edits.sends_back else "approved for delivery")
    return review


def _strike(context: CheckpointContext, review: Review, evidence_ids: list[str]) -> None:
    """The synthesis (and any later one) leaves these quotes out."""
    if evidence_ids:
        struck = list(dict.fromkeys([*context.job.struck_evidence, *evidence_ids]))
        review.record["struck_evidence"] = struck
        review.changes.append(f"struck evidence {', '.join(evidence_ids)}")

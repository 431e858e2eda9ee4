"""The plan: what a question or research goal is about and how it is searched, for both drivers.

One `ResearchPlan` carries the shared core (the goal, its facets, sub-questions and what a relevant source
answers) and its driver's typed settings: `AnswerSettings` for the answer engine (preset, focus, effort,
source counts, years, connectors, team and its connector-agnostic searches), `JobSettings` for the research
job (topic, per-connector queries, policies, target sources, focus areas, budget notes). The job's plan is
stored in its record (`to_dict`/`from_dict`); the answer's is shown in its trace (`to_payload`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Generic, TypeVar

from functions.research.planning.facets import Facet, facet_questions
from functions.research.presets import Effort, FocusMode, Preset

# Sources backing a verified claim that a synthesis needs; one gives a capped, caveated synthesis.
DEFAULT_MIN_SOURCES = 1


@dataclass(frozen=True)
class SearchPlan:
    text: str  # natural phrase for ranking engines
    concepts: list[list[str]]  # boolean groups for arXiv
    terms: list[str]


@dataclass(frozen=True)
class PlannedQuery:
    query_id: str
    connector: str
    query: str  # short natural phrase the search service receives (and engines without boolean syntax)
    upstream_query: str  # the request in the connector's own syntax, as sent upstream
    terms: list[str]  # the concepts behind it (for reports and refinement)
    year_start: int | None
    year_end: int | None
    max_results: int
    # Concept groups for engines with boolean syntax (arXiv): groups AND-ed, synonyms within OR-ed.
    concepts: list[list[str]] = field(default_factory=list)
    # Its value within its connector's queries (0 first): the order turns at the provider are spent in.
    priority: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Policies:
    year_start: int
    year_end: int
    impact_level: str
    min_citations: int
    min_quality_score: float | None
    relevance_threshold: float
    diversity_required: bool
    max_share_per_venue: float
    min_connectors: int
    weights: tuple[float, float, float, float, float]  # relevance, citations, recency, method, access
    min_sources: int = DEFAULT_MIN_SOURCES  # scope extension `min_sources`

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "weights": list(self.weights)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Policies:
        return cls(**{**data, "weights": tuple(data["weights"])})


@dataclass(frozen=True)
class AnswerSettings:
    """How the answer engine runs a plan."""

    searches: list[SearchPlan]
    preset: Preset
    focus: FocusMode
    effort: Effort
    max_sources: int
    full_text_papers: int
    year_start: int | None = None
    year_end: int | None = None
    connectors: list[str] | None = None
    per_connector: int = 10
    team_id: str | None = None  # whose library and uploaded documents may be read (None: nobody's)


@dataclass(frozen=True)
class JobSettings:
    """How the research job runs a plan."""

    topic: str
    queries: list[PlannedQuery]
    policies: Policies
    target_sources: int
    focus_areas: list[str]
    # How the plan met the upstreams' budgets (a connector sent fewer queries, and why).
    budget_notes: list[str] = field(default_factory=list)


SettingsT = TypeVar("SettingsT", AnswerSettings, JobSettings)


def job_aspects(goal: str, facets: list[Facet]) -> list[str]:
    """What a relevant paper answers in a job: the goal, any one concept of several words, or one
    concept's sub-question. A one-word concept ('markets') is too broad to make a paper relevant by
    itself; it counts through its sub-question, which ties it to the rest of the goal."""
    whole, *per_facet = facet_questions(goal, facets)
    specific = [facet.phrase for facet in facets if len(facet.words) > 1]
    return list(dict.fromkeys([whole, *specific, *per_facet]))


@dataclass(frozen=True)
class ResearchPlan(Generic[SettingsT]):
    goal: str  # the question asked, or the job's research goal
    facets: list[Facet]
    sub_questions: list[str]
    aspects: list[str]  # what a relevant source answers
    settings: SettingsT

    @property
    def key_phrases(self) -> list[str]:
        """The facets' phrases, in the goal's order."""
        return [facet.phrase for facet in self.facets]

    def to_payload(self: ResearchPlan[AnswerSettings]) -> dict[str, object]:
        answer = self.settings
        return {
            "sub_questions": self.sub_questions,
            "queries": [search.text for search in answer.searches],
            "concepts": [facet.phrase for facet in self.facets],
            "preset": answer.preset.name,
            "focus_mode": answer.focus.name,
            "reasoning_effort": answer.effort.name,
            "max_sources": answer.max_sources,
            "full_text_papers": answer.full_text_papers,
            "years": [answer.year_start, answer.year_end],
        }

    def to_dict(self: ResearchPlan[JobSettings]) -> dict[str, Any]:
        """The job record's `plan` (its keys and their order are what stored records hold)."""
        job = self.settings
        return {
            "goal": self.goal,
            "topic": job.topic,
            "key_phrases": self.key_phrases,
            "sub_questions": list(self.sub_questions),
            "queries": [query.to_dict() for query in job.queries],
            "policies": job.policies.to_dict(),
            "target_sources": job.target_sources,
            "focus_areas": list(job.focus_areas),
            "facets": [asdict(facet) for facet in self.facets],
            "budget_notes": list(job.budget_notes),
        }

    @staticmethod
    def from_dict(data: dict[str, Any]) -> ResearchPlan[JobSettings]:
        facets = [
            Facet(phrase=f["phrase"], synonyms=list(f.get("synonyms", []))) for f in data.get("facets", [])
        ] or [Facet(phrase) for phrase in data["key_phrases"]]
        job = JobSettings(
            topic=data["topic"],
            queries=[PlannedQuery(**query) for query in data["queries"]],
            policies=Policies.from_dict(data["policies"]),
            target_sources=int(data["target_sources"]),
            focus_areas=list(data["focus_areas"]),
            budget_notes=list(data.get("budget_notes") or []),
        )
        return ResearchPlan(
            goal=data["goal"],
            facets=facets,
            sub_questions=list(data["sub_questions"]),
            aspects=job_aspects(data["goal"], facets),
            settings=job,
        )

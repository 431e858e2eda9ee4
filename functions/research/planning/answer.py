"""Planner: the question's concepts, its sub-questions and the searches that cover them.

Reuses the research job's planning (facets, query units, boolean concept groups): the question as a whole
is searched first, then each concept, as many searches as the reasoning effort allows; a focus mode can
narrow the years or search each compared alternative on its own.
"""

from __future__ import annotations

from datetime import UTC, datetime

from functions.research.planning.facets import facet_questions
from functions.research.planning.job import (
    boolean_groups,
    concept_head,
    facets_of,
    natural_phrase,
    query_units,
)
from functions.research.planning.plan import AnswerSettings, ResearchPlan, SearchPlan
from functions.research.presets import (
    DEFAULT_FOCUS,
    EFFORTS,
    FOCUS_MODES,
    REASONING_EFFORTS,
    preset_named,
)

MAX_SOURCES_CAP = 30


def plan_answer(
    question: str,
    *,
    preset: str | None = None,
    focus_mode: str | None = None,
    reasoning_effort: str = "medium",
    top_k: int = 10,
    connectors: list[str] | None = None,
    max_sources: int | None = None,
    year_start: int | None = None,
    team_id: str | None = None,
    now: datetime | None = None,
) -> ResearchPlan[AnswerSettings]:
    chosen = preset_named(preset)
    focus = FOCUS_MODES[focus_mode] if focus_mode else DEFAULT_FOCUS
    if chosen.max_effort is not None and REASONING_EFFORTS.index(reasoning_effort) > REASONING_EFFORTS.index(
        chosen.max_effort
    ):
        reasoning_effort = chosen.max_effort
    effort = EFFORTS[reasoning_effort]
    facets = facets_of(question)
    units = query_units(facets, effort.queries)
    if focus.split_alternatives and len(facets) > 1:  # each compared item alone, then all together
        units = [[facet] for facet in facets] + [facets]
    searches = [
        SearchPlan(text=natural_phrase(unit), concepts=boolean_groups(unit), terms=[f.phrase for f in unit])
        for unit in units
    ]
    searches = [searches[0], *(s for s in searches[1:] if s.text != searches[0].text)]
    if len(searches) > 1 and searches[0].text.lower() != question.lower():
        searches = searches[: max(effort.queries, len(facets) if focus.split_alternatives else 1)]
    current = (now or datetime.now(UTC)).year
    start = year_start
    if focus.recent_years is not None:
        start = max(start or 0, current - focus.recent_years) or None
    sources = max_sources or effort.sources + chosen.source_bonus
    sub_questions = facet_questions(question, facets)
    specific = [facet.phrase for facet in facets if len(facet.words) > 1]
    return ResearchPlan(
        goal=question,
        facets=facets,
        sub_questions=sub_questions,
        aspects=list(dict.fromkeys([*sub_questions, *specific])),
        settings=AnswerSettings(
            searches=searches,
            preset=chosen,
            focus=focus,
            effort=effort,
            max_sources=min(sources, MAX_SOURCES_CAP),
            full_text_papers=effort.full_text_papers if chosen.full_text else 0,
            year_start=start,
            year_end=current if start else None,
            connectors=connectors,
            per_connector=top_k,
            team_id=team_id,
        ),
    )


def broadened(plan: ResearchPlan[AnswerSettings]) -> list[SearchPlan]:
    """A second round when the first left concepts uncovered: each long concept's head alone."""
    sent = {search.text for search in plan.settings.searches}
    heads = [head for head in map(concept_head, plan.facets) if head is not None]
    searches = [SearchPlan(head.phrase, boolean_groups([head]), [head.phrase]) for head in heads]
    return [search for search in searches if search.text not in sent]

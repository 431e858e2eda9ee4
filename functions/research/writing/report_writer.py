"""The research job's report writers: its findings under the goal's facets, then its gaps.

Without an LLM (`extractive_draft`), each theme cites one finding per source, attributed to its authors;
with one (`llm_draft`), the answer engine's LLM writer in report style, its headings the themes. Either
way the writer only refers to evidence ids, and every sentence goes through the Verifier
(functions/research/stages.py runs the Write stage for the job as for the answer engine).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from functions.common.models import ExtractedPaper
from functions.research.planning.plan import JobSettings, ResearchPlan
from functions.research.presets import STYLE_REPORT
from functions.research.retrieval.evidence import EvidenceChunk
from functions.research.retrieval.screening import Candidate
from functions.research.writing.attribution import author_label
from functions.research.writing.drafting import Writers
from functions.research.writing.phrasing import Authorship, Phrasing
from functions.research.writing.writer import (
    GAPS_SECTION,
    Draft,
    DraftSentence,
    LlmWriter,
    facet_heading,
    facet_scores,
)

if TYPE_CHECKING:
    from functions.common.llm import LlmProvider

_GAP_SIGNAL = re.compile(
    r"\b(limitation\w*|future (work|research|studies)|remains? (unclear|open|unknown|challenging)|"
    r"open (question|problem|challenge)s?|further (research|work|study|investigation)|not yet|"
    r"lack of|little is known|is needed|are needed|we leave)\b",
    re.IGNORECASE,
)

MAX_THEME_FINDINGS = 10  # a theme cites one finding per source, up to this many
OTHER_FINDINGS = "Other findings"  # relevant findings that name none of the goal's facets


def report_phrasing(
    sources: list[tuple[Candidate, ExtractedPaper]], evidence: list[EvidenceChunk]
) -> Phrasing:
    """How the report shows its findings: attributed to each source's authors, abbreviations expanded
    from the source's own evidence."""
    authorship = {
        candidate.source_id: Authorship(candidate.paper.authors, candidate.paper.year, candidate.paper.title)
        for candidate, _ in sources
    }
    return Phrasing(authorship, ((e.chunk_id, e.source_id, e.text) for e in evidence))


def facet_themes(
    plan: ResearchPlan[JobSettings], evidence: list[EvidenceChunk]
) -> list[tuple[str, list[EvidenceChunk]]]:
    """The findings under the goal's facets, each under the facet it names most; findings of relevant
    sources that name none of them come last, as OTHER_FINDINGS."""
    findings = [e for e in evidence if e.kind not in ("limitation", "future_work", "method")]
    scores = facet_scores(plan.facets, [item.text for item in findings])
    themes: list[tuple[str, list[EvidenceChunk]]] = [(facet_heading(facet), []) for facet in plan.facets]
    themes.append((OTHER_FINDINGS, []))
    for index, item in enumerate(findings):
        best = max(range(len(plan.facets)), key=lambda f: (scores[f][index], -f), default=None)
        named = best is not None and scores[best][index] > 0
        themes[best if named and best is not None else -1][1].append(item)
    return [(name, items) for name, items in themes if items]


def extractive_draft(
    plan: ResearchPlan[JobSettings],
    evidence: list[EvidenceChunk],
    sources: Sequence[tuple[Candidate, ExtractedPaper]] = (),
) -> Draft:
    """LLM_PROVIDER=none: findings under the goal's facets, each the cited evidence attributed to its
    authors; the summary is each theme's strongest finding."""
    themes: list[tuple[str, list[EvidenceChunk]]] = []
    for name, items in facet_themes(plan, evidence):
        ranked = sorted(items, key=lambda e: (-e.score, e.chunk_id))
        picked: list[EvidenceChunk] = []
        for item in ranked:  # one sentence per source first
            if all(item.source_id != p.source_id for p in picked):
                picked.append(item)
            if len(picked) == MAX_THEME_FINDINGS:
                break
        themes.append((name, picked))
    gaps = [e for e in evidence if e.kind in ("limitation", "future_work") or _GAP_SIGNAL.search(e.text)]
    unique_gaps = list({item.text: item for item in gaps}.values())[:6]
    phrasing = report_phrasing(list(sources), evidence)

    def shown(item: EvidenceChunk) -> DraftSentence:
        phrased = phrasing.phrase(item.text, item.source_id, [item.chunk_id])
        return DraftSentence(phrased.text, phrased.chunk_ids, attribution=phrased.attribution)

    written = [(name, [shown(item) for item in items]) for name, items in themes]
    return Draft(
        sentences=[
            *(replace(sentence, section=name) for name, sentences in written for sentence in sentences),
            *(replace(shown(item), section=GAPS_SECTION) for item in unique_gaps),
        ],
        writer="extractive",
        model="extractive",
        summary=[sentences[0] for _, sentences in written if sentences],
    )


MAX_LLM_EVIDENCE = 60


async def llm_draft(
    plan: ResearchPlan[JobSettings],
    evidence: list[EvidenceChunk],
    provider: LlmProvider,
    authors: Mapping[str, str] | None = None,
) -> Draft:
    """The answer engine's LLM writer in report style: its opening paragraph becomes the summary, its
    headings (the goal's concepts) the themes, and the gaps heading the gaps."""
    ranked = sorted(evidence, key=lambda e: (-e.score, e.chunk_id))[:MAX_LLM_EVIDENCE]
    draft = await LlmWriter(provider).write(
        plan.goal, STYLE_REPORT, ranked, concepts=plan.key_phrases, authors=authors
    )
    opening = [sentence for sentence in draft.sentences if sentence.section is None]
    themes: dict[str, list[DraftSentence]] = {}
    gaps: list[DraftSentence] = []
    for sentence in draft.sentences:
        if sentence.section and sentence.section.strip().lower() == GAPS_SECTION.lower():
            gaps.append(replace(sentence, section=GAPS_SECTION))
        elif sentence.section:
            themes.setdefault(sentence.section, []).append(sentence)
    if not themes and opening:  # no headings at all: the findings are themed as a whole
        themes[OTHER_FINDINGS] = [replace(sentence, section=OTHER_FINDINGS) for sentence in opening]
    return Draft(
        sentences=[*(s for sentences in themes.values() for s in sentences), *gaps],
        writer=draft.writer,
        model=draft.model,
        summary=opening or [sentences[0] for sentences in themes.values()],
    )


def without_authority(draft: Draft, tainted: set[str]) -> Draft:
    """A source that carries text addressed to the reader or a model (`tainted`: its evidence ids) never
    leads the summary and never names a theme: a theme of its sentences alone joins OTHER_FINDINGS, and
    a summary sentence that cites only it is left out (the themes' other leads take its place)."""

    def alone(sentence: DraftSentence) -> bool:
        return bool(sentence.chunk_ids) and set(sentence.chunk_ids) <= tainted

    if not tainted or not any(alone(sentence) for sentence in [*draft.sentences, *draft.summary]):
        return draft
    named = {s.section for s in draft.sentences if s.section not in (None, GAPS_SECTION, OTHER_FINDINGS)}
    unnamed = {name for name in named if all(alone(s) for s in draft.sentences if s.section == name)}
    sentences = [replace(s, section=OTHER_FINDINGS) if s.section in unnamed else s for s in draft.sentences]
    summary = [s for s in draft.summary if not alone(s)]
    if not summary:
        leads = {s.section: s for s in reversed(sentences) if s.section != GAPS_SECTION and not alone(s)}
        summary = list(reversed(leads.values()))
    return replace(draft, sentences=sentences, summary=summary)


def report_writers(
    plan: ResearchPlan[JobSettings],
    evidence: list[EvidenceChunk],
    sources: Sequence[tuple[Candidate, ExtractedPaper]],
    provider: LlmProvider | None,
    budget_seconds: float,
) -> Writers:
    """The job's writers for the Write stage: the extractive draft, and the LLM's within `budget_seconds`
    when there is a model and evidence for it (any failure of the model gives way to the extractive one)."""

    async def extractive() -> Draft:
        return extractive_draft(plan, evidence, sources)

    if provider is None or not evidence:
        return Writers(extractive)
    labels = {c.source_id: author_label(c.paper.authors, c.paper.year, c.paper.title) for c, _ in sources}
    model = partial(llm_draft, plan, evidence, provider, labels)
    return Writers(extractive, model, budget_seconds=budget_seconds, fallback_on=(Exception,))

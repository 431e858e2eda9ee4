"""The research job's report in Markdown, from its verified sentences only: pure functions of the plan,
the sources, their evidence and the verified claims (no I/O, no model).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby

from functions.common.models import ExtractedPaper
from functions.common.text import listed, mid_sentence
from functions.research.checking.critic import find_contradictions
from functions.research.checking.gate import SINGLE_SOURCE_CONFIDENCE_CAP
from functions.research.checking.verifier import ClaimVerification
from functions.research.planning.plan import JobSettings, ResearchPlan
from functions.research.retrieval.evidence import EvidenceChunk
from functions.research.retrieval.screening import Candidate
from functions.research.writing.attribution import author_label
from functions.research.writing.report_writer import OTHER_FINDINGS
from functions.research.writing.stances import stance
from functions.research.writing.writer import GAPS_SECTION, Draft, DraftSentence, facet_heading

Cited = tuple[str, list[str]]  # a sentence and the evidence ids it cites


@dataclass(frozen=True)
class ReportSections:
    """A report draft as verification left it: its themes, summary and gaps, verified sentences only."""

    themes: list[tuple[str, list[Cited]]]
    summary: list[Cited]
    gaps: list[Cited]


def verified_sections(draft: Draft, kept: set[tuple[str, tuple[str, ...]]]) -> ReportSections:
    def keep(sentences: Iterable[DraftSentence]) -> list[Cited]:
        return [(s.text, s.chunk_ids) for s in sentences if s.text and (s.text, tuple(s.chunk_ids)) in kept]

    findings = [sentence for sentence in draft.sentences if sentence.section != GAPS_SECTION]
    themes = [(str(name), keep(group)) for name, group in groupby(findings, key=lambda s: s.section)]
    return ReportSections(
        themes=[(name, sentences) for name, sentences in themes if sentences],
        summary=keep(draft.summary),
        gaps=keep(s for s in draft.sentences if s.section == GAPS_SECTION),
    )


def _cite(text: str, ids: list[str]) -> str:
    return f"{text} [{', '.join(ids)}]"


def multi_source_themes(themes: list[tuple[str, list[Cited]]], source_of: dict[str, str]) -> int:
    """How many themes cite two or more sources."""
    return sum(1 for _, sentences in themes if len({source_of[i] for _, ids in sentences for i in ids}) >= 2)


@dataclass(frozen=True)
class VerifiedReport:
    """What the report is rendered from: the plan, the analysed sources, their evidence, the verified
    claims and the sections verification left."""

    plan: ResearchPlan[JobSettings]
    sources: list[tuple[Candidate, ExtractedPaper]]
    evidence: list[EvidenceChunk]
    claims: list[ClaimVerification]
    sections: ReportSections

    @property
    def source_of(self) -> dict[str, str]:
        return {item.chunk_id: item.source_id for item in self.evidence}

    @property
    def cited_sources(self) -> set[str]:
        source_of = self.source_of
        return {source_of[i] for claim in self.claims if claim.kept for i in claim.evidence_chunk_ids}

    @property
    def verified_count(self) -> int:
        return sum(1 for claim in self.claims if claim.kept)


def report_title(goal: str) -> str:
    """The report's title: the goal as it was asked (a join of its concepts reads as no title)."""
    text = " ".join(goal.split())
    return text[:1].upper() + text[1:]


def evidence_paragraph(report: VerifiedReport, span: str) -> str:
    """One paragraph on what the evidence shows about the goal: how much verified evidence there is, the
    facets it speaks to and those it is silent on, how many themes rest on several sources, and each
    theme's strongest finding."""
    sections, source_of = report.sections, report.source_of
    covered = [name for name, _ in sections.themes if name != OTHER_FINDINGS]
    silent = [facet_heading(facet) for facet in report.plan.facets if facet_heading(facet) not in covered]
    opening = (
        f"Across {len(report.sources)} analysed source(s) published {span}, {report.verified_count} verified "
        f"finding(s) from {len(report.cited_sources)} source(s) bear on the question"
    )
    if covered:
        opening += f"; they speak to {listed([mid_sentence(name) for name in covered])}"
    if silent:
        opening += f"; no verified finding names {listed([mid_sentence(name) for name in silent])}"
    shared = multi_source_themes(sections.themes, source_of)
    agreement = (
        f"{shared} of its {len(sections.themes)} theme(s) rest on two or more sources, the rest on one."
        if sections.themes
        else ""
    )
    findings = " ".join(_cite(text, ids) for text, ids in sections.summary)
    return " ".join(part for part in (opening + ".", agreement, findings) if part)


def executive_summary(report: VerifiedReport, title: str, span: str, single_source: bool) -> str:
    caveat = (
        [
            f"> Single-source caveat: every verified claim below rests on one source; "
            f"confidence is capped at {SINGLE_SOURCE_CONFIDENCE_CAP:.2f} and the findings await "
            "independent confirmation.",
            "",
        ]
        if single_source
        else []
    )
    return "\n".join([f"## {title}", "", *caveat, evidence_paragraph(report, span)])


def theme_stances(report: VerifiedReport) -> dict[str, str]:
    """Each facet's stance (functions/research/writing/stances.py) by its heading, from the verified themes, the
    critic's contradictions among the evidence and the Verifier's corroboration: in the goal's order,
    facets no verified finding addresses included."""
    cited = {name: [i for _, ids in sentences for i in ids] for name, sentences in report.sections.themes}
    evidence = {item.chunk_id: item.text for item in report.evidence}
    source_of = report.source_of
    labels = {
        c.source_id: author_label(c.paper.authors, c.paper.year, c.paper.title) for c, _ in report.sources
    }
    opposed = find_contradictions(report.evidence)
    headings = [facet_heading(facet) for facet in report.plan.facets]
    return {
        name: stance(name, cited.get(name, []), evidence, source_of, opposed, lambda s: labels.get(s, s))
        for name in headings
    }


def synthesis_body(report: VerifiedReport, span: str, methodologies: dict[str, int]) -> str:
    sections = report.sections
    lines = [
        f"Based on analysis of {len(report.sources)} research paper(s) from {span}, "
        f"{report.verified_count} verified statement(s) are cited below.",
    ]
    stances = theme_stances(report)
    for name, sentences in sections.themes:
        # The stance cites the findings it summarises: a reviewer's strike takes it with them.
        summarised = list(dict.fromkeys(i for _, ids in sentences for i in ids))
        led = [_cite(f"{stances[name]}.", summarised)] if name in stances else []
        lines += ["", f"### {name}", "", " ".join([*led, *(_cite(text, ids) for text, ids in sentences)])]
    for name, silence in stances.items():  # the facets no verified finding addresses
        if name not in {theme for theme, _ in sections.themes}:
            lines += ["", f"### {name}", "", f"{silence}."]
    if methodologies:
        lines += ["", "### Methodologies", ""]
        lines += [f"- {name}: {count} source(s)" for name, count in methodologies.items()]
    if sections.gaps:
        lines += ["", "### Gaps and open questions", ""]
        lines += [f"- {_cite(text, ids)}" for text, ids in sections.gaps]
    return "\n".join(lines)

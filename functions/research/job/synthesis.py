"""The research job's synthesis: evidence with opaque ids, themes, cited summary, claim verification,
confidence, refusal.

Never lets a model write a citation: the writer (extractive theme clustering, or the answer engine's LLM
writer in report style) only refers to evidence ids, every cited sentence goes through the answer
engine's Verifier against the quotes it cites, and unsupported sentences are dropped.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from functions.common.models import EvidenceQuote, ExtractedPaper, short_hash
from functions.common.text import listed, mid_sentence
from functions.research.checking.critic import find_contradictions
from functions.research.checking.gate import SINGLE_SOURCE_CONFIDENCE_CAP, GateFacts, GatePolicy, job_policy
from functions.research.checking.verifier import Verifier
from functions.research.planning.plan import JobSettings, ResearchPlan
from functions.research.presets import (
    DECIDE,
    JOB_SYNTHESIS_STAGES,
    RED_TEAM,
    RENDER,
    STYLE_REPORT,
    VERIFY,
    WRITE,
)
from functions.research.retrieval.evidence import PAGE, EvidenceChunk
from functions.research.retrieval.screening import Candidate
from functions.research.retrieval.untrusted_text import (
    Screened,
    hostile_source,
    own_links,
    prime,
    screen_in_order,
    tainted_sources,
)
from functions.research.stages import (
    PipelineContext,
    Stage,
    challenge,
    gate,
    run_stages,
    stage_list,
    stage_result,
    verified,
)
from functions.research.trace import WRITER, TraceRecorder
from functions.research.writing.attribution import author_label
from functions.research.writing.phrasing import Authorship, Phrasing
from functions.research.writing.stances import stance
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
METHODOLOGY_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE)
    for name, pattern in {
        "Randomized controlled trial": r"randomi[sz]ed (controlled )?trial|\bRCT\b",
        "Meta-analysis / systematic review": r"meta-analys|systematic (literature )?review",
        "Benchmark evaluation": r"benchmark",
        "Ablation study": r"ablation",
        "Simulation": r"simulat",
        "Survey / questionnaire": r"questionnaire|survey(ed)? (of )?\d+|respondents",
        "Case study": r"case stud",
        "User study": r"user stud|participants",
        "Interviews / qualitative analysis": r"interview|qualitative|thematic analysis",
        "Observational / cohort study": r"observational|cohort|longitudinal",
        "Theoretical analysis": r"\btheorem\b|we prove|formal analysis",
        "Controlled experiment": r"\bexperiment(s|al)?\b",
    }.items()
}


@dataclass(frozen=True)
class Evidence:
    evidence_id: str
    source_id: str
    quote: str
    page: int
    section: str | None
    kind: str
    relevance_score: float
    char_start: int
    char_end: int

    def as_chunk(self) -> EvidenceChunk:
        """The answer engine's view of a quote: what its writer and verifier read."""
        return EvidenceChunk(
            self.evidence_id,
            self.source_id,
            self.quote,
            self.relevance_score,
            PAGE,
            self.page,
            self.char_start,
            self.char_end,
            self.section,
        )


@dataclass
class Claim:
    claim_id: str
    claim_text: str
    evidence_ids: list[str]
    verdict: str
    confidence: float
    notes: str
    kept: bool


class SynthesisResult(BaseModel):
    """The job's synthesis: stored for Finalize (and a synthesis checkpoint) as its `to_dict()`."""

    research_goal: str
    executive_summary: str
    synthesis_text: str
    primary_themes: list[str]
    gaps_identified: list[str]
    sources_analyzed: int
    methodologies_found: int
    methodologies: dict[str, int]
    evidence: list[Evidence]
    claims: list[Claim]
    confidence_score: float
    confidence_rationale: str
    refusal: bool
    refusal_reason: str | None
    writer: str
    notes: list[str] = Field(default_factory=list)
    red_team: dict[str, Any] = Field(default_factory=dict)  # the answer engine's Red-Team report

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")  # evidence and claims become dicts too


@dataclass
class ScreenedEvidence:
    """The evidence of the screened sources, and what was withheld from it as text addressed to the
    reader or a model: (quote span, signals) per sentence, and the sources full of it."""

    evidence: list[Evidence]
    quarantined: list[tuple[EvidenceChunk, str]]
    hostile_sources: list[str]


def _screened_quotes(
    quotes: list[EvidenceQuote], links: frozenset[str]
) -> list[tuple[EvidenceQuote, Screened]]:
    """A paper's quotes screened in reading order: a quote that directly follows another on its page is
    judged in its context (functions/research/retrieval/untrusted_text.py, screen_in_order)."""
    order = sorted(range(len(quotes)), key=lambda i: (quotes[i].page, quotes[i].char_start))

    def follows(n: int) -> bool:
        before, quote = quotes[order[n - 1]], quotes[order[n]]
        return (
            n > 0 and before.page == quote.page and before.char_end <= quote.char_start <= before.char_end + 3
        )

    results = screen_in_order([(quotes[i].quote, links, follows(n)) for n, i in enumerate(order)])
    by_index = dict(zip(order, results, strict=True))
    return [(quote, by_index[i]) for i, quote in enumerate(quotes)]


def screen_evidence(sources: list[tuple[Candidate, ExtractedPaper]]) -> ScreenedEvidence:
    """Each quote judged sentence by sentence: its runs of clean sentences are evidence (verbatim, with
    their own offsets); the rest is quarantined, and a source full of it gives no evidence at all."""
    evidence: list[Evidence] = []
    quarantined: list[tuple[EvidenceChunk, str]] = []
    hostile: list[str] = []
    seen: set[str] = set()
    prime(quote.quote for _, paper in sources for quote in paper.evidence)
    for candidate, paper in sources:
        links = own_links(candidate.paper.url, candidate.paper.doi, paper.source_url)
        screened = _screened_quotes(paper.evidence, links)
        for quote, result in screened:
            for clause in result.hostile:
                quarantined.append(
                    (
                        EvidenceChunk(
                            "quarantined",
                            candidate.source_id,
                            "",
                            0.0,
                            PAGE,
                            quote.page,
                            quote.char_start + clause.start,
                            quote.char_start + clause.end,
                        ),
                        ", ".join(clause.verdict.signals),
                    )
                )
        if hostile_source(result for _, result in screened):
            hostile.append(candidate.source_id)
            continue
        for quote, result in screened:
            for start, end in result.clean_runs:
                text = " ".join(quote.quote[start:end].split())
                if len(text) < 20:
                    continue
                char_start = quote.char_start + start
                evidence_id = "ev-" + short_hash(
                    f"{candidate.source_id}|{quote.page}|{char_start}|{text}", 10
                )
                if evidence_id in seen:
                    continue
                seen.add(evidence_id)
                evidence.append(
                    Evidence(
                        evidence_id=evidence_id,
                        source_id=candidate.source_id,
                        quote=text,
                        page=quote.page,
                        section=quote.section,
                        kind=quote.kind,
                        relevance_score=quote.relevance_score,
                        char_start=char_start,
                        char_end=quote.char_start + end,
                    )
                )
    return ScreenedEvidence(evidence, quarantined, hostile)


def count_methodologies(
    sources: list[tuple[Candidate, ExtractedPaper]], evidence: list[Evidence]
) -> dict[str, int]:
    """How many sources use each methodology, from their methodology text and method evidence."""
    method_quotes: dict[str, list[str]] = defaultdict(list)
    for item in evidence:
        if item.kind == "method":
            method_quotes[item.source_id].append(item.quote)
    counts: Counter[str] = Counter()
    for candidate, paper in sources:
        text = " ".join([paper.methodology, *method_quotes.get(candidate.source_id, [])])
        for name, pattern in METHODOLOGY_PATTERNS.items():
            if pattern.search(text):
                counts[name] += 1
    return dict(counts.most_common())


MAX_THEME_FINDINGS = 10  # a theme cites one finding per source, up to this many
OTHER_FINDINGS = "Other findings"  # relevant findings that name none of the goal's facets


def report_phrasing(sources: list[tuple[Candidate, ExtractedPaper]], evidence: list[Evidence]) -> Phrasing:
    """How the report shows its findings: attributed to each source's authors, abbreviations expanded
    from the source's own evidence."""
    authorship = {
        candidate.source_id: Authorship(candidate.paper.authors, candidate.paper.year, candidate.paper.title)
        for candidate, _ in sources
    }
    return Phrasing(authorship, ((e.evidence_id, e.source_id, e.quote) for e in evidence))


def facet_themes(
    plan: ResearchPlan[JobSettings], evidence: list[Evidence]
) -> list[tuple[str, list[Evidence]]]:
    """The findings under the goal's facets, each under the facet it names most; findings of relevant
    sources that name none of them come last, as OTHER_FINDINGS."""
    findings = [e for e in evidence if e.kind not in ("limitation", "future_work", "method")]
    scores = facet_scores(plan.facets, [item.quote for item in findings])
    themes: list[tuple[str, list[Evidence]]] = [(facet_heading(facet), []) for facet in plan.facets]
    themes.append((OTHER_FINDINGS, []))
    for index, item in enumerate(findings):
        best = max(range(len(plan.facets)), key=lambda f: (scores[f][index], -f), default=None)
        named = best is not None and scores[best][index] > 0
        themes[best if named and best is not None else -1][1].append(item)
    return [(name, items) for name, items in themes if items]


def extractive_draft(
    plan: ResearchPlan[JobSettings],
    evidence: list[Evidence],
    sources: Sequence[tuple[Candidate, ExtractedPaper]] = (),
) -> Draft:
    """LLM_PROVIDER=none: findings under the goal's facets, each the cited evidence attributed to its
    authors; the summary is each theme's strongest finding."""
    themes: list[tuple[str, list[Evidence]]] = []
    for name, items in facet_themes(plan, evidence):
        ranked = sorted(items, key=lambda e: (-e.relevance_score, e.evidence_id))
        picked: list[Evidence] = []
        for item in ranked:  # one sentence per source first
            if all(item.source_id != p.source_id for p in picked):
                picked.append(item)
            if len(picked) == MAX_THEME_FINDINGS:
                break
        themes.append((name, picked))
    gaps = [e for e in evidence if e.kind in ("limitation", "future_work") or _GAP_SIGNAL.search(e.quote)]
    unique_gaps = list({item.quote: item for item in gaps}.values())[:6]
    phrasing = report_phrasing(list(sources), evidence)

    def shown(item: Evidence) -> DraftSentence:
        phrased = phrasing.phrase(item.quote, item.source_id, [item.evidence_id])
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
DEFAULT_LLM_BUDGET_SECONDS = 30.0
WRITER_BUDGET_SHARE = 0.7  # of the model budget; the judge has what the writer leaves
MIN_JUDGE_SECONDS = 3.0
Cited = tuple[str, list[str]]  # a sentence and the evidence ids it cites


async def llm_draft(
    plan: ResearchPlan[JobSettings],
    evidence: list[Evidence],
    provider: LlmProvider,
    authors: Mapping[str, str] | None = None,
) -> Draft:
    """The answer engine's LLM writer in report style: its opening paragraph becomes the summary, its
    headings (the goal's concepts) the themes, and the gaps heading the gaps."""
    ranked = sorted(evidence, key=lambda e: (-e.relevance_score, e.evidence_id))[:MAX_LLM_EVIDENCE]
    chunks = [e.as_chunk() for e in ranked]
    draft = await LlmWriter(provider).write(
        plan.goal, STYLE_REPORT, chunks, concepts=plan.key_phrases, authors=authors
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


@dataclass(kw_only=True)
class JobContext(PipelineContext):
    """One synthesis: the plan, the screened sources and their evidence, the model and its budget."""

    plan: ResearchPlan[JobSettings]
    sources: list[tuple[Candidate, ExtractedPaper]]
    evidence: list[Evidence]
    provider: LlmProvider | None
    llm_budget_seconds: float
    deadline: float  # the event loop's clock: when the model budget runs out
    policy: GatePolicy
    drafted: list[DraftSentence] = field(default_factory=list)  # distinct cited sentences
    claims: list[Claim] = field(default_factory=list)
    sections: ReportSections | None = None
    result: SynthesisResult | None = None

    def verified_report(self) -> ReportSections:
        return stage_result("verify", self.sections)

    @property
    def sources_with_evidence(self) -> set[str]:
        return {item.source_id for item in self.evidence}

    @property
    def cited_sources(self) -> set[str]:
        by_id = {item.evidence_id: item for item in self.evidence}
        return {by_id[i].source_id for claim in self.claims if claim.kept for i in claim.evidence_ids}


async def write_report(context: JobContext, trace: TraceRecorder) -> None:
    """The Writer: the extractive draft, or the LLM's when it answers within its share of the budget."""
    plan, evidence, provider = context.plan, context.evidence, context.provider
    share = context.llm_budget_seconds * WRITER_BUDGET_SHARE
    draft = extractive_draft(plan, evidence, context.sources)
    if provider is not None and evidence:
        try:
            async with asyncio.timeout(share):
                labels = {
                    c.source_id: author_label(c.paper.authors, c.paper.year, c.paper.title)
                    for c, _ in context.sources
                }
                draft = await llm_draft(plan, evidence, provider, labels)
        except TimeoutError:
            context.notes.append(f"LLM writer exceeded its {share:.0f} s budget; used the extractive writer")
        except Exception as exc:  # a provider or format failure falls back to the extractive writer
            context.notes.append(
                f"LLM writer failed ({type(exc).__name__}: {exc}); used the extractive writer"
            )
    tainted = tainted_sources((chunk.source_id, signals) for chunk, signals in context.quarantined)
    context.draft = without_authority(draft, {e.evidence_id for e in evidence if e.source_id in tainted})
    # The summary repeats theme sentences: each distinct sentence is one claim.
    distinct = {(s.text, tuple(s.chunk_ids)): s for s in [*draft.sentences, *draft.summary] if s.text}
    context.drafted = list(distinct.values())
    themes = list(dict.fromkeys(s.section for s in draft.sentences if s.section != GAPS_SECTION))
    await trace.emit(
        WRITER, "write", "draft_written", writer=draft.writer, themes=themes, claims=len(context.drafted)
    )


async def verify_report(context: JobContext, trace: TraceRecorder) -> None:
    """The Verifier: every drafted sentence against its quotes; the LLM judge only while budget is left."""
    loop = asyncio.get_running_loop()
    to_verify = [(sentence.claim, list(sentence.chunk_ids)) for sentence in context.drafted]
    quotes = {chunk_id: chunk.text for chunk_id, chunk in context.chunks.items()}
    source_of = {chunk_id: chunk.source_id for chunk_id, chunk in context.chunks.items()}  # agreement
    remaining = context.deadline - loop.time()
    judge = context.provider if remaining >= MIN_JUDGE_SECONDS else None
    if context.provider is not None and judge is None:
        context.notes.append("no time left for the LLM judge; claims verified lexically")
    try:
        async with asyncio.timeout(max(remaining, 0.0) if judge is not None else None):
            verifications = await Verifier(judge, source_of).verify(to_verify, quotes)
    except TimeoutError:
        context.notes.append("the LLM judge exceeded the synthesis budget; claims verified lexically")
        verifications = await Verifier(None, source_of).verify(to_verify, quotes)
    # Each claim as the report shows it (its verdict is on the sentence without the writer's attribution).
    verifications = [
        replace(v, claim_text=sentence.text)
        for v, sentence in zip(verifications, context.drafted, strict=True)
    ]
    context.verifications = verifications
    context.claims = [
        Claim(v.claim_id, v.claim_text, v.evidence_chunk_ids, v.verdict, v.confidence, v.notes, v.kept)
        for v in verifications
    ]
    kept = {
        (sentence.text, tuple(sentence.chunk_ids))
        for sentence, claim in zip(context.drafted, context.claims, strict=True)
        if claim.kept
    }
    context.sections = verified_sections(context.written(), kept)
    dropped = sum(1 for claim in context.claims if not claim.kept)
    if dropped:
        context.notes.append(f"{dropped} unsupported sentence(s) dropped after verification")
    await verified(trace, verifications)


def job_facts(context: JobContext) -> GateFacts:
    """The job's measures of its verified report."""
    plan, claims = context.plan, context.claims
    with_evidence, cited = context.sources_with_evidence, context.cited_sources
    source_of = {item.evidence_id: item.source_id for item in context.evidence}
    themes = context.verified_report().themes
    supported = [claim for claim in claims if claim.kept]
    multi_source_themes = sum(
        1 for _, sentences in themes if len({source_of[i] for _, ids in sentences for i in ids}) >= 2
    )
    strength = min(1.0, len(with_evidence) / max(3, min(plan.settings.target_sources, 10)))
    coverage = len(supported) / len(claims) if claims else 0.0
    agreement = multi_source_themes / len(themes) if themes else 0.0
    cited_share = len(cited) / len(with_evidence) if with_evidence else 0.0
    rationale = (
        f"{len(with_evidence)} source(s) with evidence, {len(cited)} cited; "
        f"{len(supported)}/{len(claims)} claim(s) verified; "
        f"{multi_source_themes}/{len(themes)} theme(s) backed by two or more sources"
    )
    threshold = plan.settings.policies.relevance_threshold
    return GateFacts(
        signals=(strength, coverage, agreement, cited_share),
        rationale=rationale,
        cited_sources=len(cited),
        verified_claims=len(supported),
        # a source carrying text addressed to the reader or a model has lost its authority: it never
        # answers the goal alone
        answered=any(
            c.answers_goal(threshold)
            for c, _ in context.sources
            if c.source_id in cited - tainted_sources((q.source_id, s) for q, s in context.quarantined)
        ),
        has_sources=bool(context.sources),
        has_evidence=bool(with_evidence),
        red_team=context.red_team,
    )


async def decide_report(context: JobContext, trace: TraceRecorder) -> None:
    """The decision gate under the job's policy (its decision is traced when the job finishes)."""
    gate(context, job_facts(context), context.policy)


def report_title(goal: str) -> str:
    """The report's title: the goal as it was asked (a join of its concepts reads as no title)."""
    text = " ".join(goal.split())
    return text[:1].upper() + text[1:]


def evidence_paragraph(context: JobContext, span: str) -> str:
    """One paragraph on what the evidence shows about the goal: how much verified evidence there is, the
    facets it speaks to and those it is silent on, how many themes rest on several sources, and each
    theme's strongest finding."""
    report = context.verified_report()
    source_of = {item.evidence_id: item.source_id for item in context.evidence}
    covered = [name for name, _ in report.themes if name != OTHER_FINDINGS]
    silent = [facet_heading(facet) for facet in context.plan.facets if facet_heading(facet) not in covered]
    verified_count = sum(1 for claim in context.claims if claim.kept)
    opening = (
        f"Across {len(context.sources)} analysed source(s) published {span}, {verified_count} verified "
        f"finding(s) from {len(context.cited_sources)} source(s) bear on the question"
    )
    if covered:
        opening += f"; they speak to {listed([mid_sentence(name) for name in covered])}"
    if silent:
        opening += f"; no verified finding names {listed([mid_sentence(name) for name in silent])}"
    shared = sum(
        1 for _, sentences in report.themes if len({source_of[i] for _, ids in sentences for i in ids}) >= 2
    )
    agreement = (
        f"{shared} of its {len(report.themes)} theme(s) rest on two or more sources, the rest on one."
        if report.themes
        else ""
    )
    findings = " ".join(_cite(text, ids) for text, ids in report.summary)
    return " ".join(part for part in (opening + ".", agreement, findings) if part)


def executive_summary(context: JobContext, title: str, span: str, single_source: bool) -> str:
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
    return "\n".join([f"## {title}", "", *caveat, evidence_paragraph(context, span)])


def theme_stances(context: JobContext) -> dict[str, str]:
    """Each facet's stance (functions/research/writing/stances.py) by its heading, from the verified themes, the
    critic's contradictions among the evidence and the Verifier's corroboration: in the goal's order,
    facets no verified finding addresses included."""
    cited = {
        name: [i for _, ids in sentences for i in ids] for name, sentences in context.verified_report().themes
    }
    evidence = {item.evidence_id: item.quote for item in context.evidence}
    source_of = {item.evidence_id: item.source_id for item in context.evidence}
    labels = {
        c.source_id: author_label(c.paper.authors, c.paper.year, c.paper.title) for c, _ in context.sources
    }
    opposed = find_contradictions(
        [item.as_chunk() for item in context.evidence if item.evidence_id in source_of]
    )
    headings = [facet_heading(facet) for facet in context.plan.facets]
    return {
        name: stance(name, cited.get(name, []), evidence, source_of, opposed, lambda s: labels.get(s, s))
        for name in headings
    }


def synthesis_body(context: JobContext, span: str, methodologies: dict[str, int]) -> str:
    report = context.verified_report()
    verified_count = sum(1 for claim in context.claims if claim.kept)
    lines = [
        f"Based on analysis of {len(context.sources)} research paper(s) from {span}, "
        f"{verified_count} verified statement(s) are cited below.",
    ]
    stances = theme_stances(context)
    for name, sentences in report.themes:
        # The stance cites the findings it summarises: a reviewer's strike takes it with them.
        summarised = list(dict.fromkeys(i for _, ids in sentences for i in ids))
        led = [_cite(f"{stances[name]}.", summarised)] if name in stances else []
        lines += ["", f"### {name}", "", " ".join([*led, *(_cite(text, ids) for text, ids in sentences)])]
    for name, silence in stances.items():  # the facets no verified finding addresses
        if name not in {theme for theme, _ in report.themes}:
            lines += ["", f"### {name}", "", f"{silence}."]
    if methodologies:
        lines += ["", "### Methodologies", ""]
        lines += [f"- {name}: {count} source(s)" for name, count in methodologies.items()]
    if report.gaps:
        lines += ["", "### Gaps and open questions", ""]
        lines += [f"- {_cite(text, ids)}" for text, ids in report.gaps]
    return "\n".join(lines)


async def render_report(context: JobContext, trace: TraceRecorder) -> None:
    """The report's Markdown and the synthesis result; a refusal says why and carries no themes."""
    plan, decision, report = context.plan, context.decided(), context.verified_report()
    single_source = len(context.cited_sources) == 1
    if single_source and not decision.refusal:
        context.notes.append(
            f"single-source synthesis: confidence capped at {SINGLE_SOURCE_CONFIDENCE_CAP:.2f}; "
            "set scope_parameters.min_sources to require more"
        )
    methodologies = count_methodologies(context.sources, context.evidence)
    years = sorted(c.paper.year for c, _ in context.sources if c.paper.year)
    span = f"{years[0]}-{years[-1]}" if years else "unknown years"
    title = report_title(plan.goal)
    if decision.refusal:
        executive = f"## {title}\n\nNo synthesis was written. {decision.reason}."
        body, report = executive, ReportSections([], [], [])
    else:
        executive = executive_summary(context, title, span, single_source)
        body = synthesis_body(context, span, methodologies)
    context.result = SynthesisResult(
        research_goal=plan.goal,
        executive_summary=executive,
        synthesis_text=body,
        primary_themes=[name for name, _ in report.themes],
        gaps_identified=[text for text, _ in report.gaps],
        sources_analyzed=len(context.sources),
        methodologies_found=len(methodologies),
        methodologies=methodologies,
        evidence=context.evidence,
        claims=context.claims,
        confidence_score=decision.confidence,
        confidence_rationale=decision.rationale,
        refusal=decision.refusal,
        refusal_reason=decision.reason,
        writer=context.written().writer,
        notes=context.notes,
        red_team=context.challenged().to_dict(),
    )


JOB_STAGES: dict[str, Stage[JobContext]] = {
    WRITE: write_report,
    VERIFY: verify_report,
    RED_TEAM: challenge,
    DECIDE: decide_report,
    RENDER: render_report,
}


async def synthesize(
    plan: ResearchPlan[JobSettings],
    sources: list[tuple[Candidate, ExtractedPaper]],
    *,
    provider: LlmProvider | None = None,
    min_sources: int | None = None,
    llm_budget_seconds: float = DEFAULT_LLM_BUDGET_SECONDS,
    trace: TraceRecorder | None = None,
    struck_evidence: frozenset[str] = frozenset(),
) -> SynthesisResult:
    """A cited synthesis of the screened (relevant) sources' evidence, or a refusal: refused when no
    verified claim rests on a source that addresses the goal as a whole (sources that match one concept
    add evidence but cannot carry a synthesis alone), or when fewer than `min_sources` sources back a
    verified claim (default: the plan's policy). A synthesis that rests on one source keeps its
    confidence at or below SINGLE_SOURCE_CONFIDENCE_CAP and says so. Model calls share
    `llm_budget_seconds`: a writer that overruns its share gives way to the extractive writer, and a
    judge that overruns the rest to lexical verification, so a slow model never times the step out.
    `trace` hears the Writer, Verifier and Red-Team events (None: they are not kept). A reviewer's
    `struck_evidence` (ids as screen_evidence makes them) is never read."""
    deadline = asyncio.get_running_loop().time() + llm_budget_seconds
    screened = screen_evidence(sources)
    evidence = [item for item in screened.evidence if item.evidence_id not in struck_evidence]
    context = JobContext(
        plan=plan,
        sources=sources,
        evidence=evidence,
        chunks={item.evidence_id: item.as_chunk() for item in evidence},
        quarantined=screened.quarantined,
        hostile_sources=screened.hostile_sources,
        provider=provider,
        llm_budget_seconds=llm_budget_seconds,
        deadline=deadline,
        policy=job_policy(min_sources or plan.settings.policies.min_sources),
    )
    recorder = trace or TraceRecorder("synthesis")
    await run_stages(stage_list(JOB_SYNTHESIS_STAGES, JOB_STAGES), context, recorder)
    if context.result is None:
        raise RuntimeError("the job's stages have no render stage")
    return context.result

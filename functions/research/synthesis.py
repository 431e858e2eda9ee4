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
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from functions.common.models import EvidenceQuote, ExtractedPaper, short_hash
from functions.common.text import stem as stem_word
from functions.research.evidence import PAGE, EvidenceChunk
from functions.research.gate import SINGLE_SOURCE_CONFIDENCE_CAP
from functions.research.planning import ResearchPlan, content_tokens
from functions.research.presets import STYLE_REPORT
from functions.research.redteam import red_team
from functions.research.screening import Candidate
from functions.research.untrusted_text import Screened, hostile_source, own_links, screen
from functions.research.verifier import PARTIAL, SUPPORTED, UNSUPPORTED, Verifier, verify_claim
from functions.research.writer import GAPS_SECTION, LlmWriter

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
__all__ = ["PARTIAL", "SUPPORTED", "UNSUPPORTED", "synthesize", "verify_claim"]
# Words of research reporting that say nothing about the subject (never theme labels on their own).
_GENERIC = frozenset(
    [
        "result",
        "show",
        "shown",
        "found",
        "find",
        "report",
        "compare",
        "compared",
        "baseline",
        "model",
        "dataset",
        "experiment",
        "our",
        "achieve",
        "achieved",
        "score",
        "scored",
        "point",
        "percent",
        "performance",
        "accuracy",
        "task",
        "benchmark",
        "evaluate",
        "evaluation",
        "way",
        "make",
        "made",
        "propose",
        "proposed",
        "present",
        "method",
        "approach",
        "technique",
        "paper",
        "work",
        "within",
        "across",
        "strong",
        "strongest",
        "dense",
        "higher",
        "lower",
        "better",
        "best",
        "new",
        "novel",
        "significant",
        "significantly",
        "improve",
        "improved",
        "improvement",
        "outperform",
        "outperformed",
        "reduce",
        "reduced",
        "increase",
        "increased",
    ]
)


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


@dataclass
class Draft:
    """What a writer produces: themes of cited sentences, summary sentences and gaps (all cited)."""

    themes: list[tuple[str, list[tuple[str, list[str]]]]]  # (name, [(sentence, evidence ids)])
    summary: list[tuple[str, list[str]]]
    gaps: list[tuple[str, list[str]]]
    writer: str


@dataclass
class SynthesisResult:
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
    notes: list[str] = field(default_factory=list)
    red_team: dict[str, Any] = field(default_factory=dict)  # the answer engine's Red-Team report

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # evidence and claims become dicts too


@dataclass
class ScreenedEvidence:
    """The evidence of the screened sources, and what was withheld from it as text addressed to the
    reader or a model: (quote span, signals) per sentence, and the sources full of it."""

    evidence: list[Evidence]
    quarantined: list[tuple[EvidenceChunk, str]]
    hostile_sources: list[str]


def build_evidence(sources: list[tuple[Candidate, ExtractedPaper]]) -> list[Evidence]:
    return screen_evidence(sources).evidence


def screen_evidence(sources: list[tuple[Candidate, ExtractedPaper]]) -> ScreenedEvidence:
    """Each quote judged sentence by sentence: its runs of clean sentences are evidence (verbatim, with
    their own offsets); the rest is quarantined, and a source full of it gives no evidence at all."""
    evidence: list[Evidence] = []
    quarantined: list[tuple[EvidenceChunk, str]] = []
    hostile: list[str] = []
    seen: set[str] = set()
    for candidate, paper in sources:
        links = own_links(candidate.paper.url, candidate.paper.doi, paper.source_url)
        screened: list[tuple[EvidenceQuote, Screened]] = [(q, screen(q.quote, links)) for q in paper.evidence]
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


def _surface(text: str, first: str, second: str) -> str:
    """How two adjacent topic words read in the quote, with the short words between ('mixture of experts')."""
    pattern = rf"\b{re.escape(first)}\W+(?:[A-Za-z]{{1,4}}\W+){{0,2}}?{re.escape(second)}\b"
    match = re.search(pattern, text, re.IGNORECASE)
    return " ".join(match.group(0).lower().split()) if match else f"{first} {second}"


def cluster_themes(
    evidence: list[Evidence], topic_words: set[str], max_themes: int = 5
) -> list[tuple[str, list[Evidence]]]:
    """Group findings by the terms they share across sources; the label is the commonest shared term."""
    findings = [e for e in evidence if e.kind not in ("limitation", "future_work", "method")]
    topic = {stem_word(word) for word in topic_words}
    labels: dict[str, set[str]] = defaultdict(set)  # stem label -> source ids
    display: dict[str, str] = {}
    members: dict[str, list[Evidence]] = defaultdict(list)
    for item in findings:
        tokens = [t for t in content_tokens(item.quote) if not t.isdigit()]
        stems = [stem_word(t) for t in tokens]
        grams: set[str] = set()
        for index, stem in enumerate(stems):
            if stem in topic or stem in _GENERIC:
                continue
            if len(stem) > 3:
                grams.add(stem)
                display.setdefault(stem, tokens[index])
            if index + 1 < len(stems) and stems[index + 1] not in topic and stems[index + 1] not in _GENERIC:
                bigram = f"{stem} {stems[index + 1]}"
                grams.add(bigram)
                display.setdefault(bigram, _surface(item.quote, tokens[index], tokens[index + 1]))
        for gram in grams:
            labels[gram].add(item.source_id)
            members[gram].append(item)

    def strength(gram: str) -> tuple[float, int, str]:
        bonus = 1.5 if " " in gram else 1.0
        return (len(labels[gram]) * bonus, len(members[gram]), gram)

    # A term that nearly every source shares is the field's vocabulary, not a theme within it.
    sources_total = len({item.source_id for item in findings})
    ubiquitous = max(2.0, 0.6 * sources_total) if sources_total >= 4 else float(sources_total)
    themes: list[tuple[str, list[Evidence]]] = []
    assigned: set[str] = set()
    for gram in sorted(labels, key=strength, reverse=True):
        if len(themes) >= max_themes:
            break
        if len(labels[gram]) > ubiquitous:
            continue
        fresh = [e for e in members[gram] if e.evidence_id not in assigned]
        if len({e.source_id for e in fresh}) < 2 and len(fresh) < 2:
            continue
        assigned.update(e.evidence_id for e in fresh)
        name = display[gram]
        themes.append((name[:1].upper() + name[1:], fresh))
    return themes


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


def extractive_draft(plan: ResearchPlan, evidence: list[Evidence]) -> Draft:
    """LLM_PROVIDER=none: themes clustered from findings, sentences are the cited evidence itself."""
    topic_words = {word for phrase in plan.key_phrases for word in phrase.split()}
    clusters = cluster_themes(evidence, topic_words)
    themes: list[tuple[str, list[tuple[str, list[str]]]]] = []
    summary: list[tuple[str, list[str]]] = []
    for name, items in clusters:
        ranked = sorted(items, key=lambda e: (-e.relevance_score, e.evidence_id))
        picked: list[Evidence] = []
        for item in ranked:  # one sentence per source first, then the rest
            if all(item.source_id != p.source_id for p in picked):
                picked.append(item)
            if len(picked) == 3:
                break
        themes.append((name, [(item.quote, [item.evidence_id]) for item in picked]))
        if picked:
            summary.append((picked[0].quote, [picked[0].evidence_id]))
    if not themes:  # too few shared terms to cluster: cite the strongest findings directly
        top = sorted(
            (e for e in evidence if e.kind not in ("limitation", "future_work")),
            key=lambda e: (-e.relevance_score, e.evidence_id),
        )[:5]
        summary = [(item.quote, [item.evidence_id]) for item in top[:3]]
        if top:
            themes.append(("Key findings", [(item.quote, [item.evidence_id]) for item in top]))
    gaps = [
        (item.quote, [item.evidence_id])
        for item in evidence
        if item.kind in ("limitation", "future_work") or _GAP_SIGNAL.search(item.quote)
    ]
    unique_gaps = list({text: (text, ids) for text, ids in gaps}.values())[:6]
    return Draft(themes=themes, summary=summary, gaps=unique_gaps, writer="extractive")


MAX_LLM_EVIDENCE = 60
DEFAULT_LLM_BUDGET_SECONDS = 30.0
WRITER_BUDGET_SHARE = 0.7  # of the model budget; the judge has what the writer leaves
MIN_JUDGE_SECONDS = 3.0


async def llm_draft(plan: ResearchPlan, evidence: list[Evidence], provider: LlmProvider) -> Draft:
    """The answer engine's LLM writer in report style: theme headings become themes, the gaps heading
    the gaps, and each theme's first sentence the summary."""
    ranked = sorted(evidence, key=lambda e: (-e.relevance_score, e.evidence_id))[:MAX_LLM_EVIDENCE]
    chunks = [e.as_chunk() for e in ranked]
    draft = await LlmWriter(provider).write(plan.goal, STYLE_REPORT, chunks)
    themes: dict[str, list[tuple[str, list[str]]]] = {}
    gaps: list[tuple[str, list[str]]] = []
    for sentence in draft.sentences:
        if sentence.section and sentence.section.strip().lower() == GAPS_SECTION.lower():
            gaps.append((sentence.text, sentence.chunk_ids))
        else:
            themes.setdefault(sentence.section or "Findings", []).append((sentence.text, sentence.chunk_ids))
    return Draft(
        themes=list(themes.items()),
        summary=[sentences[0] for sentences in themes.values() if sentences],
        gaps=gaps,
        writer=draft.writer,
    )


def _cite(text: str, ids: list[str]) -> str:
    return f"{text} [{', '.join(ids)}]"


async def synthesize(
    plan: ResearchPlan,
    sources: list[tuple[Candidate, ExtractedPaper]],
    *,
    provider: LlmProvider | None = None,
    min_sources: int | None = None,
    llm_budget_seconds: float = DEFAULT_LLM_BUDGET_SECONDS,
) -> SynthesisResult:
    """A cited synthesis of the screened (relevant) sources' evidence, or a refusal: refused when no
    verified claim rests on a source that addresses the goal as a whole (sources that match one concept
    add evidence but cannot carry a synthesis alone), or when fewer than `min_sources` sources back a
    verified claim (default: the plan's policy). A synthesis that rests on one source keeps its
    confidence at or below SINGLE_SOURCE_CONFIDENCE_CAP and says so. Model calls share
    `llm_budget_seconds`: a writer that overruns its share gives way to the extractive writer, and a
    judge that overruns the rest to lexical verification, so a slow model never times the step out."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + llm_budget_seconds
    required_sources = min_sources or plan.policies.min_sources
    screened = screen_evidence(sources)
    evidence = screened.evidence
    by_id = {item.evidence_id: item for item in evidence}
    sources_with_evidence = {item.source_id for item in evidence}
    notes: list[str] = []
    draft = extractive_draft(plan, evidence)
    if provider is not None and evidence:
        try:
            async with asyncio.timeout(llm_budget_seconds * WRITER_BUDGET_SHARE):
                draft = await llm_draft(plan, evidence, provider)
        except TimeoutError:
            notes.append(
                f"LLM writer exceeded its {llm_budget_seconds * WRITER_BUDGET_SHARE:.0f} s budget; "
                "used the extractive writer"
            )
        except Exception as exc:  # a provider or format failure falls back to the extractive writer
            notes.append(f"LLM writer failed ({type(exc).__name__}: {exc}); used the extractive writer")

    drafted = list(
        dict.fromkeys(
            (text, tuple(ids))
            for text, ids in [
                *(pair for _, sentences in draft.themes for pair in sentences),
                *draft.summary,
                *draft.gaps,
            ]
            if text
        )
    )
    to_verify = [(text, list(ids)) for text, ids in drafted]
    quotes = {item.evidence_id: item.quote for item in evidence}
    remaining = deadline - loop.time()
    judge = provider if remaining >= MIN_JUDGE_SECONDS else None
    if provider is not None and judge is None:
        notes.append("no time left for the LLM judge; claims verified lexically")
    try:
        async with asyncio.timeout(max(remaining, 0.0) if judge is not None else None):
            verifications = await Verifier(judge).verify(to_verify, quotes)
    except TimeoutError:
        notes.append("the LLM judge exceeded the synthesis budget; claims verified lexically")
        verifications = await Verifier(None).verify(to_verify, quotes)
    claims = [
        Claim(v.claim_id, v.claim_text, v.evidence_chunk_ids, v.verdict, v.confidence, v.notes, v.kept)
        for v in verifications
    ]
    claim_index = {(text, ids): claim for (text, ids), claim in zip(drafted, claims, strict=True)}
    chunks = {e.evidence_id: e.as_chunk() for e in evidence}
    report = red_team(
        [v for v in verifications if v.kept],
        verifications,
        chunks,
        screened.quarantined,
        screened.hostile_sources,
    )

    def check(text: str, ids: list[str]) -> Claim:
        return claim_index[(text, tuple(ids))]

    themes: list[tuple[str, list[tuple[str, list[str]]]]] = []
    for name, sentences in draft.themes:
        kept = [(text, ids) for text, ids in sentences if text and check(text, ids).kept]
        if kept:
            themes.append((name, kept))
    summary = [(text, ids) for text, ids in draft.summary if text and check(text, ids).kept]
    gaps = [(text, ids) for text, ids in draft.gaps if text and check(text, ids).kept]
    dropped = sum(1 for claim in claims if not claim.kept)
    if dropped:
        notes.append(f"{dropped} unsupported sentence(s) dropped after verification")

    supported = [claim for claim in claims if claim.kept]
    cited_sources = {by_id[i].source_id for claim in supported for i in claim.evidence_ids}
    multi_source_themes = sum(
        1 for _, sentences in themes if len({by_id[i].source_id for _, ids in sentences for i in ids}) >= 2
    )
    strength = min(1.0, len(sources_with_evidence) / max(3, min(plan.target_sources, 10)))
    coverage = len(supported) / len(claims) if claims else 0.0
    agreement = multi_source_themes / len(themes) if themes else 0.0
    cited_share = len(cited_sources) / len(sources_with_evidence) if sources_with_evidence else 0.0
    # Lexical verification cannot prove entailment, so confidence stays below certainty.
    confidence = round(
        min(0.95, 0.35 * strength + 0.25 * coverage + 0.25 * agreement + 0.15 * cited_share), 3
    )
    single_source = len(cited_sources) == 1
    if single_source:
        confidence = min(confidence, SINGLE_SOURCE_CONFIDENCE_CAP)
    rationale = (
        f"{len(sources_with_evidence)} source(s) with evidence, {len(cited_sources)} cited; "
        f"{len(supported)}/{len(claims)} claim(s) verified; "
        f"{multi_source_themes}/{len(themes)} theme(s) backed by two or more sources"
    )

    refusal_reason: str | None = None
    if not sources_with_evidence:
        refusal_reason = "No relevant source yielded usable evidence"
    elif not supported:
        refusal_reason = "No claim could be verified against the extracted evidence"
    elif not any(
        candidate.answers_goal(plan.policies.relevance_threshold)
        for candidate, _ in sources
        if candidate.source_id in cited_sources
    ):
        refusal_reason = (
            f"The verified claims come only from {len(cited_sources)} source(s) that match single concepts "
            "of the goal; no source that addresses the goal as a whole backs a verified claim"
        )
    elif len(cited_sources) < required_sources:
        refusal_reason = (
            f"Only {len(cited_sources)} source(s) back a verified claim; at least {required_sources} "
            "were required for this synthesis"
        )
    elif confidence < 0.3:
        refusal_reason = f"Confidence {confidence:.2f} is below 0.30: {rationale}"

    if single_source and refusal_reason is None:
        notes.append(
            f"single-source synthesis: confidence capped at {SINGLE_SOURCE_CONFIDENCE_CAP:.2f}; "
            "set scope_parameters.min_sources to require more"
        )
    methodologies = count_methodologies(sources, evidence)
    years = sorted(c.paper.year for c, _ in sources if c.paper.year)
    span = f"{years[0]}-{years[-1]}" if years else "unknown years"
    title = plan.topic[:1].upper() + plan.topic[1:]
    if refusal_reason:
        executive = f"## Meta-Analysis: {title}\n\nNo synthesis was written. {refusal_reason}."
        body = executive
        themes, gaps = [], []
    else:
        theme_names = ", ".join(name for name, _ in themes)
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
        executive_lines = [
            f"## Meta-Analysis: {title}",
            "",
            *caveat,
            f"Across {len(sources)} analysed source(s) published {span}, the evidence groups into "
            f"{len(themes)} theme(s): {theme_names}.",
            "",
            *[f"- {_cite(text, ids)}" for text, ids in summary],
        ]
        executive = "\n".join(executive_lines)
        body_lines = [
            f"Based on analysis of {len(sources)} research paper(s) from {span}, "
            f"{len(supported)} verified statement(s) are cited below.",
        ]
        for name, sentences in themes:
            body_lines += ["", f"### {name}", "", " ".join(_cite(text, ids) for text, ids in sentences)]
        if methodologies:
            body_lines += ["", "### Methodologies", ""]
            body_lines += [f"- {name}: {count} source(s)" for name, count in methodologies.items()]
        if gaps:
            body_lines += ["", "### Gaps and open questions", ""]
            body_lines += [f"- {_cite(text, ids)}" for text, ids in gaps]
        body = "\n".join(body_lines)
    return SynthesisResult(
        research_goal=plan.goal,
        executive_summary=executive,
        synthesis_text=body,
        primary_themes=[name for name, _ in themes],
        gaps_identified=[text for text, _ in gaps],
        sources_analyzed=len(sources),
        methodologies_found=len(methodologies),
        methodologies=methodologies,
        evidence=evidence,
        claims=claims,
        confidence_score=0.0 if refusal_reason else confidence,
        confidence_rationale=rationale,
        refusal=refusal_reason is not None,
        refusal_reason=refusal_reason,
        writer=draft.writer,
        notes=notes,
        red_team=report.to_dict(),
    )

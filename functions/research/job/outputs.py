"""Finalize: the report artifacts, rendered from metadata and verified evidence (never from a model)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from functions.common.text import first_sentence
from functions.research.job.inputs import Extraction, QueryResult, ScreeningPayload
from functions.research.job.prisma import PrismaFlow, flow_markdown
from functions.research.retrieval.chasing import ChasingRecord, discovered_via
from functions.research.retrieval.screening import Candidate
from functions.research.retrieval.untrusted_text import own_links, without_hostile
from functions.research.writing.attribution import last_name

if TYPE_CHECKING:
    from functions.research.job.result import SynthesisResult
    from functions.research.planning.plan import JobSettings, ResearchPlan
    from functions.research.retrieval.evidence import EvidenceChunk

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _latex(value: str) -> str:
    return "".join(_LATEX_SPECIAL.get(char, char) for char in " ".join(value.split()))


def _ascii_word(value: str) -> str:
    folded = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^A-Za-z0-9]", "", folded)


def citation_key(candidate: Candidate, used: set[str]) -> str:
    paper = candidate.paper
    author = _ascii_word(last_name(paper.authors[0])).lower() if paper.authors else "anon"
    first_word = next(
        (_ascii_word(w).lower() for w in paper.title.split() if len(_ascii_word(w)) > 3), "untitled"
    )
    base = f"{author or 'anon'}{paper.year or 'nd'}{first_word}"
    key, suffix = base, ord("a")
    while key in used:
        key = f"{base}{chr(suffix)}"
        suffix += 1
    used.add(key)
    return key


def bibtex_entries(candidates: list[Candidate]) -> tuple[str, dict[str, str]]:
    """BibTeX for the sources, and source id -> citation key."""
    used: set[str] = set()
    keys: dict[str, str] = {}
    blocks: list[str] = []
    for candidate in candidates:
        paper = candidate.paper
        key = citation_key(candidate, used)
        keys[candidate.source_id] = key
        fields: list[tuple[str, str]] = [("title", "{" + _latex(paper.title) + "}")]
        if paper.authors:
            fields.append(("author", " and ".join(_latex(a) for a in paper.authors)))
        if paper.year:
            fields.append(("year", str(paper.year)))
        entry_type = "misc"
        if paper.venue and not paper.arxiv_id:
            entry_type = "article"
            fields.append(("journal", _latex(paper.venue)))
        elif paper.venue:
            fields.append(("howpublished", _latex(paper.venue)))
        if paper.doi:
            fields.append(("doi", _latex(paper.doi)))
        if paper.arxiv_id:
            fields += [("eprint", paper.arxiv_id), ("archiveprefix", "arXiv")]
        fields.append(("url", paper.url.replace("%", r"\%").replace("{", "").replace("}", "")))
        body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
        blocks.append(f"@{entry_type}{{{key},\n{body}\n}}")
    return "\n\n".join(blocks) + ("\n" if blocks else ""), keys


def validate_bibtex(text: str, expected_entries: int) -> None:
    from bibtexparser.entrypoint import parse_string  # on first use (bench/cold_start.py)

    library = parse_string(text)
    if library.failed_blocks:
        raise ValueError(f"invalid BibTeX: {len(library.failed_blocks)} block(s) failed to parse")
    if len(library.entries) != expected_entries:
        raise ValueError(f"BibTeX has {len(library.entries)} entries, expected {expected_entries}")


def _reference(candidate: Candidate) -> str:
    paper = candidate.paper
    authors = "; ".join(paper.authors[:3]) + (" et al." if len(paper.authors) > 3 else "")
    parts = [authors or "Unknown author", f"({paper.year or 'n.d.'})", f"*{paper.title}*"]
    if paper.venue:
        parts.append(paper.venue)
    parts.append(f"https://doi.org/{paper.doi}" if paper.doi else paper.url)
    return ". ".join(part.rstrip(".") for part in parts) + "."


def report_markdown(
    synthesis: SynthesisResult,
    sources: list[Candidate],
    keys: dict[str, str],
    status: str,
    flow: PrismaFlow | None = None,
) -> str:
    """The report: the summary, the synthesis, the evidence cited, the PRISMA 2020 flow (when given)
    and the references."""
    evidence = {item.chunk_id: item for item in synthesis.evidence}
    cited: list[str] = []
    for claim in synthesis.claims:
        if claim.kept:
            cited.extend(i for i in claim.evidence_chunk_ids if i not in cited)
    by_source = {c.source_id: c for c in sources}
    lines = [
        f"# Research report: {synthesis.research_goal}",
        "",
        f"Status: **{status}** · confidence {synthesis.confidence_score:.2f} "
        f"({synthesis.confidence_rationale}) · writer: {synthesis.writer}",
        "",
    ]
    if synthesis.refusal:
        lines += ["> **Refused:** " + str(synthesis.refusal_reason), ""]
    # The summary's own title is the goal, already the report's: here it is the report's first section.
    summary = re.sub(r"\A## .*", "## What the evidence shows", synthesis.executive_summary, count=1)
    lines += [summary, "", "## Synthesis", "", synthesis.synthesis_text, ""]
    if cited:
        lines += ["## Evidence cited", ""]
        for evidence_id in cited:
            item = evidence[evidence_id]
            source = by_source.get(item.source_id)
            where = f"[@{keys.get(item.source_id, item.source_id)}, p. {item.page}]"
            title = source.paper.title if source else item.source_id
            lines.append(f"- **{evidence_id}** {where} “{item.text}” — *{title}*")
        lines.append("")
    if flow is not None:
        lines += flow_markdown(flow)
    lines += _chased_sources(sources, keys)
    lines += ["## References", ""]
    lines += [f"- [@{keys[c.source_id]}] {_reference(c)}" for c in sources]
    return "\n".join(lines) + "\n"


def _chased_sources(sources: list[Candidate], keys: dict[str, str]) -> list[str]:
    """The report's section on the sources citation chasing found, each with the seed it came through."""
    titles = {c.source_id: c.paper.title for c in sources}
    lines: list[str] = []
    for candidate in sources:
        via = discovered_via(candidate)
        if via["method"] == "search":
            continue
        relation = "in the references of" if via["method"] == "references" else "citing"
        seed = titles.get(via["seed"], via["seed"])
        lines.append(
            f"- [@{keys[candidate.source_id]}] *{candidate.paper.title}*: {relation} *{seed}* "
            f"({via['connector']})"
        )
    return ["## Found by citation chasing", "", *lines, ""] if lines else []


def annotated_bibliography(
    sources: list[Candidate],
    keys: dict[str, str],
    extractions: dict[str, Extraction],
    evidence: list[EvidenceChunk],
) -> str:
    lines = ["# Annotated bibliography", ""]
    quotes: dict[str, list[EvidenceChunk]] = {}
    for item in evidence:
        quotes.setdefault(item.source_id, []).append(item)
    for candidate in sources:
        paper = candidate.paper
        outcome = extractions.get(candidate.source_id, Extraction())
        scores = ", ".join(f"{name} {value:.2f}" for name, value in candidate.scores.items())
        lines += [f"## [@{keys[candidate.source_id]}] {paper.title}", "", _reference(candidate), ""]
        lines.append(f"- Scores: {scores} (total {candidate.total_score:.2f}/5)")
        if candidate.explanations.get("relevance"):
            lines.append(f"- Relevance: {candidate.explanations['relevance']}")
        lines.append(f"- Found by: {', '.join(paper.found_by or [paper.source])}")
        if outcome.success:
            lines.append(f"- Extraction: {outcome.evidence_count} evidence quote(s)")
        else:
            lines.append(f"- Extraction failed: {outcome.failure_reason or 'not attempted'}")
        abstract = without_hostile(paper.abstract, own_links(paper.url, paper.doi)) if paper.abstract else ""
        if abstract.strip():
            lines.append(f"- Summary (from the abstract): {first_sentence(abstract)}")
        for item in sorted(quotes.get(candidate.source_id, []), key=lambda q: -q.score)[:3]:
            lines.append(f"  - p. {item.page} ({item.kind}): “{item.text}” [{item.chunk_id}]")
        lines.append("")
    return "\n".join(lines)


def without_struck(synthesis: SynthesisResult, struck: Iterable[str]) -> SynthesisResult:
    """The synthesis as delivered: quotes a reviewer struck are neither listed nor cited (a synthesis
    approved for delivery without being written again may still hold them); a claim left with no
    evidence is no longer kept."""
    struck = set(struck)
    if not struck:
        return synthesis
    claims = []
    for claim in synthesis.claims:
        cites = [i for i in claim.evidence_chunk_ids if i not in struck]
        withdrawn = claim.withdrawn or (bool(claim.evidence_chunk_ids) and not cites)
        claims.append(replace(claim, evidence_chunk_ids=cites, withdrawn=withdrawn))
    evidence = [item for item in synthesis.evidence if item.chunk_id not in struck]
    texts = {
        key: _without_struck_citations(text, struck)
        for key, text in (
            ("executive_summary", synthesis.executive_summary),
            ("synthesis_text", synthesis.synthesis_text),
        )
        if text
    }
    return synthesis.model_copy(update={**texts, "evidence": evidence, "claims": claims})


# A cited statement: its sentence (from the line's start, the previous citation or the previous sentence's
# end, never across a sentence end), then its `[ev-…, …]`.
_CITED_STATEMENT = re.compile(
    r"(?P<lead>^|(?<=\] )|(?<=[.!?] ))(?P<text>(?:[^\n\[\].!?]|[.!?](?!\s+[A-Z]))*?)\s*\[(?P<ids>ev-[^\]\n]+)\]",
    re.MULTILINE,
)
_EMPTY_BULLET = re.compile(r"^[ \t]*-[ \t]*$\n?", re.MULTILINE)
# A heading whose section lost every statement: followed only by blank lines, then a heading or the end.
_EMPTY_SECTION = re.compile(r"^#{2,6} [^\n]*\n(?:[ \t]*\n)*(?=#{2,6} |\Z)", re.MULTILINE)


def _without_struck_citations(text: str, struck: set[str]) -> str:
    """A statement that cites only struck quotes is left out; one that cites others besides cites those."""

    def cited(match: re.Match[str]) -> str:
        ids = [i.strip() for i in match["ids"].split(",")]
        kept = [i for i in ids if i not in struck]
        if len(kept) == len(ids):
            return match[0]
        return f"{match['lead']}{match['text']} [{', '.join(kept)}]" if kept else match["lead"]

    without = _EMPTY_BULLET.sub("", _CITED_STATEMENT.sub(cited, text))
    without = re.sub(r"(?<=\S)  +(?=\S)", " ", re.sub(r"[ \t]+\n", "\n", _EMPTY_SECTION.sub("", without)))
    return without.rstrip()


def quote_library(sources: list[Candidate], evidence: list[EvidenceChunk]) -> dict[str, Any]:
    by_source = {c.source_id: c for c in sources}
    quotes = []
    for item in evidence:
        source = by_source.get(item.source_id)
        paper = source.paper if source else None
        quotes.append(
            {
                "evidence_id": item.chunk_id,
                "source_id": item.source_id,
                "doi": paper.doi if paper else None,
                "title": paper.title if paper else None,
                "url": paper.url if paper else None,
                "page": item.page,
                "quote_text": item.text,
                "context": item.section,
                "kind": item.kind,
                "relevance_score": item.score,
                "char_start": item.char_start,
                "char_end": item.char_end,
            }
        )
    return {"quotes": quotes, "total_quotes": len(quotes)}


class LoggedDecision(Protocol):
    """One of the job's decisions, as its record holds it."""

    timestamp: str
    decision_type: str
    reasoning: str
    action_taken: str


def search_report(
    plan: ResearchPlan[JobSettings],
    searches: list[QueryResult],
    screening: ScreeningPayload,
    extractions: list[Extraction],
    decisions: Sequence[LoggedDecision],
) -> str:
    lines = ["# Search report", "", f"Goal: {plan.goal}", "", "## Queries", ""]
    lines += ["| query id | database | query | results | outcome |", "|---|---|---|---|---|"]
    for search in searches:
        failed = search.failed_connectors
        outcome = "; ".join(f"{k}: {v}" for k, v in failed.items()) or search.error or "ok"
        query = search.query.replace("|", "\\|")
        lines.append(f"| {search.query_id} | {search.connector} | `{query}` | {search.count} | {outcome} |")
    policies = plan.settings.policies
    lines += [
        "",
        "## Screening",
        "",
        f"- Policies: years {policies.year_start}-{policies.year_end}, relevance >= "
        f"{policies.relevance_threshold}, impact level {policies.impact_level}, "
        f"diversity {'required' if policies.diversity_required else 'not required'}",
        f"- Hits: {screening.discovered}; duplicates merged: {screening.duplicates}; "
        f"unique candidates: {screening.validated}; passed policies: {screening.passed}; "
        f"selected: {screening.selected}",
    ]
    for reason, count in screening.rejection_counts.items():
        lines.append(f"- Rejected ({reason}): {count}")
    lines += _chasing_lines(screening.chasing)
    ok = sum(1 for e in extractions if e.success)
    lines += ["", "## Extraction", "", f"- Successful: {ok} of {len(extractions)}"]
    for item in extractions:
        if not item.success:
            lines.append(f"- Failed `{item.url}`: {item.failure_reason}")
    if decisions:
        lines += ["", "## Autonomous decisions", ""]
        for decision in decisions:
            lines.append(
                f"- {decision.timestamp} {decision.decision_type}: {decision.reasoning} -> "
                f"{decision.action_taken}"
            )
    return "\n".join(lines) + "\n"


def _chasing_lines(record: ChasingRecord | None) -> list[str]:
    if record is None or record.mode == "off":
        return []
    lines = [
        "",
        "## Citation chasing",
        "",
        f"- Mode: {record.mode}; seeds: {', '.join(record.seeds) or 'none'}",
    ]
    if record.skipped_reason:
        return [*lines, f"- Not chased: {record.skipped_reason}"]
    requests = ", ".join(f"{name} {count}" for name, count in record.requests.items()) or "none"
    lines += [
        f"- Graph requests: {requests}",
        f"- Works from the citation graphs: {record.chased_works}; not found by any search: "
        f"{record.new_candidates}; selected: {len(record.selected)}",
    ]
    lines += [f"- Seed {seed} not chased: {why}" for seed, why in record.not_chased().items()]
    return lines


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)

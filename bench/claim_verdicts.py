"""Benchmark: `POST /v1/claims/verify` on a labelled set of claims derived from the real corpus papers.

    .venv/bin/python -m bench.claim_verdicts [--split dev|heldout|all] [--mode sources|search]
                                             [--per-kind N] [--no-politeness] [--no-latency] [--verbose]

The labelled set is derived, by the rules below and not by hand, from the ground truth beside each of
the 20 corpus papers (`papers/regular/<id>/`): its abstract and, where the ground truth has a body
(S2ORC JSON `body_text`, GROBID TEI `<body>`, NLM `<body>`), the sentences of its paragraphs. A
sentence qualifies when it is 60-320 characters and reads as a statement (no reference list, URL or
equation debris). For each paper, up to `--per-kind` claims of each kind, taken in the paper's order:

  - `true_quoted` (expected `supported`): a sentence as the paper writes it;
  - `true_paraphrase` (expected `supported`): the sentence reported in the third person ("The authors
    report that they ..." for "We ...");
  - `changed_number` (expected `contradicted`): a sentence with a number (not a year), that number
    changed;
  - `flipped_direction` (expected `contradicted`): a sentence with a direction word (increase, higher,
    outperform, reduce ...), the word replaced by its opposite;
  - `dropped_population` (expected `partially_supported`, i.e. not `supported`): a sentence naming who
    was studied ("in 40 patients", "of mice"), that phrase removed;
  - `not_addressed` (expected `insufficient_evidence`): a sentence of another paper of the same half.

The papers are split into a dev and a held-out half by a hash of their corpus id, fixed before anything
was tuned; only the dev half was looked at while tuning. Each claim is checked as the route checks it
(the answer function's composition root, `functions.answer.claims`, inside the embedded AWS account, no
LLM), against the offline scholarly web of `bench.corpus_web` (the real PDFs, ~1000 real distractors):
`--mode sources` names the paper itself (its arXiv id or DOI: fetched and extracted like any paper),
`--mode search` names none (the answer pipeline's retrieval finds the evidence; `not_addressed` is left
out there, since another corpus paper states it). Printed: the confusion
table (expected kind x verdict) per half, the share of claims whose verdict is the expected one, the
share of false claims (changed, flipped, dropped) not called `supported`, and the latency of a call
(p50/p95; the first call per paper pays its PDF fetch and parse).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import statistics
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.corpus_web import (
    CorpusMissing,
    CorpusWeb,
    WebPaper,
    add_condition_options,
    corpus_dir,
    describe_conditions,
    literature,
)
from bench.corpus_web.text import squash

if TYPE_CHECKING:
    from functions.answer.claims import ClaimCheckers

KINDS = (
    "true_quoted",
    "true_paraphrase",
    "changed_number",
    "flipped_direction",
    "dropped_population",
    "not_addressed",
)
EXPECTED = {
    "true_quoted": "supported",
    "true_paraphrase": "supported",
    "changed_number": "contradicted",
    "flipped_direction": "contradicted",
    "dropped_population": "partially_supported",
    "not_addressed": "insufficient_evidence",
}
FALSE_KINDS = ("changed_number", "flipped_direction", "dropped_population")
VERDICTS = ("supported", "partially_supported", "unsupported", "contradicted", "insufficient_evidence")
SHORT = {"supported": "sup", "partially_supported": "part", "unsupported": "unsup", "contradicted": "contra"}
MIN_CHARS, MAX_CHARS = 60, 320

# --- the labelled set ----------------------------------------------------------------------------------

_TEI = {"tei": "http://www.tei-c.org/ns/1.0"}
_SENTENCE_END = re.compile(r"(?<=[a-z0-9%)\]][.!?])\s+(?=[A-Z])")
_DEBRIS = re.compile(r"https?://|www\.|\[\d|\bet al\b|\bFig(?:ure)?\.?\s*\d|\bTable\s*\d|[=<>±∑∫]|\([^)]*$")
# A quantity: a number followed by a unit, a percent sign or a noun, not a label ("Table 2", "P 5").
_NUMBER = re.compile(
    r"(?<![\w.])(?<![A-Z] )(?<!Equation )(?<!Section )(\d+(?:\.\d+)?)(?=\s*(?:%|percent\b|[a-z]{3,}))"
)
_YEAR = re.compile(r"^(?:19|20)\d\d$")
# Direction words and their opposites (this bench's own list, not the project's).
_OPPOSITES = {
    "increase": "decrease",
    "increases": "decreases",
    "increased": "decreased",
    "increasing": "decreasing",
    "higher": "lower",
    "greater": "smaller",
    "larger": "smaller",
    "more": "less",
    "better": "worse",
    "improves": "degrades",
    "improved": "degraded",
    "improve": "degrade",
    "outperforms": "underperforms",
    "outperform": "underperform",
    "reduces": "increases",
    "reduced": "increased",
    "reduce": "increase",
    "lower": "higher",
    "decreased": "increased",
    "decreases": "increases",
    "faster": "slower",
}
_POPULATION = re.compile(
    r",?\s*\b(?:in|among|of|from|for)\s+(?:\d[\d,]*\s+)?(?:[a-z-]+\s+){0,3}"
    r"(?:patients|participants|subjects|adults|children|infants|women|men|mice|rats|users|students|volunteers)\b",
    re.I,
)


@dataclass(frozen=True)
class Claim:
    paper: WebPaper
    kind: str
    text: str

    @property
    def expected(self) -> str:
        return EXPECTED[self.kind]


def split_of(paper: WebPaper) -> str:
    """Fixed by the corpus id alone, before any tuning."""
    digest = hashlib.sha1((paper.corpus_id or paper.key).encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "heldout"


def _paragraphs(folder: Path) -> list[str]:
    s2orc = folder / "s2orc.json"
    if s2orc.exists():
        body = json.loads(s2orc.read_text(encoding="utf-8")).get("body_text") or []
        if isinstance(body, list) and body:
            return [str(p.get("text", "")) for p in body if isinstance(p, dict)]
    for name, path in (("grobid.tei.xml", ".//tei:body//tei:p"), ("metadata.nlm.xml", ".//body//p")):
        if (folder / name).exists():
            return [
                " ".join(node.itertext()) for node in ET.parse(folder / name).getroot().iterfind(path, _TEI)
            ]
    return []


def sentences_of(paper: WebPaper, root: Path) -> list[str]:
    """The paper's qualifying ground-truth sentences: its abstract's, then its body's."""
    assert paper.corpus_id is not None
    texts = [paper.abstract or "", *_paragraphs(root / "papers" / "regular" / paper.corpus_id)]
    found: list[str] = []
    for text in texts:
        for sentence in _SENTENCE_END.split(squash(text)):
            if (
                MIN_CHARS <= len(sentence) <= MAX_CHARS
                and not _DEBRIS.search(sentence)
                and sentence[-1] in ".!?"
            ):
                found.append(sentence)
    return list(dict.fromkeys(found))


def paraphrased(sentence: str) -> str:
    third = {"we": "they", "our": "their", "us": "them", "We": "They", "Our": "Their"}
    reported = re.sub(r"\b(?:[Ww]e|[Oo]ur|us)\b", lambda m: third[m.group(0)], sentence)
    return f"The authors report that {reported[0].lower()}{reported[1:]}"


def changed_number(sentence: str) -> str | None:
    for match in _NUMBER.finditer(sentence):
        value = match.group(1)
        if _YEAR.match(value):
            continue
        number = float(value)
        changed = number * 2 + 3 if number < 50 else number / 2 + 1
        text = f"{changed:.{len(value.split('.')[1])}f}" if "." in value else str(int(changed))
        return sentence[: match.start(1)] + text + sentence[match.end(1) :]
    return None


def flipped_direction(sentence: str) -> str | None:
    for match in re.finditer(r"[A-Za-z]+", sentence):
        opposite = _OPPOSITES.get(match.group(0).lower())
        if opposite:
            return sentence[: match.start()] + opposite + sentence[match.end() :]
    return None


def dropped_population(sentence: str) -> str | None:
    match = _POPULATION.search(sentence)
    if match is None:
        return None
    return " ".join((sentence[: match.start()] + sentence[match.end() :]).split())


def labelled_set(papers: list[WebPaper], root: Path, per_kind: int) -> list[Claim]:
    claims: list[Claim] = []
    sentences = {paper.key: sentences_of(paper, root) for paper in papers}
    for index, paper in enumerate(papers):
        own = sentences[paper.key]
        made: dict[str, list[str]] = {
            "true_quoted": own[:per_kind],
            "true_paraphrase": [paraphrased(s) for s in own[per_kind : 2 * per_kind]],
        }
        for kind, mutate in (
            ("changed_number", changed_number),
            ("flipped_direction", flipped_direction),
            ("dropped_population", dropped_population),
        ):
            made[kind] = [m for m in map(mutate, own) if m][:per_kind]
        others = [p for p in papers[index + 1 :] + papers[:index] if split_of(p) == split_of(paper)]
        made["not_addressed"] = [sentences[p.key][0] for p in others if sentences[p.key]][:per_kind]
        claims += [Claim(paper, kind, text) for kind in KINDS for text in made[kind]]
    return claims


# --- running -------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    claim: Claim
    verdict: str
    confidence: float
    seconds: float
    note: str


def named_source(paper: WebPaper) -> str:
    return paper.arxiv_id or f"https://doi.org/{paper.doi}"


async def check_all(claims: list[Claim], mode: str, verbose: bool) -> list[Outcome]:
    from functions.answer.claims import claim_checkers, claim_response
    from functions.answer.schemas import ClaimVerifyResponse
    from functions.answer.wiring import build_service
    from functions.common.settings import get_settings

    checkers: ClaimCheckers = claim_checkers(build_service(get_settings()))
    outcomes = []
    for claim in claims:
        sources = [named_source(claim.paper)] if mode == "sources" else []
        started = time.perf_counter()
        async with checkers() as checker:
            check = await checker.check(claim.text, sources, "bench")
        seconds = time.perf_counter() - started
        body = ClaimVerifyResponse.model_validate(claim_response(check))
        note = body.evidence[0].note if body.evidence else "; ".join(body.notes)
        outcome = Outcome(claim, body.verdict, body.confidence, seconds, note)
        outcomes.append(outcome)
        if verbose or outcome.verdict != claim.expected:
            mark = "ok  " if outcome.verdict == claim.expected else "MISS"
            print(
                f"  {mark} {split_of(claim.paper):<7} {claim.kind:<18} -> {outcome.verdict:<21} {seconds:5.2f}s  "
                f"{claim.text[:90]!r}  [{note[:80]}]",
                flush=True,
            )
    return outcomes


def report(outcomes: list[Outcome], half: str) -> None:
    chosen = [o for o in outcomes if split_of(o.claim.paper) == half]
    if not chosen:
        return
    papers = len({o.claim.paper.key for o in chosen})
    print(f"\n{half}: {len(chosen)} claims from {papers} papers; rows expected kind, columns verdict")
    header = "".join(f"{SHORT.get(v, 'insuff'):>8}" for v in VERDICTS)
    print(f"  {'kind (expected)':<40}{header}{'right':>8}")
    for kind in KINDS:
        row = [o for o in chosen if o.claim.kind == kind]
        if not row:
            continue
        counts = Counter(o.verdict for o in row)
        right = counts[EXPECTED[kind]]
        cells = "".join(f"{counts[v]:>8}" for v in VERDICTS)
        print(f"  {f'{kind} ({EXPECTED[kind]})':<40}{cells}{f'{right}/{len(row)}':>8}")
    right = sum(o.verdict == o.claim.expected for o in chosen)
    false = [o for o in chosen if o.claim.kind in FALSE_KINDS]
    caught = sum(o.verdict != "supported" for o in false)
    true = [o for o in chosen if o.claim.expected == "supported"]
    print(f"  verdict as expected: {right}/{len(chosen)} ({right / len(chosen):.0%})")
    if false:
        print(f"  false claims not called supported: {caught}/{len(false)} ({caught / len(false):.0%})")
    if true:
        kept = sum(o.verdict == "supported" for o in true)
        print(f"  true claims supported: {kept}/{len(true)} ({kept / len(true):.0%})")
    seconds = sorted(o.seconds for o in chosen)
    p95 = seconds[min(len(seconds) - 1, round(0.95 * (len(seconds) - 1)))]
    print(
        f"  latency per call: p50 {statistics.median(seconds):.2f} s, p95 {p95:.2f} s, max {seconds[-1]:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="heldout")
    parser.add_argument("--mode", choices=("sources", "search"), default="sources")
    parser.add_argument("--per-kind", type=int, default=3, help="claims of each kind per paper (default 3)")
    parser.add_argument("--verbose", action="store_true", help="every claim, not only the misses")
    add_condition_options(parser)
    args = parser.parse_args()
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # the figures, not each connector's log line
    from functions.local_runtime.aws import EmbeddedAws

    try:
        root = corpus_dir()
        papers = literature(redate_years=None)
    except CorpusMissing as exc:
        raise SystemExit(str(exc)) from exc
    relevant = [p for p in papers if p.corpus_id]
    halves = ("dev", "heldout") if args.split == "all" else (args.split,)
    claims = [c for c in labelled_set(relevant, root, args.per_kind) if split_of(c.paper) in halves]
    if args.mode == "search":  # another paper's sentence is a true claim of the literature searched
        claims = [c for c in claims if c.kind != "not_addressed"]
    print(
        f"claims: {len(claims)} ({', '.join(f'{k} {sum(c.kind == k for c in claims)}' for k in KINDS)}) from "
        f"{len({c.paper.key for c in claims})} corpus papers, halves {', '.join(halves)}; mode {args.mode}; "
        f"no LLM; cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"conditions: {describe_conditions(no_politeness=args.no_politeness, latency=not args.no_latency)}")
    site = CorpusWeb(papers, latency=not args.no_latency)
    site.start()
    try:
        with EmbeddedAws(extra_environment=site.environment(no_politeness=args.no_politeness)):
            outcomes = asyncio.run(check_all(claims, args.mode, args.verbose))
    finally:
        site.stop()
    for half in halves:
        report(outcomes, half)


if __name__ == "__main__":
    main()

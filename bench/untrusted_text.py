"""Benchmark: how many real sentences the untrusted-text detector flags, how many attacks it catches on the
paths that feed every surface, and what it costs per sentence.

    .venv/bin/python -m bench.untrusted_text [--corpus ../shared/corpus] [--show]

Every PDF of the corpus (papers, regular and difficult, and the textbook chapters) is read with pypdfium2,
line breaks joined, and cut into sentences as evidence chunks are (`functions/common/text.py`); the
sentences are screened in passages of PASSAGE consecutive sentences (a sentence is judged in the context of
the one before it), no links of their own allowed. Printed per group: sentences, sentences flagged as
addressed to the reader or a model, sentences withheld only for a foreign link or e-mail address.

Then the attack files under tests/unit/research/attacks/ (share caught, each line alone), and the handling
directives' held-out set (`held_out_directives.txt`, a line's sentences being one attack) planted in
paragraphs of the genuine sentences of `held_out_genuine.txt`, four before and four after each attack, as
the two screening paths see them:
- the answer engine's (`retriever.screen_chunks` on page chunks): what the quick and comprehensive
  answers, the stream's deltas and its final event are written from;
- the research job's (`job.evidence.screen_evidence` on one quote per sentence, as extraction makes them):
  what a job's synthesis, evidence and report are written from;
and the Verifier: how many claims repeating an attacker sentence word for word the paragraph carrying it
supports (its directive sentences are never what a claim is checked against).
Targets: no real paper sentence flagged beyond those carrying a foreign link; every attacker sentence
withheld; genuine sentences of the same paragraphs dropped <= 1 %.
Last, the time per sentence, and how many sentences the rules handed to the embedder (and what they cost).
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from pathlib import Path

from functions.common.models import EvidenceQuote, ExtractedPaper, Paper
from functions.common.text import sentence_spans
from functions.research.checking.verifier import SUPPORTED, verify_claim
from functions.research.job.evidence import screen_evidence
from functions.research.retrieval import directive_intents
from functions.research.retrieval.evidence import PAGE, EvidenceChunk, SourceDoc
from functions.research.retrieval.retriever import screen_chunks
from functions.research.retrieval.screening import Candidate
from functions.research.retrieval.untrusted_text import STRONG, prime, screen, screen_in_order

ATTACKS = Path(__file__).resolve().parent.parent / "tests" / "unit" / "research" / "attacks"
MAX_PAGES = 60
PASSAGE = 6  # sentences screened together, about a page chunk


def pdf_text(path: Path) -> str | None:
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    try:
        document = pdfium.PdfDocument(str(path))
    except Exception:  # encrypted or unreadable: the corpus has such files on purpose
        return None
    pages = [
        document[index].get_textpage().get_text_range() for index in range(min(len(document), MAX_PAGES))
    ]
    text = re.sub(r"-\n(?=[a-z])", "", "\n".join(pages))
    return re.sub(r"\s*\n\s*", " ", text)


def _lines(name: str) -> list[str]:
    return [
        line.strip() for line in (ATTACKS / name).read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def corpus_figures(corpus: Path, show: bool) -> tuple[float, float, int]:
    groups = {
        "papers/regular": sorted((corpus / "papers" / "regular").rglob("*.pdf")),
        "papers/difficult": sorted((corpus / "papers" / "difficult").rglob("*.pdf")),
        "textbook": sorted((corpus / "textbook").rglob("*.pdf")),
    }
    elapsed, cpu, judged = 0.0, 0.0, 0
    for group, paths in groups.items():
        counts: Counter[str] = Counter()
        for path in paths:
            text = pdf_text(path)
            if not text:
                continue
            sentences = [text[start:end] for start, end in sentence_spans(text)]
            passages: list[tuple[str, frozenset[str], bool]] = [
                (" ".join(sentences[i : i + PASSAGE]), frozenset(), i > 0)
                for i in range(0, len(sentences), PASSAGE)
            ]
            began, began_cpu = time.perf_counter(), time.process_time()
            prime(passage for passage, _, _ in passages)  # as the answer engine and the job do
            results = screen_in_order(passages)
            elapsed += time.perf_counter() - began
            cpu += time.process_time() - began_cpu
            judged += len(sentences)
            counts["sentences"] += len(sentences)
            for result in results:
                for clause in result.hostile:
                    signals = set(clause.verdict.signals)
                    kind = "foreign link only" if signals & STRONG == {"foreign_link"} else "addressed"
                    counts[kind] += 1
                    if show and kind == "addressed":
                        print(
                            f"  {path.parent.name}: {sorted(signals)} | {result.text[clause.start : clause.end][:160]}"
                        )
        print(
            f"{group}: {counts['sentences']} sentences, {counts['addressed']} flagged as addressed to the "
            f"reader or a model, {counts['foreign link only']} withheld for a foreign link or e-mail only"
        )
    return elapsed, cpu, judged


AROUND = 8  # genuine sentences around each attack, half before, half after


def _paragraphs() -> list[tuple[list[str], list[str]]]:
    """Each held-out attack (its sentences) between genuine sentences, AROUND / 2 before and after it."""
    genuine = _lines("held_out_genuine.txt")
    planted = []
    for index, attack in enumerate(_lines("held_out_directives.txt")):
        around = [genuine[(AROUND * index + k) % len(genuine)] for k in range(AROUND)]
        attack_sentences = [attack[start:end] for start, end in sentence_spans(attack)]
        planted.append((attack_sentences, around))
    return planted


def _planted(attack: list[str], around: list[str]) -> list[str]:
    return [*around[: AROUND // 2], *attack, *around[AROUND // 2 :]]


def _answer_engine_kept(sentences: list[str], number: int) -> str:
    text = " ".join(sentences)
    source = SourceDoc(f"src-{number}", "Planted", f"https://example.org/{number}", "library", 1.0, "", None)
    chunk = EvidenceChunk(f"chunk-{number:010d}", source.source_id, text, 1.0, PAGE, 1, 0, len(text))
    clean, _, _ = screen_chunks([chunk], [source])
    return " ".join(part.text for part in clean)


def _job_kept(sentences: list[str], number: int) -> str:
    quotes, offset = [], 0
    for sentence in sentences:
        quotes.append(
            EvidenceQuote(quote=sentence, page=1, char_start=offset, char_end=offset + len(sentence))
        )
        offset += len(sentence) + 1
    paper = ExtractedPaper(
        source_url=f"https://example.org/{number}", canonical_id=str(number), success=True, evidence=quotes
    )
    candidate = Candidate(
        Paper(title="Planted", url=f"https://example.org/{number}", source="library"), f"src-{number}"
    )
    return " ".join(item.text for item in screen_evidence([(candidate, paper)]).evidence)


def held_out_figures() -> None:
    planted = _paragraphs()
    attackers = sum(len(attack) for attack, _ in planted)
    genuine = sum(len(around) for _, around in planted)
    for name, kept_by in (
        ("answer engine (quick, comprehensive, stream deltas, stream final)", _answer_engine_kept),
        ("research job (synthesis, evidence, report)", _job_kept),
    ):
        leaked = dropped = 0
        for number, (attack, around) in enumerate(planted):
            kept = kept_by(_planted(attack, around), number)
            leaked += sum(1 for sentence in attack if sentence in kept)
            dropped += sum(1 for sentence in around if sentence not in kept)
        print(
            f"held-out directives, {name}: attacker sentences withheld {attackers - leaked}/{attackers}, "
            f"genuine sentences dropped {dropped}/{genuine} ({100 * dropped / genuine:.1f} %)"
        )
    supported = sum(
        1
        for attack, around in planted
        for sentence in attack
        if verify_claim(sentence, [" ".join(_planted(attack, around))])[0] == SUPPORTED
    )
    print(
        f"held-out directives, verifier: claims repeating an attacker sentence supported by the paragraph "
        f"that carries it {supported}/{attackers}"
    )
    alone = _lines("held_out_genuine.txt")
    flagged = sum(1 for sentence in alone if screen(sentence).hostile)
    print(f"held-out genuine sentences about summaries, citations, rankings: {flagged}/{len(alone)} flagged")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpus"
    )
    parser.add_argument("--show", action="store_true", help="print every flagged sentence")
    args = parser.parse_args()

    elapsed, cpu, judged = corpus_figures(args.corpus, args.show)
    handed = directive_intents.handed_over()  # the corpus's alone (the attack files come next)
    for name in sorted(path.name for path in ATTACKS.glob("*.txt")):
        if name == "held_out_genuine.txt":
            continue
        lines = _lines(name)
        caught = sum(1 for line in lines if screen(line).hostile)
        print(f"attacks {name}: {caught}/{len(lines)} lines caught (each alone)")
    held_out_figures()
    print(
        f"time per sentence: {1000 * elapsed / max(judged, 1):.2f} ms wall, {1000 * cpu / max(judged, 1):.2f} ms "
        f"CPU (what a loaded machine does not inflate) over {judged} corpus sentences"
    )
    print(
        f"embedder: {handed.sentences} distinct corpus sentences handed over by the rules "
        f"({100 * handed.sentences / max(judged, 1):.2f} % of the corpus's), {handed.seconds:.2f} s embedding, "
        f"{1000 * handed.seconds / max(handed.sentences, 1):.0f} ms each "
        f"({'MiniLM loaded' if directive_intents.available() else 'no MiniLM weights: rules alone'})"
    )


if __name__ == "__main__":
    main()

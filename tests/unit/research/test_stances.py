"""Where sources agree, disagree or are silent: one sentence of the writer's own under each facet of an
answer (led into the facet's first finding, never judged as a claim) and each facet of a job report."""

from __future__ import annotations

import asyncio

from functions.research.checking.critic import Contradiction, find_contradictions
from functions.research.checking.verifier import SUPPORTED, verify_claim
from functions.research.planning.answer import plan_answer
from functions.research.retrieval.evidence import EvidenceChunk
from functions.research.writing.stances import stance
from functions.research.writing.writer import DraftSentence, ExtractiveWriter
from tests.unit.orchestrate.fixtures import extracted, plan
from tests.unit.research.test_attribution import CHUNKS, QUESTION, SOURCES, _chunk
from tests.unit.research.test_synthesis import synthesize

LABELS = {"src-a": "Lee et al. (2023)", "src-b": "Kim (2020)"}
AGREEING = [
    _chunk("chunk-00000000a1", "src-a", "Statins lowered stroke risk in older adults with diabetes.", 0.9),
    _chunk("chunk-00000000b1", "src-b", "In older adults with diabetes, statins lowered stroke risk.", 0.8),
]


def _stance(cited: list[str], contradictions: list[Contradiction] | None = None) -> str:
    evidence = {c.chunk_id: c.text for c in AGREEING + CHUNKS}
    source_of = {c.chunk_id: c.source_id for c in AGREEING + CHUNKS}
    return stance("Stroke risk", cited, evidence, source_of, contradictions or [], LABELS.__getitem__)


def test_sources_stating_one_same_finding_are_named_as_agreeing() -> None:
    assert _stance(["chunk-00000000a1"]) == "Lee et al. (2023) and Kim (2020) agree on stroke risk"


def test_sources_on_different_findings_are_counted_not_said_to_agree() -> None:
    assert _stance(["chunk-000000000a", "chunk-000000000d"]) == "Two sources report on stroke risk"
    assert _stance(["chunk-000000000c"]) == "One source reports on stroke risk"


def test_a_contradiction_the_critic_found_names_both_sides() -> None:
    opposed = find_contradictions(CHUNKS)
    assert opposed
    said = _stance(["chunk-000000000a"], contradictions=opposed)
    assert said == "On stroke risk, Lee et al. (2023) and Kim (2020) disagree"


def test_a_facet_no_finding_addresses_is_said_to_be_silent() -> None:
    assert _stance([]) == "No source found addresses stroke risk"


def _answer(
    chunks: list[EvidenceChunk], contradictions: bool, question: str = QUESTION
) -> list[DraftSentence]:
    answer_plan = plan_answer(question, preset="comprehensive")
    opposed = find_contradictions(chunks) if contradictions else []
    writer = ExtractiveWriter()
    draft = asyncio.run(
        writer.write(answer_plan, chunks, primary=set(SOURCES), sources=SOURCES, contradictions=opposed)
    )
    return draft.sentences


def _first_under_each_heading(sentences: list[DraftSentence]) -> dict[str, DraftSentence]:
    firsts: dict[str, DraftSentence] = {}
    for sentence in sentences[1:]:
        firsts.setdefault(sentence.section or "", sentence)
    return firsts


def test_each_facet_of_an_answer_opens_with_the_sources_stance_which_is_not_a_claim() -> None:
    for chunks, contradictions, expected in (
        (CHUNKS, True, "On stroke risk, Lee et al. (2023) and Kim (2020) disagree: "),
        (AGREEING + CHUNKS[2:], False, "Kim (2020) and Lee et al. (2023) agree on stroke risk: "),
    ):
        sentences = _answer(chunks, contradictions)
        firsts = _first_under_each_heading(sentences)
        assert firsts["Stroke risk"].text.startswith(expected), firsts  # first the source shown
        for sentence in firsts.values():
            assert sentence.text.split(": ", 1)[0] in sentence.attribution[0]
            assert sentence.claim.split()[0] not in {"On", "One", "Two", "Lee", "Kim"}
            quote = next(c.text for c in chunks if c.chunk_id == sentence.chunk_ids[0])
            assert verify_claim(sentence.claim, [quote])[0] == SUPPORTED, sentence
        later = [s for s in sentences[1:] if s not in firsts.values()]
        assert all(" agree" not in s.text and " disagree" not in s.text for s in later)


def test_the_direct_answer_says_which_facets_no_source_addresses() -> None:
    sentences = _answer(CHUNKS, False, "How do statins affect stroke risk and dementia in older adults?")
    assert "no source found addresses dementia" in sentences[0].text
    assert "dementia" not in sentences[0].claim and "Dementia" not in {s.section for s in sentences}


def test_each_facet_of_a_report_says_where_its_sources_agree_disagree_or_are_silent() -> None:
    sources = [
        extracted(1, [("finding", "Block sparse attention reduced memory use by 40% on long documents.")]),
        extracted(2, [("finding", "On long documents, block sparse attention reduced memory use by 20%.")]),
    ]
    body = synthesize(plan("rapid"), sources).synthesis_text
    sections = {part.split("\n", 1)[0]: part for part in body.split("### ")[1:]}
    # The critic's numeric disagreement (40% vs 20%), its two sides alike by name: counted, citing both.
    assert sections["Long documents"].startswith(
        "Long documents\n\nOn long documents, two sources disagree. [ev-"
    )
    assert "No source found addresses transformer architectures." in sections["Transformer architectures"]


def test_report_sources_stating_one_same_finding_agree() -> None:
    sources = [
        extracted(1, [("finding", "Block sparse attention reduced memory use on long documents.")]),
        extracted(2, [("finding", "On long documents, block sparse attention reduced memory use.")]),
    ]
    body = synthesize(plan("rapid"), sources).synthesis_text
    assert "### Long documents\n\nTwo sources agree on long documents. [ev-" in body

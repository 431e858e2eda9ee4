"""The attributed rewrite of a quoted sentence, abbreviations expanded from a source's own definitions,
and the extractive writer's layout: a direct answer first, then the findings under the question's facets."""

from __future__ import annotations

import asyncio

import pytest

from functions.research.checking.verifier import SUPPORTED, numbers_in, verify_claim
from functions.research.planning.answer import plan_answer
from functions.research.retrieval.evidence import ABSTRACT, EvidenceChunk, SourceDoc
from functions.research.writing.abbreviations import definitions
from functions.research.writing.attribution import (
    attribute,
    author_label,
    foreign_markers,
    speaks_for_itself,
    without_markers,
)
from functions.research.writing.phrasing import Authorship, Phrasing
from functions.research.writing.writer import DraftSentence, ExtractiveWriter, facet_heading

LEE = author_label(["Lee, Jane", "Chen, Bo", "Wu, Ann"], 2023)
KIM = author_label(["Min Kim"], 2020)


def test_author_labels_name_the_first_author_and_the_year() -> None:
    assert LEE == "Lee et al. (2023)"
    assert KIM == "Kim (2020)"
    assert author_label(["Lee, J.", "Chen, B."], 2023) == "Lee and Chen (2023)"
    assert author_label([], 2021, "Dense retrieval for open domain question answering") == (
        "\u201cDense retrieval for open domain question\u2026\u201d (2021)"
    )


@pytest.mark.parametrize(
    ("quote", "label", "shown"),
    [
        ("We describe a deployed system.", LEE, "Lee et al. (2023) describe a deployed system."),
        ("We describe a deployed system.", KIM, "Kim (2020) describes a deployed system."),
        ("In this paper, we propose a router.", LEE, "Lee et al. (2023) propose a router."),
        (
            "Here we also show that our model may overfit.",
            KIM,
            "Kim (2020) also shows that their model may overfit.",
        ),
        ("This paper introduces a tool.", LEE, "The paper by Lee et al. (2023) introduces a tool."),
        (
            "The results of this study suggest a link.",
            LEE,
            "The results of the study by Lee et al. (2023) suggest a link.",
        ),
        ("To address this, we propose a loss.", LEE, "To address this, Lee et al. (2023) propose a loss."),
        (
            "In 38 patients, the drug did not reduce mortality.",
            LEE,
            "In 38 patients, Lee et al. (2023) report that the drug did not reduce mortality.",
        ),
        ("Dense retrieval beats BM25.", KIM, "Kim (2020) reports that dense retrieval beats BM25."),
        # a connective ties the sentence to one the reader does not see
        ("However, dense retrieval may fail.", KIM, "Kim (2020) reports that dense retrieval may fail."),
        ("Finally, we propose a loss.", LEE, "Lee et al. (2023) propose a loss."),
    ],
)
def test_first_person_and_self_reference_become_the_authors(quote: str, label: str, shown: str) -> None:
    attributed = attribute(quote, label)
    assert attributed.text == shown
    assert not speaks_for_itself(attributed.text)
    assert speaks_for_itself(quote) or "report" in shown


def test_a_name_the_source_capitalises_stays_capitalised() -> None:
    shown = attribute("Alzheimer disease progressed in 12 of 40 mice.", LEE, frozenset({"Alzheimer"}))
    assert shown.text == "Lee et al. (2023) report that Alzheimer disease progressed in 12 of 40 mice."


@pytest.mark.parametrize(
    "quote",
    [
        "Graph models improve recall by 12% [8, 9, 14, 17, 25].",
        "Graph models improve recall by 12% [3-5].",
        "Graph models improve recall by 12% (Smith et al., 2019).",
        "Graph models improve recall by 12% (e.g., Smith 2019; Chen and Wu, 2021a).",
        "Graph models improve recall by 12%\u00b9\u00b2.",
    ],
)
def test_the_papers_own_reference_markers_are_removed(quote: str) -> None:
    assert foreign_markers(quote) > 0
    assert without_markers(quote) == "Graph models improve recall by 12%."


def test_numbers_negation_hedges_and_population_are_kept() -> None:
    quote = "We found that the vaccine may not protect adults over 65 (n = 1,204; p < 0.05) [4]."
    attributed = attribute(quote, LEE)
    sentence = DraftSentence(attributed.text, ["ev-1"], attribution=attributed.attribution)
    assert attributed.text == (
        "Lee et al. (2023) found that the vaccine may not protect adults over 65 (n = 1,204; p < 0.05)."
    )
    assert numbers_in(sentence.claim) == [n for n in numbers_in(quote) if n != "4"]
    assert verify_claim(sentence.claim, [quote])[0] == SUPPORTED
    assert without_markers("Values lie in [0, 1].") == "Values lie in [0, 1]."  # an interval, no citation


def test_abbreviations_come_from_the_sources_own_definitions() -> None:
    found = definitions(
        [
            ("ev-1", "We measured the bilateral contrast ratio (BCR) in 38 patients."),
            ("ev-2", "Large language models (LLMs) are used. A Gaussian process (GP) is fitted."),
        ]
    )
    assert {k: (v.long_form, v.chunk_id) for k, v in found.items()} == {
        "BCR": ("bilateral contrast ratio", "ev-1"),
        "LLM": ("large language models", "ev-2"),
        "GP": ("Gaussian process", "ev-2"),
    }


def test_an_abbreviation_is_expanded_at_its_first_use_citing_its_definition() -> None:
    texts = [
        ("ev-1", "src-a", "We measured the bilateral contrast ratio (BCR) in 38 patients."),
        ("ev-2", "src-a", "BCR was lower in malignant lesions."),
        ("ev-3", "src-a", "A high BCR predicted benign outcomes."),
        ("ev-4", "src-b", "XYZ scores rose."),
    ]
    phrasing = Phrasing({"src-a": Authorship(["Lee, J."], 2023)}, texts)
    first = phrasing.phrase(texts[1][2], "src-a", ["ev-2"])
    second = phrasing.phrase(texts[2][2], "src-a", ["ev-3"])
    assert (
        first.text == "Lee (2023) reports that bilateral contrast ratio (BCR) was lower in malignant lesions."
    )
    assert first.chunk_ids == ["ev-2", "ev-1"]  # the definition is cited too
    assert second.text == "Lee (2023) reports that a high BCR predicted benign outcomes."
    assert phrasing.phrase(texts[3][2], "src-b", ["ev-4"]).text == "One study reports that XYZ scores rose."


def _source(source_id: str, authors: list[str], year: int) -> SourceDoc:
    return SourceDoc(
        source_id, f"Title {source_id}", f"https://example.org/{source_id}", "arxiv", 1.0, "", None,
        year=year, authors=authors, answers_question=True,
    )  # fmt: skip


def _chunk(chunk_id: str, source_id: str, text: str, score: float) -> EvidenceChunk:
    return EvidenceChunk(chunk_id, source_id, text, score, ABSTRACT, None, 0, len(text))


QUESTION = "How do statins affect stroke risk in older adults?"
CHUNKS = [
    _chunk(
        "chunk-000000000a",
        "src-a",
        "We show that statins lowered stroke risk by 21% in older adults [12].",
        0.9,
    ),
    _chunk(
        "chunk-000000000b", "src-b", "In 410 patients, statins reduced ischaemic stroke risk by 18%.", 0.8
    ),
    _chunk("chunk-000000000c", "src-a", "This study found no effect of statins on haemorrhagic stroke.", 0.7),
    _chunk("chunk-000000000d", "src-b", "Older adults often stop statins within a year.", 0.6),
]
SOURCES = {
    "src-a": _source("src-a", ["Lee, Jane", "Chen, Bo", "Wu, Ann"], 2023),
    "src-b": _source("src-b", ["Kim, Min"], 2020),
}


def _write(preset: str) -> list[DraftSentence]:
    plan = plan_answer(QUESTION, preset=preset)
    draft = asyncio.run(ExtractiveWriter().write(plan, CHUNKS, primary=set(SOURCES), sources=SOURCES))
    return draft.sentences


@pytest.mark.parametrize("preset", ["fast", "comprehensive"])
def test_the_answer_opens_with_a_direct_answer_then_findings_under_the_facets(preset: str) -> None:
    sentences = _write(preset)
    plan = plan_answer(QUESTION, preset=preset)
    opening = sentences[0]
    assert opening.section is None
    assert opening.text.startswith("Both sources cited here address the question as a whole")
    assert "Lee et al. (2023) show that statins lowered stroke risk by 21% in older adults." in opening.text
    assert opening.claim == "They show that statins lowered stroke risk by 21% in older adults."
    headings = {sentence.section for sentence in sentences[1:]}
    if preset == "comprehensive":  # academic style: one heading per facet of the question
        assert headings <= {facet_heading(facet) for facet in plan.facets} and headings
    else:  # plain style: a paragraph of its own, no heading
        assert headings == {""}
    for sentence in sentences:
        assert not speaks_for_itself(sentence.text) and foreign_markers(sentence.text) == 0
        quote = next(c.text for c in CHUNKS if c.chunk_id == sentence.chunk_ids[0])
        assert verify_claim(sentence.claim, [quote])[0] == SUPPORTED, sentence
    shown = " ".join(sentence.text for sentence in sentences)
    assert "In 410 patients, Kim (2020) reports that statins reduced ischaemic stroke risk by 18%." in shown
    assert "The study by Lee et al. (2023) found no effect of statins on haemorrhagic stroke." in shown
    if preset == "fast":  # the same source again in the same paragraph
        assert (
            "Kim (2020) reports that statins reduced ischaemic stroke risk by 18%. They also report" in shown
        )

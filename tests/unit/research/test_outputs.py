from __future__ import annotations

import asyncio

from bibtexparser.entrypoint import parse_string

from functions.research.job import outputs
from functions.research.job.synthesis import synthesize
from functions.research.retrieval.screening import Candidate, source_id_for
from tests.unit.orchestrate.fixtures import extracted, paper, plan


def _candidate(index: int, **overrides: object) -> Candidate:
    item = paper(index, **overrides)
    return Candidate(
        paper=item, source_id=source_id_for(item.canonical_id), scores={"relevance": 0.8}, total_score=3.2
    )


def test_bibtex_is_valid_with_awkward_metadata() -> None:
    sources = [
        _candidate(1, title="Attention & {braces} at 50% cost_$#", authors=["Müller, J.", "O'Brien, K."]),
        _candidate(2, title="Attention & {braces} at 50% cost_$#", authors=["Müller, J."]),  # same key base
        _candidate(3, arxiv_id=None, url="https://doi.org/10.1/x%20y", doi="10.1/x_y", authors=[], year=None),
    ]
    text, keys = outputs.bibtex_entries(sources)
    outputs.validate_bibtex(text, 3)
    library = parse_string(text)
    assert not library.failed_blocks and len(library.entries) == 3
    assert len(set(keys.values())) == 3
    entry = library.entries[2]
    assert entry.entry_type == "article" and entry.fields_dict["doi"].value == r"10.1/x\_y"
    assert library.entries[0].fields_dict["eprint"].value == "2501.10001"


def test_report_and_libraries_use_verified_evidence() -> None:
    sources = [
        extracted(1, [("finding", "Sparse attention cut memory use by 40% on long documents.")]),
        extracted(2, [("finding", "Sparse attention kept accuracy within one point of dense models.")]),
    ]
    synthesis = asyncio.run(synthesize(plan("rapid"), sources))
    candidates = [candidate for candidate, _ in sources]
    _, keys = outputs.bibtex_entries(candidates)
    report = outputs.report_markdown(synthesis, candidates, keys, "COMPLETED")
    assert "## References" in report and "Sparse attention cut memory use by 40%" in report
    assert all(f"[@{key}]" in report for key in keys.values())
    library = outputs.quote_library(candidates, synthesis.evidence)
    assert library["total_quotes"] == 2 and library["quotes"][0]["page"] == 1
    annotated = outputs.annotated_bibliography(candidates, keys, {}, synthesis.evidence)
    assert "Extraction failed: not attempted" in annotated and "p. 1 (finding)" in annotated


def test_a_struck_quote_is_listed_in_no_artifact_of_a_synthesis_that_still_holds_it() -> None:
    """Approved for delivery without a new synthesis: the draft still holds the quote a reviewer struck."""
    sources = [
        extracted(1, [("finding", "Sparse attention cut memory use by 40% on long documents.")]),
        extracted(2, [("finding", "Sparse attention kept accuracy within one point of dense models.")]),
    ]
    draft = asyncio.run(synthesize(plan("rapid"), sources))
    struck = draft.evidence[0]
    assert any(struck.chunk_id in claim.evidence_chunk_ids for claim in draft.claims if claim.kept)

    delivered = outputs.without_struck(draft, [struck.chunk_id])

    candidates = [candidate for candidate, _ in sources]
    _, keys = outputs.bibtex_entries(candidates)
    library = outputs.quote_library(candidates, delivered.evidence)
    assert library["total_quotes"] == 1 and struck.chunk_id not in outputs.to_json(library)
    assert struck.text not in outputs.to_json(library)
    report = outputs.report_markdown(delivered, candidates, keys, "COMPLETED")
    annotated = outputs.annotated_bibliography(candidates, keys, {}, delivered.evidence)
    assert struck.chunk_id not in report and struck.chunk_id not in annotated
    assert struck.text not in report and struck.text not in annotated
    kept = draft.evidence[1]
    kept_statement = f"{kept.text[0].lower()}{kept.text[1:]} [{kept.chunk_id}]"
    assert kept_statement in delivered.synthesis_text and kept_statement in delivered.executive_summary
    # Only the struck statement goes: the summary's opening and the sections still holding a statement stay.
    assert delivered.executive_summary.split(" Smith")[0] == draft.executive_summary.split(" Smith")[0]
    assert (
        "### Long documents" not in delivered.synthesis_text
        and "### Other findings" in delivered.synthesis_text
    )
    assert all(struck.chunk_id not in claim.evidence_chunk_ids for claim in delivered.claims)
    assert [claim.claim_id for claim in delivered.claims] == [claim.claim_id for claim in draft.claims]
    assert outputs.without_struck(draft, []) is draft

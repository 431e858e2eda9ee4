"""The synthesis holds the house's evidence and claim types in memory and stores the job's field names
(functions/research/job/result.py): what Finalize, a checkpoint and the results document read."""

from __future__ import annotations

from functions.research.checking.verifier import ClaimVerification
from functions.research.job.outputs import without_struck
from functions.research.retrieval.evidence import PAGE, EvidenceChunk
from tests.unit.orchestrate.fixtures import synthesis_result

EVIDENCE = [
    EvidenceChunk(
        "ev-00000000a1", "src-a", "Sleep loss cut recall by 20%.", 0.9, PAGE, 3, 40, 69, None, "finding"
    ),
    EvidenceChunk(
        "ev-00000000b2", "src-b", "Recall fell after one night.", 0.7, PAGE, 1, 0, 28, "Results", "finding"
    ),
]
CLAIMS = [
    ClaimVerification(
        "clm-001", "Sleep loss cut recall by 20%.", "supported", ["ev-00000000a1"], 0.5, "stated"
    ),
    ClaimVerification("clm-002", "Recall fell.", "unsupported", ["ev-00000000b2"], 0.0, "not stated"),
]


def test_evidence_and_claims_are_stored_under_the_jobs_field_names() -> None:
    stored = synthesis_result(CLAIMS, EVIDENCE).to_dict()
    assert stored["evidence"][1] == {
        "evidence_id": "ev-00000000b2",
        "source_id": "src-b",
        "quote": "Recall fell after one night.",
        "page": 1,
        "section": "Results",
        "kind": "finding",
        "relevance_score": 0.7,
        "char_start": 0,
        "char_end": 28,
    }
    assert [list(claim) for claim in stored["claims"]] == [
        ["claim_id", "claim_text", "evidence_ids", "verdict", "confidence", "notes", "kept"]
    ] * 2
    assert [claim["kept"] for claim in stored["claims"]] == [True, False]


def test_the_stored_form_reads_back_as_the_same_synthesis() -> None:
    written = synthesis_result(CLAIMS, EVIDENCE)
    read = type(written).model_validate(written.to_dict())
    assert read == written
    assert read.evidence[0].origin == PAGE and read.claims[0].evidence_chunk_ids == ["ev-00000000a1"]


def test_a_claim_whose_quotes_were_all_struck_is_stored_and_read_back_as_not_kept() -> None:
    delivered = without_struck(synthesis_result(CLAIMS, EVIDENCE), ["ev-00000000a1"])
    stored = delivered.to_dict()["claims"][0]
    assert stored["verdict"] == "supported" and stored["kept"] is False and stored["evidence_ids"] == []
    read = type(delivered).model_validate(delivered.to_dict()).claims[0]
    assert read.verdict == "supported" and not read.kept

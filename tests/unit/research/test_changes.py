"""The living-review diff (functions/schedules/changes.py): pure, over two results documents."""

from __future__ import annotations

import json
from typing import Any

from functions.schedules.changes import CHANGE_LISTS, changes_since_last_run, compact, has_changes


def _source(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "source_id": f"src-{n:04d}",
        "title": f"Sparse attention for long documents, study number {n}",
        "doi": f"10.5555/topic.{n:04d}",
        "url": f"https://doi.org/10.5555/topic.{n:04d}",
        "year": 2024,
        **extra,
    }


def _results(
    sources: list[dict[str, Any]],
    *,
    claims: list[dict[str, Any]] | None = None,
    themes: list[str] | None = None,
    evidence: list[dict[str, Any]] | None = None,
    failed: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "sources": sources,
        "claims": claims or [],
        "evidence": evidence or [],
        "synthesis": {"primary_themes": themes or []},
        "execution_summary": {"failed_connectors": failed or []},
    }


def _titles(items: list[dict[str, Any]]) -> list[str]:
    return [item["source_id"] for item in items]


def test_the_first_run_has_nothing_to_compare_with() -> None:
    current = _results([_source(1), _source(2, is_retracted=True)], themes=["Sparse Attention"])
    digest = changes_since_last_run(current, None, previous_job_id=None)
    assert digest["first_run"] is True and digest["previous_job_id"] is None
    for name in CHANGE_LISTS:
        assert digest[name] == [] and digest["counts"][name] == 0
    assert not has_changes(digest)
    # status, not change: a retracted source in the baseline is still named
    assert _titles(digest["retracted_sources"]) == ["src-0002"]
    assert digest["summary"].startswith("first run")


def test_added_removed_screened_out_and_retracted_sources_are_named_exactly() -> None:
    previous = _results([_source(1), _source(2), _source(3), _source(4)])
    current = _results([_source(2), _source(3, is_retracted=True), _source(5)])
    discovered = [_source(4)]  # found again, but not selected this time
    digest = changes_since_last_run(
        current, previous, previous_job_id="job-1", previous_finished_at="t1", discovered=discovered
    )
    assert digest["first_run"] is False and digest["previous_job_id"] == "job-1"
    assert _titles(digest["new_sources"]) == ["src-0005"]
    assert _titles(digest["sources_no_longer_found"]) == ["src-0001"]
    assert _titles(digest["sources_no_longer_selected"]) == ["src-0004"]
    assert _titles(digest["newly_retracted_sources"]) == ["src-0003"]
    assert digest["counts"]["new_sources"] == 1 and has_changes(digest)


def test_a_source_is_the_same_when_any_identifier_matches() -> None:
    before = {
        "source_id": "src-a",
        "title": "Mixture of experts at scale in transformers",
        "url": "https://arxiv.org/abs/2401.00001",
    }
    after = {
        "source_id": "src-b",  # a DOI became known: another canonical id, the same paper
        "title": "Mixture of Experts at Scale in Transformers",
        "doi": "10.1/moe",
        "url": "https://doi.org/10.1/moe",
    }
    digest = changes_since_last_run(_results([after]), _results([before]), previous_job_id="j")
    assert digest["new_sources"] == [] and digest["sources_no_longer_found"] == []


def test_a_source_retracted_already_is_not_newly_retracted() -> None:
    previous = _results([_source(1, is_retracted=True)])
    current = _results([_source(1, is_retracted=True), _source(2, is_retracted=True)])
    digest = changes_since_last_run(current, previous, previous_job_id="j")
    assert _titles(digest["newly_retracted_sources"]) == ["src-0002"]  # new and already retracted
    assert _titles(digest["retracted_sources"]) == ["src-0001", "src-0002"]


def test_claims_whose_verdict_changed_and_themes() -> None:
    claim = {"claim_text": "Sparse attention cut memory use by 40%.", "verdict": "supported", "kept": True}
    steady = {"claim_text": "MoE raised throughput.", "verdict": "supported", "kept": True}
    previous = _results([], claims=[claim, steady], themes=["Sparse Attention", "Quantization"])
    current = _results(
        [],
        claims=[
            {
                **claim,
                "claim_text": "sparse attention cut memory use by 40 %",
                "verdict": "partial",
                "kept": False,
            },
            steady,
        ],
        themes=["sparse attention", "Long Context"],
    )
    digest = changes_since_last_run(current, previous, previous_job_id="j")
    (changed,) = digest["claims_with_changed_verdict"]
    assert (changed["previous_verdict"], changed["verdict"], changed["kept"]) == (
        "supported",
        "partial",
        False,
    )
    assert digest["new_themes"] == ["Long Context"]
    assert digest["vanished_themes"] == ["Quantization"]


def test_kept_claims_citing_a_retracted_source_are_named() -> None:
    evidence = [
        {"evidence_id": "ev-1", "source_id": "src-0001"},
        {"evidence_id": "ev-2", "source_id": "src-0002"},
    ]
    claims = [
        {"claim_text": "A finding from the retracted study.", "evidence_ids": ["ev-1"], "kept": True},
        {"claim_text": "A finding from a sound study.", "evidence_ids": ["ev-2"], "kept": True},
    ]
    current = _results([_source(1, is_retracted=True), _source(2)], claims=claims, evidence=evidence)
    digest = changes_since_last_run(current, None, previous_job_id=None)
    assert digest["claims_citing_retracted_sources"] == [
        {"claim_text": "A finding from the retracted study.", "retracted_source_ids": ["src-0001"]}
    ]


def test_lists_are_bounded_and_counts_stay_whole() -> None:
    previous = _results([])
    current = _results([_source(n) for n in range(60)])
    digest = changes_since_last_run(current, previous, previous_job_id="j", limit=25)
    assert len(digest["new_sources"]) == 25 and digest["counts"]["new_sources"] == 60
    assert digest["truncated"] == ["new_sources"]
    short = compact(digest, 5)
    assert len(short["new_sources"]) == 5 and short["counts"]["new_sources"] == 60
    assert len(json.dumps(short)) < 10_000


def test_failed_connectors_and_lookup_errors_are_caveats() -> None:
    digest = changes_since_last_run(
        _results([], failed=["crossref"]),
        _results([]),
        previous_job_id="j",
        retraction_check={"error": "OpenAlex lookup answered HTTP 503"},
    )
    assert any("crossref failed in this run" in caveat for caveat in digest["caveats"])
    assert any("HTTP 503" in caveat for caveat in digest["caveats"])
    assert digest["retraction_check"]["error"] == "OpenAlex lookup answered HTTP 503"

"""Living reviews over in-memory stores and a scripted retraction lookup: what the Finalize step records."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from functions.common.models import Paper
from functions.common.settings import Settings
from functions.common.storage import InMemoryBlobStore, put_json
from functions.research.retrieval.screening import Candidate
from functions.schedules.living import (
    MAX_EVENT_BYTES,
    CitingAnswer,
    LivingReview,
    PendingResults,
    RetractionAnswer,
)
from functions.schedules.runs import InMemoryScheduleRunStore
from functions.search.connectors.base import UnusableAnswer
from functions.search.connectors.openalex import build_retraction_request, parse_retractions

TEAM = "team-aaaaaaaaaaaa"
SCHEDULE = "0b9f4f9e-4c8b-4a39-9f67-2f0f1f7f3e11"


@dataclass
class Lookup:
    """A RetractionLookup that answers from `flags` (or fails with `error`) and records what it was asked."""

    flags_by_doi: dict[str, bool] = field(default_factory=dict)
    error: str | None = None
    asked: list[list[str]] = field(default_factory=list)

    async def flags(self, dois: Sequence[str]) -> RetractionAnswer:
        self.asked.append(list(dois))
        if self.error:
            return RetractionAnswer({}, self.error)
        return RetractionAnswer({doi: self.flags_by_doi[doi] for doi in dois if doi in self.flags_by_doi})


def _candidate(n: int, *, retracted: bool | None = None, doi: bool = True) -> Candidate:
    paper = Paper(
        title=f"Sparse attention in transformer architectures, study {n}",
        url=f"https://example.org/paper/{n}",
        doi=f"10.5555/topic.{n:04d}" if doi else None,
        source="openalex" if retracted is not None else "arxiv",
        is_retracted=retracted,
    )
    return Candidate(paper=paper, source_id=f"src-{n:04d}")


def _results(candidates: list[Candidate], status: str = "COMPLETED") -> dict[str, Any]:
    return {
        "status": status,
        "sources": [
            {
                "source_id": c.source_id,
                "title": c.paper.title,
                "doi": c.paper.doi,
                "url": c.paper.url,
                "year": 2024,
            }
            for c in candidates
        ],
        "claims": [],
        "evidence": [],
        "synthesis": {"primary_themes": ["Sparse Attention"]},
        "execution_summary": {"failed_connectors": []},
    }


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _review(lookup: Lookup | None = None) -> tuple[LivingReview, InMemoryBlobStore, InMemoryScheduleRunStore]:
    artifacts, runs = InMemoryBlobStore(), InMemoryScheduleRunStore()
    review = LivingReview(runs=runs, artifacts=artifacts, retractions=lookup, run=asyncio.run, clock=Clock())
    return review, artifacts, runs


def _finish(
    review: LivingReview,
    artifacts: InMemoryBlobStore,
    job_id: str,
    candidates: list[Candidate],
    status: str = "COMPLETED",
) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    job = {"job_id": job_id, "schedule_id": SCHEDULE, "research_goal": "goal"}
    results = _results(candidates, status)
    results["changes_since_last_run"] = review.changes(
        PendingResults(TEAM, job, results, {c.source_id: c for c in candidates})
    )
    key = f"teams/{TEAM}/jobs/{job_id}/results.json"
    put_json(artifacts, key, results)
    events: list[tuple[str, dict[str, Any]]] = []
    review.finished(TEAM, job, results, key, lambda name, detail: events.append((name, detail)))
    return results, events


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["source_id"] for item in items]


def test_two_runs_name_what_changed_and_the_second_compares_with_the_first() -> None:
    lookup = Lookup(flags_by_doi={"10.5555/topic.0001": False, "10.5555/topic.0002": False})
    review, artifacts, runs = _review(lookup)
    first, events = _finish(review, artifacts, "job-1", [_candidate(1), _candidate(2), _candidate(3)])
    digest = first["changes_since_last_run"]
    assert digest["first_run"] is True and digest["previous_job_id"] is None
    assert [s["is_retracted"] for s in first["sources"]] == [False, False, None]  # 3: not answered
    assert lookup.asked == [["10.5555/topic.0001", "10.5555/topic.0002", "10.5555/topic.0003"]]
    assert [name for name, _ in events] == ["ResearchDigestReady"]
    assert events[0][1]["has_changes"] is False and events[0][1]["schedule_id"] == SCHEDULE
    remembered = runs.last_run(TEAM, SCHEDULE)
    assert remembered is not None and remembered.job_id == "job-1"

    lookup.flags_by_doi["10.5555/topic.0002"] = True  # retracted since
    second, events = _finish(review, artifacts, "job-2", [_candidate(2), _candidate(3), _candidate(4)])
    digest = second["changes_since_last_run"]
    assert digest["previous_job_id"] == "job-1" and digest["first_run"] is False
    assert _ids(digest["new_sources"]) == ["src-0004"]
    assert _ids(digest["sources_no_longer_found"]) == ["src-0001"]
    assert _ids(digest["newly_retracted_sources"]) == ["src-0002"]
    detail = events[0][1]
    assert detail["has_changes"] is True and detail["changes_since_last_run"]["counts"]["new_sources"] == 1
    assert len(json.dumps(detail)) < MAX_EVENT_BYTES
    last = runs.last_run(TEAM, SCHEDULE)
    assert last is not None and (last.job_id, last.previous_job_id) == ("job-2", "job-1")


@dataclass
class Citing:
    """A CitingWorksLookup answering `works` for the seeds it is asked about (or failing with `error`)."""

    works: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    asked: list[list[str]] = field(default_factory=list)

    async def citing(self, seeds: Sequence[Any], team_id: str, job_id: str) -> CitingAnswer:
        self.asked.append([seed.seed_id for seed in seeds])
        wanted = {seed.seed_id for seed in seeds}
        return CitingAnswer([w for w in self.works if w["cites"] in wanted], self.error)


def _citing_work(n: int, cites: str) -> dict[str, Any]:
    return {
        "title": f"A work citing it, {n}",
        "doi": f"10.7/cite.{n}",
        "url": "u",
        "year": 2030,
        "cites": cites,
    }


def test_works_newly_citing_the_included_sources_are_named_from_the_second_run_on() -> None:
    citing = Citing([_citing_work(1, "src-0001"), _citing_work(2, "src-0002")])
    artifacts, runs = InMemoryBlobStore(), InMemoryScheduleRunStore()
    review = LivingReview(runs=runs, artifacts=artifacts, citing=citing, run=asyncio.run, clock=Clock())
    read = [_candidate(1), _candidate(2), _candidate(3, doi=False)]

    def finish(job_id: str) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        job = {"job_id": job_id, "schedule_id": SCHEDULE, "research_goal": "goal"}
        results = _results(read)
        for source in results["sources"]:
            source["extraction_success"] = source["source_id"] != "src-0002"  # 2 was not read
        results["changes_since_last_run"] = review.changes(
            PendingResults(TEAM, job, results, {c.source_id: c for c in read})
        )
        key = f"teams/{TEAM}/jobs/{job_id}/results.json"
        put_json(artifacts, key, results)
        events: list[tuple[str, dict[str, Any]]] = []
        review.finished(TEAM, job, results, key, lambda name, detail: events.append((name, detail)))
        return results, events

    first, _ = finish("job-1")
    assert citing.asked == [["src-0001"]]  # read, with an identifier: 2 was not read, 3 has no DOI
    digest = first["changes_since_last_run"]
    assert digest["new_citing_works"] == [] and digest["citing_works_seen"] == ["doi:10.7/cite.1"]
    citing.works.append(_citing_work(3, "src-0001"))
    second, events = finish("job-2")
    digest = second["changes_since_last_run"]
    assert [w["doi"] for w in digest["new_citing_works"]] == ["10.7/cite.3"]
    assert digest["counts"]["new_citing_works"] == 1 and "1 new citing works" in digest["summary"]
    assert events[0][1]["has_changes"] is True
    citing.error = "citing works not looked up for src-0001 (openalex: HTTP 503)"
    third, _ = finish("job-3")
    assert citing.error in third["changes_since_last_run"]["caveats"]


def test_a_refused_run_is_reported_but_does_not_become_the_baseline() -> None:
    review, artifacts, runs = _review(Lookup())
    _finish(review, artifacts, "job-1", [_candidate(1)])
    refused, events = _finish(review, artifacts, "job-2", [], status="REFUSED")
    assert _ids(refused["changes_since_last_run"]["sources_no_longer_found"]) == ["src-0001"]
    assert events  # still announced
    last = runs.last_run(TEAM, SCHEDULE)
    assert last is not None and last.job_id == "job-1"
    third, _ = _finish(review, artifacts, "job-3", [_candidate(1)])
    assert third["changes_since_last_run"]["previous_job_id"] == "job-1"
    assert third["changes_since_last_run"]["new_sources"] == []


def test_a_retried_finalize_still_compares_with_the_run_before() -> None:
    review, artifacts, _ = _review(Lookup())
    _finish(review, artifacts, "job-1", [_candidate(1)])
    _finish(review, artifacts, "job-2", [_candidate(2)])
    again, _ = _finish(review, artifacts, "job-2", [_candidate(2)])  # the step ran twice
    assert again["changes_since_last_run"]["previous_job_id"] == "job-1"
    assert _ids(again["changes_since_last_run"]["new_sources"]) == ["src-0002"]


def test_a_failed_lookup_keeps_the_search_flags_and_says_so() -> None:
    review, artifacts, _ = _review(Lookup(error="OpenAlex lookup answered HTTP 503"))
    results, _ = _finish(review, artifacts, "job-1", [_candidate(1, retracted=True), _candidate(2)])
    assert [s["is_retracted"] for s in results["sources"]] == [True, None]
    digest = results["changes_since_last_run"]
    assert digest["retraction_check"]["error"] == "OpenAlex lookup answered HTTP 503"
    assert any("HTTP 503" in caveat for caveat in digest["caveats"])
    assert _ids(digest["retracted_sources"]) == ["src-0001"]


def test_schedules_are_remembered_per_team() -> None:
    review, artifacts, runs = _review(None)
    _finish(review, artifacts, "job-1", [_candidate(1)])
    assert runs.last_run("team-bbbbbbbbbbbb", SCHEDULE) is None


def test_the_openalex_retraction_request_and_answer() -> None:
    settings = Settings(openalex_api_url="https://api.openalex.org/", contact_email="ops@example.org")
    request = build_retraction_request(settings, [f"10.1/{n}" for n in range(80)])
    assert request.url == "https://api.openalex.org/works"
    assert request.params["filter"].startswith("doi:10.1/0|10.1/1|")
    assert request.params["filter"].count("|") == 49 and request.params["per_page"] == 50
    assert request.params["select"] == "id,doi,is_retracted" and request.params["mailto"] == "ops@example.org"
    body = json.dumps(
        {
            "results": [
                {"id": "W1", "doi": "https://doi.org/10.1234/ABC", "is_retracted": True},
                {"id": "W2", "doi": "https://doi.org/10.1234/def", "is_retracted": False},
                {"id": "W3", "doi": None, "is_retracted": True},
                {"id": "W4", "doi": "https://doi.org/10.1234/ghi"},
            ]
        }
    )
    assert parse_retractions(body) == {"10.1234/abc": True, "10.1234/def": False}
    try:
        parse_retractions('{"error": "bad"}')
    except UnusableAnswer:
        pass
    else:
        raise AssertionError("an answer without works must be refused")


def test_the_openalex_search_parser_reads_is_retracted() -> None:
    from functions.search.connectors.openalex import parse_response

    work = {
        "id": "https://openalex.org/W1",
        "title": "A retracted study",
        "doi": "10.1/x",
        "is_retracted": True,
    }
    result = parse_response(
        200, json.dumps({"results": [work, {**work, "doi": "10.1/y", "is_retracted": None}]})
    )
    assert [paper.is_retracted for paper in result.papers] == [True, None]

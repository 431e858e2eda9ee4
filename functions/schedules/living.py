"""Living reviews: each scheduled run says what changed since the schedule's previous run.

The workflow's Finalize step, for a job a schedule started, calls

1. `LivingReview.changes(PendingResults(team_id, job, results, candidates))` before it writes the
   results: the sources' retraction flags are refreshed (`is_retracted` on every source), the previous
   run's results are read and `functions.schedules.changes.changes_since_last_run` compares the two; the
   digest becomes the results' `changes_since_last_run`;
2. `LivingReview.finished(team_id, job, results)` once the job's final status is recorded: a COMPLETED or
   PARTIAL run becomes the schedule's last run (the baseline of the next one; a REFUSED or FAILED run
   does not, so one bad week is not reported as every source vanishing), and the detail of the
   `ResearchDigestReady` event is returned (counts and short lists: within EventBridge's 256 KB).

New citing works: the works citing this run's included sources (those read, at most MAX_CITED_SOURCES,
each up to CITING_PER_SOURCE citing works) from the providers' citation graphs (functions/search/citations.py,
within CITING_SECONDS); the digest's `new_citing_works` are those the previous run's look-up did not
return. A failed look-up is a caveat, never a failed job.

Retraction flags: OpenAlex's `is_retracted`, asked for every selected source with a DOI in one batched
request (at most `RETRACTION_BATCH` DOIs) through the guarded HTTP client. The search step's own flag
(parsed from OpenAlex search results) is the fallback for sources without a DOI, beyond the batch, or
when the lookup fails: the lookup is fresher than the search response cache. A failed lookup never
fails the job; the digest's `retraction_check.error` and `caveats` say so.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from functions.common.errors import FetchError
from functions.common.observability import get_logger
from functions.common.outbound.http import HttpClient, Resolver
from functions.common.settings import Settings, get_settings
from functions.common.storage import BlobStore, get_json
from functions.research.retrieval.screening import Candidate
from functions.schedules.changes import changes_since_last_run, compact, has_changes
from functions.schedules.runs import ScheduleRun, ScheduleRunStore
from functions.search.citations import Seed
from functions.search.connectors.base import UnusableAnswer
from functions.search.connectors.openalex import (
    RETRACTION_BATCH,
    build_retraction_request,
    parse_retractions,
)

logger = get_logger("living-review")

BASELINE_STATUSES = frozenset({"COMPLETED", "PARTIAL"})
DIGEST_EVENT = "ResearchDigestReady"
MAX_EVENT_BYTES = 200_000  # EventBridge takes 256 KB per entry; room for the envelope
EVENT_LIST_LIMIT = 10
MAX_CITED_SOURCES, CITING_PER_SOURCE, CITING_SECONDS = 5, 20, 10.0


@dataclass(frozen=True)
class CitingAnswer:
    works: list[dict[str, Any]]  # `title`, `doi`, `url`, `year`, `cites` (the cited source's id)
    error: str | None = None


class CitingWorksLookup(Protocol):
    async def citing(self, seeds: Sequence[Seed], team_id: str, job_id: str) -> CitingAnswer: ...


@dataclass
class GraphCitingWorks:
    """The works citing each seed, newest and most cited first, from the providers' citation graphs; the
    seeds no provider answered are named in the error."""

    seconds: float = CITING_SECONDS

    async def citing(self, seeds: Sequence[Seed], team_id: str, job_id: str) -> CitingAnswer:
        from functions.search.citations import CitationGraph
        from functions.search.service import SearchService

        service = SearchService.from_settings()
        graph = CitationGraph.of(service.connectors, service.cache, service.search_settings.cache_ttl_seconds)
        outcome = await graph.chase(
            list(seeds),
            ("citations",),
            limits={"references": 0, "citations": CITING_PER_SOURCE},
            team_id=team_id,
            job_id=job_id,
            deadline=time.time() + self.seconds,
        )
        works = [
            {"title": p.title, "doi": p.doi, "url": p.url, "year": p.year, "cites": chase.seed.seed_id}
            for chase in outcome.chases
            for p in chase.papers
        ]
        failed = [
            f"{chase.seed.seed_id} ({chase.reason})" for chase in outcome.chases if chase.connector is None
        ]
        return CitingAnswer(works, f"citing works not looked up for {'; '.join(failed)}" if failed else None)


@dataclass(frozen=True)
class RetractionAnswer:
    flags: dict[str, bool]  # normalised DOI -> is_retracted
    error: str | None = None


class RetractionLookup(Protocol):
    async def flags(self, dois: Sequence[str]) -> RetractionAnswer: ...


@dataclass
class OpenAlexRetractions:
    """`is_retracted` by DOI from OpenAlex: one bounded request, failures returned, never raised."""

    settings: Settings = field(default_factory=get_settings)
    timeout_seconds: float = 8.0
    resolver: Resolver | None = None  # tests resolve names without DNS

    async def flags(self, dois: Sequence[str]) -> RetractionAnswer:
        if not dois:
            return RetractionAnswer({})
        request = build_retraction_request(self.settings, dois)
        client = HttpClient(self.settings, purpose="fetch", resolver=self.resolver, max_backoff_seconds=1.0)
        try:
            response = await client.get(
                request.url,
                params=request.params,
                timeout=self.timeout_seconds,
                total_timeout=self.timeout_seconds,
                retries=1,
                max_bytes=2 * 1024 * 1024,
            )
        except FetchError as exc:
            return RetractionAnswer({}, f"OpenAlex lookup failed: {exc.message}")
        finally:
            await client.aclose()
        if not response.ok:
            return RetractionAnswer({}, f"OpenAlex lookup answered HTTP {response.status_code}")
        try:
            return RetractionAnswer(parse_retractions(response.content))
        except UnusableAnswer as exc:
            return RetractionAnswer({}, f"OpenAlex lookup: {exc}")


def utc_stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class PendingResults:
    """A job's results before they are written, with the screened candidates its sources came from."""

    team_id: str
    job: Mapping[str, Any]
    results: dict[str, Any]
    candidates: Mapping[str, Candidate]


@dataclass
class LivingReview:
    runs: ScheduleRunStore
    artifacts: BlobStore  # where results.json of every job lives
    retractions: RetractionLookup | None = None
    citing: CitingWorksLookup | None = None
    run: Callable[[Coroutine[Any, Any, Any]], Any] = asyncio.run
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    # --- before the results are written --------------------------------------------------------------

    def changes(self, pending: PendingResults) -> dict[str, Any]:
        """The digest of this run; sets `is_retracted` on each of `results["sources"]` (in place)."""
        team_id, job, results, candidates = pending.team_id, pending.job, pending.results, pending.candidates
        schedule_id, job_id = str(job["schedule_id"]), str(job["job_id"])
        check = self._flag_retractions(list(results.get("sources") or []), candidates)
        previous_job_id, previous_key, previous_finished = self._previous(team_id, schedule_id, job_id)
        previous = get_json(self.artifacts, previous_key) if previous_key else None
        discovered = [
            {"title": c.paper.title, "doi": c.paper.doi, "url": c.paper.url} for c in candidates.values()
        ]
        citing = self._citing(team_id, job_id, results, candidates)
        digest = changes_since_last_run(
            results,
            previous if isinstance(previous, Mapping) else None,
            previous_job_id=previous_job_id,
            previous_finished_at=previous_finished,
            discovered=discovered,
            retraction_check=check,
            citing_works=citing.works,
        )
        if citing.error:
            digest["caveats"].append(citing.error)
        if previous_job_id and previous is None:
            digest["caveats"].append(
                f"the previous run {previous_job_id}'s results are no longer stored: compared with nothing"
            )
        return {"schedule_id": schedule_id, "job_id": job_id, **digest}

    def _citing(
        self, team_id: str, job_id: str, results: Mapping[str, Any], candidates: Mapping[str, Candidate]
    ) -> CitingAnswer:
        """The works citing the run's included sources (those read), by the lookup; none without one."""
        included = [
            candidates[str(s["source_id"])]
            for s in results.get("sources") or []
            if s.get("extraction_success") and str(s.get("source_id")) in candidates
        ]
        seeds = [
            Seed(c.source_id, c.paper.doi, c.paper.arxiv_id)
            for c in included
            if c.paper.doi or c.paper.arxiv_id
        ][:MAX_CITED_SOURCES]
        if not seeds or self.citing is None:
            return CitingAnswer([])
        try:
            answer: CitingAnswer = self.run(self.citing.citing(seeds, team_id, job_id))
        except Exception as exc:  # a lookup never fails the job
            return CitingAnswer([], f"citing works look-up failed: {exc.__class__.__name__}")
        return answer

    def _previous(
        self, team_id: str, schedule_id: str, job_id: str
    ) -> tuple[str | None, str | None, str | None]:
        last = self.runs.last_run(team_id, schedule_id)
        if last is None:
            return None, None, None
        if last.job_id == job_id:  # this run was remembered already (a retried Finalize)
            return last.previous_job_id, last.previous_results_key, last.previous_finished_at
        return last.job_id, last.results_key, last.finished_at

    def _flag_retractions(
        self, sources: list[dict[str, Any]], candidates: Mapping[str, Candidate]
    ) -> dict[str, Any]:
        for source in sources:
            candidate = candidates.get(str(source.get("source_id")))
            source["is_retracted"] = candidate.paper.is_retracted if candidate is not None else None
        dois = list(dict.fromkeys(str(s["doi"]).lower() for s in sources if s.get("doi")))
        asked = dois[:RETRACTION_BATCH]
        answer = RetractionAnswer({})
        if asked and self.retractions is not None:
            try:
                answer = self.run(self.retractions.flags(asked))
            except Exception as exc:  # a lookup never fails the job
                answer = RetractionAnswer({}, f"retraction lookup failed: {exc.__class__.__name__}")
        for source in sources:
            doi = str(source.get("doi") or "").lower()
            if doi in answer.flags:
                source["is_retracted"] = answer.flags[doi]
        if answer.error:
            logger.warning("retraction lookup incomplete", error=answer.error)
        return {
            "source": "openalex",
            "sources": len(sources),
            "looked_up": len(asked) if self.retractions is not None else 0,
            "answered": len(answer.flags),
            "beyond_batch_limit": max(0, len(dois) - RETRACTION_BATCH),
            "unknown": sum(1 for s in sources if s.get("is_retracted") is None),
            "error": answer.error,
        }

    # --- after the final status is recorded -------------------------------------------------------------

    def finished(
        self,
        team_id: str,
        job: Mapping[str, Any],
        results: Mapping[str, Any],
        results_key: str,
        publish: Callable[[str, dict[str, Any]], None],
    ) -> Mapping[str, Any] | None:
        """Remember a COMPLETED/PARTIAL run as the schedule's last and publish `ResearchDigestReady`;
        returns the digest (None when the results carry none)."""
        digest = results.get("changes_since_last_run")
        if not isinstance(digest, Mapping):
            return None
        schedule_id, job_id = str(job["schedule_id"]), str(job["job_id"])
        status = str(results.get("status") or "")
        if status in BASELINE_STATUSES:
            last = self.runs.last_run(team_id, schedule_id)
            if last is None or last.job_id != job_id:  # else remembered already (a retried step)
                self.runs.remember(
                    team_id,
                    schedule_id,
                    ScheduleRun(
                        job_id=job_id,
                        status=status,
                        results_key=results_key,
                        finished_at=utc_stamp(self.clock()),
                        previous_job_id=last.job_id if last else None,
                        previous_results_key=last.results_key if last else None,
                        previous_finished_at=last.finished_at if last else None,
                    ),
                )
        try:
            publish(DIGEST_EVENT, digest_event(team_id, job, status, digest))
        except Exception:  # the event is a notification: the run and its results stand without it
            logger.warning("ResearchDigestReady not published", job_id=job_id, exc_info=True)
        return digest


def digest_event(
    team_id: str, job: Mapping[str, Any], status: str, digest: Mapping[str, Any]
) -> dict[str, Any]:
    """The `ResearchDigestReady` detail: the job, its counts and short lists (cut further if needed)."""
    job_id = str(job["job_id"])
    detail: dict[str, Any] = {
        "team_id": team_id,
        "schedule_id": job.get("schedule_id"),
        "job_id": job_id,
        "status": status,
        "research_goal": job.get("research_goal"),
        "results_path": f"/api/agent/results/{job_id}",
        "has_changes": has_changes(digest),
        "changes_since_last_run": compact(digest, EVENT_LIST_LIMIT),
    }
    for limit in (5, 0):
        if len(json.dumps(detail, default=str).encode("utf-8")) <= MAX_EVENT_BYTES:
            break
        detail["changes_since_last_run"] = compact(digest, limit)
    return detail

"""The checkpoint API's service: what a waiting checkpoint shows, the edits each phase takes (refused by
name when unknown) and the state and record the job goes on with."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from functions.common.errors import Conflict, InvalidInput, NotFound
from functions.common.models import EvidenceQuote, ExtractedPaper, Paper
from functions.common.storage import InMemoryBlobStore, get_json, put_json
from functions.orchestrate.checkpoints.service import CheckpointService
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.contracts import CheckpointInput, CheckpointPhases
from functions.orchestrate.jobs import JobService
from functions.orchestrate.models import (
    ExtractionCheckpoint,
    PlanCheckpoint,
    ScreeningCheckpoint,
    SynthesisCheckpoint,
)
from functions.orchestrate.payloads import SCREENING, SYNTHESIS, extracted_key, payload_key, store
from functions.orchestrate.steps.checkpoint import Checkpoint, CheckpointExpired, CheckpointWindowPassed
from functions.research.checking.verifier import ClaimVerification
from functions.research.planning.request import ExecuteRequest
from functions.research.retrieval.chasing import chase_query_id
from functions.research.retrieval.screening import Candidate
from tests.support.fakes.jobs import InMemoryJobStore, RecordingStarter
from tests.unit.orchestrate.fixtures import synthesis_result

TEAM = "team-default"
CALLER = "key:reviewer-1"


class RecordingTokens:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    def succeed(self, token: str, output: dict[str, Any]) -> None:
        self.calls.append(("succeed", token, output))

    def fail(self, token: str, error: str, cause: str) -> None:
        self.calls.append(("fail", token, (error, cause)))


class Harness:
    def __init__(self) -> None:
        self.store, self.data, self.tokens = InMemoryJobStore(), InMemoryBlobStore(), RecordingTokens()
        jobs = JobService(
            jobs=self.store,
            starter=RecordingStarter(),
            artifacts=InMemoryBlobStore(),
            settings=WorkflowSettings(),
        )
        request = ExecuteRequest.model_validate(
            {"research_goal": "How does sleep deprivation affect working memory?", "scope_parameters": {}}
        )
        self.job_id = str(jobs.submit(TEAM, request)[0]["job_id"])
        self.service = CheckpointService(
            jobs=self.store, find_job=jobs.job, data=self.data, tokens=self.tokens
        )
        self.jobs = jobs

    def wait(self, phase: str, state: dict[str, Any], **fields: Any) -> None:
        waiting = {"checkpoint_token": "token-1", "awaiting_checkpoint": True, "checkpoint_phase": phase}
        waiting["checkpoint_started_at"] = "2026-01-01T00:00:00+00:00"
        self.store.update(TEAM, self.job_id, set_fields={**waiting, "checkpoint_state": state, **fields})

    def job(self) -> dict[str, Any]:
        found = self.store.get(TEAM, self.job_id)
        assert found is not None
        return found

    def output(self) -> dict[str, Any]:
        kind, token, output = self.tokens.calls[-1]
        assert (kind, token) == ("succeed", "token-1")
        return dict(output)


def _candidate(index: int, score: float, rejection: str | None = None) -> Candidate:
    paper = Paper(title=f"Sleep paper {index}", url=f"https://papers.example/{index}.pdf", source="openalex")
    return Candidate(
        paper=paper,
        source_id=f"src-{index}",
        scores={"relevance": score, "citations": 0.5, "recency": 0.5, "methodology": 0.5, "access": 1.0},
        weighted_score=score,
        rejection=rejection,
        explanations={"relevance": f"matches {index}"},
    )


def _screened(h: Harness, candidates: list[Candidate], selected: list[str]) -> dict[str, Any]:
    key = payload_key(TEAM, h.job_id, SCREENING)
    put_json(h.data, key, {"candidates": [c.to_dict() for c in candidates], "selected": selected})
    h.store.update(TEAM, h.job_id, set_fields={"screening_key": key})
    by_id = {c.source_id: c for c in candidates}
    return {
        "job_id": h.job_id,
        "screen": {"selected": [{"source_id": i, "url": by_id[i].paper.url, "title": "t"} for i in selected]},
    }


def test_nothing_waiting_is_a_conflict_and_another_teams_job_is_unknown() -> None:
    h = Harness()
    with pytest.raises(Conflict):
        h.service.show(TEAM, h.job_id)
    with pytest.raises(Conflict):
        h.service.approve(TEAM, h.job_id, None, CALLER)
    h.wait("screening", {"job_id": h.job_id})
    status = h.jobs.status(TEAM, h.job_id)
    assert status.awaiting_checkpoint is True and status.checkpoint is not None
    assert status.checkpoint.phase == "screening"
    assert "screening checkpoint" in status.current_phase.phase_description
    with pytest.raises(NotFound):
        h.service.show("team-other", h.job_id)
    with pytest.raises(NotFound):
        h.service.abort("team-other", h.job_id, None, CALLER)


def test_the_screening_checkpoint_shows_ranked_candidates_and_applies_exclusions_and_additions() -> None:
    h = Harness()
    candidates = [_candidate(1, 0.9), _candidate(2, 0.7), _candidate(3, 0.5), _candidate(4, 0.2, "off topic")]
    h.wait("screening", _screened(h, candidates, ["src-1", "src-2"]))
    shown = h.service.show(TEAM, h.job_id)
    assert shown.phase == "screening" and shown.waiting_since == "2026-01-01T00:00:00+00:00"
    assert isinstance(shown.payload, ScreeningCheckpoint)
    listed = shown.payload.candidates
    assert [c.id for c in listed] == ["src-1", "src-2", "src-3", "src-4"]
    assert set(listed[0].scores) == {"relevance", "citations", "recency", "methodology", "access"}
    assert listed[0].explanation == "relevance: matches 1" and listed[0].selected is True

    with pytest.raises(InvalidInput, match="src-9"):
        h.service.approve(TEAM, h.job_id, {"exclude": ["src-9"]}, CALLER)
    with pytest.raises(InvalidInput, match="connectors"):  # a plan field, not a screening one
        h.service.approve(TEAM, h.job_id, {"connectors": ["arxiv"]}, CALLER)
    with pytest.raises(InvalidInput, match="isbn:123"):
        h.service.approve(TEAM, h.job_id, {"add": ["isbn:123"]}, CALLER)
    assert h.tokens.calls == []  # nothing resumed on a refused edit

    edits = {"exclude": ["src-1"], "add": ["doi:10.5555/added.1"], "max_sources": 3}
    answer = h.service.approve(TEAM, h.job_id, edits, CALLER)
    assert answer.decision == "approved" and answer.phase == "screening"
    selected = h.output()["screen"]["selected"]
    assert selected[0]["url"] == "https://doi.org/10.5555/added.1"
    assert [s["source_id"] for s in selected][1:] == ["src-2", "src-3"]  # excluded out, next best in
    stored = get_json(h.data, payload_key(TEAM, h.job_id, SCREENING)) or {}
    assert selected[0]["source_id"] in {c["source_id"] for c in stored["candidates"]}  # citable later
    assert stored["selected"] == [s["source_id"] for s in selected]  # what Finalize reports
    job = h.job()
    assert job["awaiting_checkpoint"] is False and job["checkpoint_token"] is None
    entry = job["audit"][-1]
    assert entry["event"] == "CHECKPOINT_APPROVED" and entry["by"] == {"team_id": TEAM, "caller": CALLER}
    assert "excluded src-1" in entry["detail"] and entry["timestamp"]
    with pytest.raises(Conflict):  # a second decision finds nothing waiting
        h.service.approve(TEAM, h.job_id, None, CALLER)


def test_the_screening_checkpoint_shows_the_seeds_to_chase_and_takes_the_reviewers_own() -> None:
    h = Harness()
    h.store.update(TEAM, h.job_id, set_fields={"scope_parameters": {"discovery_depth": "comprehensive"}})
    candidates = [_candidate(i, 1 - i / 10) for i in range(1, 8)]
    selected = [c.source_id for c in candidates[:6]]
    h.wait("screening", _screened(h, candidates, selected))
    shown = h.service.show(TEAM, h.job_id).payload
    assert isinstance(shown, ScreeningCheckpoint)
    assert shown.citation_chasing == "both" and shown.chase_seeds == selected[:5]  # comprehensive: five
    with pytest.raises(InvalidInput, match="src-99"):
        h.service.approve(TEAM, h.job_id, {"chase_seeds": ["src-99"]}, CALLER)
    h.service.approve(TEAM, h.job_id, {"chase_seeds": ["src-7", "src-2"]}, CALLER)
    stored = get_json(h.data, payload_key(TEAM, h.job_id, SCREENING)) or {}
    assert stored["chase_seeds"] == ["src-7", "src-2"]  # a candidate not selected may be a seed
    assert "chasing the citations of src-7, src-2" in h.job()["audit"][-1]["detail"]


def test_the_plan_checkpoint_drops_connectors_rewrites_queries_and_the_window() -> None:
    h = Harness()
    job = h.job()
    pending = [q for q in job["plan"]["queries"]]
    planned = list(dict.fromkeys(q["connector"] for q in pending))
    assert len(planned) > 2  # the default plan queries several connectors
    h.wait("plan", {"job_id": h.job_id, "search": {"pending": pending}})
    shown = h.service.show(TEAM, h.job_id).payload
    assert isinstance(shown, PlanCheckpoint)
    assert shown.connectors == planned and shown.publication_window_years == 3
    with pytest.raises(InvalidInput, match="nosuchdb"):
        h.service.approve(TEAM, h.job_id, {"connectors": ["nosuchdb"]}, CALLER)
    kept, rewritten = planned[0], planned[1]
    with pytest.raises(InvalidInput, match=planned[2]):  # queries for a connector the edit drops
        h.service.approve(TEAM, h.job_id, {"connectors": [kept], "queries": {planned[2]: ["x y"]}}, CALLER)
    edits = {
        "connectors": [kept, rewritten],
        "queries": {rewritten: ["sleep loss working memory"]},
        "publication_window_years": 5,
    }
    h.service.approve(TEAM, h.job_id, edits, CALLER)
    queries = h.output()["search"]["pending"]
    assert {q["connector"] for q in queries} == {kept, rewritten}
    assert [q["query"] for q in queries if q["connector"] == rewritten] == ["sleep loss working memory"]
    assert [q["query"] for q in queries if q["connector"] == kept] == [
        q["query"] for q in pending if q["connector"] == kept
    ]
    end = job["plan"]["policies"]["year_end"]
    assert {q["year_start"] for q in queries} == {end - 5}
    assert h.job()["plan"]["policies"]["year_start"] == end - 5
    assert h.job()["scope_parameters"]["temporal_boundary"]["publication_window_years"] == 5


def _extracted(h: Harness) -> dict[str, Any]:
    candidates = [_candidate(1, 0.9), _candidate(2, 0.8)]
    candidates[1].query_ids = [chase_query_id("citations", "src-1", "openalex")]  # found citing src-1
    state = _screened(h, candidates, ["src-1", "src-2"])
    extractions = []
    for c in candidates:
        quote = (
            f"Sleep deprivation of one night reduced working memory accuracy in study {c.source_id} by a lot."
        )
        paper = ExtractedPaper(
            source_url=c.paper.url,
            canonical_id=c.source_id,
            success=True,
            evidence=[EvidenceQuote(quote=quote, page=1, char_start=0, char_end=len(quote))],
        )
        key = extracted_key(TEAM, h.job_id, c.source_id)
        put_json(h.data, key, paper.model_dump(mode="json"))
        extractions.append({"source_id": c.source_id, "url": c.paper.url, "success": True, "parsed_key": key})
    return {**state, "extractions": extractions}


def test_the_extraction_checkpoint_strikes_quotes_and_drops_sources_not_relevant() -> None:
    h = Harness()
    h.wait("extraction", _extracted(h))
    shown = h.service.show(TEAM, h.job_id).payload
    assert isinstance(shown, ExtractionCheckpoint)
    assert [s.id for s in shown.sources] == ["src-1", "src-2"]
    assert [s.discovered_via for s in shown.sources] == [
        {"method": "search", "seed": None, "connector": "openalex"},
        {"method": "citations", "seed": "src-1", "connector": "openalex"},
    ]
    struck = shown.sources[0].quotes[0].evidence_id
    with pytest.raises(InvalidInput, match="ev-nope"):
        h.service.approve(TEAM, h.job_id, {"strike": ["ev-nope"]}, CALLER)
    h.service.approve(TEAM, h.job_id, {"strike": [struck], "not_relevant": ["src-2"]}, CALLER)
    assert [e["source_id"] for e in h.output()["extractions"]] == ["src-1"]
    assert (get_json(h.data, payload_key(TEAM, h.job_id, SCREENING)) or {})["selected"] == ["src-1"]
    assert h.job()["struck_evidence"] == [struck]


def test_the_synthesis_checkpoint_sends_struck_claims_back_to_synthesis() -> None:
    h = Harness()
    key = payload_key(TEAM, h.job_id, SYNTHESIS)
    claims = [
        ClaimVerification("c1", "A", "supported", ["ev-a"], 0.9, ""),
        ClaimVerification("c2", "B", "supported", ["ev-b"], 0.9, ""),
    ]
    synthesis = synthesis_result(claims, [], synthesis_text="Report [ev-a] [ev-b]")
    store(h.data, key, synthesis)
    h.wait("synthesis", {"job_id": h.job_id, "synthesis": {"synthesis_key": key}})
    payload = h.service.show(TEAM, h.job_id).payload
    assert isinstance(payload, SynthesisCheckpoint)
    assert payload.report == "Report [ev-a] [ev-b]" and [c.id for c in payload.claims] == ["c1", "c2"]
    with pytest.raises(InvalidInput, match="resynthesize"):
        h.service.approve(TEAM, h.job_id, {"strike": ["c1"], "resynthesize": False}, CALLER)
    with pytest.raises(InvalidInput, match="c9"):
        h.service.approve(TEAM, h.job_id, {"strike": ["c9"]}, CALLER)
    h.service.approve(TEAM, h.job_id, {"strike": ["c1"]}, CALLER)
    assert h.output()["resynthesize"] is True and h.job()["struck_evidence"] == ["ev-a"]


def test_approving_a_synthesis_unchanged_delivers_it_and_an_abort_fails_the_task() -> None:
    h = Harness()
    h.wait("synthesis", {"job_id": h.job_id, "synthesis": {"synthesis_key": "none"}})
    h.service.approve(TEAM, h.job_id, None, CALLER)
    assert h.output()["resynthesize"] is False
    h.wait("plan", {"job_id": h.job_id, "search": {"pending": []}})
    assert h.service.abort(TEAM, h.job_id, "wrong scope", CALLER).decision == "aborted"
    assert h.tokens.calls[-1] == ("fail", "token-1", ("CheckpointAborted", "wrong scope"))
    assert h.job()["decisions"][-1]["by"]["caller"] == CALLER


def test_human_checkpoints_take_true_or_a_list_of_phases() -> None:
    assert CheckpointPhases.requested(True) == CheckpointPhases(screening=True)
    assert CheckpointPhases.requested(False) == CheckpointPhases()
    assert CheckpointPhases.requested(["synthesis", "plan"]) == CheckpointPhases(plan=True, synthesis=True)
    with pytest.raises(ValidationError, match="human_checkpoints"):
        ExecuteRequest.model_validate(
            {
                "research_goal": "How does sleep affect memory?",
                "scope_parameters": {"human_checkpoints": ["review"]},
            }
        )
    with pytest.raises(ValidationError, match="on_timeout"):
        ExecuteRequest.model_validate(
            {"research_goal": "How does sleep affect memory?", "scope_parameters": {"on_timeout": "later"}}
        )


@pytest.mark.parametrize("on_timeout", ["abort", "continue"])
def test_a_checkpoint_rearmed_after_its_window_aborts_or_continues(on_timeout: str) -> None:
    h = Harness()
    h.store.update(TEAM, h.job_id, set_fields={"scope_parameters": {"on_timeout": on_timeout}})
    step = Checkpoint(jobs=h.store, settings=WorkflowSettings(checkpoint_window_seconds=60))
    request = CheckpointInput(job_id=h.job_id, team_id=TEAM, task_token="t-1", phase="plan", state={"a": 1})
    step(request)
    job = h.job()
    assert job["checkpoint_state"] == {"a": 1} and job["checkpoint_phase"] == "plan"
    step(request.model_copy(update={"task_token": "t-2"}))  # re-armed within the window: still waiting
    assert h.job()["checkpoint_token"] == "t-2"
    h.store.update(TEAM, h.job_id, set_fields={"checkpoint_started_at": "2020-01-01T00:00:00+00:00"})
    expected = CheckpointWindowPassed if on_timeout == "continue" else CheckpointExpired
    with pytest.raises(expected):
        step(request.model_copy(update={"task_token": "t-3"}))
    if on_timeout == "continue":
        assert h.job()["awaiting_checkpoint"] is False
        assert h.job()["decisions"][-1]["action_taken"] == "CONTINUED"

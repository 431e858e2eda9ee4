"""The Screen step over in-memory adapters: candidates it had no time to embed are embedded in further
iterations (CONTINUE), so what it selects does not depend on how busy the machine was."""

from __future__ import annotations

from typing import Any

from functions.common.storage import InMemoryBlobStore, put_json
from functions.metering.job_budget import JobBudget
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.contracts import ScreenInput, ScreenOutput
from functions.orchestrate.jobs import JobService
from functions.orchestrate.payloads import SCREEN_VECTORS, payload_key
from functions.orchestrate.screen_vectors import load_vectors
from functions.orchestrate.steps.screen import Screen
from functions.research.planning.request import ExecuteRequest
from functions.research.retrieval.relevance import RelevanceScorer
from tests.support.fakes.jobs import InMemoryJobStore, RecordingStarter
from tests.unit.orchestrate.fixtures import GOAL, paper
from tests.unit.research.test_relevance_budget import SlowEmbedder

TEAM = "team-default"


def _job() -> tuple[InMemoryJobStore, InMemoryBlobStore, str, list[dict[str, Any]]]:
    jobs, data = InMemoryJobStore(), InMemoryBlobStore()
    service = JobService(jobs=jobs, starter=RecordingStarter(), artifacts=data, settings=WorkflowSettings())
    job_id = service.submit(TEAM, ExecuteRequest(research_goal=GOAL))[0]["job_id"]
    topics = ["sparse attention", "long documents", "protein folding", "graph kernels", "speech coding"]
    hits = [
        paper(i, title=f"{topics[i % 5].capitalize()} with transformer architectures, study {i}").model_dump(
            mode="json"
        )
        for i in range(80)
    ]
    put_json(data, "hits/q1.json", hits)
    return jobs, data, job_id, [{"query_id": "q1", "connector": "openalex", "key": "hits/q1.json"}]


def _screen(
    embedder: SlowEmbedder, seconds: float | None, rounds: int
) -> tuple[list[ScreenOutput], str, Screen]:
    jobs, data, job_id, searches = _job()
    step = Screen(
        jobs=jobs,
        data=data,
        budget=JobBudget(),
        relevance_scorer=lambda: RelevanceScorer(embedder, embed_seconds=seconds),
        embedding_rounds=rounds,
    )
    request = ScreenInput.model_validate({"job_id": job_id, "team_id": TEAM, "search_results": searches})
    outputs = [step(request)]
    while outputs[-1].action == "CONTINUE":  # what the state machine does: ScreenWait, then Screen again
        assert len(outputs) < rounds
        outputs.append(step(request))
    return outputs, job_id, step


def test_screening_out_of_time_continues_and_selects_what_an_unhurried_one_selects() -> None:
    hurried, job_id, step = _screen(SlowEmbedder("screen-hurried", 0.05), seconds=0.12, rounds=20)
    assert len(hurried) >= 2 and {o.action for o in hurried[:-1]} == {"CONTINUE"}
    kept = load_vectors(step.data, payload_key(TEAM, job_id, SCREEN_VECTORS))
    assert kept.rounds == len(hurried) - 1 and kept.vectors
    unhurried, _, _ = _screen(SlowEmbedder("screen-unhurried", 0.0), seconds=None, rounds=20)
    assert len(unhurried) == 1
    assert hurried[-1].action == unhurried[0].action
    assert [s.url for s in hurried[-1].selected] == [s.url for s in unhurried[0].selected]


def test_the_last_allowed_iteration_scores_what_is_left_lexically() -> None:
    outputs, _, _ = _screen(SlowEmbedder("screen-capped", 0.05), seconds=0.12, rounds=2)
    assert [o.action for o in outputs][:1] == ["CONTINUE"] and len(outputs) == 2
    assert outputs[-1].action != "CONTINUE"

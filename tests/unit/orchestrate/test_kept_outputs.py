"""A step asked again with the same payload answers with its kept output, unrun and unmetered
(functions/orchestrate/steps/kept_outputs.py, with the adapter of functions/orchestrate/steps/adapter.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from functions.metering import steps as metering_steps
from functions.orchestrate.contracts import ScreenInput, ScreenOutput, SearchInput, SearchState
from functions.orchestrate.steps import adapter, kept_outputs
from functions.orchestrate.steps.screen import _not_continued


class DictOutputs:
    def __init__(self) -> None:
        self.kept: dict[str, dict[str, Any]] = {}

    @staticmethod
    def _key(step: str, event: Mapping[str, Any]) -> str:
        return step + json.dumps(event, sort_keys=True)

    def get(self, step: str, event: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.kept.get(self._key(step, event))

    def put(self, step: str, event: Mapping[str, Any], output: dict[str, Any]) -> None:
        self.kept[self._key(step, event)] = output


class BrokenOutputs:
    def get(self, step: str, event: Mapping[str, Any]) -> dict[str, Any] | None:
        raise ConnectionError("store gone")

    def put(self, step: str, event: Mapping[str, Any], output: dict[str, Any]) -> None:
        raise ConnectionError("store gone")


@pytest.fixture
def store() -> Iterator[DictOutputs]:
    kept = DictOutputs()
    kept_outputs.keep_outputs_in(kept)
    yield kept
    kept_outputs.keep_outputs_in(None)


@pytest.fixture
def metered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The steps that went through metering (the real hook, observed)."""
    seen: list[str] = []
    real = metering_steps.metered_step

    def observed(step: str, event: dict[str, Any], context: Any, run: Any) -> dict[str, Any]:
        seen.append(step)
        return real(step, event, context, run)

    monkeypatch.setattr(adapter, "metered_step", observed)
    monkeypatch.setenv("USAGE_METERING", "false")
    return seen


CONTEXT = SimpleNamespace(aws_request_id="req-1")


def _counting_search(runs: list[int]) -> Any:
    def search(request: SearchInput) -> SearchState:
        runs.append(request.search.round)
        return SearchState(round=request.search.round + 1, done=True)

    return search


def test_a_repeat_of_a_finished_steps_payload_is_answered_unrun_and_unmetered(
    store: DictOutputs, metered: list[str]
) -> None:
    runs: list[int] = []
    search = adapter.step_handler("search", SearchInput, lambda: _counting_search(runs))
    first = search({"job_id": "j1", "search": {"round": 1}}, CONTEXT)
    again = search({"job_id": "j1", "search": {"round": 1}}, CONTEXT)
    assert again == first and first["round"] == 2
    assert runs == [1] and metered == ["search"]
    search({"job_id": "j1", "search": {"round": 2}}, CONTEXT)  # another payload: another run
    assert runs == [1, 2] and metered == ["search", "search"]


def test_a_step_that_keeps_nothing_runs_every_time(store: DictOutputs, metered: list[str]) -> None:
    runs: list[int] = []
    search = adapter.step_handler("search", SearchInput, lambda: _counting_search(runs), keeps=None)
    for _ in range(2):
        search({"job_id": "j1", "search": {"round": 1}}, CONTEXT)
    assert runs == [1, 1] and metered == ["search", "search"] and store.kept == {}


def test_a_screening_that_continues_is_not_kept_and_a_finished_one_is(
    store: DictOutputs, metered: list[str]
) -> None:
    answers = iter([ScreenOutput(action="CONTINUE"), ScreenOutput(action="EXTRACT")])
    screen = adapter.step_handler(
        "screen", ScreenInput, lambda: lambda _r: next(answers), keeps=_not_continued
    )
    event = {"job_id": "j1", "search_results": []}
    # the same payload in each iteration: a kept CONTINUE would loop for ever
    assert [screen(event, CONTEXT)["action"] for _ in range(3)] == ["CONTINUE", "EXTRACT", "EXTRACT"]
    assert metered == ["screen", "screen"]


def test_a_store_that_fails_makes_the_step_run_as_without_one(metered: list[str]) -> None:
    kept_outputs.keep_outputs_in(BrokenOutputs())
    try:
        runs: list[int] = []
        search = adapter.step_handler("search", SearchInput, lambda: _counting_search(runs))
        for _ in range(2):
            assert search({"job_id": "j1", "search": {"round": 1}}, CONTEXT)["round"] == 2
        assert runs == [1, 1]
    finally:
        kept_outputs.keep_outputs_in(None)

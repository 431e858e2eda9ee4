"""A step is billed what Lambda would bill it alone: its CPU and its waits on upstreams, not the time it
spends queued behind other invocations that share the embedded runtime's process."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from functions.common.outbound.invocation_time import InvocationTime, waiting
from functions.metering import wiring
from functions.metering.steps import metered_step
from functions.metering.usage import step_memory_mb
from tests.support.fakes.usage_store import InMemoryUsageStore

TEAM = "team-alpha"
CONTEXT = SimpleNamespace(memory_limit_in_mb=512, aws_request_id="req-1")
SPINS = 3_000_000


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryUsageStore]:
    memory = InMemoryUsageStore()
    monkeypatch.setattr(wiring, "usage_store", lambda: memory)
    monkeypatch.setattr(wiring, "team_monthly_budget", lambda team: None)
    # a first step builds the process's boto3 clients (CPU of its own, as a cold Lambda's would be)
    metered_step("search", {"job_id": "job-warm", "team_id": TEAM}, CONTEXT, lambda *_: {})
    yield memory


def _spin() -> float:
    """Pure-Python work holding the interpreter; returns the CPU seconds its thread used."""
    started = time.thread_time()
    total = 0
    for number in range(SPINS):
        total += number % 7
    assert total > 0
    return time.thread_time() - started


class Neighbour:
    """Another invocation of the same process, busy on the CPU while the step waits for it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.cpu_seconds = 0.0
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        self.cpu_seconds = _spin()
        self.done.set()

    def start(self) -> None:
        self.thread.start()

    def join(self) -> None:
        self.thread.join()


def _billed_seconds(store: InMemoryUsageStore, job_id: str) -> float:
    ledger = store.job(TEAM, job_id)
    assert ledger is not None
    return ledger.counters["lambda_gb_seconds"] / (step_memory_mb("search") / 1024)


def _queued_step(store: InMemoryUsageStore, job_id: str) -> tuple[Neighbour, float, float]:
    """A step queued behind a busy neighbour invocation, with no CPU of its own: the neighbour, the
    step's wall-clock seconds and the seconds it was billed."""
    neighbour = Neighbour()

    def run(step: str, event: dict[str, Any], context: Any) -> dict[str, Any]:
        neighbour.start()
        neighbour.done.wait()
        return {}

    started = time.perf_counter()
    metered_step("search", {"job_id": job_id, "team_id": TEAM}, CONTEXT, run)
    wall = time.perf_counter() - started
    neighbour.join()
    return neighbour, wall, _billed_seconds(store, job_id)


def test_a_step_that_waits_for_the_cpu_is_not_billed_the_wait(store: InMemoryUsageStore) -> None:
    neighbour, wall, billed = _queued_step(store, "job-queued")
    # the step lasted at least the neighbour's CPU time, and is billed far less than that
    assert wall >= neighbour.cpu_seconds
    assert billed < neighbour.cpu_seconds / 2


def test_a_wait_on_an_upstream_and_work_in_threads_are_billed(store: InMemoryUsageStore) -> None:
    neighbour = Neighbour()
    worker_cpu: list[float] = []

    async def steps_work() -> None:
        worker_cpu.append(await asyncio.to_thread(_spin))

    def run(step: str, event: dict[str, Any], context: Any) -> dict[str, Any]:
        with waiting():  # an upstream's answer: Lambda bills the wait, all of the neighbour's run inside it
            neighbour.start()
            neighbour.done.wait()
        asyncio.run(steps_work())  # the step's own CPU, on the event loop's executor
        return {}

    metered_step("search", {"job_id": "job-upstream", "team_id": TEAM}, CONTEXT, run)
    neighbour.join()
    billed = _billed_seconds(store, "job-upstream")
    assert billed >= neighbour.cpu_seconds + worker_cpu[0]


def test_concurrent_waits_count_once_and_the_bill_never_passes_the_wall_clock() -> None:
    measured = InvocationTime()
    for started, ended in ((0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.2, 5.5)):
        measured.add_wait(started, ended)
    measured.add_cpu(0.5)
    assert measured.wait_seconds() == pytest.approx(4.0)
    assert measured.billed_seconds(10.0, own_cpu_seconds=1.0) == pytest.approx(5.5)
    assert measured.billed_seconds(5.0, own_cpu_seconds=1.0) == pytest.approx(5.0)


def test_on_lambda_a_step_is_billed_its_wall_clock_time(
    store: InMemoryUsageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Lambda invocation has its environment to itself: its duration is its bill, waits outside
    `waiting()` (a boto3 call's network) included."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "ResearchSearchStep")
    neighbour, wall, billed = _queued_step(store, "job-lambda")
    assert neighbour.cpu_seconds <= billed <= math.ceil(wall * 1000) / 1000  # Lambda bills whole ms

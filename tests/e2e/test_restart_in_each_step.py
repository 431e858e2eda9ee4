"""A research job survives a hard kill (SIGKILL) of the embedded runtime in each of its steps.

`python -m functions.local_runtime` runs on one state directory over a local scholarly web; one job is
killed in each of its steps at a known point (tests/support/restart_scenario.py: the runtime holds the
step and is killed once it is held), Chase included: the goal's web has a paper that only a citation
reaches. After seven kills the job is COMPLETED, billed for exactly the steps an
uninterrupted job of the same goal is billed for (so no step twice, none lost), with no reservation left
on its ledger, and its audit trail names each resumption and its state.

The uninterrupted job also shows a clean log: what its runtime printed holds no error, exception or
traceback (before, every job printed moto's `NoSuchJsonPathError` for `$.resume_checkpoint`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.restart_scenario import (
    FinishedJob,
    extractions,
    job_killed_in_each_step,
    kept_progress,
    resumed_states,
    serve_scenario,
    started_again,
    uninterrupted_job,
)
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

RESUMED_AT = ["Plan", "Search", "Screen", "Chase", "Extract", "Synthesize", "Finalize"]
# what would mean a fault in a runtime's output
FAULT = re.compile(r"\bERROR\b|Traceback|Exception=|NoSuchJsonPathError", re.IGNORECASE)


@pytest.fixture(scope="module")
def web() -> Iterator[ScholarlyWeb]:
    with ScholarlyWeb() as server:
        serve_scenario(server)
        yield server


@pytest.fixture(scope="module")
def uninterrupted(web: ScholarlyWeb, tmp_path_factory: pytest.TempPathFactory) -> FinishedJob:
    state_dir = tmp_path_factory.mktemp("uninterrupted")
    finished = uninterrupted_job(web, state_dir)
    assert kept_progress(state_dir)[0], "nothing of the job's progress was kept while it ran"
    # what a finished job's execution kept is gone, at its end or at the next start at the latest
    started_again(web, state_dir)
    assert kept_progress(state_dir)[1] == []
    return finished


def test_a_normal_job_logs_no_error_and_no_exception(uninterrupted: FinishedJob) -> None:
    assert uninterrupted.status["status"] == "COMPLETED", uninterrupted.status
    assert '"step finished"' in uninterrupted.printed  # the steps' own JSON log lines are in it
    faults = [line for line in uninterrupted.printed.splitlines() if FAULT.search(line)]
    assert faults == []


def test_a_job_killed_in_each_step_completes_billed_once_for_each(
    web: ScholarlyWeb, uninterrupted: FinishedJob, tmp_path: Path
) -> None:
    finished = job_killed_in_each_step(web, tmp_path / "state", tmp_path)
    started_again(web, tmp_path / "state")
    assert kept_progress(tmp_path / "state")[1] == []

    assert finished.status["status"] == "COMPLETED", finished.status
    assert finished.results["evidence"], "the restarted job extracted nothing"
    assert finished.results["execution_summary"]["citation_chasing"]["seeds_chased"]
    assert any(source["discovered_via"]["method"] == "references" for source in finished.results["sources"])
    # billed for the same steps as the job that ran without a stop: no step twice, none lost
    assert finished.usage["steps"] == uninterrupted.usage["steps"]
    assert {finished.usage["steps"][name] for name in ("plan", "synthesize", "finalize")} == {1}
    assert finished.usage["steps"]["extract"] == extractions(finished)
    # what the steps cut off had reserved was given back: the ledger holds the recorded cost only
    assert finished.usage["committed_usd"] == pytest.approx(finished.usage["cost_usd"], abs=1e-7)
    assert resumed_states(finished) == RESUMED_AT
    audit = finished.results["audit_trail_summary"]["audit_log"]
    assert not any(entry["event"] in ("RUNTIME_RESTARTED", "JOB_FAILED") for entry in audit)

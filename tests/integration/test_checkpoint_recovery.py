"""Start-up recovery (functions/local_runtime/recovery.py) on the embedded runtime, restarted on one state
directory: a job the last life left waiting at a checkpoint gets a new execution whose input is its kept
state plus `resume_at` (its checkpoint Task), a running job whose last state was kept
(functions/local_runtime/resume.py) one that starts at that state with that state's input, and each job
names its new execution; an unfinished job with nothing kept ends FAILED.

The first life only writes the job records (no state machine runs in it), as a stopped runtime leaves
them. The later lives' research machine ends each execution at once, so nothing lingers from one life
into the next: the test reads what was started, and that a second restart starts it again, once. The
real pipeline waiting, killed and approved is tests/e2e/test_checkpoint_restart.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from functions.common.resources import StateMachineSpec
from functions.local_runtime import resume
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.recovery import INTERRUPTED_REASON
from functions.orchestrate.models import JobStatus
from functions.orchestrate.store import DynamoDbJobStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TEAM = "team-recovery01"
STARTED_AT = "2026-11-25T08:00:00+00:00"
KEPT_STATE = {
    "job_id": "job-waiting",
    "team_id": TEAM,
    "research_goal": "Crash recovery of key-value stores",
    "checkpoints": {"plan": False, "screening": True, "extraction": False, "synthesis": False},
    "screen": {"selected_key": "jobs/job-waiting/screening.json", "selected_count": 7, "ratio": 0.5},
}
EXTRACT_INPUT = {
    "job_id": "job-extracting",
    "team_id": TEAM,
    "screen": {
        "action": "EXTRACT",
        "selected": [{"source_id": "s1", "url": "https://arxiv.org/abs/2401.00001"}],
    },
    "max_concurrency": 2,
}
ENDS_AT_ONCE = {"StartAt": "Gone", "States": {"Gone": {"Type": "Pass", "End": True}}}


def _job(job_id: str, status: JobStatus, **fields: Any) -> dict[str, Any]:
    return {
        "team_id": TEAM,
        "job_id": job_id,
        "status": status.value,
        "status_rank": status.rank,
        "created_at": "2026-11-25T07:59:00Z",
        "updated_at": "2026-11-25T08:00:00Z",
        "execution_arn": f"arn:aws:states:us-east-1:123456789012:execution:research:{job_id}",
        "audit": [],
        **fields,
    }


WAITING = {
    "awaiting_checkpoint": True,
    "checkpoint_phase": "screening",
    "checkpoint_state": KEPT_STATE,
    "checkpoint_started_at": STARTED_AT,
    "checkpoint_token": "token-of-the-dead-execution",
}


def _executions() -> list[dict[str, Any]]:
    """Every execution of this life's research machine, with its input."""
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    machine = sfn.list_state_machines()["stateMachines"][0]["stateMachineArn"]
    listed = sfn.list_executions(stateMachineArn=machine)["executions"]
    return [dict(sfn.describe_execution(executionArn=item["executionArn"])) for item in listed]


def test_a_waiting_job_waits_again_a_running_one_goes_on_where_it_was_and_the_others_fail(
    tmp_path: Path,
) -> None:
    state_dir, machine = tmp_path / "state", tmp_path / "research.asl.json"
    machine.write_text(json.dumps(ENDS_AT_ONCE))
    with EmbeddedAws(step_functions=[], state_machines=[], state_dir=state_dir):
        jobs = DynamoDbJobStore()
        assert jobs.create(_job("job-waiting", JobStatus.VALIDATING, **WAITING))
        assert jobs.create(_job("job-searching", JobStatus.SEARCHING))
        # a record from before checkpoints kept their state: nothing to resume from
        assert jobs.create(_job("job-stateless", JobStatus.VALIDATING, awaiting_checkpoint=True))
        assert jobs.create(_job("job-done", JobStatus.COMPLETED, finished_at="2026-11-25T08:01:00Z"))
        assert jobs.create(_job("job-extracting", JobStatus.EXTRACTING))
        table = resume.progress_table()
        assert table is not None  # kept with the state directory
        table.entered(TEAM, "job-extracting", "Extract", EXTRACT_INPUT)

    arns = []
    for _life in (2, 3):
        research = [StateMachineSpec("research", str(machine))]
        with EmbeddedAws(step_functions=[], state_machines=research, state_dir=state_dir) as aws:
            assert aws.resumed_jobs == [f"{TEAM}/job-waiting"]
            assert aws.continued_jobs == [f"{TEAM}/job-extracting"]
            jobs = DynamoDbJobStore()
            waiting = jobs.get(TEAM, "job-waiting")
            assert waiting is not None and waiting["status"] == "VALIDATING"
            assert waiting["awaiting_checkpoint"] is True and waiting["checkpoint_phase"] == "screening"
            assert waiting["checkpoint_started_at"] == STARTED_AT  # the window counts from the first wait
            assert waiting["checkpoint_token"] is None  # the dead execution's token is no longer offered

            # one per job and life, named by the job, started from the kept state
            executions = {item["name"]: item for item in _executions()}
            assert sorted(executions) == ["job-extracting", "job-waiting"]
            assert waiting["execution_arn"] == executions["job-waiting"]["executionArn"]
            assert json.loads(executions["job-waiting"]["input"]) == {
                **KEPT_STATE,
                "resume_at": "CheckpointScreening",
            }
            arns.append(waiting["execution_arn"])
            events = [entry["event"] for entry in waiting["audit"]]
            assert events.count("CHECKPOINT_RESUMED") == len(arns)
            extracting = jobs.get(TEAM, "job-extracting")
            assert extracting is not None and extracting["status"] == "EXTRACTING"
            assert extracting["execution_arn"] == executions["job-extracting"]["executionArn"]
            assert json.loads(executions["job-extracting"]["input"]) == {
                **EXTRACT_INPUT,
                "resume_at": "Extract",
            }
            resumed = [entry for entry in extracting["audit"] if entry["event"] == "JOB_RESUMED"]
            assert len(resumed) == len(arns) and "goes on at Extract" in resumed[-1]["detail"]

            if _life == 2:
                assert sorted(aws.interrupted_jobs) == [f"{TEAM}/job-searching", f"{TEAM}/job-stateless"]
            else:
                assert aws.interrupted_jobs == []
            for job_id in ("job-searching", "job-stateless"):
                failed = jobs.get(TEAM, job_id)
                assert failed is not None and failed["status"] == "FAILED"
                assert failed["failure_reason"] == INTERRUPTED_REASON
            done = jobs.get(TEAM, "job-done")
            assert done is not None and done["status"] == "COMPLETED" and "failure_reason" not in done

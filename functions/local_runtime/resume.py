"""Where a running job had got to, kept so that a restarted local runtime goes on from there.

On AWS a Step Functions execution outlives any process; here it ends with the runtime's. Two things are
kept, in a table of the runtime's own (`PROGRESS_TABLE`, outside the registry: no step declares it, and
it is journaled with the rest of DynamoDB when a state directory is set):

- **the state each research execution entered last** (`RESUME`): when an execution of the research
  machine enters one of the states its `Resume` Choice can start at (Plan, Search, Screen, Extract,
  Synthesize, Finalize, MarkFailed), the state's name and its input (the previous state's output) are
  written before the state runs. A restarted execution starts at that state with that input
  (functions/local_runtime/recovery.py). Entering a human checkpoint writes no point: a job waiting at
  one is resumed from its record (`checkpoint_state`).
- **the output of every finished step** (`STEP#<step>#<digest of its payload>`, the store of
  functions/orchestrate/steps/kept_outputs.py): the state a job resumes at asks its step again, with the
  same payload; a step that had finished answers with its kept output, unmetered, so nothing is run or
  billed twice: the step cut off mid-way runs again, and in the Extract Map only the sources whose step
  had not finished are extracted again.

Entering a checkpoint forgets the job's kept outputs: after a review the steps run on the reviewer's
state, and a synthesis sent back is written anew from the same extractions. Entering a terminal state
(Done, JobFailed) forgets everything kept of the job, and start-up forgets what is kept of every job
that does not go on (one stopped between its last step and its terminal state).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from moto.stepfunctions.parser.asl.component.state.state import CommonStateField
from moto.stepfunctions.parser.asl.eval.environment import Environment

from functions.common.observability import get_logger
from functions.common.resources import STATEMACHINE_DIR
from functions.local_runtime.patching import MethodPatch
from functions.metering.steps import UNKNOWN_JOB, step_ids
from functions.orchestrate.steps import kept_outputs

logger = get_logger("local-resume")

PROGRESS_TABLE = "local-runtime-progress"
RESUME_SK = "RESUME"
STEP_PREFIX = "STEP#"
RESEARCH_MACHINE = "research"
RESUME_KEY = "resume_at"  # the execution input's key the research machine's Resume Choice reads
_DEFINITION = STATEMACHINE_DIR / "research.asl.json"


def _research_states() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(the states the research machine's Resume Choice can start at, checkpoints included; its
    checkpoint Tasks; its terminal states)."""
    states = json.loads(_DEFINITION.read_text(encoding="utf-8"))["States"]
    resume = states["Resume"]
    targets = {choice["Next"] for choice in resume["Choices"]} | {resume["Default"]}
    checkpoints = {
        name for name, state in states.items() if str(state.get("Resource", "")).endswith(".waitForTaskToken")
    }
    terminal = {name for name, state in states.items() if state["Type"] in ("Succeed", "Fail")}
    return frozenset(targets), frozenset(checkpoints), frozenset(terminal)


RESUMABLE_STATES, CHECKPOINT_STATES, TERMINAL_STATES = _research_states()


def create_table(client: Any) -> None:
    client.create_table(
        TableName=PROGRESS_TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def _job_pk(team_id: str, job_id: str) -> str:
    return f"TEAM#{team_id}#JOB#{job_id}"


def _payload_digest(event: Mapping[str, Any]) -> str:
    canonical = json.dumps(event, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _ids(event: Mapping[str, Any]) -> tuple[str, str] | None:
    """(team, job) of a step's payload or a state's input, as metering reads them (at the top level, in
    the Plan step's `input`, in MarkFailed's `state`, else the execution's name); None when it names no
    job."""
    team_id, job_id = step_ids(dict(event))
    return None if job_id == UNKNOWN_JOB else (team_id, job_id)


@dataclass(frozen=True)
class ResumePoint:
    state: str  # the state the execution entered last
    input: dict[str, Any]  # that state's input
    entered_at: str


@dataclass
class JobProgressTable:
    """The runtime's table of resume points and kept step outputs (a client of its own: its calls are
    the runtime's bookkeeping, never counted on a step's meter)."""

    client: Any

    def entered(self, team_id: str, job_id: str, state: str, state_input: Any) -> None:
        self.client.put_item(
            TableName=PROGRESS_TABLE,
            Item={
                "pk": {"S": _job_pk(team_id, job_id)},
                "sk": {"S": RESUME_SK},
                "state": {"S": state},
                "input": {"S": json.dumps(state_input, separators=(",", ":"), default=str)},
                "entered_at": {"S": datetime.now(UTC).isoformat()},
            },
        )

    def resume_point(self, team_id: str, job_id: str) -> ResumePoint | None:
        item = self.client.get_item(
            TableName=PROGRESS_TABLE,
            Key={"pk": {"S": _job_pk(team_id, job_id)}, "sk": {"S": RESUME_SK}},
            ConsistentRead=True,
        ).get("Item")
        if not item:
            return None
        try:
            state_input = json.loads(item["input"]["S"])
        except (KeyError, ValueError):
            return None
        if not isinstance(state_input, dict):
            return None
        return ResumePoint(item["state"]["S"], state_input, item.get("entered_at", {}).get("S", ""))

    def get(self, step: str, event: Mapping[str, Any]) -> dict[str, Any] | None:
        ids = _ids(event)
        if ids is None:
            return None
        item = self.client.get_item(
            TableName=PROGRESS_TABLE,
            Key={"pk": {"S": _job_pk(*ids)}, "sk": {"S": f"{STEP_PREFIX}{step}#{_payload_digest(event)}"}},
            ConsistentRead=True,
        ).get("Item")
        if not item:
            return None
        output = json.loads(item["output"]["S"])
        return output if isinstance(output, dict) else None

    def put(self, step: str, event: Mapping[str, Any], output: dict[str, Any]) -> None:
        ids = _ids(event)
        if ids is None:
            return
        self.client.put_item(
            TableName=PROGRESS_TABLE,
            Item={
                "pk": {"S": _job_pk(*ids)},
                "sk": {"S": f"{STEP_PREFIX}{step}#{_payload_digest(event)}"},
                "output": {"S": json.dumps(output, separators=(",", ":"), default=str)},
            },
        )

    def forget_outputs(self, team_id: str, job_id: str) -> None:
        """Drop the job's kept step outputs (its resume point stays)."""
        self._forget(team_id, job_id, STEP_PREFIX)

    def forget_job(self, team_id: str, job_id: str) -> None:
        """Drop everything kept of the job: its execution ended, nothing of it will resume."""
        self._forget(team_id, job_id, None)

    def forget_all_but(self, going_on: set[tuple[str, str]]) -> int:
        """Drop what is kept of every job but those (team, job) `going_on`: the others' executions
        ended, even the one stopped before it entered its terminal state. Returns how many items went."""
        keep = {_job_pk(team_id, job_id) for team_id, job_id in going_on}
        options: dict[str, Any] = {"TableName": PROGRESS_TABLE, "ProjectionExpression": "pk, sk"}
        dropped = 0
        while True:
            page = self.client.scan(**options)
            for item in page.get("Items", []):
                if item["pk"]["S"] not in keep:
                    self.client.delete_item(
                        TableName=PROGRESS_TABLE, Key={"pk": item["pk"], "sk": item["sk"]}
                    )
                    dropped += 1
            if "LastEvaluatedKey" not in page:
                return dropped
            options["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _forget(self, team_id: str, job_id: str, prefix: str | None) -> None:
        values = {":pk": {"S": _job_pk(team_id, job_id)}}
        condition = "pk = :pk"
        if prefix is not None:
            values[":prefix"] = {"S": prefix}
            condition += " AND begins_with(sk, :prefix)"
        options: dict[str, Any] = {
            "TableName": PROGRESS_TABLE,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ProjectionExpression": "pk, sk",
        }
        while True:
            page = self.client.query(**options)
            for item in page.get("Items", []):
                self.client.delete_item(TableName=PROGRESS_TABLE, Key={"pk": item["pk"], "sk": item["sk"]})
            if "LastEvaluatedKey" not in page:
                return
            options["ExclusiveStartKey"] = page["LastEvaluatedKey"]


_table: JobProgressTable | None = None


def progress_table() -> JobProgressTable | None:
    """The running runtime's table (None when no runtime keeps progress)."""
    return _table


def _entering(state: CommonStateField, env: Environment) -> None:
    """Record a research execution's entry into a state it could be restarted at."""
    table = _table
    if table is None or (state.name not in RESUMABLE_STATES and state.name not in TERMINAL_STATES):
        return  # (the checkpoints are among the resumable states)
    context = env.states.context_object.context_object_data
    if context["StateMachine"]["Name"] != RESEARCH_MACHINE:
        return
    state_input = env.states.get_input()
    ids = (
        _ids({**state_input, "execution_name": context["Execution"]["Name"]})
        if isinstance(state_input, dict)
        else None
    )
    if ids is None:
        return
    try:
        if state.name in TERMINAL_STATES:
            table.forget_job(*ids)
        elif state.name in CHECKPOINT_STATES:
            table.forget_outputs(*ids)
        else:
            table.entered(*ids, state.name, state_input)
    except Exception:  # bookkeeping never stops the execution; a restart then resumes further back
        logger.warning("resume point not kept", state=state.name, job_id=ids[1], exc_info=True)


def _recording(original: Any) -> Any:
    def eval_body(self: CommonStateField, env: Environment) -> None:
        _entering(self, env)
        original(self, env)

    return eval_body


_PATCH = MethodPatch(CommonStateField, "_eval_body", _recording)


def install(client: Any) -> None:
    """Create the table with `client` (a DynamoDB client of the runtime's own), record research
    executions' progress in it and keep the steps' outputs."""
    global _table
    create_table(client)
    _table = JobProgressTable(client)
    kept_outputs.keep_outputs_in(_table)
    _PATCH.install()


def uninstall() -> None:
    global _table
    _PATCH.uninstall()
    kept_outputs.keep_outputs_in(None)
    _table = None

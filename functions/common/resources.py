"""The AWS resources the functions need, described once.

The local runtime creates exactly these; the CDK app (infra/) deploys exactly these. Table and bucket
names reach the code through the settings named in `setting`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

REPO_ROOT = Path(__file__).resolve().parents[2]
STATEMACHINE_DIR = REPO_ROOT / "statemachine"


@dataclass(frozen=True)
class IndexSpec:
    """A global secondary index: its string partition key, and the attributes it projects besides the keys."""

    name: str
    partition_key: str
    projected: tuple[str, ...] = ()

    def create_request(self) -> dict[str, object]:
        """One entry of CreateTable's `GlobalSecondaryIndexes`."""
        return {
            "IndexName": self.name,
            "KeySchema": [{"AttributeName": self.partition_key, "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(self.projected)},
        }


@dataclass(frozen=True)
class TableSpec:
    setting: str  # Settings attribute (and upper-cased environment variable) holding the table name
    partition_key: str
    sort_key: str | None = None
    ttl_attribute: str | None = None
    purpose: str = ""
    indexes: tuple[IndexSpec, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """The partition key, then the sort key if any: both strings."""
        return (self.partition_key, *([self.sort_key] if self.sort_key else []))

    def key_schema(self) -> list[dict[str, str]]:
        """`KeySchema` of DynamoDB's CreateTable."""
        return [
            {"AttributeName": key, "KeyType": kind}
            for key, kind in zip(self.keys, ("HASH", "RANGE"), strict=False)
        ]

    def attribute_definitions(self) -> list[dict[str, str]]:
        """`AttributeDefinitions` of DynamoDB's CreateTable: the keys and the indexes' keys, strings."""
        keys = dict.fromkeys((*self.keys, *(index.partition_key for index in self.indexes)))
        return [{"AttributeName": key, "AttributeType": "S"} for key in keys]

    def create_request(self, name: str) -> dict[str, object]:
        """DynamoDB's CreateTable request for this table named `name`, on demand."""
        request: dict[str, object] = {
            "TableName": name,
            "KeySchema": self.key_schema(),
            "AttributeDefinitions": self.attribute_definitions(),
            "BillingMode": "PAY_PER_REQUEST",
        }
        if self.indexes:
            request["GlobalSecondaryIndexes"] = [index.create_request() for index in self.indexes]
        return request


@dataclass(frozen=True)
class BucketSpec:
    setting: str
    versioned: bool = False
    expiring_prefixes: dict[str, int] = field(default_factory=dict)  # prefix -> days
    purpose: str = ""


Access = Literal["read", "read_write"]


@dataclass(frozen=True)
class Uses:
    """What of the registry a function reaches, and how: the settings of the tables and buckets it reads
    and writes or only reads, whether it puts events on the event bus, and the purposes (encryption
    contexts) under which it encrypts or decrypts with the teams' secret key. The CDK app grants exactly
    this; the local runtime refuses a step Lambda anything else (functions/local_runtime/grants.py)."""

    read_write: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    events: bool = False
    encrypts: tuple[str, ...] = ()
    decrypts: tuple[str, ...] = ()

    def access(self, setting: str) -> Access | None:
        if setting in self.read_write:
            return "read_write"
        return "read" if setting in self.read else None

    @property
    def settings(self) -> frozenset[str]:
        return frozenset((*self.read_write, *self.read))


@dataclass(frozen=True)
class StepFunctionSpec:
    """A Lambda that a state machine invokes; `${<logical_id>Arn}` in ASL files resolves to it."""

    logical_id: str
    handler: str  # dotted path "package.module.function", the same string on AWS and locally
    memory_mb: int = 1024
    timeout_seconds: int = 60  # above the 45 s TimeoutSeconds of every Task
    uses: Uses = Uses()


@dataclass(frozen=True)
class StateMachineSpec:
    name: str
    definition_file: str  # relative to statemachine/ (an absolute path, e.g. a test fixture, as is)

    @property
    def path(self) -> Path:
        return STATEMACHINE_DIR / self.definition_file


# The jobs table's index of each team's jobs (idempotency keys carry no `team_id`, so are not in it): a
# team's jobs are found without reading another team's. It projects what lists of jobs show.
JOBS_BY_TEAM = IndexSpec(
    "by_team",
    "team_id",
    projected=(
        "job_id",
        "status",
        "research_goal",
        "awaiting_checkpoint",
        "checkpoint_phase",
        "checkpoint_started_at",
    ),
)

TABLES: tuple[TableSpec, ...] = (
    TableSpec(
        "jobs_table",
        "pk",
        "sk",
        ttl_attribute="expires_at",
        purpose="research jobs, idempotency keys",
        indexes=(JOBS_BY_TEAM,),
    ),
    TableSpec("cache_table", "cache_key", ttl_attribute="expires_at", purpose="upstream response cache"),
    TableSpec("rate_limit_table", "bucket_key", ttl_attribute="expires_at", purpose="token buckets"),
    TableSpec("documents_table", "team_id", "document_id", purpose="uploaded documents, per team"),
    TableSpec("traces_table", "trace_id", "seq", ttl_attribute="expires_at", purpose="answer and job traces"),
    TableSpec(
        "teams_table",
        "pk",
        "sk",
        purpose="teams, their tokens and API keys (hashed), budgets and webhook secrets",
    ),
    TableSpec("usage_table", "pk", "sk", purpose="metered usage per team and month; job cost ledgers"),
)

BUCKETS: tuple[BucketSpec, ...] = (
    BucketSpec(
        "data_bucket",
        expiring_prefixes={"payloads/": 7, "cache/": 30},
        purpose="PDFs by sha256, parsed papers, step payloads, knowledge-base index",
    ),
    BucketSpec("artifacts_bucket", versioned=True, purpose="report artifacts"),
)

# What every step reaches: the job's record, and its cost ledger and the team's month (each invocation is
# metered: functions/metering/steps.py). Steps that ask the budget before a unit of work also read the
# team's monthly budget in the teams table; steps that trace write the traces table.
_JOB_AND_LEDGER = ("jobs_table", "usage_table")
# The search connectors: response cache, token buckets and turns at the providers, the teams' own upstream
# keys (sealed), uploaded documents (the library connector).
_SEARCHING = Uses(
    read_write=("cache_table", "rate_limit_table"),
    read=("teams_table", "documents_table"),
    decrypts=("upstream-key",),
)
# A webhook: its delivery log (jobs table) and the team's signing secret.
_NOTIFYING = Uses(read=("teams_table",), decrypts=("webhook-secret",))
# Completion: the event bus and the webhook.
_ANNOUNCING = Uses(events=True, read=_NOTIFYING.read, decrypts=_NOTIFYING.decrypts)


def _step_uses(*parts: Uses, read_write: tuple[str, ...] = (), read: tuple[str, ...] = ()) -> Uses:
    """A step's declaration: the job and its ledger, `parts` and the settings given, merged."""
    every = (Uses(read_write=_JOB_AND_LEDGER), *parts, Uses(read_write=read_write, read=read))
    writes = tuple(dict.fromkeys(name for part in every for name in part.read_write))
    return Uses(
        read_write=writes,
        read=tuple(dict.fromkeys(name for part in every for name in part.read if name not in writes)),
        events=any(part.events for part in every),
        encrypts=tuple(dict.fromkeys(purpose for part in every for purpose in part.encrypts)),
        decrypts=tuple(dict.fromkeys(purpose for part in every for purpose in part.decrypts)),
    )


def _step(
    name: str, memory_mb: int, *parts: Uses, read_write: tuple[str, ...] = (), read: tuple[str, ...] = ()
) -> StepFunctionSpec:
    """The workflow step `name`: Lambda `Research<Name>Step` running functions/orchestrate/steps/<name>.py."""
    return StepFunctionSpec(
        f"Research{name.capitalize()}Step",
        f"functions.orchestrate.steps.{name}.handler",
        memory_mb=memory_mb,
        uses=_step_uses(*parts, read_write=read_write, read=read),
    )


# Every Lambda the state machines call (the research workflow: functions/orchestrate/steps/), with what
# its state's work reaches (the step module of the same name).
STEP_FUNCTIONS: tuple[StepFunctionSpec, ...] = (
    # Creates the record of a job a schedule started (planning reads OpenAlex's daily allowance left) and
    # holds its budget; traces the plan.
    _step("plan", 512, read_write=("traces_table",), read=("teams_table", "rate_limit_table")),
    # Searches; the hits go to the data bucket.
    _step("search", 512, _SEARCHING, read_write=("traces_table", "data_bucket")),
    # Screening embeds up to 250 candidates with MiniLM: 2 GB buys about 1.2 vCPU for it. Reads the hits,
    # writes the screening.
    _step("screen", 2048, read_write=("traces_table", "data_bucket"), read=("teams_table",)),
    # Citation chasing: the providers' citation graphs through their turns (and the response cache), then
    # the chased works screened with MiniLM beside the searches' hits; reads the hits and the kept
    # vectors, writes the joined screening.
    _step("chase", 2048, _SEARCHING, read_write=("traces_table", "data_bucket")),
    # Keeps the task token and the state on the job record; sends `job.checkpoint_waiting`.
    _step("checkpoint", 256, _NOTIFYING),
    # Fetches and parses one source (cached in the data bucket; `library://` sources are uploaded
    # documents), through the providers' turns and the teams' own keys.
    _step("extract", 2048, _SEARCHING, read_write=("traces_table", "data_bucket")),
    # Reads the extracted papers, writes the synthesis.
    _step("synthesize", 1024, read_write=("traces_table", "data_bucket"), read=("teams_table",)),
    # Reads the screening and the synthesis, writes the artifacts (a living review reads the last run's
    # and asks the citation graphs, through the providers' turns, for works citing its sources),
    # announces the job.
    _step(
        "finalize",
        1024,
        _ANNOUNCING,
        _SEARCHING,
        read_write=("traces_table", "artifacts_bucket"),
        read=("data_bucket",),
    ),
    # Records the failure (and the record of a scheduled job that failed before Plan made it); announces it.
    _step("fail", 256, _ANNOUNCING, read_write=("traces_table",), read=("rate_limit_table",)),
)

STATE_MACHINES: tuple[StateMachineSpec, ...] = (StateMachineSpec("research", "research.asl.json"),)

# The `${Name}` an ASL file may use for a resource, and the setting holding that resource's name. The CDK
# app and the local runtime substitute these, plus `${<logical_id>Arn}` for every step function.
STATE_MACHINE_SUBSTITUTIONS: Mapping[str, str] = {
    "DataBucket": "data_bucket",
    "ArtifactsBucket": "artifacts_bucket",
    "JobsTable": "jobs_table",
    "EventBusName": "event_bus_name",
}

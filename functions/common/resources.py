"""The AWS resources the functions need, described once.

The local runtime creates exactly these; the CDK app (infra/) deploys exactly these. Table and bucket
names reach the code through the settings named in `setting`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
STATEMACHINE_DIR = REPO_ROOT / "statemachine"


@dataclass(frozen=True)
class TableSpec:
    setting: str  # Settings attribute (and upper-cased environment variable) holding the table name
    partition_key: str
    sort_key: str | None = None
    ttl_attribute: str | None = None
    purpose: str = ""


@dataclass(frozen=True)
class BucketSpec:
    setting: str
    versioned: bool = False
    expiring_prefixes: dict[str, int] = field(default_factory=dict)  # prefix -> days
    purpose: str = ""


@dataclass(frozen=True)
class StepFunctionSpec:
    """A Lambda that a state machine invokes; `${<logical_id>Arn}` in ASL files resolves to it."""

    logical_id: str
    handler: str  # dotted path "package.module.function", the same string on AWS and locally
    memory_mb: int = 1024
    timeout_seconds: int = 60  # above the 45 s TimeoutSeconds of every Task


@dataclass(frozen=True)
class StateMachineSpec:
    name: str
    definition_file: str  # relative to statemachine/ (an absolute path, e.g. a test fixture, as is)

    @property
    def path(self) -> Path:
        return STATEMACHINE_DIR / self.definition_file


TABLES: tuple[TableSpec, ...] = (
    TableSpec(
        "jobs_table", "pk", "sk", ttl_attribute="expires_at", purpose="research jobs, idempotency keys"
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

# Every Lambda the state machines call (the research workflow: functions/orchestrate/steps/).
STEP_FUNCTIONS: tuple[StepFunctionSpec, ...] = (
    StepFunctionSpec("ResearchPlanStep", "functions.orchestrate.steps.plan.handler", memory_mb=512),
    StepFunctionSpec("ResearchSearchStep", "functions.orchestrate.steps.search.handler", memory_mb=512),
    # Screening embeds up to 250 candidates with MiniLM: 2 GB buys about 1.2 vCPU for it.
    StepFunctionSpec("ResearchScreenStep", "functions.orchestrate.steps.screen.handler", memory_mb=2048),
    StepFunctionSpec(
        "ResearchCheckpointStep", "functions.orchestrate.steps.checkpoint.handler", memory_mb=256
    ),
    StepFunctionSpec("ResearchExtractStep", "functions.orchestrate.steps.extract.handler", memory_mb=2048),
    StepFunctionSpec(
        "ResearchSynthesizeStep", "functions.orchestrate.steps.synthesize.handler", memory_mb=1024
    ),
    StepFunctionSpec("ResearchFinalizeStep", "functions.orchestrate.steps.finalize.handler", memory_mb=1024),
    StepFunctionSpec("ResearchFailStep", "functions.orchestrate.steps.fail.handler", memory_mb=256),
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

"""Quantities of billed usage and what they cost at a price table.

A step's usage is measured, not guessed: its Lambda duration times the memory the registry gives its
function (`functions.common.resources.STEP_FUNCTIONS`), the state transitions it causes, the S3 and
DynamoDB requests its boto3 clients made, and the LLM tokens its provider reported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from functions.common.resources import STEP_FUNCTIONS
from functions.metering.prices import PriceTable

STEP_HANDLER_PREFIX = "functions.orchestrate.steps."

# S3 request tiers: PUT, COPY, POST and LIST are tier 1; GET, HEAD and the rest tier 2; DELETE is free.
S3_TIER1 = frozenset(
    {
        "PutObject",
        "CopyObject",
        "PostObject",
        "ListObjects",
        "ListObjectsV2",
        "ListObjectVersions",
        "ListBuckets",
        "CreateMultipartUpload",
        "UploadPart",
        "UploadPartCopy",
        "CompleteMultipartUpload",
    }
)
S3_FREE = frozenset({"DeleteObject", "DeleteObjects", "AbortMultipartUpload"})
DYNAMODB_WRITES = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "ExecuteStatement"}
)
DYNAMODB_READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})

# State transitions each step causes in statemachine/research.asl.json (Standard workflows bill every
# state entered, a retry and each Map iteration's states included): its own Task state, plus the states
# around it that no Lambda runs (Plan enters the Search Map; Screen the AfterScreen Choice and then the
# next Map; Finalize the Done state; MarkFailed the JobFailed state).
TERMINAL_STEPS = frozenset({"finalize", "fail"})  # the steps that close a job (Finalize, MarkFailed)
STEP_TRANSITIONS: Mapping[str, int] = {
    "plan": 2,
    "search": 1,
    "screen": 3,
    "checkpoint": 1,
    "extract": 1,
    "synthesize": 1,
    "finalize": 2,
    "fail": 2,
}


DEFERRAL_PREFIX = "deferred_"


def deferral_counter(step: str) -> str:
    """The counter of a job's deferred attempts of one step (its `deferred` figures in the usage report)."""
    return f"{DEFERRAL_PREFIX}{step}"


def step_cost_counter(step: str) -> str:
    """The job ledger's counter of what its steps of one kind cost together (budget estimates)."""
    return f"cost_step_{step}_usd"


def step_memory_mb(step: str, default: int = 1024) -> int:
    """The memory the registry configures for the step's function (what CDK deploys)."""
    handler = f"{STEP_HANDLER_PREFIX}{step}.handler"
    for spec in STEP_FUNCTIONS:
        if spec.handler == handler:
            return spec.memory_mb
    return default


def billed_gb_seconds(duration_seconds: float, memory_mb: int) -> float:
    """Lambda bills duration rounded up to the millisecond, times the configured memory."""
    billed_ms = max(1, math.ceil(duration_seconds * 1000))
    return billed_ms / 1000 * memory_mb / 1024


@dataclass
class Quantities:
    """What some usage (a request, a step, a job) is billed for, measured; `cost` prices it."""

    lambda_gb_seconds: float = 0.0
    lambda_requests: int = 0
    sfn_transitions: int = 0
    s3_tier1_requests: int = 0
    s3_tier2_requests: int = 0
    dynamodb_write_requests: int = 0
    dynamodb_read_requests: int = 0
    llm_tokens_in: int = 0
    llm_tokens_out: int = 0

    def add_aws_call(self, service: str, operation: str, count: int = 1) -> None:
        if service == "s3":
            if operation in S3_TIER1:
                self.s3_tier1_requests += count
            elif operation not in S3_FREE:
                self.s3_tier2_requests += count
        elif service == "dynamodb":
            if operation in DYNAMODB_WRITES:
                self.dynamodb_write_requests += count
            elif operation in DYNAMODB_READS:
                self.dynamodb_read_requests += count

    def cost(self, prices: PriceTable) -> Cost:
        return Cost(
            lambda_usd=self.lambda_gb_seconds * prices.lambda_gb_second
            + self.lambda_requests * prices.lambda_request,
            step_functions_usd=self.sfn_transitions * prices.sfn_state_transition,
            s3_usd=self.s3_tier1_requests * prices.s3_tier1_request
            + self.s3_tier2_requests * prices.s3_tier2_request,
            dynamodb_usd=self.dynamodb_write_requests * prices.dynamodb_write_request
            + self.dynamodb_read_requests * prices.dynamodb_read_request,
            llm_usd=self.llm_tokens_in * prices.llm_input_token
            + self.llm_tokens_out * prices.llm_output_token,
        )

    def to_counters(self) -> dict[str, float | int]:
        """The non-zero quantities, as counters of the usage store."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}

    @classmethod
    def from_counters(cls, counters: Mapping[str, Any]) -> Quantities:
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = counters.get(f.name, 0) or 0
            values[f.name] = float(raw) if f.name == "lambda_gb_seconds" else int(raw)
        return cls(**values)


@dataclass(frozen=True)
class Cost:
    """What usage costs in USD, part by part (their names: `COST_PARTS`); `total_usd` is their sum."""

    lambda_usd: float
    step_functions_usd: float
    s3_usd: float
    dynamodb_usd: float
    llm_usd: float

    @property
    def total_usd(self) -> float:
        return self.lambda_usd + self.step_functions_usd + self.s3_usd + self.dynamodb_usd + self.llm_usd

    def to_counters(self) -> dict[str, float]:
        """`cost_usd` and its parts as `cost_<part>` counters (non-zero only)."""
        counters = {f"cost_{part}": getattr(self, part) for part in COST_PARTS if getattr(self, part)}
        if self.total_usd:
            counters["cost_usd"] = self.total_usd
        return counters

    @classmethod
    def from_counters(cls, counters: Mapping[str, Any]) -> Cost:
        return cls(**{part: float(counters.get(f"cost_{part}", 0) or 0) for part in COST_PARTS})

    def to_dict(self, digits: int = 8) -> dict[str, float]:
        return {"total_usd": round(self.total_usd, digits)} | {
            part: round(getattr(self, part), digits) for part in COST_PARTS
        }


COST_PARTS = tuple(part.name for part in fields(Cost))

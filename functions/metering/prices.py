"""The price table every cost is computed with: recorded job costs, quotes and budgets alike.

Defaults are AWS's public on-demand list prices for us-east-1 (no free tier, first pricing tier), as
of `PRICES_AS_OF`; the functions run on arm64 (infra/components/functions.py), and the default model is
Claude 3 Haiku on Bedrock (functions/common/llm.py). A deployment overrides any of them with a JSON
object in `PRICE_TABLE_JSON` (e.g. `{"llm_input_token": 3e-6, "llm_output_token": 1.5e-5}` for another
model); unknown keys and negative prices are refused, so a typo cannot silently price at zero.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

PRICES_AS_OF = "2025-06-01"


class PriceTable(BaseModel):
    """USD per unit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    as_of: str = PRICES_AS_OF
    region: str = "us-east-1"
    # Lambda, arm64: duration per GB-second (first 7.5 billion GB-s a month) and per request.
    lambda_gb_second: float = Field(default=0.0000133334, ge=0)
    lambda_request: float = Field(default=0.20 / 1e6, ge=0)
    # Step Functions Standard workflows: per state transition ($0.025 per 1,000).
    sfn_state_transition: float = Field(default=0.025 / 1000, ge=0)
    # S3 Standard: PUT, COPY, POST, LIST ($0.005 per 1,000); GET, HEAD and the rest ($0.0004 per 1,000).
    s3_tier1_request: float = Field(default=0.005 / 1000, ge=0)
    s3_tier2_request: float = Field(default=0.0004 / 1000, ge=0)
    # DynamoDB on-demand (since the November 2024 reduction): one request unit per request.
    dynamodb_write_request: float = Field(default=0.625 / 1e6, ge=0)
    dynamodb_read_request: float = Field(default=0.125 / 1e6, ge=0)
    # Bedrock on-demand, Claude 3 Haiku: $0.25 and $1.25 per million input and output tokens.
    llm_input_token: float = Field(default=0.25 / 1e6, ge=0)
    llm_output_token: float = Field(default=1.25 / 1e6, ge=0)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


DEFAULT_PRICES = PriceTable()


class PriceTableError(ValueError):
    pass


def load_price_table(raw: str | None) -> PriceTable:
    """The defaults, overridden by the JSON object `raw` (PRICE_TABLE_JSON); PriceTableError if invalid."""
    if not raw or not raw.strip():
        return DEFAULT_PRICES
    try:  # every field has its default: the object's prices override those they name
        return PriceTable.model_validate_json(raw)
    except ValidationError as exc:
        raise PriceTableError(f"PRICE_TABLE_JSON is invalid: {exc}") from exc

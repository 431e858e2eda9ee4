"""Why a research job did not end COMPLETED, read black-box from what the API tells its user.

The job's status (`GET /api/agent/status/{id}`: `current_phase`, `failure_reason`) and its results
(`GET /api/agent/results/{id}`: `execution_summary.failed_connectors`, the audit log's CONNECTOR_FAILED
and extraction events, the BUDGET_REACHED and other skipped-work decisions, any `partial_reason(s)`
field). Used by the benches that report PARTIAL apart from COMPLETED (`bench.quality`,
`bench.concurrency`). Numbers with decimals are replaced by N, so that the same cause in many jobs
counts as one ("next slot in 13.2 s" and "next slot in 9.8 s" alike).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Extraction events that are a lost source (a retry might mend it), not a paper without open full text.
_INTERRUPTED_EXTRACTIONS = ("EXTRACTION_TIMEOUT", "SOURCE_STEP_FAILED", "RETRYABLE_ERROR")
_NO_OPEN_FULL_TEXT = re.compile(
    r"\b(401|402|403|404|410|451)\b|not found|unavailable|subscription|paywall", re.I
)
_SKIPPED_WORK = re.compile(r"BUDGET|RATE|NOT_RUN|SKIP|DEFER", re.I)
_URL = re.compile(r"https?://\S+")


def _plain(text: object, limit: int = 160) -> str:
    cleaned = re.sub(r"\d+\.\d+", "N", _URL.sub("<url>", " ".join(str(text).split())))
    return cleaned[:limit]


def _generic_phase_descriptions() -> set[str]:
    """The stock phase texts (no cause in them); empty when the project no longer has the table."""
    try:
        from functions.orchestrate.models import PHASE_DESCRIPTIONS
    except ImportError:
        return set()
    return {str(text) for text in PHASE_DESCRIPTIONS.values()}


def job_causes(status: Mapping[str, Any] | None, results: Mapping[str, Any] | None) -> list[str]:
    """The causes a job's own record gives for a status short of COMPLETED, each once, in order."""
    causes: list[str] = []
    status = status or {}
    results = results or {}
    phase = status.get("current_phase")
    if isinstance(phase, Mapping):
        description = phase.get("phase_description")
        if description and str(description) not in _generic_phase_descriptions():
            causes.append(f"phase: {_plain(description)}")
    for source in (status, results):
        if source.get("failure_reason"):
            causes.append(f"failed: {_plain(source['failure_reason'])}")
    if results.get("refusal_reason"):
        causes.append(f"refused: {_plain(results['refusal_reason'])}")
    summary = results.get("execution_summary")
    summary = summary if isinstance(summary, Mapping) else {}
    for holder in (results, summary):
        for key, value in holder.items():
            if "partial_reason" in key or "not_run" in key:
                values = value if isinstance(value, list) else [value]
                causes.extend(f"{key}: {_plain(item)}" for item in values if item)
    trail = results.get("audit_trail_summary")
    audit = trail.get("audit_log") if isinstance(trail, Mapping) else None
    reported_connectors: set[str] = set()
    for entry in audit if isinstance(audit, list) else []:
        event, detail = str(entry.get("event", "")), str(entry.get("detail", ""))
        if event == "CONNECTOR_FAILED":
            causes.append(f"connector failed: {_plain(detail)}")
            reported_connectors.add(detail.partition(":")[0].strip())
        elif event in _INTERRUPTED_EXTRACTIONS or (
            event == "EXTRACTION_FAILED" and not _NO_OPEN_FULL_TEXT.search(detail)
        ):
            reason = detail.split(": ", 1)[-1]
            causes.append(f"extraction {event.lower()}: {_plain(reason)}")
    failed = summary.get("failed_connectors")
    for name in failed if isinstance(failed, list) else []:
        if str(name) not in reported_connectors:
            causes.append(f"connector failed: {name}")
    for decision in results.get("autonomous_decisions") or []:
        kind = str(decision.get("decision_type", ""))
        if _SKIPPED_WORK.search(kind):
            causes.append(
                f"{kind.lower()}: {_plain(decision.get('action_taken') or decision.get('reasoning'))}"
            )
    return list(dict.fromkeys(causes))

"""Schemathesis over every operation of the local runtime's merged OpenAPI document (issue 12).

The Gateway over every function app on an embedded AWS (tests/contract/runtime.py), called in-process
over ASGI; a scholarly web on loopback answers the searches and serves the PDFs. A fixed seed, bounded
examples per operation, and the six checks below must all pass: every status an operation answers is
documented with its family's error body, valid requests are accepted and invalid ones refused.

Positive examples of the few fields whose validity JSON Schema cannot state (an address that must be
fetched from the loopback web, a schedule expression, a time zone, a year range's order, a callback that
would be resolved in DNS, an uploaded file's or a reference's BibTeX) are replaced by realistic values before the call; negative examples are sent
as generated.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import hypothesis
import pytest
import schemathesis
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from functions.local_runtime.gateway import Gateway, load_function_apps, merged_openapi
from infra.routes import gateway_path, routes_of
from tests.contract.runtime import ADMIN_TOKEN, ContractRuntime, contract_runtime

pytestmark = pytest.mark.integration

SEED = 20261123
MAX_EXAMPLES = 15
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
    positive_data_acceptance,
]


# The apps and the gateway are built at import (the schema is read from it while collecting); the
# embedded AWS, the loopback web and the knowledge base they use start with the module's fixture.
GATEWAY = Gateway(load_function_apps(), auth_required=False)
schema = schemathesis.openapi.from_asgi("/openapi.json", GATEWAY)
schema.config.seed = SEED
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=MAX_EXAMPLES
)
schema.config.phases.update(phases=["examples", "fuzzing"])


SENT: Counter[str] = Counter()  # requests sent per operation (printed at the end with `pytest -s`)


@pytest.fixture(scope="module")
def runtime() -> Iterator[ContractRuntime]:
    started = time.monotonic()
    with contract_runtime(GATEWAY) as running:
        yield running
    print(
        f"\nschemathesis: {len(SENT)} operations, {sum(SENT.values())} requests "
        f"({sum(SENT.values()) / max(len(SENT), 1):.1f} per operation, seed {SEED}, "
        f"max_examples {MAX_EXAMPLES}) in {time.monotonic() - started:.1f} s"
    )


def _realistic(case: Any, runtime: ContractRuntime) -> None:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or not isinstance(case.body, dict):
        return
    body: dict[str, Any] = case.body
    label = f"{case.method.upper()} {case.path}"
    if label == "POST /v1/documents":
        body["file"] = runtime.pdf
        if "metadata" in body:
            body["metadata"] = '{"title": "An uploaded paper", "year": 2024}'
    elif label == "POST /v1/references/check":
        _realistic_references(body)
    elif label == "POST /api/tools/extract":
        body["source_url"] = runtime.arxiv_id
    elif label == "POST /v1/claims/verify" and body.get("sources"):
        body["sources"] = [runtime.arxiv_id]  # a random string names no source (400)
    elif label in ("POST /api/schedules", "POST /api/agent/execute"):
        body.pop("callback_url", None)
        if label == "POST /api/schedules":
            body.update(schedule_expression="rate(1 day)", timezone="UTC", scope_parameters={})
    elif label == "POST /api/tools/search":
        years = ((body.get("filters") or {}) if isinstance(body.get("filters"), dict) else {}).get(
            "year_range"
        )
        if (
            isinstance(years, dict)
            and isinstance(years.get("start"), int)
            and isinstance(years.get("end"), int)
        ):
            years["start"], years["end"] = sorted((years["start"], years["end"]))


BIBTEX = b"@article{k, title={A Title of Some Length}, author={Doe, Jane}, year={2020}}"


def _realistic_references(body: dict[str, Any]) -> None:
    """An upload is a .bib file (a PDF or BibTeX is what the route reads), and a reference string that
    starts like a BibTeX entry is a whole one."""
    if "file" in body:
        body["file"] = BIBTEX
    references = body.get("references")
    if isinstance(references, list):
        body["references"] = [
            BIBTEX.decode() if isinstance(r, str) and r.lstrip().startswith("@") else r for r in references
        ]


@schema.parametrize()
@hypothesis.settings(deadline=None, suppress_health_check=list(hypothesis.HealthCheck), database=None)
def test_every_operation_keeps_its_contract(case: Any, runtime: ContractRuntime) -> None:
    _realistic(case, runtime)
    SENT[f"{case.method.upper()} {case.path}"] += 1
    case.call_and_validate(checks=CHECKS, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


def test_every_route_is_documented_with_its_errors() -> None:
    """Every routed operation is in the merged document, none keeps FastAPI's 422 unless it answers
    one, and each documents the gateway's 401 and the catch-all 500 with an error body."""
    apps = load_function_apps()
    # `/mcp` speaks JSON-RPC (the MCP transport), not REST: docs/mcp.md describes it, not the document
    routed = {(route.method, route.path) for route in routes_of(apps) if route.path != "/mcp"}
    spec = merged_openapi(apps)
    documented = {
        (method.upper(), gateway_path(path)) for path, item in spec["paths"].items() for method in item
    }
    assert documented == routed
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert {"401", "500"} <= set(responses), (method, path)
            if "422" in responses:
                assert (method, path) == ("post", "/v1/documents")  # an unreadable PDF
            for status, response in responses.items():
                if int(status) >= 400:
                    assert response["content"]["application/json"]["schema"]["$ref"], (method, path, status)

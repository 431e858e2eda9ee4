"""cdk-nag AwsSolutions with zero unsuppressed findings, every suppression with a reason; cfn-lint clean;
the ASL validator on every state machine file (when the pinned Node tools are installed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cfnlint.api import lint  # type: ignore[import-untyped]

from functions.common import resources
from tests.infra.conftest import PROBE_ASL, Synthesized
from tests.infra.template_facts import walk

ASL_VALIDATOR = resources.REPO_ROOT / "node_modules" / ".bin" / "asl-validator"


def test_cdk_nag_aws_solutions_has_no_unsuppressed_findings(synthesized: Synthesized) -> None:
    assert synthesized.nag_findings() == []


def test_every_nag_suppression_carries_its_reason(synthesized: Synthesized) -> None:
    suppressions = [
        rule
        for resource in synthesized.template_json["Resources"].values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    ]
    assert suppressions, "expected the documented suppressions (e.g. L1, IAM4) to be present"
    for rule in suppressions:
        assert rule["id"].startswith("AwsSolutions-")
        assert len(rule["reason"]) >= 40, f"{rule['id']} needs a real reason"


def test_cfn_lint_finds_nothing(synthesized: Synthesized) -> None:
    matches = lint(json.dumps(synthesized.template_json), regions=["us-east-1", "eu-west-1"])
    assert [str(match) for match in matches] == []


def test_cfn_lint_is_not_blind() -> None:
    broken = {
        "Resources": {"Table": {"Type": "AWS::DynamoDB::Table", "Properties": {"BillingMode": "SOMETIMES"}}}
    }
    assert lint(json.dumps(broken), regions=["us-east-1"])


def test_templates_hold_no_local_paths(synthesized: Synthesized) -> None:
    text = json.dumps(synthesized.template_json)
    assert str(Path.home()) not in text and "/work/" not in text
    assert not [
        item for item in walk(synthesized.template_json) if isinstance(item, str) and "TOKEN[" in item
    ]


@pytest.mark.parametrize(
    "path",
    [*sorted(resources.STATEMACHINE_DIR.glob("*.asl.json")), PROBE_ASL],
    ids=lambda path: Path(path).name,
)
def test_asl_validator_accepts_every_state_machine_file(path: Path) -> None:
    if not ASL_VALIDATOR.exists() or shutil.which("node") is None:
        pytest.skip("asl-validator is not installed (npm ci)")
    result = subprocess.run(
        [str(ASL_VALIDATOR), "--json-path", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr

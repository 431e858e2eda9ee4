"""An embedded AWS account: moto in-process with Step Functions execution on.

`EmbeddedAws` starts the mock, routes Lambda to in-process handlers, and creates the resources of
`functions.common.resources` (tables, buckets, step Lambdas, state machines from `statemachine/`).
Each step Lambda may reach only what its spec declares (functions/local_runtime/grants.py); leaving a
runtime in which a step reached anything else raises `grants.UndeclaredUse`.
It is used by `make run` and by the integration tests.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import boto3
from moto import mock_aws

from functions.common import resources
from functions.common.aws import reset_clients
from functions.common.settings import get_settings, reset_settings_cache
from functions.local_runtime import (
    durable,
    dynamodb_atomic,
    dynamodb_json,
    grants,
    lambda_adapter,
    recovery,
    resume,
    s3_atomic,
)
from functions.search.turns import reset_process_turns

REGION = "us-east-1"
_FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
}
RESEARCH_MACHINE = resume.RESEARCH_MACHINE  # the state machine an unfinished job resumes on
_SUBSTITUTION = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def substitute(definition: str, values: Mapping[str, str]) -> str:
    """Apply CDK-style `${Name}` definition substitutions; an unknown name is an error, as in CDK."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise KeyError(f"no substitution for ${{{name}}}")
        return values[name]

    return _SUBSTITUTION.sub(replace, definition)


@dataclass
class EmbeddedAws:
    step_functions: Iterable[resources.StepFunctionSpec] = field(
        default_factory=lambda: resources.STEP_FUNCTIONS
    )
    state_machines: Iterable[resources.StateMachineSpec] = field(
        default_factory=lambda: resources.STATE_MACHINES
    )
    extra_environment: Mapping[str, str] = field(default_factory=dict)
    # Where DynamoDB items, S3 objects and schedules are kept across restarts (functions/local_runtime/
    # durable.py); None keeps everything in memory only, as the tests' runtimes do.
    state_dir: str | Path | None = None
    restored: dict[str, int] = field(default_factory=dict, init=False)  # what the last start loaded
    interrupted_jobs: list[str] = field(default_factory=list, init=False)  # "team/job" failed at start
    resumed_jobs: list[str] = field(default_factory=list, init=False)  # waiting at a checkpoint again
    continued_jobs: list[str] = field(default_factory=list, init=False)  # going on where they were
    restore_seconds: float = field(default=0.0, init=False)  # loading the kept state, in the last start
    state_machine_arns: dict[str, str] = field(default_factory=dict, init=False)
    function_arns: dict[str, str] = field(default_factory=dict, init=False)
    _mock: Any = field(default=None, init=False)
    _state: durable.LocalState | None = field(default=None, init=False)
    _saved_env: dict[str, str | None] = field(default_factory=dict, init=False)

    def __enter__(self) -> EmbeddedAws:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        denied = grants.take_denied()
        self.stop()
        if denied and exc is None:
            raise grants.UndeclaredUse("; ".join(sorted({str(denial) for denial in denied})))

    def start(self) -> None:
        """Raises durable.StateDirInUse, before anything is set up, when another runtime holds `state_dir`."""
        if self.state_dir is not None:
            self._state = durable.LocalState(Path(self.state_dir))
            self._state.lock()
        local = {
            "POWERTOOLS_METRICS_DISABLED": os.environ.get("POWERTOOLS_METRICS_DISABLED", "true"),
            # where the webhook secrets' local key is kept (functions/common/secrets.py): with
            # the state, or, in memory, nowhere (a key of the process)
            "LOCAL_STATE_DIR": str(self.state_dir) if self.state_dir is not None else "",
            # one process: the turns at the upstream providers are exact (and cheap) in its memory
            "SEARCH_TURNS_BACKEND": os.environ.get("SEARCH_TURNS_BACKEND", "memory"),
        }
        self._set_env({**_FAKE_CREDENTIALS, **local, "AWS_ENDPOINT_URL": "", **self.extra_environment})
        os.environ.pop("AWS_ENDPOINT_URL", None)  # in-process mock: no endpoint
        reset_settings_cache()
        reset_clients()
        reset_process_turns()
        self._mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True}})
        self._mock.start()
        lambda_adapter.install()
        grants.install()
        if self.state_dir is not None:
            durable.install()  # before dynamodb_atomic: its lock then wraps the journal's read-back
        dynamodb_atomic.install()
        dynamodb_json.install()
        s3_atomic.install()
        self._create_storage()
        if self.state_dir is not None:  # where running jobs got to, for the next start to go on from
            resume.install(boto3.client("dynamodb", region_name=REGION))
        self._create_functions()
        self._create_state_machines()
        if len(self.state_machine_arns) == 1:
            self._set_env({"STATE_MACHINE_ARN": next(iter(self.state_machine_arns.values()))})
            reset_settings_cache()
        if self._state is not None:
            self.restored = self._state.load()
            self.restore_seconds = self._state.load_seconds
            # executions do not survive a restart: each unfinished job goes on in a new execution, at its
            # checkpoint or at the state it had reached; one that cannot ends FAILED, now, not on a read
            recovered = recovery.recover_interrupted_jobs(self.state_machine_arns.get(RESEARCH_MACHINE))
            self.resumed_jobs, self.interrupted_jobs = recovered.resumed, recovered.failed
            self.continued_jobs = recovered.continued

    def stop(self) -> None:
        durable.deactivate()  # nothing a lingering execution thread writes now reaches the journal
        if self._mock is not None:
            self._mock.stop()
            self._mock = None
        resume.uninstall()
        lambda_adapter.uninstall()
        grants.uninstall()
        grants.forget()
        dynamodb_atomic.uninstall()
        dynamodb_json.uninstall()
        s3_atomic.uninstall()
        durable.uninstall()
        if self._state is not None:
            self._state.close()
            self._state = None
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()
        reset_settings_cache()
        reset_clients()

    def _set_env(self, values: Mapping[str, str]) -> None:
        for key, value in values.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def _create_storage(self) -> None:
        settings = get_settings()
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        for table in resources.TABLES:
            name = getattr(settings, table.setting)
            dynamodb.create_table(**table.create_request(name))  # type: ignore[arg-type]
            if table.ttl_attribute:
                dynamodb.update_time_to_live(
                    TableName=name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
                )
        s3 = boto3.client("s3", region_name=REGION)
        for bucket in resources.BUCKETS:
            name = getattr(settings, bucket.setting)
            s3.create_bucket(Bucket=name)
            if bucket.versioned:
                s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})

    def _create_functions(self) -> None:
        specs = list(self.step_functions)
        if not specs:
            return
        role_arn = _service_role("local-step-function-role", "lambda.amazonaws.com")
        lambda_client = boto3.client("lambda", region_name=REGION)
        for spec in specs:
            created = lambda_client.create_function(
                FunctionName=spec.logical_id,
                Runtime="python3.13",
                Role=role_arn,
                Handler=spec.handler,
                Code={"ZipFile": _placeholder_zip()},
                Timeout=spec.timeout_seconds,
                MemorySize=spec.memory_mb,
            )
            self.function_arns[spec.logical_id] = created["FunctionArn"]
            grants.declare(spec.logical_id, spec.uses)

    def _create_state_machines(self) -> None:
        # every definition is substituted (an unknown `${...}` name fails) before anything is created
        values = self.substitutions()
        definitions = {
            machine.name: substitute(machine.path.read_text(encoding="utf-8"), values)
            for machine in self.state_machines
        }
        if not definitions:
            return
        role_arn = _service_role("local-state-machine-role", "states.amazonaws.com")
        sfn = boto3.client("stepfunctions", region_name=REGION)
        for name, definition in definitions.items():
            created = sfn.create_state_machine(name=name, definition=definition, roleArn=role_arn)
            self.state_machine_arns[name] = created["stateMachineArn"]

    def substitutions(self) -> dict[str, str]:
        """The same `${...}` names the CDK app passes as definition_substitutions."""
        settings = get_settings()
        values = {f"{logical_id}Arn": arn for logical_id, arn in self.function_arns.items()}
        for name, setting in resources.STATE_MACHINE_SUBSTITUTIONS.items():
            values[name] = getattr(settings, setting)
        return values


def _service_role(name: str, service: str) -> str:
    """A role that `service` (e.g. "lambda.amazonaws.com") may assume; its ARN."""
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
    }
    iam = boto3.client("iam", region_name=REGION)
    return str(iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"])


def _placeholder_zip() -> bytes:
    """moto wants a code archive; the in-process adapter never runs it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "handled in-process by functions.local_runtime.lambda_adapter\n")
    return buffer.getvalue()

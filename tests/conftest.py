"""Test-wide set-up: sockets are blocked in unit tests; integration and e2e tests may use loopback only."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_socket import disable_socket, enable_socket, socket_allow_hosts

from functions.common.aws import reset_clients
from functions.common.settings import reset_settings_cache
from tests.support.llm_server import SMOLLM2_GGUF, LlmServer, serving_smollm2

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
LOOPBACK = ["127.0.0.1", "localhost", "::1"]

# Never reach a real AWS account from tests.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # tests that check metrics switch them on


@pytest.fixture(autouse=True)
def _network_policy(request: pytest.FixtureRequest) -> Iterator[None]:
    path = str(request.node.path)
    if f"{os.sep}unit{os.sep}" in path:
        disable_socket(allow_unix_socket=True)
    else:
        socket_allow_hosts(LOOPBACK, allow_unix_socket=True)
    yield
    enable_socket()


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    reset_settings_cache()
    reset_clients()
    yield
    reset_settings_cache()
    reset_clients()


@pytest.fixture
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")
    return CORPUS


@pytest.fixture(scope="session")
def llm_server() -> Iterator[LlmServer]:
    """SmolLM2 served on loopback for the whole session. Skipped when `make llm-model` has not been run,
    except under CI (`CI` set), where a missing model fails the test instead."""
    if not SMOLLM2_GGUF.is_file():
        message = f"{SMOLLM2_GGUF} is missing (`make llm-model` downloads it)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: CI must run the llm tests", pytrace=False)
        pytest.skip(message)
    with serving_smollm2() as server:
        yield server


@pytest.fixture
def llm_env(llm_server: LlmServer, monkeypatch: pytest.MonkeyPatch) -> LlmServer:
    """The app's settings point at `llm_server` (LLM_PROVIDER=openai, its base URL, loopback allowed)."""
    for key, value in llm_server.env().items():
        monkeypatch.setenv(key, value)
    reset_settings_cache()
    return llm_server

"""bench/cold_start.py measures each handler in the environment it is deployed with."""

from __future__ import annotations

import pytest

from bench import cold_start
from infra.components import functions


def test_the_bench_sets_single_threaded_blas_exactly_where_the_stack_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in functions.SINGLE_THREADED_BLAS:
        monkeypatch.delenv(name, raising=False)
    assert cold_start.SINGLE_THREADED_BLAS == functions.SINGLE_THREADED_BLAS
    for handler in cold_start.handlers():
        env = cold_start._environment((handler.module,))
        deployed_single_threaded = handler.module.split(".")[1] == "rag"  # as the stack decides
        assert all(
            (env.get(name) == value) == deployed_single_threaded
            for name, value in functions.SINGLE_THREADED_BLAS.items()
        ), handler

"""A settings reset (tests, the local runtime) also drops what was built from the old settings, so a
per-container service never keeps an environment that has changed under it."""

from __future__ import annotations

from functools import lru_cache

import pytest

from functions.common.settings import built_from_settings, get_settings, reset_settings_cache


def test_a_cache_built_from_the_settings_is_rebuilt_after_a_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATA_BUCKET", "first-bucket")
    reset_settings_cache()

    @built_from_settings
    @lru_cache(maxsize=1)
    def bucket() -> str:
        return get_settings().data_bucket

    assert bucket() == "first-bucket"
    monkeypatch.setenv("DATA_BUCKET", "second-bucket")
    assert bucket() == "first-bucket"  # cached until the settings are reset
    reset_settings_cache()
    assert bucket() == "second-bucket"


def test_the_search_service_follows_a_changed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from functions.search.routes import get_service

    monkeypatch.setenv("SEARCH_STATE_BACKEND", "memory")
    monkeypatch.setenv("ARXIV_API_URL", "http://127.0.0.1:9/first")
    reset_settings_cache()
    first = get_service()
    assert get_service() is first
    assert first.settings.arxiv_api_url == "http://127.0.0.1:9/first"

    # What the contract run does after other tests: a new environment, then a settings reset.
    monkeypatch.setenv("ARXIV_API_URL", "http://127.0.0.1:9/second")
    reset_settings_cache()
    second = get_service()
    assert second is not first
    assert second.settings.arxiv_api_url == "http://127.0.0.1:9/second"

"""The per-process cache of the teams' own upstream keys, and a team budget's manners."""

from __future__ import annotations

import logging

import pytest

from functions.search.config import SearchSettings
from functions.search.team_keys import CachedTeamKeys, base_provider, team_provider


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_teams_keys_are_loaded_once_a_minute() -> None:
    loads: list[str] = []
    stored = {"team-a": {"openalex": "key-1"}}

    def load(team_id: str) -> dict[str, str]:
        loads.append(team_id)
        return dict(stored.get(team_id, {}))

    clock = Clock()
    keys = CachedTeamKeys(load, ttl=60.0, clock=clock)
    assert keys.key("team-a", "openalex") == "key-1"
    assert keys.key("team-a", "semantic_scholar") is None
    stored["team-a"] = {"openalex": "key-2"}
    clock.now += 59.0
    assert keys.key("team-a", "openalex") == "key-1" and loads == ["team-a"]
    clock.now += 1.0
    assert keys.key("team-a", "openalex") == "key-2" and loads == ["team-a", "team-a"]
    assert keys.key("team-b", "openalex") is None and loads[-1] == "team-b"


def test_an_unreadable_key_falls_back_to_the_services_and_logs_no_value(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    def load(team_id: str) -> dict[str, str]:
        raise RuntimeError("opened value own-key-123 leaked?")

    caplog.set_level(logging.INFO)
    clock = Clock()
    keys = CachedTeamKeys(load, clock=clock)
    assert keys.key("team-a", "openalex") is None
    logged = caplog.text + capsys.readouterr().out  # Powertools writes to stdout
    assert "team upstream keys unreadable" in logged and "own-key-123" not in logged


def test_a_team_budget_keeps_its_providers_manners() -> None:
    settings = SearchSettings(semantic_scholar_min_interval_seconds=1.5, exclusive_providers="arxiv")
    turn_key = team_provider("semantic_scholar", "team-a")
    assert turn_key == "semantic_scholar@team:team-a" and base_provider(turn_key) == "semantic_scholar"
    assert settings.manners(turn_key) == settings.manners("semantic_scholar")
    assert settings.manners(turn_key).interval == 1.5
    assert settings.manners(team_provider("arxiv", "t")).exclusive

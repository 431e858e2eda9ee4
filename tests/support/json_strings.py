"""Every string inside a JSON value, for checks that look at all the text an API answered."""

from __future__ import annotations

from typing import Any


def json_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in json_strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in json_strings(item)]
    return []

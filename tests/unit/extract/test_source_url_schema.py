"""`POST /api/tools/extract`'s `source_url` schema states what `classify` accepts: every value it accepts
matches the documented pattern, so a value the schema calls invalid is refused."""

from __future__ import annotations

import random
import re

import pytest

from functions.common.errors import InvalidInput
from functions.extract.api import SOURCE_URL_PATTERN
from functions.extract.resolve import classify
from functions.local_runtime.gateway import load_function_apps, merged_openapi

PATTERN = re.compile(SOURCE_URL_PATTERN)

ACCEPTED = [
    "https://example.org/paper.pdf",
    "HTTP://example.org",
    "  https://arxiv.org/abs/2101.00001v2  ",
    "http:/\t/example.org",  # urlsplit drops tabs and line breaks
    "\x00http://example.org",  # and leading C0 controls
    "2101.00001",
    "arxiv:2101.00001v3",
    "arXiv.org/abs/hep-th/9901001",
    "math.AG/0101001",
    "10.1038/nature14539",
    "doi:10.1038/nature14539",
    "DOI: see 10.1038/nature14539",
    "arxiv:10.1038/nature14539",
    "library://doc-0123456789abcdef",
    "library:///doc-abcdef12//",
]
REFUSED = ["x", "ftp://example.org/a.pdf", "library://report", "http://", "http:///x", "doi:none", "arxiv:"]


def _accepted(value: str) -> bool:
    try:
        classify(value)
    except InvalidInput:
        return False
    return True


@pytest.mark.parametrize("value", ACCEPTED)
def test_accepted_forms_match_the_pattern(value: str) -> None:
    assert _accepted(value)
    assert PATTERN.search(value), value


@pytest.mark.parametrize("value", REFUSED)
def test_values_outside_the_pattern_are_refused(value: str) -> None:
    assert not PATTERN.search(value)
    assert not _accepted(value)


def test_whatever_classify_accepts_matches_the_pattern() -> None:
    """Composed values (prefixes, identifiers, URLs, whitespace and control characters, tabs and line
    breaks inserted anywhere): none that `classify` accepts falls outside the pattern."""
    rng = random.Random(20261123)
    leads = ["", " ", "\t", "\n", "\x00", "\x1c", "\x85", "\u3000", "\ufeff"]
    prefixes = ["", "arxiv:", "ARXIV:", "arXiv.org/abs/", "arxiv: ", "doi:", "DOI:", "doi: x "]
    forms = [
        "2101.00001", "2101.00001v3", "hep-th/9901001", "math.AG/0101001", "10.1234/abc",
        "10.123456789/x", "https://e.org/p", "http://x", "HtTp://y", "library://doc-abcdef12",
        "library:///doc-0123456789abcdef/", "https://doi.org/10.1/x", "http://arxiv.org/pdf/2101.00001v1.pdf",
        "\u0662\u0661\u0660\u0661.\u0660\u0660\u0660\u0660\u0661", "http://@x", "http://u@", "https://[::1]:8/",
    ]  # fmt: skip
    tails = ["", " ", "\n", "\x85", "/", "\n/", "x", "\t"]
    accepted = 0
    for _ in range(20_000):
        value = rng.choice(leads) + rng.choice(prefixes) + rng.choice(forms) + rng.choice(tails)
        if rng.random() < 0.5:
            value = "".join(char + (rng.choice("\t\n\r ") if rng.random() < 0.08 else "") for char in value)
        if _accepted(value):
            accepted += 1
            assert PATTERN.search(value), repr(value)
    assert accepted > 2_000


def test_the_openapi_document_states_the_forms() -> None:
    schema = merged_openapi(load_function_apps())["components"]["schemas"]["ExtractRequest"]
    source_url = schema["properties"]["source_url"]
    assert source_url["pattern"] == SOURCE_URL_PATTERN
    assert source_url["maxLength"] == 2048 and source_url["minLength"] == 1
    assert all(_accepted(example) for example in source_url["examples"])
    assert "library://<document_id>" in source_url["description"]

"""How `/v1/claims/verify` reads a named source (functions/answer/claims.py): a URL, a DOI, an arXiv id or
a library document; anything else is the caller's error, naming the list item."""

from __future__ import annotations

import pytest

from functions.answer.claims import locate
from functions.common.errors import InvalidInput


@pytest.mark.parametrize(
    ("given", "address", "document_id"),
    [
        ("2401.12345", "2401.12345", None),
        ("arXiv:2401.12345v2", "arXiv:2401.12345v2", None),
        ("10.1128/AEM.00294-11", "10.1128/AEM.00294-11", None),
        ("https://doi.org/10.1128/AEM.00294-11", "https://doi.org/10.1128/AEM.00294-11", None),
        (
            "doc-3f1fe7986fdd51758e231c3c",
            "library://doc-3f1fe7986fdd51758e231c3c",
            "doc-3f1fe7986fdd51758e231c3c",
        ),
        ("library://doc-3f1fe798", "library://doc-3f1fe798", "doc-3f1fe798"),
    ],
)
def test_a_named_source_is_a_url_doi_arxiv_id_or_library_document(
    given: str, address: str, document_id: str | None
) -> None:
    named = locate(given, 0)
    assert (named.given, named.address, named.document_id) == (given, address, document_id)


@pytest.mark.parametrize(
    "given", ["not a source", "ftp://example.org/paper.pdf", "library://nothing", "doc-"]
)
def test_anything_else_is_invalid_input_naming_the_item(given: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        locate(given, 3)
    assert raised.value.field == "sources[3]"

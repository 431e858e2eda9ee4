"""`POST /v1/references/check` end to end on the embedded runtime, through the local gateway, against
Crossref and OpenAlex as registries on a loopback web (tests/support/registry_web.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.gateway import Gateway, load_function_apps
from functions.references import MAX_REFERENCE_CHARS, MAX_REFERENCES
from tests.e2e.scholarly_topic import environment
from tests.support.pdfgen import paper_pdf
from tests.support.registry_web import RegistryWeb
from tests.support.scholarly_fixtures import SamplePaper
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def _work(title: str, year: int, authors: tuple[str, ...], doi: str, venue: str | None = None) -> SamplePaper:
    return SamplePaper(title=title, abstract="", year=year, authors=authors, doi=doi, venue=venue)


GRAPHS = _work(
    "Message Passing Neural Networks for Molecular Property Prediction",
    2019,
    ("Justin Gilmer", "Samuel Schoenholz", "Patrick Riley"),
    "10.4321/mpnn.2019.11",
    "Journal of Chemical Information",
)
SOIL = _work(
    "Nitrogen Cycling in Alpine Meadow Soils under Warming",
    2021,
    ("Hans Müller", "Eva Novak"),
    "10.5678/soil.2021.004",
    "Ecology Letters",
)
RETRACTED = _work(
    "Gut Microbiota Transplants Reverse Ageing in Mice",
    2020,
    ("Carla Rossi", "Tomas Berg"),
    "10.9999/ageing.2020.7",
)
NOTICED = _work(
    "Ivermectin Halves the Duration of Viral Fever in Adults", 2021, ("Omar Haddad",), "10.7777/ivm.2021.3"
)
# the same title, authors and year under two DOIs: no DOI in the reference decides between them
TWIN_A = _work(
    "A Survey of Federated Learning Systems", 2022, ("Lena Ortiz", "Raj Patel"), "10.1111/fl.2022.a"
)
TWIN_B = _work(
    "A Survey of Federated Learning Systems", 2022, ("Lena Ortiz", "Raj Patel"), "10.2222/fl.2022.b"
)
UPLOAD_LIMIT = 64 * 1024
WORKS = (GRAPHS, SOIL, RETRACTED, TWIN_A, TWIN_B, NOTICED)


@dataclass
class Served:
    web: ScholarlyWeb
    client: TestClient


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with ScholarlyWeb() as web:
        RegistryWeb(WORKS, retracted={str(RETRACTED.doi)}, noticed={str(NOTICED.doi)}).install(web)
        with (
            EmbeddedAws(extra_environment=environment(web, UPLOAD_MAX_BYTES=str(UPLOAD_LIMIT))),
            TestClient(Gateway(load_function_apps())) as client,
        ):
            yield Served(web, client)


def _check(client: TestClient, references: list[str]) -> list[dict[str, Any]]:
    response = client.post("/v1/references/check", json={"references": references})
    assert response.status_code == 200, response.text
    entries: list[dict[str, Any]] = response.json()["references"]
    assert [e["input"] for e in entries] == references
    return entries


def _error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"code", "message", "details"}
    return error


def test_each_kind_of_reference_gets_its_verdict(served: Served) -> None:
    references = [
        "Gilmer, J., Schoenholz, S., & Riley, P. (2019). Message passing neural networks for molecular "
        "property prediction. Journal of Chemical Information, 12(3), 1-10.",
        "https://doi.org/10.5678/SOIL.2021.004",
        # a real DOI with an invented title: the typical fabrication
        "Müller H, Novak E. Deep reinforcement learning for glacier retreat forecasting. Ecology Letters. "
        "2021;4:1-9. doi:10.5678/soil.2021.004",
        "Zhang Q, Ivanova P. Quantum annealing schedules for protein docking benchmarks. Nat Chem. 2018.",
        "doi: 10.9999/ageing.2020.7",
        "@article{gilmer, title={Message Passing Neural Networks for Molecular Property Prediction}, "
        "author={Gilmer, Justin and Riley, Patrick}, year={2019}}",
        "10.4321/does.not.exist.42",
        'L. Ortiz and R. Patel, "A survey of federated learning systems," 2022.',
        # retracted by a Crossref notice only (OpenAlex does not flag it)
        "Haddad O. Ivermectin halves the duration of viral fever in adults. 2021.",
    ]
    entries = _check(served.client, references)
    statuses = [e["status"] for e in entries]
    assert statuses == [
        "verified",
        "verified",
        "doi_title_mismatch",
        "not_found",
        "retracted",
        "verified",
        "not_found",
        "ambiguous",
        "retracted",
    ]
    assert entries[0]["matched"]["doi"] == GRAPHS.doi
    assert entries[0]["matched"]["url"] == f"https://doi.org/{GRAPHS.doi}"
    assert entries[0]["matched"]["authors"] == list(GRAPHS.authors)
    mismatch = entries[2]
    assert mismatch["matched"]["title"] == SOIL.title  # the DOI's real record
    assert mismatch["matched"]["doi"] == SOIL.doi
    assert entries[3]["matched"] is None
    assert entries[4]["matched"]["title"] == RETRACTED.title
    assert any("retracted" in note for note in entries[4]["notes"])
    assert any(f"{NOTICED.doi}.retraction" in note for note in entries[8]["notes"])
    twins = " ".join(entries[7]["notes"])
    assert str(TWIN_A.doi) in twins and str(TWIN_B.doi) in twins
    for entry in entries:
        assert 0.0 <= entry["confidence"] <= 1.0
        assert entry["notes"]


def test_a_repeated_check_is_answered_from_the_cache(served: Served) -> None:
    references = [
        "10.4321/mpnn.2019.11",
        "Rossi C, Berg T. Gut microbiota transplants reverse ageing in mice. 2020.",
    ]
    first = _check(served.client, references)
    served.web.reset_requests()
    again = _check(served.client, references)
    assert again == first
    assert served.web.count("/crossref") + served.web.count("/openalex") == 0


def test_uploads_a_bib_file_and_a_pdf(served: Served) -> None:
    bib = (
        '@article{a, title={Nitrogen Cycling in Alpine Meadow Soils under Warming}, author={M{\\"u}ller, '
        "Hans and Novak, Eva}, journal={Ecology Letters}, year={2021}, doi={10.5678/soil.2021.004}}\n"
        "@inproceedings{b, title={Invented Results on Imaginary Benchmarks}, author={Nobody, A.}, year={2023}}\n"
    )
    files = {"file": ("refs.bib", bib.encode(), "application/x-bibtex")}
    response = served.client.post("/v1/references/check", files=files)
    assert response.status_code == 200, response.text
    assert [e["status"] for e in response.json()["references"]] == ["verified", "not_found"]

    pdf = paper_pdf(
        title="A Paper That Cites Two Works",
        authors="Ann Author",
        abstract="We cite two works in this short paper about citing works, and nothing else at all.",
        sections=[
            ("Introduction", ["Message passing networks [1] and soil nitrogen [2] are both cited here."])
        ],
        references=[
            "[1] J. Gilmer, S. Schoenholz, and P. Riley. Message passing neural networks for molecular "
            "property prediction. Journal of Chemical Information, 2019.",
            "[2] H. Müller and E. Novak. Nitrogen cycling in alpine meadow soils under warming. Ecology "
            "Letters, 2021.",
        ],
    )
    files = {"file": ("paper.pdf", pdf, "application/pdf")}
    response = served.client.post("/v1/references/check", files=files)
    assert response.status_code == 200, response.text
    entries = response.json()["references"]
    assert [e["status"] for e in entries] == ["verified", "verified"]
    assert [e["matched"]["doi"] for e in entries] == [GRAPHS.doi, SOIL.doi]


def test_bad_input_is_refused_naming_the_problem(served: Served) -> None:
    client = served.client
    post = client.post
    error = _error(post("/v1/references/check", json={"references": []}), 400)
    assert error["details"]["field"] == "references"
    error = _error(post("/v1/references/check", json={"references": ["10.1/x"] * (MAX_REFERENCES + 1)}), 400)
    assert error["details"]["field"] == "references" and str(MAX_REFERENCES) in error["message"]
    error = _error(post("/v1/references/check", json={"references": ["x" * (MAX_REFERENCE_CHARS + 1)]}), 400)
    assert error["details"]["field"] == "references.0"
    error = _error(
        post("/v1/references/check", json={"references": ["10.1/x", "@article{broken, title={No end"]}), 400
    )
    assert error["details"]["field"] == "references[1]" and "BibTeX" in error["message"]
    error = _error(
        post("/v1/references/check", files={"file": ("notes.txt", b"plain words", "text/plain")}), 415
    )
    assert "neither a PDF nor a .bib" in error["message"]
    error = _error(
        post("/v1/references/check", files={"file": ("refs.bib", b"@article{x, title={Open", "text/plain")}),
        400,
    )
    assert "malformed BibTeX" in error["message"]
    no_references = paper_pdf(
        title="A Paper Without a Bibliography",
        authors="Ann Author",
        abstract="This paper cites nothing, and its reference section is empty as a result of that.",
        sections=[("Introduction", ["Nothing here is cited, so no reference follows this sentence."])],
        references=[],
    )
    error = _error(
        post("/v1/references/check", files={"file": ("p.pdf", no_references, "application/pdf")}), 400
    )
    assert "no reference section" in error["message"]
    error = _error(post("/v1/references/check", content=b"refs", headers={"content-type": "text/plain"}), 415)
    assert "application/json or multipart/form-data" in error["message"]


def test_an_oversized_upload_and_too_many_entries_are_413(served: Served) -> None:
    post = served.client.post
    big = b"@comment{" + b"x" * UPLOAD_LIMIT + b"}"
    error = _error(
        post("/v1/references/check", files={"file": ("big.bib", big, "application/x-bibtex")}), 413
    )
    assert error["code"] == "payload_too_large" and str(UPLOAD_LIMIT) in error["message"]
    entries = "".join(f"@misc{{k{i}, title={{Entry number {i}}}}}\n" for i in range(MAX_REFERENCES + 1))
    error = _error(
        post("/v1/references/check", files={"file": ("many.bib", entries.encode(), "text/plain")}), 413
    )
    assert f"{MAX_REFERENCES + 1} references" in error["message"]

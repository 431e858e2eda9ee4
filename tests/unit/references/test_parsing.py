"""Reading references as they are cited: DOIs in their spellings, formatted references of several styles,
BibTeX entries, and the refusals of what cannot be read."""

from __future__ import annotations

import pytest

from functions.common.errors import InvalidInput
from functions.references.parsing import find_doi, parse_bibtex, parse_reference, parse_references

DOI = "10.1016/s0140-6736(20)30183-5"


@pytest.mark.parametrize(
    "spelling",
    [
        "10.1016/S0140-6736(20)30183-5",
        "doi:10.1016/S0140-6736(20)30183-5",
        "DOI: 10.1016/S0140-6736(20)30183-5.",
        "https://doi.org/10.1016/S0140-6736(20)30183-5",
        "http://dx.doi.org/10.1016/S0140-6736(20)30183-5",
        "doi.org/10.1016%2FS0140-6736(20)30183-5",
        "(doi: 10.1016/S0140-6736(20)30183-5)",
        "https://www.thelancet.com/doi/full/10.1016/S0140-6736(20)30183-5",
        "Huang C, et al. Clinical features. Lancet. 2020;395:497-506. doi:10.1016/S0140-6736(20)30183-5;",
    ],
)
def test_a_doi_is_found_in_each_of_its_spellings(spelling: str) -> None:
    assert find_doi(spelling) == DOI


def test_text_without_a_doi_has_none() -> None:
    assert find_doi("Vaswani A. Attention is all you need. NeurIPS 2017; 30: 5998-6008.") is None


@pytest.mark.parametrize(
    ("style", "text"),
    [
        (
            "APA",
            "Vaswani, A., Shazeer, N., & Parmar, N. (2017). Attention is all you need. Advances in NeurIPS, 30.",
        ),
        (
            "IEEE",
            'A. Vaswani, N. Shazeer, and N. Parmar, "Attention is all you need," in Proc. NeurIPS, 2017, pp. 1-11.',
        ),
        (
            "Vancouver",
            "Vaswani A, Shazeer N, Parmar N. Attention is all you need. Adv Neural Inf Process Syst. 2017;30.",
        ),
        (
            "Harvard",
            "Vaswani, A., Shazeer, N. and Parmar, N., 2017. Attention is all you need. In NeurIPS (pp. 1-11).",
        ),
        ("MLA", 'Vaswani, Ashish, et al. "Attention Is All You Need." Advances in NeurIPS, vol. 30, 2017.'),
        (
            "Springer",
            "Vaswani A, Shazeer N (2017) Attention is all you need. In: Advances in NeurIPS, pp 1-11",
        ),
    ],
)
def test_a_formatted_reference_gives_its_title_and_year(style: str, text: str) -> None:
    reference = parse_reference(text)
    assert (reference.title or "").lower() == "attention is all you need", style
    assert reference.years == (2017,) or 2017 in reference.years, style
    assert reference.doi is None and reference.input == text


def test_a_reference_keeps_its_doi_out_of_its_searchable_text() -> None:
    text = "LeCun, Y., Bengio, Y., & Hinton, G. (2015). Deep learning. Nature, 521, 436-444. https://doi.org/10.1038/nature14539"
    reference = parse_reference(text)
    assert reference.doi == "10.1038/nature14539"
    assert "doi" not in reference.text.lower() and "10.1038" not in reference.text
    assert reference.title == "Deep learning"


def test_a_bare_doi_has_no_title_to_compare() -> None:
    reference = parse_reference("https://doi.org/10.1038/NATURE14539")
    assert reference.doi == "10.1038/nature14539" and reference.title is None and reference.text == ""


def test_an_arxiv_id_is_read() -> None:
    assert (
        parse_reference("Vaswani A, et al. Attention is all you need. arXiv:1706.03762v5, 2017.").arxiv_id
        == "1706.03762"
    )


def test_a_bibtex_entry_gives_its_fields() -> None:
    entry = (
        "@inproceedings{vaswani2017, title={Attention is All you {N}eed}, author={Vaswani, Ashish and "
        "Shazeer, Noam}, booktitle={NeurIPS}, year={2017}, doi={10.5555/3295222.3295349}}"
    )
    reference = parse_reference(entry)
    assert reference.title == "Attention is All you Need"
    assert reference.doi == "10.5555/3295222.3295349"
    assert reference.years == (2017,)
    assert reference.text.startswith("Vaswani, Ashish, Shazeer, Noam. (2017). Attention is All you Need")


def test_a_bib_file_gives_every_entry_in_order() -> None:
    text = (
        "@article{a, title={First Paper Title}, author={Doe, Jane}, year={2020}}\n"
        "% a comment between entries\n"
        "@book{b, title={Second Book}, author={Roe, Richard}, year={1999}, publisher={Press}}\n"
    )
    assert [r.title for r in parse_bibtex(text)] == ["First Paper Title", "Second Book"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("@article{broken, title={No closing brace", "malformed BibTeX"),
        ("@article{x, author={Doe, Jane}, year={2020}}", "neither a title nor a DOI"),
        ("just some words, no entry", "holds no BibTeX entry"),
    ],
)
def test_unreadable_bibtex_is_refused(text: str, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        parse_bibtex(text)


def test_a_refused_reference_is_named_by_its_place() -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_references(["10.1038/nature14539", "@article{a, title={One}} @article{b, title={Two}}"])
    assert refused.value.field == "references[1]" and "2 BibTeX entries" in refused.value.message
    with pytest.raises(InvalidInput) as blank:
        parse_references(["   "])
    assert blank.value.field == "references[0]"

"""The 20 relevant papers of `papers/regular/`: their metadata, abstracts and PDFs."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from bench.corpus_web.paper import WebPaper
from bench.corpus_web.text import squash

DEFAULT_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"  # BENCH_CORPUS_DIR overrides
# Crossref's test prefix: for corpus papers whose real DOI the corpus does not show
TEST_DOI_PREFIX = "10.5555"


class CorpusMissing(RuntimeError):
    pass


def corpus_dir(path: Path | None = None) -> Path:
    root = path or Path(os.environ.get("BENCH_CORPUS_DIR") or DEFAULT_CORPUS)
    if not (root / "papers" / "regular").is_dir() or not (root / "api").is_dir():
        raise CorpusMissing(
            f"the corpus is not at {root} (expected papers/regular/ and api/); "
            "the quality bench reads the shared corpus and cannot run without it"
        )
    return root


# --- the 20 relevant papers ---------------------------------------------------------------------------
# Titles, authors, years, venues and identifiers as printed in the PDFs / INDEX.json / ground-truth files.
# Abstracts are read at run time (`load_corpus_papers`): ground truth when present, else the PDF's first
# page.


@dataclass(frozen=True)
class CorpusEntry:
    corpus_id: str
    title: str
    authors: tuple[str, ...]
    year: int
    venue: str
    arxiv_id: str | None = None
    doi: str | None = None  # a real DOI shown by the corpus; otherwise a 10.5555 test DOI is made
    # page-1 markers for the abstract when no ground truth holds one (regexes; defaults: "Abstract" ...
    # the next heading)
    abstract_start: str | None = None
    abstract_end: str | None = None


CORPUS_PAPERS: tuple[CorpusEntry, ...] = (
    CorpusEntry(
        "s2orc_2020.acl-main.207",
        "SPECTER: Document-level Representation Learning using Citation-informed Transformers",
        ("Arman Cohan", "Sergey Feldman", "Iz Beltagy", "Doug Downey", "Daniel S. Weld"),
        2020,
        "Annual Meeting of the Association for Computational Linguistics",
    ),
    CorpusEntry(
        "s2orc_24e6b80e_crenarchaeota",
        "Niche Partitioning of Marine Group I Crenarchaeota in the Euphotic and Upper Mesopelagic Zones "
        "of the East China Sea",
        ("Anyi Hu", "Nianzhi Jiao", "Rui Zhang", "Zao Yang"),
        2011,
        "Applied and Environmental Microbiology",
        doi="10.1128/AEM.00294-11",
    ),
    CorpusEntry(
        "grobidclient_0046d83a_fes",
        "Multi-contact functional electrical stimulation for hand opening: electrophysiologically driven "
        "identification of the optimal stimulation site",
        (
            "Cristiano De Marchis",
            "Thiago Santos Monteiro",
            "Cristina Simon-Martinez",
            "Silvia Conforto",
            "Alireza Gharabaghi",
        ),
        2016,
        "Journal of NeuroEngineering and Rehabilitation",
    ),
    CorpusEntry(
        "grobid_sample_dutot",
        "Bi-criteria Algorithm for Scheduling Jobs on Cluster Platforms",
        ("Pierre-François Dutot", "Lionel Eyraud", "Grégory Mounié", "Denis Trystram"),
        2004,
        "ACM Symposium on Parallelism in Algorithms and Architectures",
    ),
    CorpusEntry(
        "cermine_test1_dvt_trauma",
        "Complications related to deep venous thrombosis prophylaxis in trauma: a systematic review of "
        "the literature",
        ("Indraneel Datta", "Chad G Ball", "Lucas Rudmik", "S Morad Hameed", "John B Kortbeek"),
        2010,
        "Journal of Trauma Management & Outcomes",
        doi="10.1186/1752-2897-4-1",
    ),
    CorpusEntry(
        "cermine_test3_phoenix",
        "Phytochemical and Biological investigations of Phoenix paludosa Roxb.",
        (
            "Farzana Alam",
            "Mohammad S. Rahman",
            "Md. Shahanur Alam",
            "Md. Khalid Hossain",
            "Md. Aslam Hossain",
            "Mohammad A. Rashid",
        ),
        2009,
        "Dhaka University Journal of Pharmaceutical Sciences",
    ),
    CorpusEntry(
        "sp_P07-1088",
        "Sparse Information Extraction: Unsupervised Language Models to the Rescue",
        ("Doug Downey", "Stefan Schoenmackers", "Oren Etzioni"),
        2007,
        "Annual Meeting of the Association for Computational Linguistics",
    ),
    CorpusEntry(
        "sp_agarwal11",
        "Noisy Matrix Decomposition via Convex Relaxation: Optimal Rates in High Dimensions",
        ("Alekh Agarwal", "Sahand Negahban", "Martin J. Wainwright"),
        2011,
        "International Conference on Machine Learning",
    ),
    CorpusEntry(
        "sp_dyer12",
        "Joint Feature Selection in Distributed Stochastic Learning for Large-Scale Discriminative "
        "Training in SMT",
        ("Patrick Simianer", "Stefan Riezler", "Chris Dyer"),
        2012,
        "Annual Meeting of the Association for Computational Linguistics",
    ),
    CorpusEntry(
        "sp_senellart10",
        "Probabilistic XML via Markov Chains",
        ("Michael Benedikt", "Evgeny Kharlamov", "Dan Olteanu", "Pierre Senellart"),
        2010,
        "Proceedings of the VLDB Endowment",
    ),
    CorpusEntry(
        "sp_seung08",
        "Natural Image Denoising with Convolutional Networks",
        ("Viren Jain", "H. Sebastian Seung"),
        2008,
        "Advances in Neural Information Processing Systems",
    ),
    CorpusEntry(
        "sp_bunescu-acl07",
        "Learning to Extract Relations from the Web using Minimal Supervision",
        ("Razvan C. Bunescu", "Raymond J. Mooney"),
        2007,
        "Annual Meeting of the Association for Computational Linguistics",
    ),
    CorpusEntry(
        "sp_fader11",
        "Identifying Relations for Open Information Extraction",
        ("Anthony Fader", "Stephen Soderland", "Oren Etzioni"),
        2011,
        "Conference on Empirical Methods in Natural Language Processing",
    ),
    CorpusEntry(
        "sp_c921a74c_mobilefeedback",
        "Did you notice?: neuronal processing of multimodal mobile phone feedback",
        ("Jan-Niklas Antons", "Sebastian Arndt", "Julia Seebode", "Robert Schleicher", "Sebastian Möller"),
        2013,
        "CHI Extended Abstracts on Human Factors in Computing Systems",
        abstract_end=r"Author Keywords",
    ),
    CorpusEntry(
        "sp_6c46de8a_scheduling",
        "Scheduling problems in transportation networks of line topology",
        ("Dariusz R. Kowalski", "Eyal Nussbaum", "Michael Segal", "Vitaly Milyeykovski"),
        2014,
        "Optimization Letters",
    ),
    CorpusEntry(
        "arxiv_1504.06236_influential_nodes",
        "Improving detection of influential nodes in complex networks",
        ("Amir Sheikhahmadi", "Mohammad A. Nematbakhsh", "Arman Shokrollahi"),
        2015,
        "Physica A: Statistical Mechanics and its Applications",
        arxiv_id="1504.06236",
    ),
    CorpusEntry(
        "arxiv_papermage",
        "PaperMage: A Unified Toolkit for Processing, Representing, and Manipulating Visually-Rich "
        "Scientific Documents",
        ("Kyle Lo", "Zejiang Shen", "Benjamin Newman", "Joseph Chee Chang", "Luca Soldaini"),
        2023,
        "Conference on Empirical Methods in Natural Language Processing: System Demonstrations",
    ),
    CorpusEntry(
        "arxiv_0908.0054_bosonic_dm",
        "Ultra light bosonic dark matter and CMB",
        ("Ivan Rodriguez Montoya", "Tonatiuh Matos Chassin"),
        2009,
        "arXiv",
        arxiv_id="0908.0054",
        # the PDF prints no "Abstract" heading: the abstract paragraph precedes "I. INTRODUCTION"
        abstract_start=r"In this work we report",
        abstract_end=r"I\. INTRODUCTION",
    ),
    CorpusEntry(
        "jss_MullenJSSv18i03_timp",
        "TIMP: An R Package for Modeling Multi-way Spectroscopic Measurements",
        ("Katharine M. Mullen", "Ivo H. M. van Stokkum"),
        2007,
        "Journal of Statistical Software",
        abstract_end=r"Keywords:",
    ),
    CorpusEntry(
        "pdffigures2_f63cb207_ephaptic",
        "Ephaptic coupling of cortical neurons",
        ("Costas A Anastassiou", "Rodrigo Perin", "Henry Markram", "Christof Koch"),
        2011,
        "Nature Neuroscience",
        doi="10.1038/nn.2727",  # printed on the PDF's first page
        # no "Abstract" heading: Nature's abstract paragraph follows the author line
        abstract_start=r"The electrochemical processes",
        abstract_end=r"C o m p u",
    ),
)


# --- loading ---------------------------------------------------------------------------------------------

_TEI = {"tei": "http://www.tei-c.org/ns/1.0"}
# ground-truth files beside the PDF that may hold the abstract, in order of preference
_ABSTRACT_NODES = (
    ("grobid.tei.xml", ".//tei:profileDesc/tei:abstract"),
    ("grobid_header.tei.xml", ".//tei:profileDesc/tei:abstract"),
    ("metadata.nlm.xml", ".//abstract"),
)


def _ground_truth_abstract(folder: Path) -> str | None:
    s2orc = folder / "s2orc.json"
    if s2orc.exists():
        data = json.loads(s2orc.read_text(encoding="utf-8"))
        abstract = data.get("abstract")
        if isinstance(abstract, list):
            abstract = " ".join(str(p.get("text", "")) for p in abstract if isinstance(p, dict))
        if isinstance(abstract, str) and abstract.strip():
            return squash(abstract)
    for name, path in _ABSTRACT_NODES:
        xml = folder / name
        if xml.exists():
            node = ET.parse(xml).getroot().find(path, _TEI)
            if node is not None and (text := squash(" ".join(node.itertext()))):
                return text
    return None


_DEFAULT_END = (
    r"\n\s*(?:1\.?\s*Introduction|1\s+INTRODUCTION|I\.\s+INTRODUCTION|Introduction\s*\n|Keywords|Key words"
    r"|Categories and Subject|General Terms|Background\s*\n)"
)


def _pdf_abstract(pdf: Path, entry: CorpusEntry) -> str | None:
    """The abstract as printed on page 1 of the PDF (for papers whose ground truth holds none)."""
    import pypdf

    text = pypdf.PdfReader(str(pdf)).pages[0].extract_text() or ""
    start = re.search(entry.abstract_start or r"\b(?:Abstract|ABSTRACT)\b[.:]?", text)
    if start is None:
        return None
    begin = start.start() if entry.abstract_start else start.end()
    end = re.compile(entry.abstract_end or _DEFAULT_END).search(text, begin + 1)
    abstract = squash(text[begin : end.start() if end else begin + 2000])
    return abstract[:2500] or None


def _test_doi(corpus_id: str) -> str:
    return f"{TEST_DOI_PREFIX}/corpus.{re.sub(r'[^0-9a-z.-]', '-', corpus_id.lower())}"


def load_corpus_papers(root: Path) -> list[WebPaper]:
    papers = []
    for entry in CORPUS_PAPERS:
        folder = root / "papers" / "regular" / entry.corpus_id
        pdf = folder / "paper.pdf"
        if not pdf.exists():
            raise CorpusMissing(f"missing {pdf}")
        abstract = _ground_truth_abstract(folder) or _pdf_abstract(pdf, entry)
        doi = entry.doi or (None if entry.arxiv_id else _test_doi(entry.corpus_id))
        papers.append(
            WebPaper(
                key=f"corpus:{entry.corpus_id}",
                title=entry.title,
                abstract=abstract,
                authors=entry.authors,
                year=entry.year,
                venue=entry.venue,
                doi=doi,
                arxiv_id=entry.arxiv_id,
                citations=40,
                kind="journal-article",
                corpus_id=entry.corpus_id,
                pdf_path=pdf,
                origin=f"corpus:{entry.corpus_id}",
            )
        )
    return papers

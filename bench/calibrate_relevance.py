"""Fit the screening relevance model (functions/research/retrieval/relevance.py) on real scholarly records.

    .venv/bin/python -m bench.calibrate_relevance [--corpus ../shared/corpus]

Data: every work with a title and an abstract in the recorded real answers of arXiv, Semantic Scholar,
OpenAlex and Crossref (`corpus/api`), parsed by our own connectors. For each work, its concepts are taken
from its title the way the planner takes them from a goal (`functions.research.planning.facets.decompose`); each
concept, and the whole title, is an aspect. Positive pairs: an aspect against the work's own abstract
(the title left out, so the terms are not trivially there). Negative pairs: the same aspect against other
works' abstracts, half of them from the same recorded answer (the same search: near-topic, the hard
case). Works are split by a stable hash: the model is fitted on one half and its accuracy and AUC are
printed for the other. The printed coefficients are what relevance.py holds.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from bench.corpus_web.corpus import DEFAULT_CORPUS
from functions.common.ml.embedder import default_embedder
from functions.common.text import stems
from functions.research.planning.facets import decompose
from functions.research.retrieval.relevance import RelevanceScorer
from functions.search.connectors import arxiv, crossref, openalex, semantic_scholar
from tests.support.cassettes import load_all

PARSERS = {
    "export.arxiv.org": arxiv.parse_response,
    "api.semanticscholar.org": semantic_scholar.parse_response,
    "api.openalex.org": openalex.parse_response,
    "api.crossref.org": crossref.parse_response,
}
MIN_ABSTRACT_CHARS = 200
NEGATIVES_PER_POSITIVE = 4


def works(corpus: Path) -> list[tuple[str, str, str]]:
    """(group, title, abstract) of every distinct work with an abstract; group = the recorded answer."""
    seen: set[str] = set()
    found: list[tuple[str, str, str]] = []
    for interaction in load_all(corpus / "api"):
        parser = PARSERS.get(urlsplit(interaction.uri).hostname or "")
        if parser is None or interaction.status >= 400:
            continue
        for paper in parser(interaction.status, interaction.body).papers:
            key = " ".join(paper.title.lower().split())
            abstract = " ".join((paper.abstract or "").split())
            if key in seen or len(abstract) < MIN_ABSTRACT_CHARS or len(key) < 10:
                continue
            seen.add(key)
            found.append((interaction.uri, paper.title, abstract))
    return found


def pairs(
    items: list[tuple[str, str, str]], rng: random.Random
) -> list[tuple[str, str, int]]:  # (aspect, abstract, label)
    """Positives: an aspect of a work's title against its own abstract. Negatives as screening meets
    them: other works a search would have returned too, i.e. abstracts that share a term with the
    aspect (half), or come from the same recorded search (the rest), random ones when neither exists."""
    by_group: dict[str, list[int]] = {}
    for index, (group, _, _) in enumerate(items):
        by_group.setdefault(group, []).append(index)
    abstract_stems = [set(stems(abstract)) for _, _, abstract in items]
    out: list[tuple[str, str, int]] = []
    for index, (group, title, abstract) in enumerate(items):
        aspects = [title, *(facet.phrase for facet in decompose(title))]
        for aspect in dict.fromkeys(aspects):
            out.append((aspect, abstract, 1))
            wanted = set(stems(aspect))
            sharing = [o for o, found in enumerate(abstract_stems) if o != index and wanted & found]
            near = [o for o in by_group[group] if o != index]
            for count in range(NEGATIVES_PER_POSITIVE):
                pool = sharing if sharing and count % 2 == 0 else near or list(range(len(items)))
                other = rng.choice(pool)
                if other != index:
                    out.append((aspect, items[other][2], 0))
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, steps: int = 50) -> np.ndarray:
    """Newton-Raphson with balanced class weights and a small ridge; x has a leading column of ones."""
    weights = np.where(y == 1, 0.5 / max(1, int(y.sum())), 0.5 / max(1, int((1 - y).sum())))
    beta = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ beta)))
        gradient = x.T @ (weights * (p - y)) + 1e-4 * beta
        hessian = (x * (weights * p * (1 - p))[:, None]).T @ x + 1e-4 * np.eye(x.shape[1])
        beta -= np.linalg.solve(hessian, gradient)
    return beta


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    positives = labels == 1
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def features(scorer: RelevanceScorer, data: list[tuple[str, str, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(ones, semantic, coverage, complete) per pair, and the labels; every distinct text embedded once."""
    aspects = list(dict.fromkeys(aspect for aspect, _, _ in data))
    documents = list(dict.fromkeys(abstract for _, abstract, _ in data))
    found = scorer.features(aspects, documents)
    assert found.semantic is not None
    aspect_index = {aspect: col for col, aspect in enumerate(aspects)}
    document_index = {document: row for row, document in enumerate(documents)}
    rows = [(document_index[abstract], aspect_index[aspect]) for aspect, abstract, _ in data]
    columns = [
        [float(matrix[row, col]) for row, col in rows]
        for matrix in (found.semantic, found.coverage, found.complete)
    ]
    labels = np.array([label for _, _, label in data], dtype=float)
    return np.column_stack([np.ones(len(data)), *columns]), labels


def report(name: str, beta: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    scores = x @ beta
    predicted = scores > 0
    accuracy = float((predicted == (y == 1)).mean())
    recall = float(predicted[y == 1].mean())
    specificity = float((~predicted)[y == 0].mean())
    print(
        f"  {name}: coefficients {np.round(beta, 2).tolist()}  held-out accuracy {accuracy:.3f}, "
        f"recall {recall:.3f}, specificity {specificity:.3f}, AUC {auc(scores, y):.3f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    if not (args.corpus / "api").is_dir():
        print(f"no recorded API answers under {args.corpus}/api", file=sys.stderr)
        return 2
    embedder = default_embedder()
    if embedder is None:
        print("no embedding model (run `make install`)", file=sys.stderr)
        return 2
    items = works(args.corpus)
    fit_half: list[tuple[str, str, str]] = []
    check_half: list[tuple[str, str, str]] = []
    for work in items:  # split by a stable hash of the title
        (check_half if int(hashlib.sha256(work[1].encode()).hexdigest(), 16) % 2 else fit_half).append(work)
    rng = random.Random(13)
    fit_pairs, check_pairs = pairs(fit_half, rng), pairs(check_half, rng)
    print(
        f"{len(items)} works with abstracts; fit on {len(fit_half)} works ({len(fit_pairs)} pairs), "
        f"checked on {len(check_half)} ({len(check_pairs)} pairs)"
    )
    scorer = RelevanceScorer(embedder)
    x_fit, y_fit = features(scorer, fit_pairs)
    x_check, y_check = features(scorer, check_pairs)
    semantic_model = fit_logistic(x_fit, y_fit)
    lexical_model = fit_logistic(x_fit[:, [0, 2, 3]], y_fit)
    report("SEMANTIC_MODEL (bias, semantic, coverage, complete)", semantic_model, x_check, y_check)
    report("LEXICAL_MODEL (bias, coverage, complete)", lexical_model, x_check[:, [0, 2, 3]], y_check)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

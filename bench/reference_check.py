"""Benchmark: `POST /v1/references/check`, its throughput at the project's real provider intervals and its
verdicts on a labelled set built from the corpus' metadata.

    .venv/bin/python -m bench.reference_check [--per-class N] [--no-politeness] [--no-latency]

The registries are bench.corpus_web over the real corpus (the 20 papers and ~1000 real records of the
recorded API responses): Crossref `/works/{doi}` and `query.bibliographic` (a ranked OR over titles),
OpenAlex `/works/doi:` and `search=` (every word must occur), with simulated latency per API call. The
checks go through the local gateway on the embedded AWS, as a client's would.

The labelled set is built generically from every record with a DOI, authors and a title of four words
or more, split by a hash of its DOI into a dev half (where the matching thresholds were set) and a
held-out half (printed, never tuned on); each half's references are built from its own records only:
  - real: a record formatted in one of six styles in turn (APA with its DOI, Vancouver, IEEE, BibTeX,
    a bare DOI, APA without a DOI) -> `verified`;
  - mismatch: a record's DOI, authors and year with another record's title -> `doi_title_mismatch`;
  - invented: the first half of one title joined to the second half of another, a third record's
    authors, and half of them a DOI under a real prefix that no registry holds -> `not_found`.
The recordings hold no retracted work, so there is no retracted class (the route's retraction path is
covered by tests/e2e/test_reference_check.py on Crossref's and OpenAlex's retraction shapes).

Throughput: 50 and 200 real references (records used by no other run, so that nothing is answered from
the lookup cache), formatted as above, checked in one request each.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.corpus_web import CorpusWeb, WebPaper, add_condition_options, describe_conditions, literature
from bench.corpus_web.web import figure_printer

EXPECTED = {"real": "verified", "mismatch": "doi_title_mismatch", "invented": "not_found"}
THROUGHPUT_SIZES = (50, 200)
SEED = 35


@dataclass(frozen=True)
class Labelled:
    label: str  # real | mismatch | invented
    text: str


def _surname(name: str) -> str:
    return name.split()[-1]


def _initials(name: str) -> str:
    return "".join(part[0] for part in name.split()[:-1] if part[:1].isalpha())


def _apa(paper: WebPaper, *, doi: bool = True, title: str | None = None) -> str:
    names = [f"{_surname(a)}, {'. '.join(_initials(a))}." for a in paper.authors[:6]]
    authors = ", ".join(names[:-1]) + (f", & {names[-1]}" if len(names) > 1 else names[0])
    text = f"{authors} ({paper.year}). {title or paper.title}. {paper.venue or 'Proceedings'}."
    return f"{text} https://doi.org/{paper.doi}" if doi and paper.doi else text


def _vancouver(paper: WebPaper) -> str:
    authors = ", ".join(f"{_surname(a)} {_initials(a)}" for a in paper.authors[:6])
    return f"{authors}. {paper.title}. {paper.venue or 'Proc'}. {paper.year};1:1-10. doi:{paper.doi}"


def _ieee(paper: WebPaper) -> str:
    names = [f"{'. '.join(_initials(a))}. {_surname(a)}" for a in paper.authors[:3]]
    authors = ", ".join(names) + (" et al." if len(paper.authors) > 3 else "")
    return f'{authors}, "{paper.title}," {paper.venue or "in Proc."}, {paper.year}.'


def _bibtex(paper: WebPaper) -> str:
    authors = " and ".join(f"{_surname(a)}, {' '.join(a.split()[:-1])}" for a in paper.authors[:6])
    key = hashlib.sha1(paper.title.encode()).hexdigest()[:8]
    return (
        f"@article{{{key}, title={{{paper.title}}}, author={{{authors}}}, year={{{paper.year}}}, "
        f"journal={{{paper.venue or 'Unknown'}}}, doi={{{paper.doi}}}}}"
    )


STYLES: tuple[Callable[[WebPaper], str], ...] = (
    _apa,
    _vancouver,
    _ieee,
    _bibtex,
    lambda p: str(p.doi),
    lambda p: _apa(p, doi=False),
)


def _half(paper: WebPaper) -> str:
    digest = int(hashlib.sha256(str(paper.doi).encode()).hexdigest(), 16)
    return "dev" if digest % 2 == 0 else "held-out"


def usable(papers: list[WebPaper]) -> list[WebPaper]:
    return [p for p in papers if p.doi and p.authors and p.year and len(p.title.split()) >= 4]


def _invented(rng: random.Random, a: WebPaper, b: WebPaper, c: WebPaper, with_doi: bool) -> str:
    first, second = a.title.split(), b.title.split()
    title = " ".join(first[: len(first) // 2] + second[len(second) // 2 :])
    fake = WebPaper(
        key="invented", title=title, abstract=None, authors=c.authors, year=rng.randint(1995, 2024)
    )
    text = _apa(fake, doi=False)
    if with_doi:
        prefix = str(a.doi).split("/", 1)[0]
        text += f" https://doi.org/{prefix}/invented.{rng.randrange(10**8):08d}"
    return text


def labelled_set(papers: list[WebPaper], per_class: int, rng: random.Random) -> list[Labelled]:
    """`per_class` references of each class from the first `6 * per_class` of `papers` (each record used
    by one class only)."""
    pool = papers[: 6 * per_class]
    real, mismatch, invented = (
        pool[:per_class],
        pool[per_class : 3 * per_class],
        pool[3 * per_class : 6 * per_class],
    )
    items = [Labelled("real", STYLES[i % len(STYLES)](p)) for i, p in enumerate(real)]
    for i in range(0, len(mismatch) - 1, 2):
        doi_owner, title_owner = mismatch[i], mismatch[i + 1]
        if i % 4 == 0:
            text = _apa(doi_owner, title=title_owner.title)
        else:
            text = _vancouver(doi_owner).replace(doi_owner.title, title_owner.title)
        items.append(Labelled("mismatch", text))
    for i in range(0, len(invented) - 2, 3):
        a, b, c = invented[i : i + 3]
        items.append(Labelled("invented", _invented(rng, a, b, c, with_doi=i % 2 == 0)))
    return items


def check(client: Any, references: list[str]) -> tuple[list[dict[str, Any]], float]:
    started = time.perf_counter()
    answer = client.post("/v1/references/check", json={"references": references})
    elapsed = time.perf_counter() - started
    if answer.status_code != 200:
        raise SystemExit(f"check failed: HTTP {answer.status_code} {answer.text[:300]}")
    return answer.json()["references"], elapsed


def confusion(items: list[Labelled], entries: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    table: dict[str, Counter[str]] = {label: Counter() for label in EXPECTED}
    for item, entry in zip(items, entries, strict=True):
        table[item.label][entry["status"]] += 1
    return table


def print_verdicts(
    half: str, items: list[Labelled], checked: tuple[list[dict[str, Any]], float], figure: Any, misses: bool
) -> None:
    entries, seconds = checked
    table = confusion(items, entries)
    right = sum(table[label][EXPECTED[label]] for label in table)
    figure(f"verdicts, {half} half: {right}/{len(items)} as labelled (one check, {seconds:.1f} s)")
    for label, counts in table.items():
        total = sum(counts.values())
        shown = ", ".join(f"{status} {n}" for status, n in counts.most_common())
        figure(f"  {label:9s} (expected {EXPECTED[label]}): {counts[EXPECTED[label]]}/{total} [{shown}]")
    failures = Counter(
        note.split(": ", 1)[0] + ": " + note.split(": ", 1)[-1][:80]
        for entry in entries
        for note in entry["notes"]
        if "failed at" in note or "not asked" in note or "could not be read" in note
    )
    figure(f"  lookup failures in the notes: {sum(failures.values())} {dict(failures.most_common(3))}")
    for item, entry in zip(items, entries, strict=True):
        if misses and entry["status"] != EXPECTED[item.label]:
            print(f"  miss: {item.label} -> {entry['status']}: {item.text[:160]!r} {entry['notes']}")


def print_throughput(client: Any, web: Any, references: list[str], figure: Any) -> None:
    web.reset_requests()
    entries, seconds = check(client, references)
    statuses = Counter(e["status"] for e in entries)
    gaps = {p: web.smallest_gap(p) for p in ("crossref", "openalex")}
    requests = {p: len(web.arrivals(p)) for p in ("crossref", "openalex")}
    figure(
        f"throughput, {len(references)} references: {seconds:.1f} s ({len(references) / seconds:.1f} per s); "
        f"requests {requests}; smallest gap between requests "
        + ", ".join(f"{p} {g:.3f} s" if g is not None else f"{p} -" for p, g in gaps.items())
        + f"; verdicts {dict(statuses)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-class", type=int, default=40, help="references per class and half")
    parser.add_argument("--verdicts-only", action="store_true", help="skip the throughput runs")
    parser.add_argument(
        "--dev-misses", action="store_true", help="print the dev half's misses (never the held-out's)"
    )
    add_condition_options(parser)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    from fastapi.testclient import TestClient

    from functions.local_runtime.aws import EmbeddedAws
    from functions.local_runtime.gateway import Gateway, load_function_apps

    papers = literature(redate_years=None)
    rng = random.Random(SEED)
    halves = {half: [p for p in usable(papers) if _half(p) == half] for half in ("dev", "held-out")}
    for pool in halves.values():
        rng.shuffle(pool)
    sets = {half: labelled_set(pool, args.per_class, rng) for half, pool in halves.items()}
    spare = [p for pool in halves.values() for p in pool[6 * args.per_class :]]
    rng.shuffle(spare)
    figure = figure_printer(args.no_politeness)
    corpus_web = CorpusWeb(papers, latency=not args.no_latency, seed=SEED)
    web = corpus_web.start()
    print(describe_conditions(no_politeness=args.no_politeness, latency=not args.no_latency))
    print(
        f"records with a DOI, authors and a title: {sum(len(p) for p in halves.values())} "
        f"(dev {len(halves['dev'])}, held-out {len(halves['held-out'])})"
    )
    try:
        env = corpus_web.environment(no_politeness=args.no_politeness)
        with EmbeddedAws(extra_environment=env), TestClient(Gateway(load_function_apps())) as client:
            at = 0
            for size in () if args.verdicts_only else THROUGHPUT_SIZES:
                chosen = spare[at : at + size]
                at += size
                print_throughput(
                    client, web, [STYLES[i % len(STYLES)](p) for i, p in enumerate(chosen)], figure
                )
            for half, items in sets.items():  # the dev half first: its misses are printed before
                checked = check(client, [item.text for item in items])
                print_verdicts(half, items, checked, figure, args.dev_misses and half == "dev")
    finally:
        corpus_web.stop()


if __name__ == "__main__":
    main()

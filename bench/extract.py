"""Extraction benchmark over ../shared/corpus/papers (prints figures; not a test).

Part 1 (in-process, no network): parse + analyse every PDF; per paper and in total: success, title
match against ground truth (normalised), abstract token-F1, author surname F1, reference count vs ground
truth, findings, pages/s, time per paper p50/p95, peak memory (process max RSS). Title, abstract and
author figures are also printed per split: the regular papers are split into "dev" (rules may be tuned
on them) and "held-out" (never looked at while tuning) by a fixed rule, `split_of`. These are the
layout-only figures: no registry is asked (the corpus papers' identifiers cannot be answered offline,
and serving their recorded metadata back would measure nothing but the lookup).
Part 2 (through the HTTP API, loopback): every PDF served by a local HTTP server and extracted via
`POST /api/tools/extract`: status code, success and wall time (the difficult set must answer < 45 s
with no 5xx).

Usage: .venv/bin/python -m bench.extract [--corpus PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import http.server
import json
import os
import re
import resource
import statistics
import threading
import time
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from functions.common.documents import InMemoryDocumentRepository
from functions.common.models import ExtractedPaper
from functions.common.outbound.http import HttpClient
from functions.common.settings import get_settings, reset_settings_cache
from functions.common.storage import InMemoryBlobStore
from functions.extract.extraction import from_parsed, parse_or_failure

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "papers"
TEI = "{http://www.tei-c.org/ns/1.0}"


@dataclass
class Truth:
    title: str | None = None
    abstract: str | None = None
    references: int | None = None
    surnames: list[str] | None = None


def split_of(paper_id: str) -> str:
    """Fixed before any failure was looked at: the parity of a stable hash of the paper id."""
    return "held-out" if int(hashlib.sha256(paper_id.encode()).hexdigest()[:8], 16) % 2 else "dev"


def surname_key(name: str) -> str:
    """'Kowalski, Dariusz R.' | 'Doug Downey' -> 'kowalski' | 'downey' (accents folded)."""
    name = name.split(",", 1)[0] if "," in name else (name.split() or [""])[-1]
    return "".join(norm(name).split())


def author_f1(predicted: list[str], surnames: list[str]) -> float:
    """F1 of ground-truth surnames found among the predicted names' words (names glued together in
    the ground truth, "StefanSchoenmackers", count when the surname ends the glued word)."""
    words = {w for name in predicted for w in norm(name).split()}
    truth = [s for s in surnames if s]
    if not truth or not predicted:
        return 0.0
    hits = sum(1 for s in truth if s in words or any(w.endswith(s) and len(s) > 3 for w in words))
    if hits == 0:
        return 0.0
    precision, recall = min(1.0, hits / len(predicted)), hits / len(truth)
    return 2 * precision * recall / (precision + recall)


def norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(re.findall(r"[a-z0-9]+", text))


def token_f1(predicted: str, expected: str) -> float:
    p, e = norm(predicted).split(), norm(expected).split()
    if not p or not e:
        return 0.0
    from collections import Counter

    common = sum((Counter(p) & Counter(e)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(e)
    return 2 * precision * recall / (precision + recall)


def title_matches(predicted: str, expected: str) -> bool:
    a, b = norm(predicted), norm(expected)
    if not a:
        return False
    return a == b or (token_f1(a, b) >= 0.9)


def _text(element: ET.Element | None) -> str:
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


def _nlm_surname(contrib: ET.Element) -> str:
    """`<surname>`, or the last word of `<string-name>` when the record gives the name as one string."""
    surname = _text(contrib.find(".//surname"))
    if not surname:
        words = _text(contrib.find(".//string-name")).split()
        surname = words[-1] if words else ""
    return surname_key(surname)


def load_truth(folder: Path) -> Truth:
    truth = Truth()
    for name in ("grobid.tei.xml", "grobid_header.tei.xml"):
        path = folder / name
        if path.exists():
            root = ET.parse(path).getroot()
            truth.title = _text(root.find(f".//{TEI}titleStmt/{TEI}title")) or None
            header = root.find(f".//{TEI}sourceDesc")
            if header is not None:
                names = [_text(a.find(f".//{TEI}surname")) for a in header.iter(f"{TEI}author")]
                names = [n for n in names if n]
                if names and (analytic := header.find(f".//{TEI}analytic")) is not None:
                    names = [_text(a.find(f".//{TEI}surname")) for a in analytic.iter(f"{TEI}author")]
                truth.surnames = [surname_key(n) for n in names if n] or truth.surnames
            truth.abstract = _text(root.find(f".//{TEI}profileDesc/{TEI}abstract")) or None
            bibl = root.find(f".//{TEI}listBibl")
            if name == "grobid.tei.xml" and bibl is not None:
                truth.references = len(bibl.findall(f"{TEI}biblStruct"))
    s2orc = folder / "s2orc.json"
    if s2orc.exists():
        data = json.loads(s2orc.read_text())
        truth.title = truth.title or data.get("title")
        abstract = data.get("abstract")
        if isinstance(abstract, str) and abstract:
            truth.abstract = abstract
        authors = data.get("authors")
        if isinstance(authors, list) and authors:
            truth.surnames = [surname_key(a.get("last", "")) for a in authors if isinstance(a, dict)]
    nlm = folder / "metadata.nlm.xml"
    if nlm.exists():
        root = ET.parse(nlm).getroot()
        truth.title = _text(root.find(".//article-title")) or None
        truth.abstract = _text(root.find(".//abstract")) or None
        refs = root.findall(".//ref")
        truth.references = len(refs) or None
        contribs = root.findall(".//contrib[@contrib-type='author']")
        truth.surnames = [_nlm_surname(c) for c in contribs] or None
    for name in ("labels.txt",):
        path = folder / name
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                match = re.match(r"^TITLE\s*(?:=|\t)\s*(.+)$", line)
                if match:
                    truth.title = match.group(1).strip()
                author = re.match(r"^AUTHOR\s*(?:=|\t)\s*(.+)$", line)
                if author:
                    truth.surnames = [*(truth.surnames or []), surname_key(author.group(1).strip())]
    extraction = folder / "extraction.json"
    if extraction.exists():
        for kind, value in json.loads(extraction.read_text(encoding="utf-8-sig")):
            if kind == "title":
                truth.title = value
    jsonl = folder / "groundTruth.jsonl"
    if jsonl.exists():
        prefix = folder.name.split("_")[1]
        for line in jsonl.read_text(errors="replace").splitlines():
            if line.strip():
                record = json.loads(line)
                if str(record.get("id", "")).startswith(prefix):
                    truth.title = record.get("title")
                    truth.surnames = [surname_key(a) for a in record.get("authors") or []] or None
    meta = folder / "metadata.json"
    if meta.exists():
        data = json.loads(meta.read_text(encoding="utf-8-sig"))
        record = data[0] if isinstance(data, list) else data
        truth.title = record.get("title")
        truth.surnames = [surname_key(a) for a in record.get("authors") or []] or None
    return truth


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def extract_file(path: Path) -> tuple[ExtractedPaper, float, int]:
    data = path.read_bytes()
    started = time.perf_counter()
    outcome = parse_or_failure(data, str(path), f"file:{path.parent.name}")
    if isinstance(outcome, ExtractedPaper):
        return outcome, time.perf_counter() - started, 0
    paper = from_parsed(
        outcome, source_url=str(path), canonical_id=f"file:{path.parent.name}", focus_areas=["results"]
    )
    return paper, time.perf_counter() - started, len(outcome.pages)


def part_one(corpus: Path, repeat: int) -> None:
    index = json.loads((corpus / "INDEX.json").read_text())
    rows: list[dict[str, Any]] = []
    print("== in-process parse + analysis (no network) ==")
    header = f"{'paper':34} {'cat':9} {'ok':>3} {'pages':>5} {'title':>5} {'absF1':>5} {'auF1':>5} {'refs':>9} {'find':>4} {'conf':>4} {'ms':>7} {'pg/s':>6}  reason"
    print(header)
    for entry in index:
        folder = corpus / entry["category"] / entry["id"]
        path = folder / "paper.pdf"
        timings: list[float] = []
        paper: ExtractedPaper | None = None
        pages = 0
        for _ in range(repeat):
            paper, seconds, pages = extract_file(path)
            timings.append(seconds)
        assert paper is not None
        seconds = statistics.median(timings)
        truth = load_truth(folder) if entry["category"] == "regular" else Truth()
        title_ok = title_matches(paper.title, truth.title) if truth.title else None
        f1 = token_f1(paper.abstract, truth.abstract) if truth.abstract else None
        authors = author_f1(paper.authors, truth.surnames) if truth.surnames else None
        refs = (
            f"{len(paper.citations)}/{truth.references}" if truth.references else f"{len(paper.citations)}/-"
        )
        rows.append(
            {
                "id": entry["id"],
                "category": entry["category"],
                "success": paper.success,
                "title_ok": title_ok,
                "f1": f1,
                "authors": authors,
                "split": split_of(entry["id"]),
                "refs": len(paper.citations),
                "refs_truth": truth.references,
                "findings": len(paper.key_findings),
                "seconds": seconds,
                "pages": pages,
            }
        )
        print(
            f"{entry['id'][:34]:34} {entry['category'][:9]:9} {('yes' if paper.success else 'no'):>3} {pages:>5} "
            f"{'-' if title_ok is None else ('ok' if title_ok else 'MISS'):>5} "
            f"{'-' if f1 is None else f'{f1:.2f}':>5} {'-' if authors is None else f'{authors:.2f}':>5} {refs:>9} {len(paper.key_findings):>4} "
            f"{paper.confidence_score:>4.2f} {seconds * 1000:>7.1f} {pages / seconds if seconds else 0:>6.0f}  "
            f"{paper.failure_reason or ''}"
        )
    regular = [r for r in rows if r["category"] == "regular"]
    titled = [r for r in regular if r["title_ok"] is not None]
    with_abstract = [r for r in regular if r["f1"] is not None]
    with_refs = [r for r in regular if r["refs_truth"]]
    times = [r["seconds"] for r in regular]
    total_pages = sum(r["pages"] for r in rows)
    total_seconds = sum(r["seconds"] for r in rows)
    print()
    print(
        f"regular papers: {len(regular)}; success {sum(r['success'] for r in regular)}/{len(regular)} "
        f"({100 * sum(r['success'] for r in regular) / len(regular):.0f}%)"
    )
    print(
        f"title correct: {sum(r['title_ok'] for r in titled)}/{len(titled)} "
        f"({100 * sum(r['title_ok'] for r in titled) / max(1, len(titled)):.0f}%) where ground truth has one"
    )
    print(
        f"abstract token-F1: mean {statistics.mean(r['f1'] for r in with_abstract):.3f} over {len(with_abstract)} papers"
    )
    ratios = [min(r["refs"], r["refs_truth"]) / max(r["refs"], r["refs_truth"]) for r in with_refs]
    print(
        f"references: count ratio min/max mean {statistics.mean(ratios):.2f} over {len(with_refs)} papers "
        f"(found {sum(r['refs'] for r in with_refs)} vs truth {sum(r['refs_truth'] for r in with_refs)})"
    )
    print(
        f"findings: mean {statistics.mean(r['findings'] for r in regular):.1f}, "
        f"papers with >=3: {sum(r['findings'] >= 3 for r in regular)}/{len(regular)}"
    )
    print(
        f"time per regular paper: p50 {percentile(times, 0.5) * 1000:.0f} ms, p95 {percentile(times, 0.95) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms"
    )
    print(
        f"throughput (all, parse+analysis): {total_pages / total_seconds:.0f} pages/s over {total_pages} pages"
    )
    print(
        f"peak memory (process max RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )
    print("\nper split (layout only, no registry asked):")
    for split in ("dev", "held-out"):
        print_split(split, [r for r in regular if r["split"] == split])


def print_split(split: str, rows: list[dict[str, Any]]) -> None:
    titled = [r for r in rows if r["title_ok"] is not None]
    f1s = [r["f1"] for r in rows if r["f1"] is not None]
    authors = [r["authors"] for r in rows if r["authors"] is not None]
    title_part = (
        f"titles {sum(r['title_ok'] for r in titled)}/{len(titled)} "
        f"({100 * sum(r['title_ok'] for r in titled) / max(1, len(titled)):.0f}%)"
    )
    abstract_part = f"abstract token-F1 {statistics.mean(f1s):.3f} (n={len(f1s)})" if f1s else "abstract -"
    author_part = (
        f"author surname F1 {statistics.mean(authors):.2f} (n={len(authors)}), "
        f"papers with F1 >= 0.8: {sum(a >= 0.8 for a in authors)}/{len(authors)}"
        if authors
        else "authors -"
    )
    print(f"  {split:8} ({len(rows)} papers): {title_part}; {abstract_part}; {author_part}")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


async def part_two(corpus: Path) -> None:
    from functions.extract.api import get_service
    from functions.extract.app import app, logger

    logger.setLevel("WARNING")
    from functions.extract.service import ExtractionService

    handler = functools.partial(_QuietHandler, directory=str(corpus))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ["FETCH_ALLOW_PRIVATE_HOSTS"] = f"127.0.0.1:{port}"
    reset_settings_cache()
    blobs, documents = InMemoryBlobStore(), InMemoryDocumentRepository()

    async def service() -> AsyncIterator[ExtractionService]:
        client = HttpClient(get_settings())
        try:
            yield ExtractionService(http=client, blobs=blobs, documents=documents)
        finally:
            await client.aclose()

    app.dependency_overrides[get_service] = service
    index = json.loads((corpus / "INDEX.json").read_text())
    print("\n== through POST /api/tools/extract, PDFs served on loopback ==")
    print(f"{'paper':34} {'cat':9} {'status':>6} {'ok':>3} {'wall ms':>8} {'again ms':>8}  reason")
    worst = 0.0
    five_xx = 0
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://extract") as client:
        for entry in index:
            url = f"http://127.0.0.1:{port}/{entry['category']}/{entry['id']}/paper.pdf"
            started = time.perf_counter()
            response = await client.post("/api/tools/extract", json={"source_url": url}, timeout=60)
            wall = time.perf_counter() - started
            started = time.perf_counter()
            await client.post("/api/tools/extract", json={"source_url": url}, timeout=60)
            again = time.perf_counter() - started
            worst = max(worst, wall)
            five_xx += response.status_code >= 500
            body = response.json()
            meta = body.get("metadata", {})
            print(
                f"{entry['id'][:34]:34} {entry['category'][:9]:9} {response.status_code:>6} "
                f"{('yes' if meta.get('extraction_success') else 'no'):>3} {wall * 1000:>8.0f} {again * 1000:>8.0f}  "
                f"{meta.get('failure_reason') or body.get('message') or ''}"
            )
    server.shutdown()
    app.dependency_overrides.clear()
    print(f"slowest answer {worst:.2f} s; 5xx answers: {five_xx}")


def _parse_only(parser: str, paths: list[str]) -> tuple[int, float, float]:
    """Runs in a fresh process so that its max RSS is this parser's alone."""
    import io

    started = time.perf_counter()
    pages = 0
    for name in paths:
        data = Path(name).read_bytes()
        if parser == "pypdfium2":
            import pypdfium2 as pdfium  # type: ignore[import-untyped]

            document = pdfium.PdfDocument(data)
            for index in range(len(document)):
                page = document[index]
                textpage = page.get_textpage()
                textpage.get_text_range()
                textpage.close()
                page.close()
                pages += 1
            document.close()
        else:
            import logging

            from pypdf import PdfReader

            logging.getLogger("pypdf").setLevel(logging.ERROR)

            reader = PdfReader(io.BytesIO(data))
            for page in reader.pages:
                page.extract_text()
                pages += 1
    seconds = time.perf_counter() - started
    return pages, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def compare_parsers(corpus: Path) -> None:
    """The design decision (pypdfium2 first, pypdf as fallback), measured on the regular papers."""
    import multiprocessing

    paths = sorted(str(p) for p in (corpus / "regular").glob("*/paper.pdf"))
    print("\n== parser comparison (text only, regular papers, one process each) ==")
    context = multiprocessing.get_context("spawn")
    for parser in ("pypdfium2", "pypdf"):
        with context.Pool(1) as pool:
            pages, seconds, rss = pool.apply(_parse_only, (parser, paths))
        print(
            f"{parser:10} {pages} pages in {seconds:.2f} s = {pages / seconds:.0f} pages/s, process max RSS {rss:.0f} MB"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repeat", type=int, default=3, help="runs per paper; the median is reported")
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--skip-parsers", action="store_true", help="skip the pypdfium2/pypdf comparison")
    args = parser.parse_args()
    if not (args.corpus / "INDEX.json").exists():
        raise SystemExit(f"corpus not found at {args.corpus}")
    print(f"machine: {os.cpu_count()} cores (shared with other work; figures are noisy)")
    part_one(args.corpus, args.repeat)
    if not args.skip_parsers:
        compare_parsers(args.corpus)
    if not args.skip_http:
        asyncio.run(part_two(args.corpus))


if __name__ == "__main__":
    main()

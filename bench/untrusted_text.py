"""Benchmark: how many real sentences the untrusted-text detector flags, how many attacks it catches, and
what it costs per sentence.

    .venv/bin/python -m bench.untrusted_text [--corpus ../shared/corpus]

Every PDF of the corpus (papers, regular and difficult, and the textbook chapters) is read with pypdfium2,
line breaks joined, and cut into sentences as evidence chunks are (`functions/common/text.py`); each sentence
is screened as retrieved text is (`untrusted_text.screen`, no links of its own allowed). Printed per group:
sentences, sentences flagged as addressed to the reader or a model, sentences withheld only for a foreign
link or e-mail address; then the share caught of each attack file under tests/unit/research/attacks/,
and the time per sentence. Target: no real paper sentence flagged beyond those carrying a foreign link.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from pathlib import Path

from functions.common.text import sentence_spans
from functions.research.retrieval.untrusted_text import STRONG, screen

ATTACKS = Path(__file__).resolve().parent.parent / "tests" / "unit" / "research" / "attacks"
MAX_PAGES = 60


def pdf_text(path: Path) -> str | None:
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    try:
        document = pdfium.PdfDocument(str(path))
    except Exception:  # encrypted or unreadable: the corpus has such files on purpose
        return None
    pages = [
        document[index].get_textpage().get_text_range() for index in range(min(len(document), MAX_PAGES))
    ]
    text = re.sub(r"-\n(?=[a-z])", "", "\n".join(pages))
    return re.sub(r"\s*\n\s*", " ", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpus"
    )
    parser.add_argument("--show", action="store_true", help="print every flagged sentence")
    args = parser.parse_args()

    groups = {
        "papers/regular": sorted((args.corpus / "papers" / "regular").rglob("*.pdf")),
        "papers/difficult": sorted((args.corpus / "papers" / "difficult").rglob("*.pdf")),
        "textbook": sorted((args.corpus / "textbook").rglob("*.pdf")),
    }
    elapsed, judged = 0.0, 0
    for group, paths in groups.items():
        counts: Counter[str] = Counter()
        for path in paths:
            text = pdf_text(path)
            if not text:
                continue
            for start, end in sentence_spans(text):
                sentence = text[start:end]
                began = time.perf_counter()
                screened = screen(sentence)
                elapsed += time.perf_counter() - began
                judged += 1
                counts["sentences"] += 1
                if not screened.hostile:
                    continue
                signals = {s for clause in screened.hostile for s in clause.verdict.signals}
                kind = "foreign link only" if signals & STRONG == {"foreign_link"} else "addressed"
                counts[kind] += 1
                if args.show and kind == "addressed":
                    print(f"  {path.parent.name}: {sorted(signals)} | {sentence[:160]}")
        print(
            f"{group}: {counts['sentences']} sentences, {counts['addressed']} flagged as addressed to the "
            f"reader or a model, {counts['foreign link only']} withheld for a foreign link or e-mail only"
        )
    for name in sorted(path.name for path in ATTACKS.glob("*.txt")):
        lines = [
            line.strip() for line in (ATTACKS / name).read_text(encoding="utf-8").splitlines() if line.strip()
        ]
        caught = sum(1 for line in lines if screen(line).hostile)
        print(f"attacks {name}: {caught}/{len(lines)} caught")
    print(f"time per sentence: {1000 * elapsed / max(judged, 1):.2f} ms over {judged} sentences")


if __name__ == "__main__":
    main()

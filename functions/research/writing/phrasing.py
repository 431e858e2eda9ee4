"""Phrasing: how each quoted finding of an answer or report is shown, in the order it is shown.

Each sentence is attributed to its authors (functions/research/writing/attribution.py), and an abbreviation is
expanded at its first use in the text from its own source's definition (functions/research/writing/abbreviations.py);
the evidence that defines it is then cited too, so the expansion is stated by what the sentence cites.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from functions.research.writing.abbreviations import (
    Definition,
    defines,
    definition_of,
    definitions,
    expand_first,
    used,
)
from functions.research.writing.attribution import attribute, author_label, last_name, proper_words

_NUMBER_WORDS = [
    "no",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]


def counted(number: int) -> str:
    """A count in words, as prose writes small numbers (and so that it reads as no finding's number)."""
    return _NUMBER_WORDS[number] if 0 <= number < len(_NUMBER_WORDS) else str(number)


@dataclass(frozen=True)
class Authorship:
    authors: Sequence[str]
    year: int | None
    title: str = ""


@dataclass(frozen=True)
class Phrased:
    text: str
    attribution: tuple[str, ...]
    chunk_ids: list[str]


class Phrasing:
    """Rewrites sentences in the order they are shown: `authorship` per source id, `texts` the (chunk id,
    source id, text) of every piece of evidence, where sources define their abbreviations."""

    def __init__(self, authorship: Mapping[str, Authorship], texts: Iterable[tuple[str, str, str]]) -> None:
        by_source: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for chunk_id, source_id, text in texts:
            by_source[source_id].append((chunk_id, text))
        self._labels = {sid: author_label(a.authors, a.year, a.title) for sid, a in authorship.items()}
        self._definitions = {sid: definitions(pairs) for sid, pairs in by_source.items()}
        self._proper = {
            sid: proper_words([text for _, text in pairs])
            | frozenset(last_name(a) for a in (authorship[sid].authors if sid in authorship else []))
            for sid, pairs in by_source.items()
        }
        self._expanded: set[str] = set()

    def label(self, source_id: str) -> str:
        return self._labels.get(source_id) or author_label([], None)

    def proper(self, source_id: str) -> frozenset[str]:
        return self._proper.get(source_id, frozenset())

    def phrase(self, text: str, source_id: str, chunk_ids: Sequence[str], *, again: bool = False) -> Phrased:
        """The sentence as shown: attributed, its abbreviations expanded where this is their first use.
        `again`: it follows a sentence of the same source in the same paragraph."""
        attributed = attribute(text, self.label(source_id), self.proper(source_id), again=again)
        shown, ids = attributed.text, list(chunk_ids)
        for token in used(shown):
            definition = definition_of(token, self._definitions.get(source_id, {}))
            key = definition.abbreviation if definition else token
            if key in self._expanded:
                continue
            if defines(shown, token) or (definition and definition.long_form.lower() in shown.lower()):
                self._expanded.add(key)
            elif definition is not None:
                shown = self._expanded_in(shown, token, definition, ids)
        return Phrased(shown, attributed.attribution, ids)

    def _expanded_in(self, text: str, token: str, definition: Definition, ids: list[str]) -> str:
        self._expanded.add(definition.abbreviation)
        if definition.chunk_id not in ids:
            ids.append(definition.chunk_id)
        return expand_first(text, token, definition)

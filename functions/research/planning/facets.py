"""Decompose a research goal into its facets: the concepts it joins, each kept whole.

"How do graph neural networks and attention mechanisms help drug discovery?" joins three concepts:
`graph neural networks`, `attention mechanisms` and `drug discovery`. The goal is cut at what separates
concepts in English (punctuation, coordinating conjunctions, prepositions, question and framing words);
what is left between two cuts is one concept, its words kept in order. `of` stays inside a concept
("detection of influential nodes"), and a parenthesised acronym after a concept becomes its synonym.
Deterministic and free of I/O, so the API can show the plan in its immediate answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from functions.common.text import STOPWORDS
from functions.research.planning.vocabulary import (
    FRAMING,
    FRAMING_VERBS,
    QUESTION_WORDS,
    RELATIONAL,
    REPORTING_VERBS,
)

_PIECE = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9\-]{1,12})\s*\)|[A-Za-z0-9][A-Za-z0-9\-+'/]*|[,;:?!.()\[\]\"]")
_PUNCTUATION = frozenset(',;:?!.()[]"')
ARTICLES = frozenset({"a", "an", "the"})
# Adverbs end a run, never a concept ("reliably find"); the suffixes spare nouns like family or supply.
_ADVERB = re.compile(r"(?:ab|ib|al|ous|iv|ful|ent|ant|ed|ing|at|e)ly$")
_MAX_FACET_WORDS = 4  # a longer run is cut to its last words (English puts the head noun last)
_MAX_FACETS = 5


@dataclass(frozen=True)
class Facet:
    phrase: str  # the concept as written in the goal, lower-cased ("graph neural networks")
    synonyms: list[str] = field(default_factory=list)  # acronyms and spelling variants

    @property
    def words(self) -> list[str]:
        return [word for word in self.phrase.split() if word not in STOPWORDS]

    @property
    def alternatives(self) -> list[str]:
        return [self.phrase, *self.synonyms]


def _is_boundary(word: str) -> bool:
    return (
        word in RELATIONAL
        or word in QUESTION_WORDS
        or word in FRAMING_VERBS
        or word in REPORTING_VERBS
        or word in STOPWORDS
    )


def _trim(words: list[str]) -> list[str]:
    """Drop stop and framing words at either end ('recent advances' is no concept), but keep a framing
    noun that heads a concept ('scientific papers'); `of` may only join two content words."""
    while words and (words[0] in STOPWORDS or words[0] in FRAMING):
        words = words[1:]
    while words and (
        words[-1] in STOPWORDS or (words[-1] in FRAMING and len(words) > 2) or _ADVERB.search(words[-1])
    ):
        words = words[:-1]
    if len(words) == 2 and words[-1] in FRAMING and words[0] in FRAMING:
        return []
    return words


def _variants(phrase: str) -> list[str]:
    """Spelling variants a search engine may not fold: 'multi-agent' also as 'multi agent'."""
    return [phrase.replace("-", " ")] if "-" in phrase else []


def decompose(goal: str) -> list[Facet]:
    """The concepts of `goal`, in the order they appear, duplicates removed."""
    runs: list[list[str]] = []
    current: list[str] = []
    acronyms: dict[int, str] = {}
    for match in _PIECE.finditer(goal):
        if match.group(1):  # "(RAG)" right after a concept names it
            if current or runs:
                acronyms[len(runs) if current else len(runs) - 1] = match.group(1).lower()
            continue
        piece = match.group(0)
        word = piece.lower().strip("'").removesuffix("'s")
        if piece in _PUNCTUATION or (word != "of" and _is_boundary(word)):
            if word in ARTICLES and len(current) > 1 and current[-1] not in STOPWORDS:
                current.pop()  # a word right before an article is a verb: "dark matter leave a signature"
            if current:
                runs.append(current)
            current = []
            continue
        current.append(word)
    if current:
        runs.append(current)

    facets: list[Facet] = []
    seen: set[str] = set()
    for index, run in enumerate(runs):
        words = _trim(run)
        if not words:
            continue
        if len([w for w in words if w != "of"]) > _MAX_FACET_WORDS:
            words = _trim(words[-_MAX_FACET_WORDS:])
        phrase = " ".join(words)
        if not phrase or phrase in seen or len(phrase) < 2:
            continue
        seen.add(phrase)
        synonyms = [acronyms[index]] if index in acronyms else []
        synonyms += [variant for variant in _variants(phrase) if variant not in synonyms]
        facets.append(Facet(phrase=phrase, synonyms=synonyms))
    while len(facets) > _MAX_FACETS:  # too many: single words go first, they are the weakest concepts
        single = [facet for facet in facets if len(facet.words) == 1]
        facets.remove(single[-1] if single else facets[-1])
    return facets


def facet_questions(goal: str, facets: list[Facet]) -> list[str]:
    """The goal itself, and one question per facet that ties it to the rest of the goal."""
    questions = [goal]
    if len(facets) > 1:
        for index, facet in enumerate(facets):
            others = [other.phrase for position, other in enumerate(facets) if position != index]
            questions.append(f"How does {facet.phrase} relate to {' and '.join(others)}?")
    return questions

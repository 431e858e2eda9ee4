"""BM25 over the book's entities and passages (bm25s + Snowball stemming), and typo suggestions.

The index is saved as bm25s's own arrays (numpy `.npy`, JSON vocabulary), which the blob store keeps
next to the other artifacts, so a cold container loads it without re-tokenising the book.
"""

from __future__ import annotations

import re
import tempfile
import threading
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN
from numpy.typing import NDArray
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

STEMMER_LANGUAGE = "english"
# A term is a run of two or more word characters (bm25s's default) ...
WORD_PATTERN = r"(?u)\b\w\w+\b"
# ... except in the symbols field, whose terms are the one-character ones: a textbook's symbols (q, v,
# P, x) and single digits, which name what its items introduce ("the q values", "v equals f of v").
SYMBOL_PATTERN = r"(?u)\b\w\b"
_WORD = re.compile(r"[A-Za-z][A-Za-z']{2,}")
# The stop words bm25s drops for stopwords="en" (what the index was built with).
_STOP_WORDS = frozenset(STOPWORDS_EN)


class LexicalIndex:
    def __init__(self, retriever: bm25s.BM25, term_pattern: str = WORD_PATTERN) -> None:
        self._retriever = retriever
        self.term_pattern = term_pattern
        self._per_thread = threading.local()
        self._vocab: dict[str, int] = dict(retriever.vocab_dict)
        self._find_terms = re.compile(term_pattern).findall

    @classmethod
    def build(cls, texts: list[str], term_pattern: str = WORD_PATTERN) -> LexicalIndex:
        built = cls.build_optional(texts, term_pattern)
        if built is None:
            raise ValueError("no term to index in the given texts")
        return built

    @classmethod
    def build_optional(cls, texts: list[str], term_pattern: str = WORD_PATTERN) -> LexicalIndex | None:
        """The index of the texts, or None when they hold no term (bm25s cannot index an empty vocabulary)."""
        stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE)
        tokens = bm25s.tokenize(
            texts,
            stopwords="en",
            stemmer=stemmer,
            token_pattern=term_pattern,
            return_ids=False,
            show_progress=False,
        )
        if not any(tokens):
            return None
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        return cls(retriever, term_pattern)

    def tokens(self, query: str) -> list[str]:
        """The query's terms as the index holds them: what `bm25s.tokenize` makes of it (lower-cased, split
        by the term pattern, stop words dropped, stemmed), without its per-call set-up, which cost ~18 µs
        a call: the search tokenises every query word apart to find the ones the book does not know."""
        terms = [term for term in self._find_terms(query.lower()) if term not in _STOP_WORDS]
        return [stem for stem in self._stemmer().stemWords(terms) if stem]

    def _stemmer(self) -> Stemmer.Stemmer:
        # A PyStemmer instance is not thread-safe, and FastAPI runs sync routes on a thread pool.
        stemmer: Stemmer.Stemmer | None = getattr(self._per_thread, "stemmer", None)
        if stemmer is None:
            stemmer = self._per_thread.stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE)
        return stemmer

    def known(self, token: str) -> bool:
        return token in self._vocab

    def scores(self, tokens: list[str]) -> NDArray[np.float32]:
        usable = [token for token in tokens if token in self._vocab]
        if not usable:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._retriever.get_scores(usable), dtype=np.float32)

    def term_scores(self, terms: list[str]) -> NDArray[np.float32]:
        """One row per term: its BM25 score in each document (0 for a term the index does not know), read
        straight from bm25s's precomputed (term, document) scores: one `scores([term])` call per term
        costs ~8 µs of bm25s's checks and conversions, the title field's per-word scores a few of them."""
        rows = np.zeros((len(terms), self.size), dtype=np.float32)
        if self._retriever.nonoccurrence_array is not None:  # BM25L/BM25+ (not built here): the slow way
            for row, term in enumerate(terms):
                rows[row] = self.scores([term])
            return rows
        stored = self._retriever.scores
        data, indices, starts = stored["data"], stored["indices"], stored["indptr"]
        for row, term in enumerate(terms):
            term_id = self._vocab.get(term)
            if term_id is not None:
                start, end = starts[term_id], starts[term_id + 1]
                rows[row, indices[start:end]] = data[start:end]
        return rows

    @property
    def size(self) -> int:
        return int(self._retriever.scores["num_docs"])

    def to_files(self) -> dict[str, bytes]:
        with tempfile.TemporaryDirectory() as directory:
            self._retriever.save(directory, show_progress=False)
            return {
                path.name: path.read_bytes() for path in sorted(Path(directory).iterdir()) if path.is_file()
            }

    @classmethod
    def from_files(cls, files: dict[str, bytes], term_pattern: str = WORD_PATTERN) -> LexicalIndex:
        """The index `to_files` wrote; `term_pattern` is the one it was built with."""
        with tempfile.TemporaryDirectory() as directory:
            for name, data in files.items():
                (Path(directory) / name).write_bytes(data)
            retriever = bm25s.BM25.load(directory, show_progress=False, verbosity=0)
        return cls(retriever, term_pattern)


def book_vocabulary(texts: list[str], min_count: int = 2) -> list[str]:
    """Surface words of the book seen at least `min_count` times, most frequent first (acronyms kept in caps)."""
    counts: Counter[str] = Counter()
    for text in texts:
        for word in _WORD.findall(text):
            word = word.strip("-'")
            if len(word) >= 3:
                counts[word if word.isupper() else word.lower()] += 1
    return [word for word, count in counts.most_common() if count >= min_count]


class Speller:
    """Suggests the book's own word for a query word the index does not know ("POMP" -> "POMDP")."""

    def __init__(self, vocabulary: list[str]) -> None:
        self._vocabulary = vocabulary
        self._lower = [word.lower() for word in vocabulary]
        self._known = set(self._lower)

    def correct(self, word: str) -> str | None:
        lowered = word.lower()
        if len(lowered) < 3 or lowered in self._known or not lowered.isalpha():
            return None
        limit = 1 if len(lowered) <= 7 else 2
        matches = process.extract(
            lowered, self._lower, scorer=Levenshtein.distance, score_cutoff=limit, limit=10
        )
        # A typo rarely hits the first letter; among the closest words, the most frequent in the book wins.
        ranked = sorted(
            (match for match in matches if match[0][:1] == lowered[:1]),
            key=lambda match: (match[1], match[2]),
        )
        if not ranked:
            return None
        suggestion = self._vocabulary[ranked[0][2]]
        if word[:1].isupper() and not suggestion.isupper():
            suggestion = suggestion[:1].upper() + suggestion[1:]
        return suggestion

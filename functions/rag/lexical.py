"""BM25 over the book's entities and passages (bm25s + Snowball stemming), and typo suggestions.

The index is saved as bm25s's own arrays (numpy `.npy`, JSON vocabulary), which the blob store keeps
next to the other artifacts, so a cold container loads it without re-tokenising the book.
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from numpy.typing import NDArray
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

STEMMER_LANGUAGE = "english"
# Every run of word characters is a token, one-character ones too: a textbook's symbols (q, v, P, x)
# name what its items introduce, and a question uses them ("the q values", "v equals f of v").
TERM_PATTERN = r"(?u)\b\w+\b"
# bm25s's default (two characters at least), which an index written before its pattern was stored used.
LEGACY_TERM_PATTERN = r"(?u)\b\w\w+\b"
_TOKENIZER_FILE = "tokenizer.json"
_WORD = re.compile(r"[A-Za-z][A-Za-z']{2,}")


class LexicalIndex:
    def __init__(self, retriever: bm25s.BM25, term_pattern: str = TERM_PATTERN) -> None:
        self._retriever = retriever
        self.term_pattern = term_pattern
        self._per_thread = threading.local()
        self._vocab: dict[str, int] = dict(retriever.vocab_dict)

    @classmethod
    def build(cls, texts: list[str]) -> LexicalIndex:
        stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE)
        tokens = bm25s.tokenize(
            texts, stopwords="en", stemmer=stemmer, token_pattern=TERM_PATTERN, show_progress=False
        )
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        return cls(retriever)

    def tokens(self, query: str) -> list[str]:
        tokenised = bm25s.tokenize(
            [query],
            stopwords="en",
            stemmer=self._stemmer(),
            token_pattern=self.term_pattern,
            return_ids=False,
            show_progress=False,
        )
        return [token for token in tokenised[0] if token]

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

    @property
    def size(self) -> int:
        return int(self._retriever.scores["num_docs"])

    def to_files(self) -> dict[str, bytes]:
        with tempfile.TemporaryDirectory() as directory:
            self._retriever.save(directory, show_progress=False)
            files = {
                path.name: path.read_bytes() for path in sorted(Path(directory).iterdir()) if path.is_file()
            }
        files[_TOKENIZER_FILE] = json.dumps({"token_pattern": self.term_pattern}).encode()
        return files

    @classmethod
    def from_files(cls, files: dict[str, bytes]) -> LexicalIndex:
        """The index `to_files` wrote; queries are tokenised with the pattern its documents were."""
        tokenizer = files.get(_TOKENIZER_FILE)
        pattern = json.loads(tokenizer)["token_pattern"] if tokenizer else LEGACY_TERM_PATTERN
        with tempfile.TemporaryDirectory() as directory:
            for name, data in files.items():
                if name != _TOKENIZER_FILE:
                    (Path(directory) / name).write_bytes(data)
            retriever = bm25s.BM25.load(directory, show_progress=False, verbosity=0)
        return cls(retriever, pattern)


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

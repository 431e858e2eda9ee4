"""The web's own text handling: folding, stemmed content words, title keys, whitespace squashing."""

from __future__ import annotations

import re
import threading
import unicodedata
from typing import Any

_STOP_WORDS = (
    "a an and are as at be by for from has have in into is it its of on or that the their this to was "
    "were which with we our can how what when where why do does using via"
)
_STOP = frozenset(_STOP_WORDS.split(" "))
_WORD = re.compile(r"[0-9a-z]+")
_local = threading.local()


def _stemmer() -> Any:
    """A Snowball stemmer per thread (the web's handlers run on the server's threads)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
        _local.stemmer = stemmer
    return stemmer


def fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    return "".join(c for c in text if not unicodedata.combining(c)).lower()


def tokens(text: str | None) -> list[str]:
    """Stemmed content words, stop words dropped (positions of the rest kept in order)."""
    if not text:
        return []
    words = [w for w in _WORD.findall(fold(text)) if w not in _STOP]
    return list(_stemmer().stemWords(words))


def normalise_title(title: str) -> str:
    return " ".join(_WORD.findall(fold(title)))


def squash(text: str) -> str:
    """Line-break hyphenation joined, whitespace collapsed."""
    return " ".join(re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text).split())

"""Abbreviations: a source's own definitions ("bilateral contrast ratio (BCR)"), to expand at first use.

A definition is a parenthesised abbreviation right after the words it abbreviates, the long form being
the shortest run of words before it whose letters spell the abbreviation in order, starting with its
first letter (Schwartz and Hearst's rule, 2003). Only a source's own text defines its abbreviations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_DEFINED = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9\-]*[A-Z][A-Za-z0-9\-]*?)(s?)\s*\)")
ABBREVIATION = re.compile(r"\b[A-Z][A-Za-z0-9\-]*[A-Z][A-Za-z0-9\-]*\b")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
_MAX_EXTRA_WORDS = 2


@dataclass(frozen=True)
class Definition:
    abbreviation: str
    long_form: str
    chunk_id: str  # the evidence that defines it


def _spells(long_form: str, abbreviation: str) -> bool:
    """Whether the abbreviation's letters appear in the long form in order, its first letter starting a
    word of it (matched from the end, as Schwartz and Hearst do)."""
    letters = [c.lower() for c in abbreviation if c.isalnum()]
    text = long_form.lower()
    position = len(text) - 1
    for index in range(len(letters) - 1, -1, -1):
        letter = letters[index]
        while position >= 0 and (
            text[position] != letter or (index == 0 and position > 0 and text[position - 1].isalnum())
        ):
            position -= 1
        if position < 0:
            return False
        position -= 1
    return True


def long_form(before: str, abbreviation: str) -> str | None:
    """The words right before '(ABBR)' that it abbreviates, or None."""
    words = _WORD.findall(before)
    letters = sum(1 for c in abbreviation if c.isalpha())
    for count in range(1, min(len(words), letters + _MAX_EXTRA_WORDS) + 1):
        candidate = words[-count:]
        if candidate[0][0].lower() != abbreviation[0].lower():
            continue
        phrase = " ".join(candidate)
        if _spells(phrase, abbreviation) and before.rstrip().endswith(candidate[-1]):
            start = before.rstrip().rfind(candidate[0], 0, len(before.rstrip()) - len(candidate[-1]) + 1)
            return before.rstrip()[start:] if start >= 0 else phrase
    return None


def definitions(texts: Iterable[tuple[str, str]]) -> dict[str, Definition]:
    """Every abbreviation (chunk id, text) pairs define, first definition wins."""
    found: dict[str, Definition] = {}
    for chunk_id, text in texts:
        for match in _DEFINED.finditer(text):
            abbreviation = match.group(1)
            if abbreviation in found:
                continue
            expansion = long_form(text[: match.start()], abbreviation)
            if expansion and expansion.lower() != abbreviation.lower():
                opens = text[: match.start()].rstrip().removesuffix(expansion).rstrip()
                if (not opens or opens.endswith((".", ":"))) and expansion[1:2].islower():
                    expansion = expansion[0].lower() + expansion[1:]  # capitalised only to start a sentence
                found[abbreviation] = Definition(abbreviation, expansion, chunk_id)
    return found


def definition_of(token: str, known: dict[str, Definition]) -> Definition | None:
    """The definition of an abbreviation as used ('LLMs' is defined by 'LLM')."""
    return known.get(token) or (known.get(token[:-1]) if token.endswith("s") else None)


def defines(text: str, abbreviation: str) -> bool:
    """Whether the text itself says what the abbreviation stands for ('... (BCR)')."""
    return bool(re.search(rf"\(\s*{re.escape(abbreviation)}s?\s*\)", text))


def expand_first(text: str, token: str, definition: Definition) -> str:
    """The first use of the abbreviation (`token`, as the text writes it) as 'long form (ABBR)'."""
    return re.sub(rf"\b{re.escape(token)}\b", f"{definition.long_form} ({token})", text, count=1)


def used(text: str) -> list[str]:
    """Abbreviations a sentence uses, in order."""
    return list(dict.fromkeys(ABBREVIATION.findall(text)))

"""Entity-seeking questions: "the equation for ...", "which algorithm ...", "what table shows ...".

Such a question asks for a numbered item of a given type rather than for an explanation. The
patterns are generic English frames around the names of the entity types, not words of any one
book; a type named only as part of a concept ("the Bellman equation", "the RM algorithm") does not
make a question entity-seeking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from functions.rag.model import EntityType

# The words that name each type of numbered item, singular and plural.
TYPE_WORDS: dict[EntityType, tuple[str, ...]] = {
    EntityType.FORMULA: ("equation", "formula", "formulae", "inequality"),
    EntityType.ALGORITHM: ("algorithm", "pseudocode", "pseudo-code", "procedure"),
    EntityType.TABLE: ("table",),
    EntityType.FIGURE: ("figure", "diagram", "plot", "illustration", "chart"),
    EntityType.BOX: ("box",),
    EntityType.EXAMPLE: ("example",),
    EntityType.EXERCISE: ("exercise",),
}
# Types whose names are everyday words ("an example of", "exercise the policy"): only "which
# example" / "what exercise" asks for one.
_INTERROGATIVE_ONLY = frozenset({EntityType.EXAMPLE.value, EntityType.EXERCISE.value})
# Phrases that ask for an item of a type whatever frame they stand in: the code of an algorithm, a
# written form of an equation ("the matrix-vector form of ..."; not "in closed form", which asks how
# something is solved).
_ALWAYS_SEEKING = {
    EntityType.ALGORITHM: re.compile(r"\bpseudo-?code\b", re.IGNORECASE),
    EntityType.FORMULA: re.compile(
        r"\bthe\s+(?:element-?wise|matrix-vector|matrix|vector|closed|compact|concise|explicit|scalar|"
        r"recursive)[- ]form\s+of\b",
        re.IGNORECASE,
    ),
}

_WORD_TYPE = {
    word + suffix: kind for kind, words in TYPE_WORDS.items() for word in words for suffix in ("", "s", "es")
}
_TYPE_WORD = r"(?P<word>" + "|".join(sorted(map(re.escape, _WORD_TYPE), key=len, reverse=True)) + r")"
# What follows a type word that is being asked for: "the equation for", "the algorithm that", "a
# figure showing", "the table of".
_QUALIFIER = (
    r"(?:for|that|which|where|whose|of|to|used|showing|shows?|illustrat\w*|compar\w*|giving|gives?|"
    r"defin\w*|describ\w*|express\w*|stat\w*|list\w*|relat\w*|in\s+terms|with|when|from)\b"
)
_FRAMES = [
    # "which equation", "what figures", "which of the tables"
    re.compile(rf"\b(?:which|what)\s+(?:of\s+the\s+)?{_TYPE_WORD}\b", re.IGNORECASE),
    # "the equation for ...", "an algorithm that ...", "the figure of ..."
    re.compile(rf"\b(?:the|an?)\s+{_TYPE_WORD}\s+{_QUALIFIER}", re.IGNORECASE),
    # a question that starts with the type: "figure of the grid world", "equation for the return"
    re.compile(rf"^\s*{_TYPE_WORD}\s+{_QUALIFIER}", re.IGNORECASE),
    # "show me the table", "give the formula", "find an algorithm"
    re.compile(rf"\b(?:show|give|find|list|write)\s+(?:me\s+)?(?:the|an?)\s+{_TYPE_WORD}\b", re.IGNORECASE),
]


@dataclass(frozen=True)
class QueryIntent:
    wanted_types: frozenset[str]  # entity types the question asks for; empty: not entity-seeking

    @property
    def entity_seeking(self) -> bool:
        return bool(self.wanted_types)


def query_intent(query: str) -> QueryIntent:
    wanted: set[str] = set()
    for position, frame in enumerate(_FRAMES):
        for match in frame.finditer(query):
            kind = _WORD_TYPE[match.group("word").lower()].value
            if position == 0 or kind not in _INTERROGATIVE_ONLY:
                wanted.add(kind)
    for kind, phrase in _ALWAYS_SEEKING.items():
        if phrase.search(query):
            wanted.add(kind.value)
    return QueryIntent(frozenset(wanted))

"""What a shown sentence says its evidence states: the sentence without the writer's own phrases (its
leads into a finding and its author labels). The Verifier judges this, and the Red-Team reads it; the
writer (writing/attribution.py) puts the phrases there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# The attributions this module writes: 'Lee et al. (2023)', 'Lee and Chen (2023)', '"A title…" (2023)'.
WRITERS_LABEL = re.compile(
    r"(?:[A-Z][\w'\u2019\-]+(?: et al\.| and [A-Z][\w'\u2019\-]+)?|\u201c[^\u201d]*\u201d) \((?:19|20)\d{2}\)"
)


_WRITERS_LEAD = re.compile(
    rf"They also report that|(?:{WRITERS_LABEL.pattern}) (?:reports?|asks?)(?: that|:)|^[^;]*\bcited here\b[^;]*;"
)


def writers_phrases(text: str) -> tuple[str, ...]:
    """The phrases of a shown sentence this module's writer put there: leads into a finding, then names."""
    return tuple(m.group(0) for pattern in (_WRITERS_LEAD, WRITERS_LABEL) for m in pattern.finditer(text))


def _pronoun_for(name: re.Match[str]) -> str:
    """What stands for a name in a finding: 'they' as its subject; nothing after a preposition ('the
    study by Lee et al. (2023)' is 'the study')."""
    return " " if name.group(1) else "they"


def finding(text: str, phrases: Sequence[str] | None = None) -> str:
    """What a shown sentence says its evidence states: without the writer's `phrases` (by default, those
    it recognises as its own). A phrase that leads into the finding ("Lee et al. (2023) report that",
    "Both sources…;") goes; a name that is the finding's subject becomes "they" ("They describe…"), one
    after a preposition goes. The Verifier judges this, and the Red-Team reads it."""
    claim = text
    for phrase in writers_phrases(text) if phrases is None else phrases:
        if phrase.rstrip().endswith(("that", ";", ":")):
            claim = claim.replace(phrase, " ")
        else:
            claim = re.sub(rf"(\b(?:by|of|from|with|to)\s+)?{re.escape(phrase)}", _pronoun_for, claim)
    claim = " ".join(re.sub(r"\(\s*[,;]?\s*\)", " ", claim).split()).lstrip(":;, ")
    return claim[:1].upper() + claim[1:] if claim.startswith("they ") else claim

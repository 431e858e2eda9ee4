"""Faithfulness of a shown sentence to the quote it cites: what an attributed rewrite must keep.

The writer may show a finding in its own words around the quote ("Lee et al. (2023) found that…",
first person rewritten, the paper's own reference markers removed, an abbreviation expanded at first
use) while the citation keeps the verbatim quote. Those edits are allowed; saying something else is not.
Between the shown sentence and the quote sentences it restates, these must be preserved:

- numbers, with their units ("38%", "12 mg", "3 weeks"): none changed, added or dropped;
- polarity: a negation ("did not", "no") and a direction ("increased" / "reduced") kept as they are;
- hedges: what the quote only suggests ("may", "might", "suggests") is not shown as certain;
- the population: who or what was studied ("patients", "mice", "older adults") neither swapped nor dropped.

Deterministic and lexical: a rewrite is judged by the words it keeps, never by a model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from functions.common.text import sentence_spans, stems

# The paper's own reference markers: "[8, 9, 14-17]" and "(Smith et al., 2019; Lee, 2020)".
_NUMERIC_MARKER = re.compile(r"\[\s*\d+(?:\s*[-\u2013,;]\s*\d+)*\s*\]")
_AUTHOR_YEAR_MARKER = re.compile(r"\((?=[^()]*[A-Za-z])[^()\d]*(?:(?:19|20)\d\d[a-z]?[^()\d]*)+\)")
# Our attribution: "Lee et al. (2023)", "Lee and Kim (2020)", "Lee (2021)", "Lee et al.'s" and a work
# without authors named by its title in quotes ("\u201cDense retrieval for\u2026\u201d (2023)").
_ATTRIBUTION = re.compile(
    r"(?:\b[A-Z][\w'\u2019-]+(?:\s+et\s+al\.?|\s+(?:and|&)\s+[A-Z][\w'\u2019-]+)?(?:['\u2019]s)?"
    r"|\u201c[^\u201d]{1,120}\u201d)\s*\((?:19|20)\d\d[a-z]?\)"
)
# "bilateral contrast ratio (BCR)": the long form may come from elsewhere in the source.
_EXPANSION = re.compile(r"((?:[\w-]+\s+){1,8})\(([A-Z][A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*?s?)\)")
# Words of the attribution frame, not of the finding.
_REPORTING = frozenset(
    stems(
        "found find report described describe show propose introduce present note observe conclude "
        "argue according author study paper work demonstrate state",
        stopwords=frozenset(),
    )
)
_QUANTITY = re.compile(r"(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?)\s*(%|[A-Za-zµμ°]+)?")
_UNIT_SYMBOLS = (
    *("pp", "x", "mg", "g", "kg", "µg", "μg", "ml", "l", "mmol", "mol", "iu", "nm", "mm", "cm", "m", "km"),
    *("hz", "khz", "mhz", "ghz", "kb", "mb", "gb", "tb", "db", "w", "kw", "ms", "s", "sec", "min", "h", "hr"),
    *("°c", "°", "k"),
)
_TIME_AND_COUNT_UNITS = ("second", "minute", "hour", "day", "week", "month", "year", "point")
_UNITS = {
    **{unit: unit for unit in _UNIT_SYMBOLS},
    **{word: word for word in _TIME_AND_COUNT_UNITS},
    **{word + "s": word for word in _TIME_AND_COUNT_UNITS},
    **{"%": "%", "percent": "%", "fold": "x", "times": "x"},
}
_NEGATION = re.compile(
    r"\b(?:no|not|never|cannot|neither|nor|none|without|absence of|fails? to|failed to|lack(?:s|ed)? of)\b"
    r"|n't\b",
    re.I,
)
_UP_STEMS = "increas|higher|more\\b|improv|greater|rais|rise|rose|gain|better|outperform|exceed|boost|enhanc"
_DOWN_STEMS = "decreas|lower|less\\b|fewer|reduc|worse|declin|fell|fall|drop|diminish|underperform|shrink"
_UP, _DOWN = (re.compile(rf"\b(?:{stems})\w*", re.I) for stems in (_UP_STEMS, _DOWN_STEMS))
_HEDGE = re.compile(
    r"\b(?:may|might|could|suggests?|suggested|suggesting|possibl[ey]|potentially|likely|unlikely|"
    r"appears? to|appeared to|seems? to|seemed to|perhaps|probabl[ey]|preliminary|tentative(?:ly)?|"
    r"indicates?|indicated|hypothes\w+|presumabl[ey])\b",
    re.I,
)
_POPULATION_NOUNS = (
    *("patient", "participant", "subject", "adult", "adolescent", "infant", "newborn", "girl", "boy"),
    *("volunteer", "student", "user", "worker", "veteran", "smoker", "animal", "human", "cell", "dog"),
    *("pig", "primate", "monkey", "rat"),
)
_POPULATION = {
    **{noun: noun for noun in _POPULATION_NOUNS},
    **{noun + "s": noun for noun in _POPULATION_NOUNS},
    **{"child": "child", "children": "child", "woman": "woman", "women": "woman", "man": "man", "men": "man"},
    **{"mouse": "mouse", "mice": "mouse", "zebrafish": "zebrafish", "elderly": "elderly"},
    **{"pregnant": "pregnan", "pregnancy": "pregnan", "pregnancies": "pregnan"},
}
_WORD = re.compile(r"[a-z]+")
# A quote sentence counts as restated when at least this share of its terms is in the shown sentence.
RESTATED_SHARE = 0.5


def without_markers(text: str) -> str:
    """The text without the paper's own reference markers."""
    return " ".join(_AUTHOR_YEAR_MARKER.sub(" ", _NUMERIC_MARKER.sub(" ", text)).split())


_FIRST_PERSON = re.compile(r"\b(?:we|our|ours|us|ourselves)\b", re.I)
_THIRD_PERSON = {"we": "they", "our": "their", "ours": "theirs", "us": "them", "ourselves": "themselves"}


def as_reported(quote: str) -> str:
    """The quote in the third person, as an attributed rewrite reports it ("we found" → "they found")."""
    return _FIRST_PERSON.sub(lambda m: _THIRD_PERSON[m.group(0).lower()], without_markers(quote))


def finding_of(shown: str) -> str:
    """What a shown sentence says, without our attribution frame, reference markers or expansions of
    abbreviations (the abbreviation stays)."""
    text = _ATTRIBUTION.sub(" ", shown)
    text = _EXPANSION.sub(lambda m: _keep_abbreviation(m.group(1), m.group(2)), text)
    return without_markers(text)


def _keep_abbreviation(long_form: str, abbreviation: str) -> str:
    words = long_form.split()
    letters = sum(1 for char in abbreviation if char.isupper())
    return " ".join([*words[: max(0, len(words) - letters)], abbreviation]) + " "


def finding_terms(text: str) -> set[str]:
    """The words of a finding that say something: stopwords, bare numbers and attribution verbs aside."""
    return set(stems(text, numbers=False)) - _REPORTING


@dataclass(frozen=True)
class Reading:
    """What a stretch of text states, as far as faithfulness goes."""

    quantities: frozenset[tuple[str, str | None]]  # (value, unit or None)
    negated: bool
    up: bool
    down: bool
    hedged: bool
    population: frozenset[str]

    @property
    def values(self) -> set[str]:
        return {value for value, _ in self.quantities}


def read(text: str) -> Reading:
    quantities = set()
    for match in _QUANTITY.finditer(text):
        unit_word = (match.group(2) or "").lower()
        quantities.add((match.group(1).replace(",", ""), _UNITS.get(unit_word)))
    return Reading(
        quantities=frozenset(quantities),
        negated=bool(_NEGATION.search(text)),
        up=bool(_UP.search(text)),
        down=bool(_DOWN.search(text)),
        hedged=bool(_HEDGE.search(text)),
        population=frozenset(_POPULATION[w] for w in _WORD.findall(text.lower()) if w in _POPULATION),
    )


def directions(text: str) -> list[int]:
    """The text's direction words in order: 1 for an increase ("higher", "improved"), -1 for a decrease."""
    found = [(m.start(), 1) for m in _UP.finditer(text)] + [(m.start(), -1) for m in _DOWN.finditer(text)]
    return [sign for _, sign in sorted(found)]


def restated(finding: str, quotes: Sequence[str]) -> str:
    """The quote sentences the finding restates (most of their terms are in it); else the closest one."""
    terms = finding_terms(finding)
    scored: list[tuple[float, str]] = []
    for quote in quotes:
        clean = without_markers(quote)
        for start, end in sentence_spans(clean) or [(0, len(clean))]:
            sentence = clean[start:end]
            own = finding_terms(sentence)
            if own:
                scored.append((len(own & terms) / len(own), sentence))
    chosen = [sentence for share, sentence in scored if share >= RESTATED_SHARE]
    if not chosen and scored:
        chosen = [max(scored, key=lambda pair: pair[0])[1]]
    return " ".join(chosen)


def _unit_changes(shown: Reading, quoted: Reading) -> list[str]:
    changes = []
    for value, unit in shown.quantities:
        if unit is None or (value, unit) in quoted.quantities:
            continue
        other = {u for v, u in quoted.quantities if v == value and u is not None}
        if other:
            changes.append(f"{value} {unit} (the quote: {value} {sorted(other)[0]})")
    return changes


def unfaithful(finding: str, quotes: Sequence[str]) -> list[str]:
    """Why the finding does not say what its quotes say (empty: numbers, polarity, hedges and the
    population are preserved)."""
    shown = read(finding)
    source = read(" ".join(without_markers(quote) for quote in quotes))
    quoted = read(restated(finding, quotes))
    differences = (
        ("numbers not in the cited evidence", shown.values - source.values),
        ("drops the quote's numbers", quoted.values - shown.values),
        ("a population the quote does not study", shown.population - source.population),
        ("drops the population studied", quoted.population - shown.population),
        ("changes a unit", set(_unit_changes(shown, quoted))),
    )
    problems = [f"{what}: {', '.join(sorted(found)[:3])}" for what, found in differences if found]
    if shown.negated != quoted.negated:
        problems.append(
            "negates what the cited evidence states" if shown.negated else "drops the quote's negation"
        )
    if (shown.up and not shown.down and quoted.down and not quoted.up) or (
        shown.down and not shown.up and quoted.up and not quoted.down
    ):
        problems.append("reverses the direction of the quoted effect")
    if quoted.hedged and not shown.hedged:
        problems.append("states as certain what the quote only suggests")
    return problems

"""Word lists of the research pipeline: what frames a research question without naming its topic."""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Question words and auxiliaries: the start of a question, not of a concept.
QUESTION_WORDS = _words(
    "are be been being can could did do does had has have how is may might must should there was were "
    "what when where which who whom whose why will would"
)

# Conjunctions and prepositions that separate the concepts a goal joins (`of` is not one: it binds).
RELATIONAL = _words(
    "about across against among and as at between but by for from if in into nor on or over regarding "
    "than through to toward towards under using versus via vs when whether while with within without"
)

# Verbs that frame a question and separate its concepts ("how do X help Y"): cut there. Words that are
# as often nouns inside a concept ("centrality measure", "social support", "land use") are left out:
# as verbs they are caught by what follows them (see facets.py).
FRAMING_VERBS = _words(
    "achieve affect affected affects analyse analyze applied apply applying assess assessed build "
    "builds compare compared compares considered contribute contributes create creates describe "
    "determine determines done enable enabled enables evaluate evaluated evaluates examine exist "
    "explain explore find generate generates get gets given help helped helping helps identifies "
    "identify improve improved improves improving investigate judged know learn learns made make "
    "makes mean measured obtain predict predicts produce produces provide provides pull pulls "
    "quantify relate related relates seen tackle tell understand using"
)
# What a question asks studies to report or a thing to do to another ("what do trials show about",
# "does X reduce Y"): verbs, rarely the noun inside a concept, so they cut there too.
REPORTING_VERBS = _words(
    "show shows showed suggest suggests suggested indicate indicates indicated reveal reveals revealed "
    "demonstrate demonstrates demonstrated imply implies implied confirm confirms outperform outperforms "
    "outperformed drive drives prevent prevents reduces increases worsen "
    "worsens say says"
)

# Words that frame a research question without naming its topic ("recent advances in ..."): trimmed
# at the ends of a concept, never cut inside one.
_FRAMING_NOUNS = _words(
    "address addresses advance advancement advancements advances approach approaches area areas art "
    "aspect aspects associated association benefit benefits best better cause causes challenge "
    "challenges current currently development developments different direction directions do does "
    "effect effects evidence existing factor factors field fields finding findings future good impact important "
    "improvement improvements increase increases influence influenced influences key kind kinds known "
    "latest literature main method methods new outcome outcomes overview paper papers perform "
    "performs progress reason reasons recent reduce research results review reviews role roles something "
    "state studies study survey surveys system systems technique techniques thing things trend trends "
    "type types various way ways well whether work works"
)
FRAMING = _FRAMING_NOUNS | FRAMING_VERBS | REPORTING_VERBS

"""Author names from the front page: the PDF's `/Author` entry and the lines between the title and the
abstract. Deterministic rules on layout and name shape, no model.

Layout: the author block is the run of lines after the title's last line, up to an "Abstract" label,
a keywords label, an introduction heading or the first line of prose. In it, lines (or the cells of a
line cut at wide gaps: names laid out in columns) are split at commas, semicolons, "and", "&" and
superscript markers (digits, `*`, daggers, `a,b`), e-mail addresses are dropped, and a piece is kept
only if it has the shape of a name: 2-6 capitalised words or initials, particles (van, de, von, ...)
and suffixes (Jr., III) allowed, no institution, address or heading words. Names are kept only in the
type size of the first name line (affiliations are usually set smaller). Output: "Given Surname",
ALL-CAPS names title-cased.
"""

from __future__ import annotations

import re
import statistics

from functions.extract.pdf import SizedLine

MAX_AUTHORS = 30
_MAX_BLOCK_LINES = 40

_MARKERS = "\\d*\u2020\u2021\u2217\u00a7\u00b6#\u22c6\u2605\u2709\u2663\u2660\u2666\u2665\u00b9\u00b2\u00b3\u2070-\u2079"
_MARKER_RUN = re.compile(f"[{_MARKERS}]+")
# Superscript affiliation letters: a list glued to a surname ("Smitha,b"; a single glued letter is
# ambiguous and kept) or standing apart ("Smith a,b").
_LETTER_MARKS = re.compile(
    r"(?<=[a-z\u00df-\u00ff])(?:[a-h](?:\s?,\s?[a-h])+|\s[a-h](?:\s?,\s?[a-h])*)(?=[\s,*\u2020\u2021\u2217]|$)"
)
_EMAIL = re.compile(r"\S*@\S*|\{[^}]*\}\S*|\b(?:https?://|www\.)\S+|\S+\.(?:edu|com|org|ac\.\w+)\b", re.I)
_SEPARATORS = re.compile(r"\s*(?:[,;&|\u00b7\u2022/(){}\[\]:]|\band\b|\bet\b(?!\s+al))\s*", re.I)
_ABSTRACT_LABEL = re.compile(r"^\W*(abstract|summary|a b s t r a c t)\b", re.I)
_STOP_LABEL = re.compile(
    r"^\W*(?:(?:\d+|[ivx]+)\.?\s*)?(introduction|keywords?|key words|index terms|background)\b", re.I
)
# A whole line or cell that is an affiliation, an address or an editorial line, not names.
_AFFILIATION = re.compile(
    r"univ|institu|department|research|\bai\b|\bdept\b|laborator|\blabs?\b|college|school|faculty|academy|hospital|"
    r"cent(?:er|re)\b|\binc\b|corporation|\bgmbh\b|\bltd\b|foundation|ministry|\bcnrs\b|inria|"
    r"\bstreet\b|\broad\b|\bavenue\b|\bcampus\b|\bp\.?\s?o\.? box|\bcedex\b|republic|kingdom|"
    r"\bunited states\b|\busa\b|\buk\b|received|accepted|published|revised|correspond|e-?mail|"
    r"\bequal contribution|\bcontributed equally|\bpresent address|\bonline\b|copyright|\bdoi\b|"
    r"\b\d{4,}\b|\b[A-Z]{2}\s\d{4,5}\b",
    re.I,
)
# An affiliation footnote key glued to its first word: "1Brain & Cognitive Sciences", "†Allen Institute".
_KEYED_LINE = re.compile(f"^[{_MARKERS}]+[A-Z]")
# Words that never occur in a person's name as written on a title page.
_NOT_NAME_TEXT = """the of and for in on with to by from at an a is are we our this that these abstract introduction
    keywords received accepted published review article research open access journal proceedings vol
    volume issue equal contribution corresponding author authors email correspondence copyright press
    university universities institute department school college faculty center centre laboratory lab
    labs group division program programme hospital clinic foundation academy society council ministry
    agency corporation company inc ltd systems studies unit station street road avenue campus building
    hall republic kingdom states america usa uk china germany france japan canada italy spain
    netherlands switzerland australia india korea brazil sweden norway denmark finland austria belgium
    israel singapore russia poland portugal greece ireland mexico taiwan iran turkey science sciences
    engineering technology technologies medical medicine computer computing informatics mathematics
    physics chemistry biology linguistics statistics economics health environment environmental
    marine national international key graduate affiliated affiliation school's learning networks
    network model models data analysis using based via towards toward new deep neural ai technical
    report thesis dissertation extended draft preprint version submitted paper working supplementary
    edition chapter special editor editors"""
_NOT_NAME_WORDS = frozenset(_NOT_NAME_TEXT.split())
_PARTICLE_TEXT = "van von de der den del della da di du dos das do le la les ten ter bin ibn al el y zu af av"
_PARTICLES = frozenset(_PARTICLE_TEXT.split())
_SUFFIXES = frozenset(["jr", "jr.", "sr", "sr.", "ii", "iii", "iv"])
_INITIAL = re.compile(r"^[A-Z](?:\.|\.?-[A-Z]\.?)?$|^(?:Ch|Th|Sh|Ph)\.$")


def from_metadata(value: str) -> list[str]:
    """The PDF's /Author entry: "A B; C D", "A B, C D and E F" or "Surname, Given; ..."."""
    value = " ".join(value.split())
    if not value or len(value) >= 400 or _AFFILIATION.search(value) or "association" in value.lower():
        return []
    if ";" in value:
        parts = [p.strip() for p in value.split(";")]
        names = [" ".join(reversed([s.strip() for s in p.split(",", 1)])) if "," in p else p for p in parts]
    else:
        names = [n.strip() for n in re.split(r",| and |&", value)]
    names = [n for n in names if 1 < len(n.split()) <= 6]
    return names[:MAX_AUTHORS]


def choose(metadata_names: list[str], layout_names: list[str]) -> list[str]:
    """The embedded list unless the layout found more names that include every embedded surname
    (embedded /Author entries often hold the first or the submitting author only)."""
    if not metadata_names:
        return layout_names
    layout_words = {w.lower().strip(".") for name in layout_names for w in name.split()}
    covered = all(name.split()[-1].lower().strip(".") in layout_words for name in metadata_names)
    if covered and len(layout_names) > len(metadata_names):
        return layout_names
    return metadata_names


def from_layout(sized: list[SizedLine], title: str) -> list[str]:
    block = _author_block(sized, title)
    if not block:
        return []
    names: list[str] = []
    name_height: float | None = None
    for line in block:
        found = [name for cell in (line.cells or (line.text,)) for name in names_in(cell)]
        if not found:
            continue
        if name_height is None:
            name_height = line.height
        elif abs(line.height - name_height) > 0.15 * name_height:
            continue  # affiliations and footnotes are set in another size
        for name in found:
            if name not in names:
                names.append(name)
    return names[:MAX_AUTHORS]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _author_block(sized: list[SizedLine], title: str) -> list[SizedLine]:
    """Lines after the title's last line, before the abstract (label, keywords, heading or prose)."""
    title_words = set(_words(title))
    if not title_words or not sized:
        return []

    def is_title_line(line: SizedLine) -> bool:
        words = _words(line.text)
        return bool(words) and sum(w in title_words for w in words) / len(words) > 0.7

    first = next((i for i, line in enumerate(sized) if is_title_line(line)), None)
    if first is None:
        return []
    last = first
    while last + 1 < len(sized) and is_title_line(sized[last + 1]):
        last += 1
    title_top = sized[first].top
    body = statistics.median(line.height for line in sized)
    block: list[SizedLine] = []
    for line in sized[last + 1 : last + 1 + _MAX_BLOCK_LINES]:
        text = line.text
        if _ABSTRACT_LABEL.match(text) or _STOP_LABEL.match(text) or _is_prose(text):
            break
        if line.top < title_top or line.height < 0.5 * body:
            continue  # running headers above the title; detached superscript markers
        block.append(line)
    return block


def _is_prose(text: str) -> bool:
    words = text.split()
    if len(words) < 7 or _AFFILIATION.search(text):
        return False
    lower = sum(1 for w in words if w[0].islower() and w.lower() not in _PARTICLES and w.lower() != "and")
    return lower / len(words) >= 0.4


def names_in(text: str) -> list[str]:
    """The names in one line (or cell) of an author block, up to the first affiliation or address
    piece ("Ana Ruiz, University of Oslo" -> ["Ana Ruiz"]); [] for an affiliation line."""
    text = " ".join(text.split())
    if not text or _KEYED_LINE.match(text):
        return []
    text = _LETTER_MARKS.sub(" , ", _EMAIL.sub(" , ", text))
    names: list[str] = []
    for raw in _SEPARATORS.split(text):
        if _AFFILIATION.search(raw):
            break
        for piece in _MARKER_RUN.split(raw):
            tokens = [t for t in piece.split() if t not in ("-", "\u2013")]
            for group in _segment(tokens):
                name = _as_name(group)
                if name:
                    names.append(name)
    return names


def _kind(token: str) -> str:
    low = token.lower()
    if low in _SUFFIXES:
        return "suffix"
    if low in _PARTICLES and (token[0].islower() or (token.isupper() and len(token) > 1)):
        return "particle"
    if _INITIAL.match(token):
        return "initial"
    if (
        token[0].isupper()
        and all(ch.isalpha() or ch in "'\u2019-" for ch in token)
        and sum(ch.isalpha() for ch in token) >= 2
        and low not in _NOT_NAME_WORDS
    ):
        return "word"
    return "other"


def _segment(tokens: list[str]) -> list[list[str]]:
    """Split a run of several names written without separators ("Razvan C. Bunescu Raymond J. Mooney"):
    a word after initials closes a name; runs of plain words longer than four are split in pairs."""
    if len(tokens) <= 4:
        return [tokens]
    kinds = [_kind(t) for t in tokens]
    if "other" in kinds:
        return [tokens]
    groups: list[list[str]] = []
    current: list[str] = []
    seen_initial = False
    for token, kind in zip(tokens, kinds, strict=True):
        current.append(token)
        if kind == "initial" and len(current) > 1:
            seen_initial = True
        elif kind == "word" and seen_initial:
            groups.append(current)
            current, seen_initial = [], False
    if current:
        groups.append(current)
    out: list[list[str]] = []
    for group in groups:
        if len(group) > 4 and all(_kind(t) == "word" for t in group) and len(group) % 2 == 0:
            out.extend(group[i : i + 2] for i in range(0, len(group), 2))
        else:
            out.append(group)
    return out


def _as_name(tokens: list[str]) -> str:
    tokens = [t.strip(",;:") for t in tokens]
    tokens = [t for t in tokens if t]
    if tokens and tokens[-1].endswith(".") and _kind(tokens[-1]) == "other":
        tokens[-1] = tokens[-1].rstrip(".")
    if not 2 <= len(tokens) <= 6:
        return ""
    kinds = [_kind(t) for t in tokens]
    words = [t for t, k in zip(tokens, kinds, strict=True) if k == "word"]
    if (
        "other" in kinds
        or not words
        or kinds[0] in ("particle", "suffix")
        or kinds[-1] == "particle"
        or kinds.count("particle") > 3
    ):
        return ""
    upper = [w.isupper() and len(w) > 1 for w in words]
    if any(upper) and not all(upper) and not (upper[-1] and sum(upper) == 1):
        return ""  # "ETH Zurich"; but "Wei ZHANG" and "JOHN SMITH" are names
    return " ".join(_cased(token, kind) for token, kind in zip(tokens, kinds, strict=True))


def _cased(token: str, kind: str) -> str:
    """ALL-CAPS name parts title-cased ("ZHANG" -> "Zhang"), capital particles lower-cased ("VAN")."""
    if kind == "particle":
        return token.lower()
    if token.isupper() and len(token) > 1 and token.lower() not in _SUFFIXES:
        return _title_case(token)
    return token


def _title_case(token: str) -> str:
    return re.sub(r"[^\W\d_]+", lambda m: m.group(0)[0] + m.group(0)[1:].lower(), token)

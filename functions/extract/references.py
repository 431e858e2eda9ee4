"""Bibliography entries: split the reference list into entries and render each as
"Author et al., Year. Title. Venue." (the extraction contract's citation format).
"""

from __future__ import annotations

import re

_NUMBERED_ENTRY = re.compile(r"^\s*(?:\[\s*\d{1,3}\s*\]|\d{1,3}\.\s|\(\d{1,3}\)\s)")
_AUTHOR_START = re.compile(
    r"^(?:[A-Z][A-Za-z'\u00C0-\u024F-]+(?: [A-Z][a-z\u00C0-\u024F'-]+)?,(?: [A-Z]\.| [A-Z][a-z])"
    r"|[A-Z]\.(?: ?[A-Z]\.)* [A-Z][A-Za-z'\u00C0-\u024F-]+"
    r"|[A-Z][a-z\u00C0-\u024F'-]+ [A-Z]\.? ?[A-Z]?\.?,"
    r"|[A-Z][a-z\u00C0-\u024F'-]+ [A-Z][a-z\u00C0-\u024F'-]+(?:,| and |\. (?:1[89]|20)\d\d)"
    r"|[A-Z][a-z\u00C0-\u024F'-]+ (?:[A-Z]\. ?)+[A-Z][A-Za-z\u00C0-\u024F'-]+[,.]"
    r"|[A-Z] [A-Z][a-z\u00C0-\u024F'-]+ [A-Z][a-z\u00C0-\u024F'-]+,)"
)
_YEAR = re.compile(r"\b(1[89]\d{2}|20\d{2})[a-z]?\b")
_QUOTED = re.compile(r"[\"“](.{8,300}?)[,.]?[\"”]")
MAX_REFERENCES = 300


def split_references(lines: list[str]) -> list[str]:
    """Entries from the lines of a reference section (numbered or author-year styles)."""
    lines = [line.strip() for line in lines if line.strip()]
    if not lines:
        return []
    numbered = sum(1 for line in lines if _NUMBERED_ENTRY.match(line))
    entries: list[str] = []
    current: list[str] = []
    if numbered >= max(2, len(lines) // 8):
        for line in lines:
            if _NUMBERED_ENTRY.match(line) and current:
                entries.append(" ".join(current))
                current = []
            current.append(line)
    else:
        for line in lines:
            previous = current[-1] if current else ""
            starts_entry = bool(_AUTHOR_START.match(line)) and (
                previous.endswith(".") or bool(re.search(r"\d{1,4}[.)]?$", previous))
            )
            if starts_entry and current:
                entries.append(" ".join(current))
                current = []
            current.append(line)
    if current:
        entries.append(" ".join(current))
    cleaned = [_tidy(entry) for entry in entries]
    return [entry for entry in cleaned if _YEAR.search(entry) and 25 <= len(entry) <= 1200][:MAX_REFERENCES]


def join_hyphenated(text: str) -> str:
    """Rejoin words hyphenated at a line end once the lines are joined with spaces ("trans- former")."""
    return re.sub(r"(?<=[a-z])- (?=[a-z])", "", text)


def _tidy(entry: str) -> str:
    entry = join_hyphenated(_NUMBERED_ENTRY.sub("", entry, count=1))
    return re.sub(r"\s+", " ", entry).strip()


def _first_author_surname(authors: str) -> str:
    if re.match(r"^[A-Z][\w'\u00C0-\u024F-]+, [A-Z]\.", authors):  # "Vaswani, A., ..."
        return authors.split(",", 1)[0].strip()
    first = re.split(r",| and | & |;", authors, maxsplit=1)[0].strip()
    words = [w for w in first.split() if w]
    if not words:
        return authors.split(",")[0].strip()
    # "Vaswani A" / "Vaswani AB" -> first word; "A. Vaswani" / "Ashish Vaswani" -> last word
    if len(words) > 1 and len(words[-1].rstrip(".")) <= 2 and words[-1][0].isupper():
        return words[0]
    return words[-1]


def _author_names(authors: str) -> list[str]:
    """Each author's text, for counting and naming ("Smith, J., & Doe, K." -> two names)."""
    apa = re.findall(r"[A-Z][\w'\u00C0-\u024F-]+, (?:[A-Z](?:\.|\b)\s?-?)+", authors)
    if apa and re.match(r"^[A-Z][\w'\u00C0-\u024F-]+, [A-Z]\.", authors):
        return [name.split(",")[0] for name in apa]
    chunks = re.split(r",\s*(?:and\s+|&\s*)?| and | & |;", authors)
    return [c.strip() for c in chunks if re.search(r"[A-Z][a-z]", c)]


def format_reference(entry: str) -> str:
    """Render one bibliography entry as "Author et al., Year. Title. Venue." ("" when unusable)."""
    year_match = _YEAR.search(entry)
    if not year_match:
        return ""
    year = year_match.group(1)
    quoted = _QUOTED.search(entry)
    if quoted:
        authors = entry[: quoted.start()].strip(" ,.")
        title = quoted.group(1).strip(" ,.")
        venue = entry[quoted.end() :]
    else:
        # Split on sentence-like periods (not after initials).
        parts = [p.strip() for p in re.split(r"(?<![A-Z])(?<!\b[A-Z][a-z])\.\s+", entry) if p.strip()]
        parts = [re.sub(r"^\(?(1[89]\d{2}|20\d{2})[a-z]?\)?[.,]?\s*", "", p) for p in parts]
        parts = [p for p in parts if p]
        if len(parts) < 2:
            return ""
        authors = re.sub(r"\(?\b(1[89]\d{2}|20\d{2})[a-z]?\)?[.,]?$", "", parts[0]).strip(" ,.")
        title = parts[1]
        venue = " ".join(parts[2:])
    if not authors or not title:
        return ""
    surname = _first_author_surname(authors)
    names = _author_names(authors)
    count = 3 if "et al" in authors else len(names)
    lead = f"{surname} et al." if count >= 3 else surname
    if count == 2:
        lead = f"{surname} and {_first_author_surname(names[1])}"
    venue = _YEAR.sub("", venue)
    venue = re.sub(
        r"\b(?:pp?\.|pages?)\s*[\d\u2013-]+|\b\d+[\u2013-]\d+\b|\(\s*\)|\bdoi:\S+|https?://\S+", "", venue
    )
    venue = re.sub(r"\s+", " ", venue).strip(" ,.;:()")
    if len(venue) > 150:
        venue = venue[:150].rsplit(" ", 1)[0]
    venue = venue.strip(" ,.;:")
    text = f"{lead}, {year}. {title.rstrip('.')}."
    return f"{text} {venue}." if venue else text

"""Front-matter hygiene: repository cover sheets, article-type labels, and the licence, copyright and
correspondence boilerplate that publishers print next to (or inside) the abstract.

Pure text and layout rules, no model; they describe kinds of pages and lines, not particular papers.
"""

from __future__ import annotations

import re

from functions.extract.pdf import SizedLine

# Phrases that repository and publisher cover sheets print (and articles themselves do not).
_COVER_PHRASES = re.compile(
    r"\bHAL Id\b|\bHAL is a multi-disciplinary\b|archive ouverte|\bSubmitted on \d|\bDownloaded from\b"
    r"|\bThis PDF file includes\b|\bTo cite this (?:version|article)\b|\bCitation for published version\b"
    r"|\bLink to publication\b|\bDocument Version\b|\bGeneral rights\b|\bTake down policy\b"
    r"|\bTerms of (?:use|Use)\b|\bCopyright and moral rights\b|\bPosted Date\b|\bPosted on\b"
    r"|\bversion posted\b|\bElectronic copy available at\b|\bthis preprint\b|\bpreprint server\b"
    r"|\binstitutional repository\b|\bresearch repository\b|\bopen access repository\b"
    r"|\bPlease cite (?:this|the published)\b|\bLicense:\s|\bDOI:\s*https?://|\bAccepted [Mm]anuscript\b"
    r"|\bAuthor [Mm]anuscript\b|\bnot been peer[- ]reviewed\b|\bwas published in\b|\bcopyright holder\b"
    r"|\bPlease scroll down\b|\bFull Terms & Conditions\b|\bemail alerts\b",
    re.IGNORECASE,
)
# Names of archives and repositories that print cover sheets in large type.
_REPOSITORY_NAME = re.compile(
    r"^(?:hal|hal open science|hal-?\w*|arxiv|biorxiv|medrxiv|chemrxiv|psyarxiv|socarxiv|edarxiv|"
    r"research square|ssrn|osf preprints|preprints(?:\.org)?|zenodo|europe pmc|pmc|researchgate|"
    r"techrxiv|authorea|eartharxiv|engrxiv|figshare|open archive toulouse archive ouverte(?: \(oatao\))?|"
    r"e-?prints?(?: \w+)?|.{0,40}\b(?:repository|archive ouverte|open archive|digital commons|"
    r"scholarworks|eprints)\b.{0,40})$",
    re.IGNORECASE,
)
_START_OF_ARTICLE = re.compile(
    r"^(?:abstract|summary|a b s t r a c t)\b|^(?:1\.?|I\.)?\s*introduction\b", re.I
)

# Article-type labels that journals print above or in front of a title.
_TYPE_LABELS = (
    r"original research article|original research paper|original research|original article|"
    r"original paper|original contribution|original investigation|research article|research paper|"
    r"research letter|research report|research communication|review article|review paper|"
    r"mini[- ]review|brief communication|brief report|brief article|short communication|"
    r"short paper|short article|short report|rapid communication|full paper|full length article|"
    r"full-length article|regular paper|regular article|technical note|technical report|"
    r"technical paper|case report|case study|data descriptor|perspective article|letter to the editor|"
    r"invited paper|invited review|position paper|application note|methods article|"
    r"article|letter|review|perspective|commentary|editorial|communication|report|note|paper"
)
# A label alone on its line (never a title line).
_LABEL_LINE = re.compile(rf"^(?:{_TYPE_LABELS})s?\s*[:.|]?$", re.IGNORECASE)
# A label glued in front: multi-word labels need no separator; one-word ones need a separator or
# capitals ("LETTER Quantum ...") so that "Review of ..." and "Letters from ..." stay whole.
_GLUED_LABEL = re.compile(
    rf"^(?P<label>{_TYPE_LABELS})\s*(?P<sep>[:|\u2014\u2013]|-\s|\.\s)?\s*(?P<rest>\S.*)$", re.IGNORECASE
)

# Boilerplate sentences around abstracts: licences, copyright, correspondence, editorial history.
_BOILERPLATE = re.compile(
    r"open access article|creative commons|distributed under the terms|licensed under|licen[cs]e[ds]? "
    r"(?:cc|by)|under a cc|permits unrestricted|properly cited|original work is|all rights reserved"
    r"|^\s*(?:©|\(c\)|copyright\b)|©\s*(?:19|20)\d\d|\bthe author\(?s?\)?\s*(?:19|20)\d\d|"
    r"(?:19|20)\d\d\s+the authors?\b|published by (?:elsevier|springer|wiley|oxford|the royal|"
    r"frontiers|mdpi|copernicus|cambridge|taylor|sage|bmj|plos|informa|ieee|acm)|^\s*\*?\s*correspond|"
    r"corresponding author|^\s*e-?mail\s*:|^\s*emails?\s*:|^\s*(?:received|accepted|revised|"
    r"published(?: online)?|available online|citation|academic editor|edited by|reviewed by|"
    r"handling editor|editor|keywords?|key words|index terms|jel|article history|how to cite)\b\s*:?"
    r"|^\s*https?://|^\s*doi\s*:|^\s*this article is (?:licensed|protected|part of)|^\s*funding\s*:"
    r"|^\s*competing interests|^\s*data availability",
    re.IGNORECASE,
)
_ADDRESS_LIKE = re.compile(
    r"@|\buniversit|\binstitut|\bdepartment|\bdept\b|\bfaculty|\bhospital|\bcent(?:re|er)\b|\bschool of|"
    r"\btel\b|\bfax\b|\bphone\b|\bstreet\b|\bavenue\b|\broad\b|\bp\.?o\.? box",
    re.IGNORECASE,
)
_AFTER_EMAIL = re.compile(r"^.*?[\w.+-]+@[\w-]+(?:\.[\w-]+)+[.,;]?\s+(?=[A-Z])")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[*©A-Z0-9])")
_INTRODUCTION_INSIDE = re.compile(
    r"(?<=[.!?])\s+(?:(?:1|I)\.?\s+)?(?:INTRODUCTION|Introduction|BACKGROUND|Background)\s+(?=[A-Z])"
)
_KEYWORDS_INSIDE = re.compile(
    r"(?<=[.!?])\s+(?:Keywords|Key words|KEYWORDS|Index Terms|INDEX TERMS)\b\s*[:\u2014\u2013-]"
)


def _keeps_text_after_email(sentences: list[str]) -> bool:
    """An address ending in an e-mail glued to the abstract's first sentence (no full stop between
    them): cut the address off in place and stop dropping."""
    after = _AFTER_EMAIL.match(sentences[0])
    if after is None or len(sentences[0]) - after.end() < 40:
        return False
    sentences[0] = sentences[0][after.end() :]
    return True


def is_cover_page(page_text: str, sized: list[SizedLine], next_page_text: str) -> bool:
    """A first page that is a repository's or publisher's cover sheet, not the article: it carries
    cover phrases or its largest line is a repository's name, does not start the article itself
    (no abstract, no introduction), and a page with text follows."""
    if len(next_page_text.strip()) < 200:
        return False
    lines = page_text.split("\n")
    if any(_START_OF_ARTICLE.match(line.strip()) for line in lines):
        return False
    hits = len({m.group(0).lower() for m in _COVER_PHRASES.finditer(page_text)})
    # One phrase alone also appears in every page's margin ("Downloaded from ..."): only a short page.
    if hits >= 2 or (hits == 1 and len(page_text) < 700):
        return True
    return largest_line_is_repository(sized)


def largest_line_is_repository(sized: list[SizedLine]) -> bool:
    named = [line for line in sized if sum(ch.isalpha() for ch in line.text) >= 3]
    if not named:
        return False
    biggest = max(line.height for line in named)
    top_lines = [line.text for line in named if line.height >= 0.95 * biggest]
    return any(is_repository_name(text) for text in top_lines)


def is_repository_name(text: str) -> bool:
    return bool(_REPOSITORY_NAME.match(text.strip(" .:")))


def is_type_label(text: str) -> bool:
    return bool(_LABEL_LINE.match(text.strip()))


def strip_type_label(title: str) -> str:
    """'Research Article: Deep X' / 'ORIGINAL ARTICLE Deep X' / 'Review Article Deep X' -> 'Deep X'."""
    text = title.strip()
    for _ in range(2):  # "Original Research | Article ..." at most
        match = _GLUED_LABEL.match(text)
        if not match:
            break
        label, rest = match.group("label"), match.group("rest")
        multi_word = " " in label.strip() or "-" in label
        shouted = label.isupper() and not rest.isupper()
        if not (match.group("sep") or multi_word or shouted) or len(rest.split()) < 2:
            break
        if not multi_word and not match.group("sep") and not rest[0].isupper():
            break
        text = rest.strip()
    return text


def clean_abstract(text: str) -> str:
    """Drop licence/copyright/correspondence sentences before and after the abstract, and cut it at
    an introduction heading or a keywords label that ended up inside it."""
    text = " ".join(text.split())
    if not text:
        return text
    cut = _INTRODUCTION_INSIDE.search(text)
    if cut and cut.start() >= 200:
        text = text[: cut.start()]
    cut = _KEYWORDS_INSIDE.search(text)
    if cut and cut.start() >= 100:
        text = text[: cut.start()]
    sentences = [s for s in _SENTENCE_SPLIT.split(text) if s.strip()]
    dropped_address = False
    while sentences and (
        (_BOILERPLATE.search(sentences[0]) and not _keeps_text_after_email(sentences))
        or (dropped_address and _ADDRESS_LIKE.search(sentences[0]) and len(sentences[0]) < 200)
    ):
        dropped_address = bool(_ADDRESS_LIKE.search(sentences[0])) or bool(
            re.match(r"\s*\*?\s*correspond|\s*e-?mail", sentences[0], re.IGNORECASE)
        )
        sentences.pop(0)
    while sentences and _BOILERPLATE.search(sentences[-1]) and len(sentences) > 1:
        sentences.pop()
    return " ".join(sentences).strip()

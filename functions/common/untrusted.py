"""Text from papers, web pages and upstream APIs is untrusted: the one cleaner every returned field passes.

`clean_untrusted` removes what a client could render or a terminal could execute and what can disguise
text: HTML/XML markup (script and style elements with their content, comments, tags of HTML, JATS and
MathML), ANSI escape sequences, C0/C1 control characters (tab and newline kept), bidirectional
overrides and isolates, zero-width and other invisible formatting characters. It is idempotent, so a
quote cleaned twice keeps its offsets into page text cleaned once.

Scientific text keeps its comparisons: only tags whose name is a known markup element (or any
`prefix:name`, as in `<jats:p>`) and which is bare or has a `name=value` attribute are removed, so
`a < b`, `x<y`, `p<0.05 and q>1` and `a<b and c>d` survive.
"""

from __future__ import annotations

import re

_ELEMENTS = (
    "a|abbr|address|area|article|aside|audio|b|base|bdi|bdo|blockquote|body|br|button|canvas|caption|"
    "center|cite|code|col|colgroup|data|dd|del|details|dfn|dialog|div|dl|dt|em|embed|fieldset|"
    "figcaption|figure|font|footer|form|frame|frameset|h[1-6]|head|header|hr|html|i|iframe|img|input|"
    "ins|kbd|label|legend|li|link|main|mark|marquee|math|menu|meta|mi|mn|mo|mrow|msub|msup|mfrac|nav|"
    "noscript|object|ol|optgroup|option|output|p|param|picture|pre|q|s|samp|script|section|select|"
    "small|source|span|strike|strong|style|sub|summary|sup|svg|table|tbody|td|template|textarea|tfoot|"
    "th|thead|time|title|tr|track|tt|u|ul|var|video|wbr|xml"
)
# Elements whose content is code or invisible, removed with their content (an unclosed one to the end).
_WITH_CONTENT = re.compile(
    r"<(script|style|iframe|object|embed|noscript|template|textarea)\b[^>]*>.*?(?:</\1\s*>|\Z)",
    re.IGNORECASE | re.DOTALL,
)
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)|<!\[CDATA\[|\]\]>|<![a-z][^<>]*>|<\?[^<>]*\?>", re.I | re.S)
# A tag has no attributes or at least one `name=value`: `a<b and c>d` is a comparison, not a tag.
_TAG = re.compile(
    rf"</?(?:[a-z][\w.-]*:[a-z][\w.-]*|(?:{_ELEMENTS}))(?:\s*/?>|\s[^<>]*=[^<>]*>)",
    re.IGNORECASE,
)
# ANSI/VT escape sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), two-character escapes,
# and the 8-bit CSI introducer.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|\x9b[0-?]*[ -/]*[@-~]"
)
# C0 (but tab, newline, carriage return) and C1 controls, DEL; zero-width, bidi marks, embeddings,
# overrides and isolates; invisible operators; BOM; interlinear annotation; replacement specials.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb]"
)
_SPACES = re.compile(r"[ \t]{2,}")


def clean_untrusted(text: str) -> str:
    """`text` without markup, escape sequences and control/invisible characters (newlines kept)."""
    if not text:
        return text
    cleaned = _ANSI.sub("", text)
    if "<" in cleaned:
        cleaned = _WITH_CONTENT.sub(" ", cleaned)
        cleaned = _COMMENT.sub(" ", cleaned)
        cleaned = _TAG.sub(" ", cleaned)
    cleaned = _INVISIBLE.sub("", cleaned)
    if cleaned == text:
        return text
    lines = (_SPACES.sub(" ", line).strip() for line in cleaned.split("\n"))
    return "\n".join(lines).strip()


def clean_optional(text: str | None) -> str | None:
    return None if text is None else clean_untrusted(text)

"""What a numbered item is about, in words: its defining sentence, the sentences that cite it, and
the prose around it.

A question about an equation rarely quotes the equation; it paraphrases the sentence that introduces
it ("... we can rewrite the Bellman equation in matrix-vector form as") or the one that follows ("This
equation is the Bellman equation, which ..."). A figure or a table is described by the sentences that
point at it ("The evolution process of w_k is shown in Figure 6.3"). These texts form the item's
context field, a third BM25 field next to the body and the title (`knowledge_base.py` decides when
it counts).

The chapter is a list of text lines; `barrier[i]` marks a line that belongs to something else (a
heading, another item's caption), which no context crosses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from functions.common.text import SENTENCE_OPENERS, sentence_spans
from functions.rag.graph import mentioned_ids
from functions.rag.model import EQUATION_LABEL

WINDOW_WORDS_BEFORE = 60
WINDOW_WORDS_AFTER = 40
# A display (a multi-line equation) is at most this many lines above its label.
MAX_DISPLAY_LINES = 14
# The defining sentence is the last sentence before the item; shorter ones ("It then follows that")
# say nothing alone, so the sentence before is taken too.
MIN_DEFINING_WORDS = 8
MAX_SENTENCE_WORDS = 60
MAX_CITING_SENTENCES = 4

_PLAIN_WORD = re.compile(r"^[(\[]?[A-Za-z][a-z]{1,}[)\],.;:?]?$")
# A sentence of the book may start with a question's marker ("⋄ Q: ...").
_SENTENCE_OPENERS = SENTENCE_OPENERS + "⋄"


@dataclass
class ItemContext:
    defining: list[str] = field(default_factory=list)  # the sentence(s) introducing the item
    citing: list[str] = field(default_factory=list)  # sentences elsewhere that name the item
    window: str = ""  # prose before and after the item

    def text(self) -> str:
        # The defining and citing sentences twice: they say what the item is, where the window's prose
        # is shared with the items around it (BM25 counts a repeated word with diminishing weight).
        sentences = [*self.defining, *self.citing]
        return "\n".join([*sentences, *sentences, self.window]).strip()


def is_prose(line: str) -> bool:
    """A line of running text rather than mathematics, a table row or a figure's axis labels."""
    tokens = line.split()
    words = sum(1 for token in tokens if _PLAIN_WORD.match(token))
    return words >= 4 and words >= 0.6 * len(tokens)


def join_lines(lines: Sequence[str]) -> str:
    """The lines as one text, with words hyphenated at a line end put back together."""
    out = ""
    for line in lines:
        text = line.strip()
        if out.endswith("-") and text[:1].islower():
            out = out[:-1] + text
        else:
            out = f"{out} {text}" if out else text
    return out


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text, openers=_SENTENCE_OPENERS)]


def _clip(sentence: str, words: int = MAX_SENTENCE_WORDS) -> str:
    parts = sentence.split()
    return " ".join(parts[:words]) if len(parts) > words else sentence


def _pieces(sentence: str, words: int = MAX_SENTENCE_WORDS) -> list[str]:
    """A run-on "sentence" (prose joined across a display) cut into pieces of at most `words` words."""
    parts = sentence.split()
    return [" ".join(parts[start : start + words]) for start in range(0, len(parts), words)]


class ContextReader:
    def __init__(self, lines: Sequence[str], barrier: Sequence[bool]) -> None:
        self.lines = lines
        self.barrier = barrier

    def _prose(self, indices: Iterable[int], words: int) -> list[str]:
        """The prose lines met walking `indices`, up to a barrier or once `words` words are taken."""
        out: list[str] = []
        count = 0
        for index in indices:
            if self.barrier[index] or count >= words:
                break
            if is_prose(self.lines[index]):
                out.append(self.lines[index])
                count += len(self.lines[index].split())
        return out

    def _prose_before(self, start: int, words: int) -> list[str]:
        return self._prose(range(start - 1, -1, -1), words)[::-1]

    def _prose_after(self, end: int, words: int) -> list[str]:
        return self._prose(range(end + 1, len(self.lines)), words)

    def display_start(self, label_at: int) -> int:
        """First line of the display that ends with the equation label on line `label_at`."""
        start = label_at
        while (
            start > 0
            and label_at - start < MAX_DISPLAY_LINES
            and not self.barrier[start - 1]
            and not is_prose(self.lines[start - 1])
        ):
            start -= 1
        return start

    def of_display(self, label_at: int) -> ItemContext:
        """An equation: the sentence leading into the display and the one after it."""
        start = self.display_start(label_at)
        before = sentences(join_lines(self._prose_before(start, WINDOW_WORDS_BEFORE)))
        after = sentences(join_lines(self._prose_after(label_at, WINDOW_WORDS_AFTER)))
        defining = before[-1:]
        if defining and len(defining[0].split()) < MIN_DEFINING_WORDS:
            defining = before[-2:]
        defining = [_clip(sentence) for sentence in [*defining, *after[:1]]]
        return ItemContext(defining=defining, window=" ".join([*before, *after]))

    def of_block(self, start: int, end: int) -> ItemContext:
        """A caption and its body (lines start..end): the prose around it; its citing sentences are
        its definition and are added by `citing_sentences`."""
        before = join_lines(self._prose_before(start, WINDOW_WORDS_BEFORE))
        after = join_lines(self._prose_after(end, WINDOW_WORDS_AFTER))
        return ItemContext(window=f"{before} {after}".strip())


def citing_sentences(lines: Sequence[str], barrier: Sequence[bool], known: set[str]) -> dict[str, list[str]]:
    """For each known item id, the sentences of the running text that name it ("Figure 4.2 shows",
    "the Bellman equation in (2.7)"), in reading order. Captions and equation labels are not
    mentions of their own item."""
    prose = [EQUATION_LABEL.sub("", line) for line, skip in zip(lines, barrier, strict=True) if not skip]
    out: dict[str, list[str]] = {}
    for sentence in sentences(join_lines(prose)):
        for piece in _pieces(sentence):
            for ident in mentioned_ids(piece, known):
                cited = out.setdefault(ident, [])
                if len(cited) < MAX_CITING_SENTENCES:
                    cited.append(piece)
    return out

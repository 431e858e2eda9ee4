"""Stances: one sentence of the writer's own under each facet of an answer or theme of a report, saying
whether its sources agree, disagree or are silent on it.

Built only from the structure (which sources back the facet's findings, which of them the Verifier's
corroboration finds stating one same finding, the critic's contradictions), never from the evidence's
words, so it states no finding of its own: in an answer it leads into the facet's first finding as part
of that sentence's `attribution`, and the Verifier judges the finding alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from functions.common.text import listed, mid_sentence
from functions.research.checking.verifier import Verifier
from functions.research.writing.phrasing import counted

if TYPE_CHECKING:
    from functions.research.checking.critic import Contradiction


def _named(labels: Sequence[str]) -> str:
    """The sources by their attributions; by their number when two read alike (same authors and year)."""
    if len(set(labels)) < len(labels):
        return f"{counted(len(labels))} sources"
    return listed(labels)


def agreeing_sources(
    cited: Sequence[str], evidence: Mapping[str, str], source_of: Mapping[str, str]
) -> list[str]:
    """The largest set of sources the Verifier finds stating one same finding among the `cited` evidence
    ids (the cited source and any other whose passage here corroborates it), in order of first citation."""
    verifier = Verifier(None, source_of)
    best: list[str] = []
    for evidence_id in cited:
        found = verifier.agreeing_sources(evidence[evidence_id], [evidence_id], evidence)
        own = source_of.get(evidence_id, evidence_id)
        ordered = [own, *sorted(found - {own})]
        if len(ordered) > len(best):
            best = ordered
    return best


def stance(
    topic: str,
    cited: Sequence[str],
    evidence: Mapping[str, str],
    source_of: Mapping[str, str],
    contradictions: Sequence[Contradiction],
    label: Callable[[str], str],
) -> str:
    """The stance of the sources on one facet, without closing punctuation: disagreement when the critic
    found a contradiction among its evidence (both sides named), agreement when the Verifier finds two or
    more sources stating one same finding (named), else how many sources report on it, or silence."""
    about = mid_sentence(topic)
    ids = set(cited)
    for contradiction in contradictions:
        if ids.intersection(contradiction.evidence_chunk_ids):
            sides = [label(source) for source in dict.fromkeys(contradiction.source_ids)]
            return f"On {about}, {_named(sides)} disagree"
    agreeing = agreeing_sources(list(dict.fromkeys(cited)), evidence, source_of)
    if len(agreeing) >= 2:
        named = _named([label(source) for source in agreeing])
        return f"{named[:1].upper()}{named[1:]} agree on {about}"
    sources = list(dict.fromkeys(source_of.get(i, i) for i in cited))
    if len(sources) >= 2:
        return f"{counted(len(sources)).capitalize()} sources report on {about}"
    if sources:
        return f"One source reports on {about}"
    return f"No source found addresses {about}"

"""The registries a reference is looked up in: by DOI at OpenAlex (`/works/doi:{doi}`, with
`is_retracted`; singleton lookups are free and OpenAlex allows ten times Crossref's rate) and at Crossref
(`/works/{doi}`) when OpenAlex does not hold the DOI or its record is not the cited work; by a
bibliographic search at Crossref (`query.bibliographic`) and, when that finds no acceptable record,
OpenAlex (`search=`, which spends its daily search allowance); and, for every matched DOI, Crossref's
retraction notices (`filter=updates:…`, fifty DOIs a request).

`Registries` is the port; the deployed adapter (functions/references/registries.py) asks through the
search connectors, with their turns, fair shares, breakers, retries and cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from functions.common.models import WorkMetadata

Kind = Literal["doi", "title"]
DOI_REGISTRIES = ("openalex", "crossref")  # asked in this order, the second only when needed
SEARCH_REGISTRIES = ("crossref", "openalex")  # asked in this order, the second only when needed
NOTICE_BATCH = 50  # matched DOIs per retraction-notice request


@dataclass
class Found:
    """What the registries asked answered: their records, and the failures of those that did not."""

    records: list[WorkMetadata] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        """At least one registry answered (with records or with none)."""
        return len(self.errors) < len(self.asked)

    def add(self, other: Found) -> Found:
        return Found(self.records + other.records, self.errors + other.errors, self.asked + other.asked)


@dataclass(frozen=True)
class Answer:
    records: list[WorkMetadata]
    error: str | None = None


class Registries(Protocol):
    async def lookup(self, registry: str, kind: Kind, value: str, *, team: str, budget: float) -> Answer:
        """One registry's records for a DOI or a bibliographic query; failures in `Answer.error`."""
        ...

    async def retraction_notices(self, dois: Sequence[str], *, team: str, budget: float) -> Answer:
        """Records of those of `dois` that a retraction notice names (`is_retracted`, the notice's link
        as `url`); failures in `Answer.error`."""
        ...


async def ask(
    registries: Registries,
    names: Sequence[str],
    kind: Kind,
    value: str,
    *,
    team: str,
    budget: float,
) -> Found:
    """`names` asked concurrently; a DOI lookup keeps only the records of that DOI."""
    answers = await asyncio.gather(
        *(registries.lookup(name, kind, value, team=team, budget=budget) for name in names)
    )
    found = Found(asked=list(names))
    for name, answer in zip(names, answers, strict=True):
        if answer.error is not None:
            found.errors.append(f"{name}: {answer.error}")
            continue
        found.records += [r for r in answer.records if kind != "doi" or (r.doi or "").lower() == value]
    return found

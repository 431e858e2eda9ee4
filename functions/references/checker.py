"""Check references in order: each by its DOI first (Crossref and OpenAlex at once), then, when it has no
DOI or the DOI's record is another work, by a bibliographic search (Crossref, then OpenAlex only when
Crossref found no acceptable record).

References are checked concurrently, at most `concurrency` at a time: the providers' turns space the
requests, and every lookup waits for its turn no longer than the check's deadline allows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from functions.references.judging import Verdict, cites_title, judge
from functions.references.lookup import DOI_REGISTRIES, SEARCH_REGISTRIES, Found, Registries, ask
from functions.references.matching import ranked
from functions.references.parsing import CitedReference

DEFAULT_CONCURRENCY = 16
MAX_QUERY_CHARS = 300  # a bibliographic query is the reference's searchable text, cut here


class ReferenceChecker:
    def __init__(
        self, registries: Registries, *, budget_seconds: float, concurrency: int = DEFAULT_CONCURRENCY
    ) -> None:
        self._registries = registries
        self._budget = budget_seconds
        self._concurrency = concurrency

    async def check(self, references: Sequence[CitedReference], *, team: str) -> list[Verdict]:
        """One verdict per reference, in their order."""
        deadline = time.monotonic() + self._budget
        gate = asyncio.Semaphore(self._concurrency)

        async def one(reference: CitedReference) -> Verdict:
            async with gate:
                return await self._check(reference, team, deadline)

        return list(await asyncio.gather(*(one(reference) for reference in references)))

    async def _ask(self, names: Sequence[str], kind: str, value: str, team: str, deadline: float) -> Found:
        left = deadline - time.monotonic()
        if left <= 0.5:
            return Found(
                errors=[f"{n}: not asked, the check's time ran out" for n in names], asked=list(names)
            )
        return await ask(
            self._registries, names, "doi" if kind == "doi" else "title", value, team=team, budget=left
        )

    async def _search(self, reference: CitedReference, team: str, deadline: float) -> Found:
        query = reference.text[:MAX_QUERY_CHARS]
        found = await self._ask(SEARCH_REGISTRIES[:1], "title", query, team, deadline)
        if any(m.accepted for m in ranked(reference, found.records)):
            return found
        more = await self._ask(SEARCH_REGISTRIES[1:], "title", reference.title or query, team, deadline)
        return found.add(more)

    async def _check(self, reference: CitedReference, team: str, deadline: float) -> Verdict:
        by_doi = None
        if reference.doi:
            by_doi = await self._ask(DOI_REGISTRIES, "doi", reference.doi, team, deadline)
            records = ranked(reference, by_doi.records)
            if records and (records[0].accepted or not cites_title(reference)):
                return judge(reference, by_doi, None)
        searched = await self._search(reference, team, deadline) if cites_title(reference) else None
        return judge(reference, by_doi, searched)

"""Check references in order: each by its DOI first (OpenAlex, then Crossref only when OpenAlex does not
hold the DOI or could not be asked), then, when it has no DOI or the DOI's record is
another work, by a bibliographic search (Crossref, then OpenAlex only when Crossref found no acceptable
record); last, Crossref's retraction notices of every matched DOI, fifty DOIs a request.

References are checked concurrently, at most `concurrency` at a time: the providers' turns space the
requests, and every lookup waits for its turn no longer than the check's deadline allows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from functions.references.judging import Verdict, cites_title, judge, with_notice
from functions.references.lookup import (
    DOI_REGISTRIES,
    NOTICE_BATCH,
    SEARCH_REGISTRIES,
    Answer,
    Found,
    Registries,
    ask,
)
from functions.references.matching import ranked
from functions.references.parsing import CitedReference

DEFAULT_CONCURRENCY = 16
# The end of the check's time kept for Crossref's retraction notices of the matched DOIs.
NOTICE_RESERVE_SECONDS = 4.0
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
                return await self._check(reference, team, deadline - NOTICE_RESERVE_SECONDS)

        verdicts = list(await asyncio.gather(*(one(reference) for reference in references)))
        await self._read_notices(verdicts, team, deadline)
        return verdicts

    async def _read_notices(self, verdicts: list[Verdict], team: str, deadline: float) -> None:
        dois = sorted(
            {v.matched.doi for v in verdicts if v.matched and v.matched.doi and v.status != "not_found"}
        )
        batches = [dois[at : at + NOTICE_BATCH] for at in range(0, len(dois), NOTICE_BATCH)]
        left = deadline - time.monotonic()
        if left <= 0.5:
            answers = [Answer([], "not asked, the check's time ran out") for _ in batches]
        else:
            answers = await asyncio.gather(
                *(self._registries.retraction_notices(batch, team=team, budget=left) for batch in batches)
            )
        notices = {r.doi: r.url for answer in answers for r in answer.records if r.doi and r.is_retracted}
        failures = {
            doi: answer.error
            for batch, answer in zip(batches, answers, strict=True)
            for doi in batch
            if answer.error
        }
        for verdict in verdicts:
            doi = verdict.matched.doi if verdict.matched else None
            if doi:
                with_notice(verdict, doi in notices, notices.get(doi), failures.get(doi))

    async def _ask(self, names: Sequence[str], kind: str, value: str, team: str, deadline: float) -> Found:
        left = deadline - time.monotonic()
        if left <= 0.5:
            return Found(
                errors=[f"{n}: not asked, the check's time ran out" for n in names], asked=list(names)
            )
        return await ask(
            self._registries, names, "doi" if kind == "doi" else "title", value, team=team, budget=left
        )

    async def _search(
        self, reference: CitedReference, team: str, deadline: float, *, doi_found: bool
    ) -> Found:
        """Crossref's bibliographic search; OpenAlex's (a scarce daily allowance) only when Crossref found
        no acceptable record and the reference has no registered DOI to show instead."""
        query = reference.text[:MAX_QUERY_CHARS]
        found = await self._ask(SEARCH_REGISTRIES[:1], "title", query, team, deadline)
        if doi_found or any(m.accepted for m in ranked(reference, found.records)):
            return found
        more = await self._ask(SEARCH_REGISTRIES[1:], "title", reference.title or query, team, deadline)
        return found.add(more)

    def _settled(self, reference: CitedReference, by_doi: Found) -> bool:
        """The DOI's records decide: one is the cited work, or the reference cites nothing else."""
        records = ranked(reference, by_doi.records)
        return bool(records) and (records[0].accepted or not cites_title(reference))

    async def _check(self, reference: CitedReference, team: str, deadline: float) -> Verdict:
        by_doi = None
        if reference.doi:
            by_doi = await self._ask(DOI_REGISTRIES[:1], "doi", reference.doi, team, deadline)
            if not by_doi.records:  # unknown to OpenAlex, or OpenAlex failed: Crossref may hold it
                by_doi = by_doi.add(await self._ask(DOI_REGISTRIES[1:], "doi", reference.doi, team, deadline))
            if self._settled(reference, by_doi):
                return judge(reference, by_doi, None)
        doi_found = by_doi is not None and bool(by_doi.records)
        searched = (
            await self._search(reference, team, deadline, doi_found=doi_found)
            if cites_title(reference)
            else None
        )
        return judge(reference, by_doi, searched)

"""Where an open-access PDF of a DOI may be: Unpaywall, OpenAlex and Crossref, asked together."""

from __future__ import annotations

import asyncio
from typing import Any

from functions.common.errors import FetchError
from functions.common.outbound.http import HttpClient
from functions.common.outbound.polite_requests import PoliteRequests
from functions.common.outbound.upstream_turns import TurnNotGranted
from functions.common.settings import Settings
from functions.extract.fetch_turns import FetchDeadline, get_in_turn
from functions.extract.metadata import AnswerMemory, ScholarlyMetadata

LOOKUP_TIMEOUT_SECONDS = 6.0


class OpenAccessLookup:
    def __init__(
        self,
        *,
        http: HttpClient,
        settings: Settings,
        polite: PoliteRequests,
        metadata: ScholarlyMetadata | None,
    ) -> None:
        """`metadata`: when it keeps registry answers (AnswerMemory), the records read here are handed
        to it, so that the authoritative-metadata lookup does not fetch them again."""
        self._http = http
        self._settings = settings
        self._polite = polite
        self._metadata = metadata

    async def candidates(self, doi: str, deadline: FetchDeadline) -> list[str]:
        lookups = [self._openalex_pdfs(doi, deadline), self._crossref_pdfs(doi, deadline)]
        if self._settings.contact_email:
            lookups.insert(0, self._unpaywall_pdfs(doi, deadline))
        results = await asyncio.gather(*lookups, return_exceptions=True)
        urls: list[str] = []
        for result in results:
            if isinstance(result, list):
                urls.extend(u for u in result if u and u not in urls)
        return urls

    async def _lookup_json(
        self,
        url: str,
        deadline: FetchDeadline,
        params: dict[str, str],
        *,
        record_of: tuple[str, str] | None = None,
    ) -> Any:
        """`record_of`: (registry, doi) when the answer is that registry's record of the DOI, the one the
        authoritative-metadata lookup asks for later: the port keeps it, so that it is fetched once."""
        try:
            response = await get_in_turn(
                self._polite, self._http, url, deadline, timeout_cap=LOOKUP_TIMEOUT_SECONDS, params=params
            )
        except (FetchError, TurnNotGranted):
            return None
        if not response.ok:
            return None
        if record_of is not None and isinstance(self._metadata, AnswerMemory):
            registry, doi = record_of
            await self._metadata.remember(registry, "doi", doi, response.status_code, response.content)
        try:
            return response.json()
        except ValueError:
            return None

    def _contact_params(self) -> dict[str, str]:
        return {"mailto": self._settings.contact_email} if self._settings.contact_email else {}

    async def _unpaywall_pdfs(self, doi: str, deadline: FetchDeadline) -> list[str]:
        base = self._settings.unpaywall_api_url.rstrip("/")
        data = await self._lookup_json(
            f"{base}/{doi}", deadline, {"email": self._settings.contact_email or ""}
        )
        if not isinstance(data, dict):
            return []
        locations = [data.get("best_oa_location") or {}, *(data.get("oa_locations") or [])]
        return [
            str(loc["url_for_pdf"]) for loc in locations if isinstance(loc, dict) and loc.get("url_for_pdf")
        ]

    async def _openalex_pdfs(self, doi: str, deadline: FetchDeadline) -> list[str]:
        base = self._settings.openalex_api_url.rstrip("/")
        data = await self._lookup_json(
            f"{base}/works/doi:{doi}", deadline, self._contact_params(), record_of=("openalex", doi)
        )
        if not isinstance(data, dict):
            return []
        urls: list[str] = []
        for location in [data.get("best_oa_location") or {}, *(data.get("locations") or [])]:
            if isinstance(location, dict) and location.get("pdf_url"):
                urls.append(str(location["pdf_url"]))
        oa_url = (data.get("open_access") or {}).get("oa_url")
        if oa_url:
            urls.append(str(oa_url))
        return urls

    async def _crossref_pdfs(self, doi: str, deadline: FetchDeadline) -> list[str]:
        base = self._settings.crossref_api_url.rstrip("/")
        data = await self._lookup_json(
            f"{base}/works/{doi}", deadline, self._contact_params(), record_of=("crossref", doi)
        )
        message = data.get("message") if isinstance(data, dict) else None
        if not isinstance(message, dict):
            return []
        return [
            str(link["URL"])
            for link in message.get("link") or []
            if isinstance(link, dict)
            and link.get("URL")
            and link.get("content-type") in ("application/pdf", "unspecified")
        ]

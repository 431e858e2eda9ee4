"""Fetching a public source: an arXiv PDF, a DOI (its open-access copies, then the resolver) or a URL,
following an HTML landing page to the PDF it links to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from functions.common.errors import FetchBlocked, FetchError, FetchTimeout, FetchTooLarge
from functions.common.outbound.http import FetchedResponse, HttpClient
from functions.common.outbound.polite_requests import PoliteRequests
from functions.common.outbound.upstream_turns import TurnNotGranted
from functions.common.settings import Settings
from functions.extract.errors import SourceUnavailable
from functions.extract.fetch_turns import FetchDeadline, ServiceStats, get_in_turn
from functions.extract.html import HtmlDocument, parse_html
from functions.extract.metadata import ScholarlyMetadata
from functions.extract.open_access import OpenAccessLookup
from functions.extract.pdf import is_pdf
from functions.extract.resolve import Target

PDF_ACCEPT = "application/pdf,text/html;q=0.9,*/*;q=0.5"
MISSING_STATUSES = frozenset({404, 410})
DENIED_STATUSES = frozenset({401, 402, 403, 451})


@dataclass(slots=True)
class Fetched:
    kind: Literal["pdf", "html", "other"]
    url: str
    content: bytes = b""
    html: HtmlDocument | None = None
    content_type: str = ""


class SourceFetcher:
    def __init__(
        self,
        *,
        http: HttpClient,
        settings: Settings,
        polite: PoliteRequests,
        stats: ServiceStats,
        metadata: ScholarlyMetadata | None = None,
        source_http: Callable[[], HttpClient] | None = None,
    ) -> None:
        """`http` reaches the registries and the papers they point at; `source_http`, when given, builds
        (on first use; `aclose` closes it) the client that fetches a URL a team supplied."""
        self._http = http
        self._source_factory = source_http
        self._source_client: HttpClient | None = None
        self._settings = settings
        self._polite = polite
        self._stats = stats
        self._open_access = OpenAccessLookup(http=http, settings=settings, polite=polite, metadata=metadata)

    async def aclose(self) -> None:
        """Close the client built from `source_http` (the caller owns `http`)."""
        if self._source_client is not None:
            await self._source_client.aclose()
            self._source_client = None

    def _source_http(self) -> HttpClient:
        if self._source_factory is None:
            return self._http
        if self._source_client is None:
            self._source_client = self._source_factory()
        return self._source_client

    async def fetch_target(self, target: Target, deadline: FetchDeadline) -> Fetched:
        """A public source (library documents are read from storage, not fetched)."""
        if target.kind == "library":
            raise SourceUnavailable(f"no uploaded document {target.value}")
        if target.kind == "arxiv":
            base = self._settings.arxiv_pdf_base_url.rstrip("/")
            return await self._fetch_url(f"{base}/pdf/{target.value}", deadline, follow_html=False)
        if target.kind == "doi":
            return await self._fetch_doi(target.value, deadline)
        return await self._fetch_url(target.value, deadline, follow_html=True, http=self._source_http())

    async def _fetch_doi(self, doi: str, deadline: FetchDeadline) -> Fetched:
        candidates = await self._open_access.candidates(doi, deadline)
        resolver = self._settings.doi_resolver_url.rstrip("/")
        last_error: Exception | None = None
        for url in candidates:
            try:
                fetched = await self._fetch_url(url, deadline, follow_html=True)
            except (SourceUnavailable, FetchError) as exc:
                last_error = exc
                continue
            if fetched.kind == "pdf":
                return fetched
        try:
            return await self._fetch_url(f"{resolver}/{doi}", deadline, follow_html=True)
        except SourceUnavailable as exc:
            if last_error is not None:
                raise SourceUnavailable(
                    f"{exc.message}; open-access copies failed too ({last_error})", transient=exc.transient
                ) from exc
            raise

    async def _fetch_url(
        self, url: str, deadline: FetchDeadline, *, follow_html: bool, http: HttpClient | None = None
    ) -> Fetched:
        """`http`: the client whose allow-list applies to `url` (and to the PDF its page links to)."""
        client = http or self._http
        deadline.tried.append(url)
        self._stats.fetches += 1
        try:
            response = await get_in_turn(self._polite, client, url, deadline, headers={"Accept": PDF_ACCEPT})
        except TurnNotGranted as exc:
            raise SourceUnavailable(f"not fetched within the extraction budget: {exc}") from exc
        except (FetchBlocked, FetchTooLarge, FetchTimeout):
            raise
        except FetchError as exc:
            raise SourceUnavailable(exc.message) from exc
        _raise_for_status(response)
        # Declared a PDF but is not one: still "pdf", so that the parser gives a clean failure reason.
        if is_pdf(response.content) or response.content_type == "application/pdf":
            return Fetched("pdf", response.url, response.content, content_type=response.content_type)
        looks_html = "html" in response.content_type or response.content[:200].lstrip().startswith(b"<")
        if not looks_html:
            return Fetched("other", response.url, content_type=response.content_type)
        document = parse_html(response.text, response.url)
        if follow_html and document.pdf_url and document.pdf_url not in deadline.tried:
            try:
                linked = await self._fetch_url(document.pdf_url, deadline, follow_html=False, http=client)
            except (SourceUnavailable, FetchError):
                linked = None
            if linked is not None and linked.kind == "pdf":
                return linked
        return Fetched("html", response.url, html=document, content_type=response.content_type)


def _raise_for_status(response: FetchedResponse) -> None:
    status = response.status_code
    if status < 400:
        return
    if status in MISSING_STATUSES:
        raise SourceUnavailable(f"HTTP {status}: {response.url} does not exist")
    if status in DENIED_STATUSES:
        raise SourceUnavailable(f"HTTP {status}: access to {response.url} is denied (paywall or login)")
    raise SourceUnavailable(f"HTTP {status} from {response.url}", transient=status >= 500 or status == 429)

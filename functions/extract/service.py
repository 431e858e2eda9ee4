"""The extraction service: resolve a source, fetch it (guarded), parse, analyse, store and cache.

Storage layout in the data bucket:
  pdfs/<sha256>.pdf                    a fetched public PDF, content-addressed
  parsed/<hash(canonical_id)>.json     the ExtractedPaper (what the step handler passes by reference)
  parsed/<hash(canonical_id)>.pages.json  the normalised page text: a repeat extraction of the same
                                       paper re-runs only the (fast) analysis, with no fetch and no parse
  teams/<team_id>/documents/<document_id>/original.pdf, paper.json, pages.json
                                       the same three for a team's uploaded document, under its team

The public entries (DOIs, arXiv ids, URLs) are shared by every team: they hold public content, and a
team learns nothing about another from a cache hit on a public paper. An uploaded document is private
to its team: `library://<id>` resolves only through that team's records, and its parse is cached only
under that team's prefix, so no other team can be served it from any cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal

from functions.common.documents import (
    LIBRARY_SCHEME,
    DocumentRecord,
    DocumentRepository,
    DynamoDocumentRepository,
)
from functions.common.errors import FetchBlocked, FetchError, FetchTimeout, FetchTooLarge
from functions.common.http import FetchedResponse, HttpClient
from functions.common.models import ExtractedPaper, short_hash
from functions.common.observability import record_metric
from functions.common.polite_requests import PoliteRequests
from functions.common.settings import Settings, get_settings
from functions.common.storage import BlobStore, S3BlobStore, get_json, put_json
from functions.common.tenancy import checked_team, valid_team_id
from functions.common.upstream_turns import TurnNotGranted
from functions.extract.documents import (
    SEARCH_TEXT_LIMIT,
    document_id_for,
    parse_metadata_field,
    utc_now,
    validate_upload,
)
from functions.extract.errors import SourceUnavailable, UnprocessableDocument
from functions.extract.extraction import failed, from_parsed, parse_or_failure, with_metadata
from functions.extract.html import HtmlDocument, parse_html
from functions.extract.identifiers import FRONT_PAGES, find_identifiers
from functions.extract.metadata import (
    AnswerMemory,
    LayoutFacts,
    MetadataResolver,
    ResolvedMetadata,
    ScholarlyMetadata,
)
from functions.extract.metadata_connectors import ConnectorMetadata
from functions.extract.pdf import ParsedPdf, is_pdf
from functions.extract.resolve import Target, classify, library_target
from functions.search.turns import polite_requests

PDF_ACCEPT = "application/pdf,text/html;q=0.9,*/*;q=0.5"
MISSING_STATUSES = frozenset({404, 410})
DENIED_STATUSES = frozenset({401, 402, 403, 451})
CANDIDATE_TIMEOUT_SECONDS = 15.0
LOOKUP_TIMEOUT_SECONDS = 6.0
# What a fetch keeps of its extraction's budget after waiting for its turn at a provider.
FETCH_KEEP_SECONDS = 10.0


def pdf_key(sha256: str) -> str:
    return f"pdfs/{sha256}.pdf"


def parsed_key(canonical_id: str) -> str:
    return f"parsed/{short_hash(canonical_id, 16)}.json"


def pages_key(canonical_id: str) -> str:
    return f"parsed/{short_hash(canonical_id, 16)}.pages.json"


@dataclass(frozen=True, slots=True)
class StorageKeys:
    """Where a source's parse is kept: the shared keys of a public paper, or its team's for an upload."""

    parsed: str
    pages: str


def public_keys(canonical_id: str) -> StorageKeys:
    return StorageKeys(parsed_key(canonical_id), pages_key(canonical_id))


def document_prefix(team_id: str, document_id: str) -> str:
    """Every stored file of an uploaded document lives under its team (the team id is checked, since it
    becomes part of the key)."""
    return f"teams/{checked_team(team_id)}/documents/{document_id}"


def document_pdf_key(team_id: str, document_id: str) -> str:
    return f"{document_prefix(team_id, document_id)}/original.pdf"


def document_keys(team_id: str, document_id: str) -> StorageKeys:
    prefix = document_prefix(team_id, document_id)
    return StorageKeys(f"{prefix}/paper.json", f"{prefix}/pages.json")


@dataclass(slots=True)
class ServiceStats:
    """Counters that show what a call cost (tests assert on them, logs report them)."""

    fetches: int = 0
    parses: int = 0
    cache_hits: int = 0


@dataclass(slots=True)
class Fetched:
    kind: Literal["pdf", "html", "other"]
    url: str
    content: bytes = b""
    html: HtmlDocument | None = None
    content_type: str = ""


@dataclass(slots=True)
class _Deadline:
    ends_at: float
    tried: list[str] = field(default_factory=list)
    # whose turn at a provider a fetch takes (shared fairly per team, then job) and how it ranks in its job
    team: str = "public"
    job: str = "interactive"
    priority: int = 0

    def turn_deadline(self, keep: float) -> float:
        """The epoch time by which a fetch must have had its turn, keeping `keep` seconds (at most half
        of what is left) to fetch."""
        left = max(0.0, self.ends_at - time.monotonic())
        return time.time() + left - min(keep, left / 2)

    def remaining(self, cap: float | None = None) -> float:
        left = self.ends_at - time.monotonic()
        return max(0.5, min(left, cap or CANDIDATE_TIMEOUT_SECONDS))


class ExtractionService:
    def __init__(
        self,
        *,
        http: HttpClient,
        blobs: BlobStore,
        documents: DocumentRepository | None = None,
        settings: Settings | None = None,
        metadata: ScholarlyMetadata | None = None,
        source_http: Callable[[], HttpClient] | None = None,
        polite: PoliteRequests | None = None,
    ) -> None:
        """`metadata`: where authoritative title/authors/abstract come from; None = layout only.

        `http` reaches the registries and the papers they point at (FETCH_ALLOW_PRIVATE_HOSTS);
        `source_http`, when given, builds (on first use; `aclose` closes it) the client that fetches a
        `source_url` a team supplied as a plain URL (the extract API's, with EXTRACT_ALLOW_PRIVATE_HOSTS),
        so that neither allow-list opens a host to the other's callers. `polite`: turns at the providers
        a fetch reaches (arxiv.org PDFs, open-access lookups); None: the process's turns."""
        self._http = http
        self._source_factory = source_http
        self._source_client: HttpClient | None = None
        self._blobs = blobs
        self._documents = documents
        self._settings = settings or get_settings()
        self._metadata = metadata
        self._polite = polite or polite_requests(self._settings)
        self.stats = ServiceStats()

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> ExtractionService:
        settings = settings or get_settings()
        http = HttpClient(settings, purpose="fetch")
        return cls(
            http=http,
            blobs=S3BlobStore(settings.data_bucket),
            documents=DynamoDocumentRepository(),
            settings=settings,
            metadata=ConnectorMetadata.from_settings(settings, http),
        )

    async def aclose(self) -> None:
        """Close the HTTP clients (the service owns `http` when built by from_settings)."""
        if self._source_client is not None:
            await self._source_client.aclose()
            self._source_client = None
        await self._http.aclose()

    def _source_http(self) -> HttpClient:
        if self._source_factory is None:
            return self._http
        if self._source_client is None:
            self._source_client = self._source_factory()
        return self._source_client

    # --- extraction ------------------------------------------------------------------------------

    async def extract(
        self,
        source_url: str,
        *,
        focus_areas: list[str] | None = None,
        max_length: int = 5000,
        budget_seconds: float = 40.0,
        team_id: str | None = None,
        job_id: str | None = None,
        priority: int = 0,
    ) -> ExtractedPaper:
        """Raises InvalidInput/FetchBlocked (400), SourceUnavailable (404), FetchTimeout (504).
        Unparseable content returns success=False with a failure_reason.

        `team_id`: the caller's team. `library://<id>` resolves only among that team's uploads; without
        a team, or for another team's document, it fails exactly as an unknown document does. `job_id`
        and `priority`: where the fetches queue at a provider (fairly per team, then job)."""
        target = classify(source_url)
        deadline = _Deadline(
            time.monotonic() + budget_seconds,
            team=team_id or "public",
            job=job_id or "interactive",
            priority=priority,
        )
        try:
            async with asyncio.timeout(budget_seconds):
                paper = await self._extract(target, source_url, focus_areas or [], deadline, team_id)
        except TimeoutError as exc:
            record_metric("extract", "ExtractionTimeouts", 1)
            raise FetchTimeout(
                f"extraction of {source_url} exceeded its {budget_seconds:.0f} s budget"
            ) from exc
        record_metric("extract", "ExtractionSucceeded" if paper.success else "ExtractionFailed", 1)
        return trim_to_length(paper, max_length)

    async def _extract(
        self, target: Target, source_url: str, focus: list[str], deadline: _Deadline, team_id: str | None
    ) -> ExtractedPaper:
        record: DocumentRecord | None = None
        if target.kind == "library":
            # The team's record first: the cache below is consulted only for a document the team owns.
            record = await self._library_record(team_id, target.value)
            keys = document_keys(record.team_id, record.document_id)
        else:
            keys = public_keys(target.canonical_id)
        cached = await self._from_cache(target, keys, source_url, focus, deadline)
        if cached is not None:
            return cached
        try:
            if record is not None:
                fetched = await self._library_pdf(record)
            else:
                fetched = await self._fetch_target(target, deadline)
        except FetchTooLarge as exc:
            return failed(source_url, target.canonical_id, f"document too large - {exc.message}")
        if fetched.kind == "other":
            return failed(
                source_url,
                target.canonical_id,
                f"unsupported content: {fetched.content_type or 'unknown type'} is neither PDF nor HTML",
            )
        sha256: str | None = None
        extra_citations: list[str] = []
        if fetched.kind == "pdf":
            sha256 = hashlib.sha256(fetched.content).hexdigest()
            self.stats.parses += 1
            # Raises UnprocessableDocument for a PDF over the parsing limits: nothing of it is stored.
            outcome = await asyncio.to_thread(
                parse_or_failure, fetched.content, source_url, target.canonical_id
            )
            if record is None:  # an upload's PDF is already stored, under its team
                await self._store_pdf(sha256, fetched.content)
            if isinstance(outcome, ExtractedPaper):
                outcome.pdf_sha256 = sha256
                await self._store_paper(outcome, keys)
                return outcome
            parsed = outcome
        else:
            assert fetched.html is not None
            parsed = ParsedPdf(fetched.html.pages, 1, fetched.html.metadata, [], "html")
            extra_citations = fetched.html.citations
        await self._store_pages(keys, parsed, sha256, extra_citations)
        return await self._analyse_and_store(
            parsed, target, keys, source_url, focus, sha256, extra_citations, deadline=deadline
        )

    async def _store_pdf(self, sha256: str, data: bytes) -> None:
        await asyncio.to_thread(self._blobs.put_bytes, pdf_key(sha256), data, "application/pdf")

    async def _store_pages(
        self,
        keys: StorageKeys,
        parsed: ParsedPdf,
        sha256: str | None,
        extra_citations: list[str],
        resolved: ResolvedMetadata | None = None,
    ) -> None:
        """The normalised pages that `_from_cache` re-analyses instead of fetching and parsing again
        (with the registries' metadata once it was found, so that a repeat asks no registry)."""
        stored: dict[str, Any] = {
            "parsed": parsed.to_json(),
            "pdf_sha256": sha256,
            "extra_citations": extra_citations,
        }
        if resolved is not None and resolved.found:
            stored["authoritative"] = resolved.to_json()
        await asyncio.to_thread(put_json, self._blobs, keys.pages, stored)

    async def _analyse_and_store(
        self,
        parsed: ParsedPdf,
        target: Target,
        keys: StorageKeys,
        source_url: str,
        focus: list[str],
        sha256: str | None,
        extra_citations: list[str],
        *,
        resolved: ResolvedMetadata | None = None,
        deadline: _Deadline | None = None,
    ) -> ExtractedPaper:
        """`resolved`: registry metadata found earlier (kept with the pages); else it is looked up."""
        paper = await asyncio.to_thread(
            lambda: from_parsed(
                parsed,
                source_url=source_url,
                canonical_id=target.canonical_id,
                focus_areas=focus,
                pdf_sha256=sha256,
                extra_citations=extra_citations,
            )
        )
        if paper.success:
            front = [page.text for page in parsed.pages[:FRONT_PAGES]]
            found = find_identifiers(front, parsed.metadata)
            trusted_doi = target.value if target.kind == "doi" else None
            trusted_arxiv = re.sub(r"v\d+$", "", target.value) if target.kind == "arxiv" else None
            if resolved is None and self._metadata is not None:
                layout = LayoutFacts(paper.title, paper.authors, "\n".join(front), found.year)
                budget = self._settings.extract_metadata_budget_seconds
                if deadline is not None:
                    budget = min(budget, deadline.ends_at - time.monotonic() - 1.0)
                if budget > 0.2:
                    resolved = await MetadataResolver(self._metadata, budget).resolve(
                        found, layout, trusted_doi=trusted_doi, trusted_arxiv_id=trusted_arxiv
                    )
                    record_metric("extract", "AuthoritativeMetadataFound", int(resolved.found))
                    if resolved.found:
                        await self._store_pages(keys, parsed, sha256, extra_citations, resolved)
            paper = with_metadata(paper, found, resolved, doi=trusted_doi, arxiv_id=trusted_arxiv)
        await self._store_paper(paper, keys)
        return paper

    async def _store_paper(self, paper: ExtractedPaper, keys: StorageKeys) -> None:
        await asyncio.to_thread(put_json, self._blobs, keys.parsed, paper.model_dump(mode="json"))

    async def _from_cache(
        self,
        target: Target,
        keys: StorageKeys,
        source_url: str,
        focus: list[str],
        deadline: _Deadline | None = None,
    ) -> ExtractedPaper | None:
        """`keys`: the team's for a library document (the caller checked the team owns it), else the
        shared keys of the public paper."""
        stored = await asyncio.to_thread(get_json, self._blobs, keys.pages)
        if stored is not None:
            self.stats.cache_hits += 1
            parsed = ParsedPdf.from_json(stored["parsed"])
            authoritative = stored.get("authoritative")
            return await self._analyse_and_store(
                parsed,
                target,
                keys,
                source_url,
                focus,
                stored.get("pdf_sha256"),
                stored.get("extra_citations") or [],
                resolved=ResolvedMetadata.from_json(authoritative) if authoritative else None,
                deadline=deadline,
            )
        if target.kind == "library":
            return None  # uploads are parsed at upload time; a missing text file means re-parse
        previous = await asyncio.to_thread(get_json, self._blobs, keys.parsed)
        if previous is not None and not previous.get("success"):
            self.stats.cache_hits += 1  # a permanent failure (corrupt, scanned): do not fetch again
            paper = ExtractedPaper.model_validate(previous)
            paper.source_url = source_url
            return paper
        return None

    # --- fetching --------------------------------------------------------------------------------

    async def _fetch_target(self, target: Target, deadline: _Deadline) -> Fetched:
        """A public source (library documents are read through `_library_pdf`)."""
        if target.kind == "library":
            raise SourceUnavailable(f"no uploaded document {target.value}")
        if target.kind == "arxiv":
            base = self._settings.arxiv_pdf_base_url.rstrip("/")
            return await self._fetch_url(f"{base}/pdf/{target.value}", deadline, follow_html=False)
        if target.kind == "doi":
            return await self._fetch_doi(target.value, deadline)
        return await self._fetch_url(target.value, deadline, follow_html=True, http=self._source_http())

    async def _library_record(self, team_id: str | None, document_id: str) -> DocumentRecord:
        """The team's document. No team, another team's document and an unknown one all raise the same
        error, so that a caller cannot tell whether a document exists elsewhere."""
        missing = SourceUnavailable(f"no uploaded document {document_id}")
        if self._documents is None or team_id is None or not valid_team_id(team_id):
            raise missing
        record = await asyncio.to_thread(self._documents.get, team_id, document_id)
        if record is None or record.team_id != team_id:
            raise missing
        return record

    async def _library_pdf(self, record: DocumentRecord) -> Fetched:
        data = await asyncio.to_thread(self._blobs.get_bytes, record.pdf_key)
        if data is None:
            raise SourceUnavailable(f"the file of document {record.document_id} is missing from storage")
        return Fetched("pdf", record.source_url, data)

    async def _fetch_doi(self, doi: str, deadline: _Deadline) -> Fetched:
        candidates = await self._open_access_candidates(doi, deadline)
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
        self, url: str, deadline: _Deadline, *, follow_html: bool, http: HttpClient | None = None
    ) -> Fetched:
        """`http`: the client whose allow-list applies to `url` (and to the PDF its page links to)."""
        client = http or self._http
        deadline.tried.append(url)
        self.stats.fetches += 1
        try:
            response = await self._polite.send(
                url,
                lambda on_sent: client.get(
                    url,
                    headers={"Accept": PDF_ACCEPT},
                    total_timeout=deadline.remaining(),
                    # a provider's request is retried only in a new turn, never inside this one
                    retries=0 if self._polite.provider_of(url) else 1,
                    on_sent=on_sent,
                ),
                team=deadline.team,
                job=deadline.job,
                priority=deadline.priority,
                deadline=deadline.turn_deadline(keep=FETCH_KEEP_SECONDS),
            )
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

    async def _open_access_candidates(self, doi: str, deadline: _Deadline) -> list[str]:
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
        deadline: _Deadline,
        params: dict[str, str],
        *,
        record_of: tuple[str, str] | None = None,
    ) -> Any:
        """`record_of`: (registry, doi) when the answer is that registry's record of the DOI, the one the
        authoritative-metadata lookup asks for later: the port keeps it, so that it is fetched once."""
        try:
            response = await self._polite.send(
                url,
                lambda on_sent: self._http.get(
                    url,
                    params=params,
                    total_timeout=deadline.remaining(LOOKUP_TIMEOUT_SECONDS),
                    retries=0 if self._polite.provider_of(url) else 1,
                    on_sent=on_sent,
                ),
                team=deadline.team,
                job=deadline.job,
                priority=deadline.priority,
                deadline=deadline.turn_deadline(keep=FETCH_KEEP_SECONDS),
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

    async def _unpaywall_pdfs(self, doi: str, deadline: _Deadline) -> list[str]:
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

    async def _openalex_pdfs(self, doi: str, deadline: _Deadline) -> list[str]:
        base = self._settings.openalex_api_url.rstrip("/")
        params = {"mailto": self._settings.contact_email} if self._settings.contact_email else {}
        data = await self._lookup_json(
            f"{base}/works/doi:{doi}", deadline, params, record_of=("openalex", doi)
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

    async def _crossref_pdfs(self, doi: str, deadline: _Deadline) -> list[str]:
        base = self._settings.crossref_api_url.rstrip("/")
        params = {"mailto": self._settings.contact_email} if self._settings.contact_email else {}
        data = await self._lookup_json(f"{base}/works/{doi}", deadline, params, record_of=("crossref", doi))
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

    # --- uploads ---------------------------------------------------------------------------------

    async def ingest_upload(
        self, team_id: str, data: bytes, filename: str, metadata_json: str | None = None
    ) -> DocumentRecord:
        """Validate, store and parse an uploaded PDF as the team's document; the record is what
        GET /v1/documents/{id} shows that team (and no other)."""
        if self._documents is None:
            raise RuntimeError("this service has no document repository")
        team_id = checked_team(team_id)
        metadata = parse_metadata_field(metadata_json)
        sha256 = validate_upload(data, filename, self._settings)
        document_id = document_id_for(sha256)
        existing = await asyncio.to_thread(self._documents.get, team_id, document_id)
        if existing is not None and existing.status == "indexed":
            return existing
        target = library_target(document_id)
        source_url = LIBRARY_SCHEME + document_id
        self.stats.parses += 1
        outcome = await asyncio.to_thread(
            partial(parse_or_failure, data, source_url, target.canonical_id, field="file")
        )
        if isinstance(outcome, ExtractedPaper):
            raise UnprocessableDocument(outcome.failure_reason or "the PDF cannot be parsed", field="file")
        if not outcome.text_pages:
            raise UnprocessableDocument(
                "the PDF has no text layer (an image-only scan); OCR is not supported", field="file"
            )
        keys = document_keys(team_id, document_id)
        pdf_location = document_pdf_key(team_id, document_id)
        await asyncio.to_thread(self._blobs.put_bytes, pdf_location, data, "application/pdf")
        await self._store_pages(keys, outcome, sha256, [])
        paper = await self._analyse_and_store(outcome, target, keys, source_url, [], sha256, [])
        title = str(metadata.get("title") or paper.title or filename)
        year = _document_year(metadata.get("year"), outcome.metadata)
        record = DocumentRecord(
            team_id=team_id,
            document_id=document_id,
            filename=filename or "document.pdf",
            uploaded_at=utc_now(),
            size_bytes=len(data),
            status="indexed",
            pages=outcome.page_count,
            sha256=sha256,
            pdf_key=pdf_location,
            parsed_key=keys.parsed,
            title=title,
            authors=[str(a) for a in metadata.get("authors", [])] or paper.authors,
            abstract=paper.abstract,
            year=year,
            metadata=metadata,
            search_text=_search_text(title, paper)[:SEARCH_TEXT_LIMIT],
        )
        await asyncio.to_thread(self._documents.put, record)
        return record

    def get_document(self, team_id: str, document_id: str) -> DocumentRecord | None:
        """The team's document; None for an unknown one and for another team's alike."""
        if self._documents is None or not valid_team_id(team_id):
            return None
        return self._documents.get(team_id, document_id)

    def list_documents(self, team_id: str, limit: int) -> list[DocumentRecord]:
        """The team's documents, newest upload first (ties by id, so the order is stable)."""
        if self._documents is None or not valid_team_id(team_id):
            return []
        records = self._documents.all(team_id)  # the repository's cap: 1,000
        records.sort(key=lambda record: (record.uploaded_at, record.document_id), reverse=True)
        return records[:limit]


def _document_year(given: object, pdf_metadata: dict[str, str]) -> int:
    """The uploader's year, else the PDF's creation year, else this year (search results need one)."""
    if isinstance(given, int | str) and str(given).isdigit() and 1000 < int(given) < 3000:
        return int(given)
    created = re.match(r"^D:(\d{4})", pdf_metadata.get("CreationDate", ""))
    if created:
        return int(created.group(1))
    return datetime.now(UTC).year


def _search_text(title: str, paper: ExtractedPaper) -> str:
    parts = [title, paper.abstract, " ".join(paper.sections), " ".join(paper.key_findings), paper.methodology]
    return "\n".join(p for p in parts if p)


def _raise_for_status(response: FetchedResponse) -> None:
    status = response.status_code
    if status < 400:
        return
    if status in MISSING_STATUSES:
        raise SourceUnavailable(f"HTTP {status}: {response.url} does not exist")
    if status in DENIED_STATUSES:
        raise SourceUnavailable(f"HTTP {status}: access to {response.url} is denied (paywall or login)")
    raise SourceUnavailable(f"HTTP {status} from {response.url}", transient=status >= 500 or status == 429)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    head = text[:limit]
    sentence_end = max(head.rfind(". "), head.rfind(".\n"))
    if sentence_end >= limit // 2:
        return head[: sentence_end + 1]
    return re.sub(r"\s+\S*$", "", head).rstrip(" ,;:") + "…"


def trim_to_length(paper: ExtractedPaper, max_length: int) -> ExtractedPaper:
    """Fit the contract's content (title, findings, abstract, methodology, citations) into max_length
    characters, in that order of priority. Evidence is additive and not counted."""
    trimmed = paper.model_copy(deep=True)
    budget = max(0, max_length)
    trimmed.title = _cut(trimmed.title, budget)
    budget -= len(trimmed.title)
    trimmed.key_findings, budget = _whole_items_within(trimmed.key_findings, budget)
    trimmed.abstract = _cut(trimmed.abstract, budget)
    budget -= len(trimmed.abstract)
    trimmed.methodology = _cut(trimmed.methodology, budget)
    budget -= len(trimmed.methodology)
    trimmed.citations, budget = _whole_items_within(trimmed.citations, budget)
    return trimmed


def _whole_items_within(items: list[str], budget: int) -> tuple[list[str], int]:
    """The leading items that fit whole into budget characters, and the budget left."""
    kept: list[str] = []
    for item in items:
        if len(item) > budget:
            break
        kept.append(item)
        budget -= len(item)
    return kept, budget

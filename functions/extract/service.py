"""The extraction service: resolve a source, fetch it (guarded), parse, analyse, store and cache.

The public entries (DOIs, arXiv ids, URLs) are shared by every team: they hold public content, and a
team learns nothing about another from a cache hit on a public paper. An uploaded document is private
to its team: `library://<id>` resolves only through that team's records, and its parse is cached only
under that team's prefix, so no other team can be served it from any cache (the layout is in
`parse_cache`).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Callable
from typing import Unpack

from functions.common.documents import (
    LIBRARY_SCHEME,
    DocumentRecord,
    DocumentRepository,
    DynamoDocumentRepository,
)
from functions.common.errors import FetchTimeout, FetchTooLarge
from functions.common.models import ExtractedPaper, ExtractOptions
from functions.common.observability import record_metric
from functions.common.outbound.http import HttpClient
from functions.common.outbound.polite_requests import PoliteRequests
from functions.common.settings import Settings, get_settings
from functions.common.storage import BlobStore, S3BlobStore
from functions.common.tenancy import checked_team, valid_team_id
from functions.extract.documents import (
    document_id_for,
    parse_metadata_field,
    validate_upload,
)
from functions.extract.errors import SourceUnavailable
from functions.extract.extraction import failed, from_parsed, parse_or_failure, with_metadata
from functions.extract.fetch_turns import FetchDeadline, ServiceStats
from functions.extract.fetching import Fetched, SourceFetcher
from functions.extract.identifiers import (
    FRONT_PAGES,
    DocumentIdentifiers,
    RequestedIdentifiers,
    find_identifiers,
)
from functions.extract.metadata import (
    LayoutFacts,
    MetadataResolver,
    ResolvedMetadata,
    ScholarlyMetadata,
)
from functions.extract.metadata_connectors import ConnectorMetadata
from functions.extract.parse_cache import (
    ParseCache,
    StorageKeys,
    document_keys,
    document_pdf_key,
    pdf_key,
    public_keys,
)
from functions.extract.pdf import ParsedPdf
from functions.extract.resolve import Target, classify, library_target
from functions.extract.trim import trim_to_length
from functions.extract.uploads import owned_record, parse_upload, upload_record
from functions.search.turns import polite_requests


class ExtractionService:
    def __init__(
        self,
        *,
        http: HttpClient,
        blobs: BlobStore,
        documents: DocumentRepository,
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
        self._cache = ParseCache(blobs)
        self._documents = documents
        self._settings = settings or get_settings()
        self._metadata = metadata
        self.stats = ServiceStats()
        self._fetcher = SourceFetcher(
            http=http,
            settings=self._settings,
            polite=polite or polite_requests(self._settings),
            stats=self.stats,
            metadata=metadata,
            source_http=source_http,
        )

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
        await self._fetcher.aclose()
        await self._http.aclose()

    # --- extraction ------------------------------------------------------------------------------

    async def extract(self, source_url: str, **options: Unpack[ExtractOptions]) -> ExtractedPaper:
        """Raises InvalidInput/FetchBlocked (400), SourceUnavailable (404), FetchTimeout (504).
        Unparseable content returns success=False with a failure_reason.

        `team_id`: the caller's team. `library://<id>` resolves only among that team's uploads; without
        a team, or for another team's document, it fails exactly as an unknown document does. `job_id`
        and `priority`: where the fetches queue at a provider (fairly per team, then job). By default
        no focus, 5000 characters, 40 s, no team, an interactive job, priority 0."""
        target = classify(source_url)
        budget_seconds = options.get("budget_seconds", 40.0)
        team_id = options.get("team_id")
        deadline = FetchDeadline(
            time.monotonic() + budget_seconds,
            team=team_id or "public",
            job=options.get("job_id") or "interactive",
            priority=options.get("priority", 0),
            turn_wait=options.get("turn_wait_seconds"),
        )
        focus = options.get("focus_areas") or []
        try:
            async with asyncio.timeout(budget_seconds):
                paper = await self._extract(target, source_url, focus, deadline, team_id)
        except TimeoutError as exc:
            record_metric("extract", "ExtractionTimeouts", 1)
            raise FetchTimeout(
                f"extraction of {source_url} exceeded its {budget_seconds:.0f} s budget"
            ) from exc
        record_metric("extract", "ExtractionSucceeded" if paper.success else "ExtractionFailed", 1)
        return trim_to_length(paper, options.get("max_length", 5000))

    async def _extract(
        self, target: Target, source_url: str, focus: list[str], deadline: FetchDeadline, team_id: str | None
    ) -> ExtractedPaper:
        record, keys = await self._owned_keys(target, team_id)
        cached = await self._from_cache(target, keys, source_url, focus, deadline)
        if cached is not None:
            return cached
        try:
            if record is not None:
                fetched = await self._library_pdf(record)
            else:
                fetched = await self._fetcher.fetch_target(target, deadline)
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
                await self._cache.put_pdf(pdf_key(sha256), fetched.content)
            if isinstance(outcome, ExtractedPaper):
                outcome.pdf_sha256 = sha256
                await self._cache.put_paper(outcome, keys)
                return outcome
            parsed = outcome
        else:
            assert fetched.html is not None
            parsed = ParsedPdf(fetched.html.pages, 1, fetched.html.metadata, [], "html")
            extra_citations = fetched.html.citations
        await self._cache.put_pages(keys, parsed, sha256, extra_citations)
        return await self._analyse_and_store(
            parsed, target, keys, source_url, focus, sha256, extra_citations, deadline=deadline
        )

    async def _owned_keys(
        self, target: Target, team_id: str | None
    ) -> tuple[DocumentRecord | None, StorageKeys]:
        """Where the source's parse is kept; for a library document, the team's record first (the cache
        is consulted only for a document the team owns: another team's reads as unknown)."""
        if target.kind != "library":
            return None, public_keys(target.canonical_id)
        record = await asyncio.to_thread(owned_record, self._documents, team_id, target.value)
        return record, document_keys(record.team_id, record.document_id)

    async def page_texts(self, source_url: str, team_id: str | None = None) -> list[tuple[int, str]]:
        """The normalised text of each page (1-based number, text) of a source already extracted: the
        offsets of its evidence index into these. Empty when no parse of it is kept."""
        _, keys = await self._owned_keys(classify(source_url), team_id)
        stored = await self._cache.pages(keys)
        return [] if stored is None else [(page.number, page.text) for page in stored.parsed.pages]

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
        deadline: FetchDeadline | None = None,
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
            requested = RequestedIdentifiers(
                doi=target.value if target.kind == "doi" else None,
                arxiv_id=re.sub(r"v\d+$", "", target.value) if target.kind == "arxiv" else None,
            )
            if resolved is None and self._metadata is not None:
                layout = LayoutFacts(paper.title, paper.authors, "\n".join(front), found.year)
                resolved = await self._resolve_metadata(self._metadata, found, layout, requested, deadline)
                if resolved is not None and resolved.found:
                    await self._cache.put_pages(keys, parsed, sha256, extra_citations, resolved)
            paper = with_metadata(paper, found, resolved, requested)
        await self._cache.put_paper(paper, keys)
        return paper

    async def _resolve_metadata(
        self,
        metadata: ScholarlyMetadata,
        found: DocumentIdentifiers,
        layout: LayoutFacts,
        requested: RequestedIdentifiers,
        deadline: FetchDeadline | None,
    ) -> ResolvedMetadata | None:
        """The registries' record of the paper, within what is left of the budget (None: no time)."""
        budget = self._settings.extract_metadata_budget_seconds
        if deadline is not None:
            budget = min(budget, deadline.ends_at - time.monotonic() - 1.0)
        if budget <= 0.2:
            return None
        resolved = await MetadataResolver(metadata, budget).resolve(found, layout, requested)
        record_metric("extract", "AuthoritativeMetadataFound", int(resolved.found))
        return resolved

    async def _from_cache(
        self,
        target: Target,
        keys: StorageKeys,
        source_url: str,
        focus: list[str],
        deadline: FetchDeadline | None = None,
    ) -> ExtractedPaper | None:
        """`keys`: the team's for a library document (the caller checked the team owns it), else the
        shared keys of the public paper."""
        stored = await self._cache.pages(keys)
        if stored is not None:
            self.stats.cache_hits += 1
            return await self._analyse_and_store(
                stored.parsed,
                target,
                keys,
                source_url,
                focus,
                stored.pdf_sha256,
                stored.extra_citations,
                resolved=stored.resolved,
                deadline=deadline,
            )
        if target.kind == "library":
            return None  # uploads are parsed at upload time; a missing text file means re-parse
        paper = await self._cache.failed_paper(keys)
        if paper is not None:
            self.stats.cache_hits += 1  # a permanent failure (corrupt, scanned): do not fetch again
            paper.source_url = source_url
        return paper

    # --- uploads ---------------------------------------------------------------------------------

    async def _library_pdf(self, record: DocumentRecord) -> Fetched:
        data = await self._cache.pdf(record.pdf_key)
        if data is None:
            raise SourceUnavailable(f"the file of document {record.document_id} is missing from storage")
        return Fetched("pdf", record.source_url, data)

    async def ingest_upload(
        self, team_id: str, data: bytes, filename: str, metadata_json: str | None = None
    ) -> DocumentRecord:
        """Validate, store and parse an uploaded PDF as the team's document; the record is what
        GET /v1/documents/{id} shows that team (and no other)."""
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
        parsed = await asyncio.to_thread(parse_upload, data, source_url, target.canonical_id)
        keys = document_keys(team_id, document_id)
        pdf_location = document_pdf_key(team_id, document_id)
        await self._cache.put_pdf(pdf_location, data)
        await self._cache.put_pages(keys, parsed, sha256, [])
        paper = await self._analyse_and_store(parsed, target, keys, source_url, [], sha256, [])
        record = upload_record(
            team_id=team_id,
            document_id=document_id,
            filename=filename,
            data=data,
            sha256=sha256,
            parsed=parsed,
            paper=paper,
            metadata=metadata,
            pdf_location=pdf_location,
            keys=keys,
        )
        await asyncio.to_thread(self._documents.put, record)
        return record

    def get_document(self, team_id: str, document_id: str) -> DocumentRecord | None:
        """The team's document; None for an unknown one and for another team's alike."""
        if not valid_team_id(team_id):
            return None
        return self._documents.get(team_id, document_id)

    def list_documents(self, team_id: str, limit: int) -> list[DocumentRecord]:
        """The team's documents, newest upload first (ties by id, so the order is stable)."""
        if not valid_team_id(team_id):
            return []
        records = self._documents.all(team_id)  # the repository's cap: 1,000
        records.sort(key=lambda record: (record.uploaded_at, record.document_id), reverse=True)
        return records[:limit]

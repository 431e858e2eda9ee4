"""Parse an untrusted PDF in a worker process that can be killed, held to `PdfParseLimits`.

Each parse runs in a process of its own (`python -m functions.extract.pdf_worker`, fed through pipes:
no shared memory, which Lambda lacks): its address space is capped, the decompressed size of its
streams is measured before a parser decodes them, and it is killed when a page or the whole parse
runs out of time. Its memory goes back to the system when it exits. This process keeps only the bounded
result (the pages' text). At most `max_concurrent` parses run at once per process, each on its own
clock, so a small document waits for nobody's bomb longer than that bomb's limits allow.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import threading
import time
from functools import cache

from functions.common.outbound.fair_slots import FairSlots
from functions.common.outbound.invocation_time import waiting
from functions.extract.config import MIB, PdfParseLimits
from functions.extract.errors import PdfLimitExceeded
from functions.extract.pdf import (
    DEFAULT_MAX_PAGES,
    DEFAULT_TIME_BUDGET_SECONDS,
    ParsedPdf,
    PdfParseError,
    is_pdf,
)
from functions.extract.pdf_worker import OUT_OF_MEMORY_EXIT

# The parse's JSON (the pages' text) is read up to this size; a document with more text is refused.
MAX_RESULT_BYTES = 64 * MIB
_READ_CHUNK = 1024 * 1024
# What the worker inherits of this process's environment: what the interpreter needs to start (Lambda
# finds libpython through LD_LIBRARY_PATH), never the credentials and keys a hostile file has no use for.
_WORKER_ENVIRONMENT = ("PATH", "LD_LIBRARY_PATH", "PYTHONHOME", "LANG", "LC_ALL", "TMPDIR", "TZ")


@cache
def _slots(count: int) -> FairSlots:
    """The process's parse slots, shared fairly between teams (a big parse of one team never makes
    another team's small one wait behind a queue of the first team's). An extraction parses one PDF at
    a time: its wait for a slot is a wait for other invocations (not billed, as on Lambda)."""
    return FairSlots(count, one_per_invocation=True)


def parse_pdf_isolated(
    data: bytes,
    limits: PdfParseLimits | None = None,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    time_budget_seconds: float = DEFAULT_TIME_BUDGET_SECONDS,
) -> ParsedPdf:
    """`pdf.parse_pdf`'s result, parsed in a worker; raises PdfParseError (unreadable) as it does, and
    PdfLimitExceeded when the PDF needs more than `limits` allow (it is then not read at all)."""
    from functions.extract.identifiers import embedded_hints

    limits = limits or PdfParseLimits()
    if not is_pdf(data):
        raise PdfParseError("not a PDF file (no %PDF header)")
    with _slots(limits.max_concurrent).slot(), waiting():  # the worker process's time is the step's
        parsed = _Worker(limits, max_pages, time_budget_seconds).parse(data)
    parsed.metadata.update(embedded_hints(data))
    return parsed


class _Worker:
    def __init__(self, limits: PdfParseLimits, max_pages: int, time_budget_seconds: float) -> None:
        self.limits = limits
        self.arguments = json.dumps(
            {
                "memory_bytes": limits.memory_bytes,
                "max_stream_bytes": limits.max_stream_bytes,
                "max_document_bytes": limits.max_document_bytes,
                "max_pages": max_pages,
                "time_budget_seconds": min(time_budget_seconds, limits.parse_seconds),
            }
        )
        self.pages_done = 0

    def parse(self, data: bytes) -> ParsedPdf:
        process = subprocess.Popen(  # noqa: S603 (our interpreter and module; the limits as JSON)
            [sys.executable, "-m", "functions.extract.pdf_worker", self.arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_worker_environment(),
        )
        feeder = threading.Thread(target=_feed, args=(process, data), daemon=True)
        feeder.start()
        try:
            return self._watch(process)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            feeder.join()
            assert process.stdout is not None
            process.stdout.close()

    def _watch(self, process: subprocess.Popen[bytes]) -> ParsedPdf:
        assert process.stdout is not None
        started = time.monotonic()
        parse_ends = started + self.limits.parse_seconds
        page_ends = started + self.limits.page_seconds
        pending = bytearray()
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while True:
                now = time.monotonic()
                if now >= min(parse_ends, page_ends):
                    raise self._timed_out(now >= parse_ends)
                if not selector.select(min(parse_ends, page_ends) - now):
                    continue
                chunk = os.read(process.stdout.fileno(), _READ_CHUNK)
                if not chunk:
                    try:
                        returncode = process.wait(timeout=max(0.0, parse_ends - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        raise self._timed_out(True) from None
                    raise self._stopped(returncode)
                pending += chunk
                if len(pending) > MAX_RESULT_BYTES:
                    raise PdfLimitExceeded(
                        f"its text is larger than the {MAX_RESULT_BYTES // MIB} MiB allowed"
                    )
                while (end := pending.find(b"\n")) >= 0:
                    event = json.loads(pending[:end])
                    del pending[: end + 1]
                    if "parsed" in event:
                        return ParsedPdf.from_json(event["parsed"])
                    if "limit" in event:
                        raise PdfLimitExceeded(str(event["limit"]))
                    if "unreadable" in event:
                        raise PdfParseError(str(event["unreadable"]))
                    self.pages_done = int(event.get("page", self.pages_done))
                    page_ends = time.monotonic() + self.limits.page_seconds

    def _timed_out(self, whole_parse: bool) -> PdfLimitExceeded:
        if whole_parse:
            return PdfLimitExceeded(
                f"parsing it takes longer than the {self.limits.parse_seconds:g} s allowed"
            )
        return PdfLimitExceeded(
            f"page {self.pages_done + 1} takes longer than the {self.limits.page_seconds:g} s allowed per page"
        )

    def _stopped(self, returncode: int) -> Exception:
        """The worker ended without an answer: at the memory limit (Python's MemoryError, or a signal: a
        parser that cannot allocate in the capped address space aborts); any other exit is our failure."""
        memory = f"{self.limits.memory_bytes / MIB:g} MiB"
        if returncode == OUT_OF_MEMORY_EXIT:
            return PdfLimitExceeded(f"parsing it needs more than the {memory} of memory allowed")
        if returncode < 0:
            return PdfLimitExceeded(
                f"the parser stopped on it (signal {-returncode}), most likely at the {memory} memory limit"
            )
        return RuntimeError(
            f"the PDF parse worker failed (exit status {returncode}; its error is in the log)"
        )


def _worker_environment() -> dict[str, str]:
    inherited = {name: os.environ[name] for name in _WORKER_ENVIRONMENT if name in os.environ}
    return {**inherited, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}


def _feed(process: subprocess.Popen[bytes], data: bytes) -> None:
    """Writes the PDF to the worker's stdin (from a thread: the worker may stop reading, or die)."""
    assert process.stdin is not None
    try:
        process.stdin.write(data)
        process.stdin.close()
    except (BrokenPipeError, OSError, ValueError):
        pass

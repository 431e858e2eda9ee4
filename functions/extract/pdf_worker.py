"""The PDF parse worker: `python -m functions.extract.pdf_worker '<limits JSON>'`, one process per PDF,
started and watched by `functions.extract.pdf_sandbox`.

It caps its own address space first (RLIMIT_AS), reads the PDF from stdin, measures what its streams
decompress to (`stream_budget`), parses it (`pdf.read_pdf`, pypdf held to the same per-stream limit)
and writes one JSON line per event to its stdout:
  {"measured": bytes}     the streams are within the limits (the page clock starts again)
  {"page": n}             page n is done
  then exactly one of {"parsed": ParsedPdf JSON}, {"unreadable": reason}, {"limit": reason}.
Everything else the libraries print goes to stderr. It exits when done; its memory goes with it.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import IO, Any

from functions.extract.errors import PdfLimitExceeded
from functions.extract.pdf import PdfParseError, read_pdf
from functions.extract.stream_budget import check_stream_sizes

OUT_OF_MEMORY_EXIT = 3


def _emitter(channel: IO[bytes]) -> Any:
    def emit(**event: Any) -> None:
        channel.write(json.dumps(event, ensure_ascii=False).encode() + b"\n")
        channel.flush()

    return emit


def main() -> int:
    limits = json.loads(sys.argv[1])
    memory = int(limits["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    # The events get a descriptor of their own; fd 1 becomes stderr, so that nothing a library prints
    # can be taken for an event.
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    emit = _emitter(channel)
    try:
        data = sys.stdin.buffer.read()
        measured = check_stream_sizes(
            data,
            max_stream_bytes=int(limits["max_stream_bytes"]),
            max_document_bytes=int(limits["max_document_bytes"]),
        )
        emit(measured=measured)
        parsed = read_pdf(
            data,
            max_pages=int(limits["max_pages"]),
            time_budget_seconds=float(limits["time_budget_seconds"]),
            max_stream_bytes=int(limits["max_stream_bytes"]),
            on_page=lambda number: emit(page=number),
        )
        emit(parsed=parsed.to_json())
    except PdfLimitExceeded as exc:
        emit(limit=exc.reason)
    except PdfParseError as exc:
        emit(unreadable=exc.reason)
    except MemoryError:
        return OUT_OF_MEMORY_EXIT  # the parent names the memory limit
    except RecursionError:
        emit(unreadable="its objects are nested too deeply to be read")
    return 0


if __name__ == "__main__":
    sys.exit(main())

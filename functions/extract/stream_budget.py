"""How many bytes a PDF's streams decompress to, measured before any parser decodes them.

PDFium has no limit of its own on what one stream inflates to: a 600 KB file whose page content
inflates to 200 MB costs gigabytes inside it. So every stream a text extraction would decode (page
contents, forms, fonts, object streams: every stream but images) is decoded here first, through its
filter chain, and given up at the per-stream and per-document limits. Unencrypted files are read by
scanning the raw bytes for `>> stream` (fast, no object parsing); encrypted ones through pypdf, which
decrypts, under the same limits. What cannot be measured (an unknown filter, a broken stream) is left to
the worker's memory and time limits (`functions.extract.pdf_sandbox`).
"""

from __future__ import annotations

import io
import logging
import re
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from functions.extract.errors import PdfLimitExceeded

if TYPE_CHECKING:
    from pypdf import Configuration, PdfReader

MIB = 1024 * 1024

_STREAM_START = re.compile(rb">>\s*stream(?:\r\n|\r|\n)")
_FILTER = re.compile(rb"/Filter\s*(\[[^\]]*\]|/[^\s/\[<>(]+)")
_NAME = re.compile(rb"/([^\s/\[\]<>()]+)")
_IMAGE = re.compile(rb"/Subtype\s*/Image\b")
_ENCRYPTED = re.compile(rb"/Encrypt\s+\d+\s+\d+\s+R|/Encrypt\s*<<")
_DICT_LOOKBACK = 64 * 1024
_INFLATE_CHUNK = MIB
# Names (and their abbreviations) of the filters decoded here; any other ends the measurement of its
# stream (images' and encryption's filters, which text extraction does not decode as data).
_FLATE = {b"FlateDecode", b"Fl"}
_BY_PYPDF = {
    b"LZWDecode": "LZWDecode",
    b"LZW": "LZWDecode",
    b"RunLengthDecode": "RunLengthDecode",
    b"RL": "RunLengthDecode",
    b"ASCII85Decode": "ASCII85Decode",
    b"A85": "ASCII85Decode",
    b"ASCIIHexDecode": "ASCIIHexDecode",
    b"AHx": "ASCIIHexDecode",
}


def check_stream_sizes(data: bytes, *, max_stream_bytes: int, max_document_bytes: int) -> int:
    """The decompressed bytes of the document's streams (images excepted); raises PdfLimitExceeded
    at the first stream over `max_stream_bytes` or when the total passes `max_document_bytes`."""
    reader = _decrypted(data, max_stream_bytes) if _ENCRYPTED.search(data) else None
    if reader is not None:
        sizes = _decrypted_stream_sizes(reader, max_stream_bytes)
    else:  # not encrypted, or not to be opened with the empty password (the parsers refuse it then)
        sizes = _plain_stream_sizes(data, max_stream_bytes)
    total = 0
    for size in sizes:
        if size > max_stream_bytes:
            raise PdfLimitExceeded(
                f"a stream decompresses to more than the {_mib(max_stream_bytes)} allowed per stream"
            )
        total += size
        if total > max_document_bytes:
            raise PdfLimitExceeded(
                f"its streams decompress to more than the {_mib(max_document_bytes)} allowed per document"
            )
    return total


def _mib(size: int) -> str:
    return f"{size / MIB:g} MiB"


def _plain_stream_sizes(data: bytes, max_stream_bytes: int) -> Iterator[int]:
    view = memoryview(data)
    for match in _STREAM_START.finditer(data):
        start = match.start()
        object_start = data.rfind(b"obj", max(0, start - _DICT_LOOKBACK), start)
        dictionary = data[object_start if object_start >= 0 else max(0, start - _DICT_LOOKBACK) : start]
        if _IMAGE.search(dictionary):
            continue
        body_start = match.end()
        body_end = data.find(b"endstream", body_start)
        body = view[body_start : body_end if body_end >= 0 else len(data)]
        yield _decoded_size(body, _filters(dictionary), max_stream_bytes)


def _filters(dictionary: bytes) -> list[bytes]:
    found = _FILTER.findall(dictionary)
    return _NAME.findall(found[-1]) if found else []


class _OverCap(Exception):
    """pypdf stopped a stage at the per-stream limit."""


def _decoded_size(body: memoryview, filters: list[bytes], cap: int) -> int:
    """The size after the filter chain, or after its last stage that could be decoded; cap + 1 once over."""
    decoded: bytes | memoryview = body
    for position, name in enumerate(filters):
        if name in _FLATE and position == len(filters) - 1:
            return min(_inflated_size(decoded, cap), cap + 1)  # the last stage: counted, not kept
        if name in _FLATE:
            decoded = b"".join(_inflated(decoded, cap))
        elif name in _BY_PYPDF:
            try:
                stage = _pypdf_decode(_BY_PYPDF[name], bytes(decoded), cap)
            except _OverCap:
                return cap + 1
            if stage is None:
                break
            decoded = stage
        else:
            break
        if len(decoded) > cap:
            return cap + 1
    return len(decoded)


def _inflated_size(compressed: bytes | memoryview, cap: int) -> int:
    return sum(len(chunk) for chunk in _inflated(compressed, cap))


def _inflated(compressed: bytes | memoryview, cap: int) -> Iterator[bytes]:
    """The inflated stream a megabyte at a time, until just over `cap`; a damaged stream gives what came
    before the damage (PDFium keeps that much too)."""
    inflater = zlib.decompressobj()
    produced = 0
    pending: bytes | memoryview = compressed
    try:
        while pending and produced <= cap and not inflater.eof:
            chunk = inflater.decompress(pending, _INFLATE_CHUNK)
            if not chunk:  # no progress: the input is used up, or leads nowhere
                return
            yield chunk
            produced += len(chunk)
            pending = inflater.unconsumed_tail
    except zlib.error:
        return


def _pypdf_decode(filter_name: str, encoded: bytes, cap: int) -> bytes | None:
    from pypdf import apply_configuration, filters
    from pypdf.errors import LimitReachedError, PyPdfError

    decoder: Any = getattr(filters, filter_name)
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        with apply_configuration(pypdf_limits(cap)):
            decoded: bytes = decoder.decode(encoded)
    except LimitReachedError as exc:
        raise _OverCap from exc
    except (PyPdfError, ValueError, TypeError, IndexError, KeyError):
        return None
    return decoded


def pypdf_limits(max_stream_bytes: int | None) -> Configuration:
    """pypdf's own decoding limits (its `Configuration`) set to the per-stream limit; None: as they are."""
    from pypdf import get_configuration

    current = get_configuration()
    if max_stream_bytes is None:
        return current
    return current.with_overwrites(
        zlib_maximum_output_length=max_stream_bytes,
        lzw_maximum_output_length=max_stream_bytes,
        run_length_maximum_output_length=max_stream_bytes,
        array_based_stream_maximum_output_length=max_stream_bytes,
        brotli_maximum_output_length=max_stream_bytes,
        jbig2_maximum_output_length=max_stream_bytes,
        image_maximum_buffer_size=max_stream_bytes,
        stream_decoding_work_maximum_length=max_stream_bytes,
    )


def _decrypted(data: bytes, max_stream_bytes: int) -> PdfReader | None:
    """pypdf's reader of an encrypted file, decrypted with the empty password (as the parsers open such
    files); None when the file is not encrypted after all, or cannot be opened so."""
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import LimitReachedError, PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    with apply_configuration(pypdf_limits(max_stream_bytes)):
        try:
            reader = PdfReader(io.BytesIO(data), strict=False)
            return reader if reader.is_encrypted and reader.decrypt("") else None
        except LimitReachedError as exc:
            raise PdfLimitExceeded(f"a stream is over a decoding limit ({exc})") from exc
        except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError, NotImplementedError):
            return None


def _decrypted_stream_sizes(reader: PdfReader, max_stream_bytes: int) -> Iterator[int]:
    from pypdf import apply_configuration
    from pypdf.errors import LimitReachedError
    from pypdf.generic import IndirectObject, StreamObject

    with apply_configuration(pypdf_limits(max_stream_bytes)):
        for generation, numbers in list(reader.xref.items()):
            for number in list(numbers):
                try:
                    found = IndirectObject(number, generation, reader).get_object()
                    if isinstance(found, StreamObject) and found.get("/Subtype") != "/Image":
                        yield len(found.get_data())
                except LimitReachedError:
                    yield max_stream_bytes + 1
                except Exception:  # noqa: S112 (a damaged object: the parsers skip it as well)
                    continue

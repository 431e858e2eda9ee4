"""References from an uploaded file: a PDF's reference section (parsed in the extraction's bounded
worker, split into entries as extraction splits them) or a `.bib` file's entries."""

from __future__ import annotations

from functions.common.errors import InvalidInput
from functions.extract.analysis import reference_entries
from functions.extract.pdf import is_pdf
from functions.extract.uploads import parse_upload
from functions.references import MAX_REFERENCES
from functions.references.errors import ReferencesTooLarge, UnsupportedUpload
from functions.references.parsing import CitedReference, parse_bibtex, parse_reference

BIBTEX_TYPES = frozenset({"application/x-bibtex", "text/x-bibtex", "application/x-bibtex-text-file"})
UPLOAD_ID = "references-upload"


def _is_bibtex(filename: str, content_type: str, data: bytes) -> bool:
    """Named or typed as BibTeX, or text that starts as BibTeX does (clients often send
    `application/octet-stream`)."""
    if filename.lower().endswith(".bib") or content_type in BIBTEX_TYPES:
        return True
    return data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"@"


def _bibtex_references(data: bytes) -> list[CitedReference]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput("the .bib file is not UTF-8 text", field="file") from exc
    try:
        return parse_bibtex(text)
    except InvalidInput as exc:
        raise InvalidInput(exc.message, field="file") from exc


def _pdf_references(data: bytes) -> list[CitedReference]:
    parsed = parse_upload(data, UPLOAD_ID, UPLOAD_ID)
    entries = reference_entries(parsed.text_pages)
    if not entries:
        raise InvalidInput("the PDF has no reference section that could be read", field="file")
    return [parse_reference(entry) for entry in entries]


def references_from_upload(filename: str, content_type: str, data: bytes) -> list[CitedReference]:
    """The file's references in order; 400 for an unreadable file or one without references, 413 past
    MAX_REFERENCES, 415 for a file that is neither a PDF nor BibTeX."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if is_pdf(data):
        references = _pdf_references(data)
    elif _is_bibtex(filename, media_type, data):
        references = _bibtex_references(data)
    else:
        raise UnsupportedUpload(
            f"file: {filename or 'the upload'} is neither a PDF nor a .bib file ({media_type or 'no type'})",
            field="file",
        )
    if len(references) > MAX_REFERENCES:
        raise ReferencesTooLarge(
            f"file: {len(references)} references, more than the {MAX_REFERENCES} one check takes",
            field="file",
        )
    return references

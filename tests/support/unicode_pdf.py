"""Real PDFs whose text layer holds any Unicode (look-alike letters, zero-width characters, other scripts).

`pdfgen.build_pdf` writes WinAnsi text, which cannot carry a Cyrillic letter or a zero-width space. Here each
distinct character of the document gets a one-byte code, and the font's `/ToUnicode` CMap maps the codes
back, which is how a PDF reader (pdfium, pypdf) recovers the text: the same mechanism real PDFs use.
The layout is `pdfgen.paper_pages`: a two-column paper with title, authors, abstract, sections.
"""

from __future__ import annotations

from tests.support.pdfgen import PAGE_HEIGHT, PAGE_WIDTH, TextRun, paper_pages

_CODES = [*range(0x21, 0x7F), *range(0xA1, 0x100), *range(0x01, 0x20), *range(0x80, 0xA1)]


def _string(codes: bytes) -> str:
    return "<" + codes.hex().upper() + ">"


def build_unicode_pdf(pages: list[list[TextRun]]) -> bytes:
    characters = sorted({c for runs in pages for run in runs for c in run.text if c != " "})
    if len(characters) > len(_CODES):
        raise ValueError("too many distinct characters for a one-byte font")
    code_of = {" ": 0x20, **{c: code for c, code in zip(characters, _CODES, strict=False)}}
    cmap_entries = "\n".join(
        f"<{code:02X}> <{''.join(f'{unit:04X}' for unit in _utf16(char))}>" for char, code in code_of.items()
    )
    cmap = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        "/CMapName /Adobe-Identity-UCS def /CMapType 2 def\n"
        "1 begincodespacerange <00> <FF> endcodespacerange\n"
        f"{len(code_of)} beginbfchar\n{cmap_entries}\nendbfchar\n"
        "endcmap CMapName currentdict /CMap defineresource pop end end"
    ).encode("ascii")
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, filled in below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream",
    ]
    page_ids = []
    for runs in pages:
        parts = [
            f"BT /F1 {r.size:g} Tf 1 0 0 1 {r.x:g} {r.y:g} Tm "
            f"{_string(bytes(code_of[c] for c in r.text))} Tj ET"
            for r in runs
        ]
        stream = "\n".join(parts).encode("ascii")
        page_id = len(objects) + 1
        page_ids.append(page_id)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_WIDTH} {PAGE_HEIGHT}] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_id + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    objects[1] = f"<< /Type /Pages /Kids [{kids}] /Count {len(page_ids)} >>".encode()
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _utf16(char: str) -> list[int]:
    data = char.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def unicode_paper_pdf(
    *, title: str, authors: str, abstract: str, sections: list[tuple[str, list[str]]], references: list[str]
) -> bytes:
    return build_unicode_pdf(
        paper_pages(title=title, authors=authors, abstract=abstract, sections=sections, references=references)
    )

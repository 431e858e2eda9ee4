"""The PRISMA 2020 flow diagram of a job (`prisma_flow.svg`), drawn as SVG from its flow: the standard
boxes (identification, screening, retrieval, eligibility, inclusion), each stage's exclusions in a box
to its right, arrows between them and the phase bars at the left. 794 px wide, A4's width at 96 dpi,
with 13 px text; every text is escaped."""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape

from functions.research.job.prisma import PrismaFlow, source_label

WIDTH = 794
FONT_SIZE = 13
LINE_HEIGHT = 18
PADDING = 10
BAR_X, BAR_WIDTH = 12, 30
MAIN_X, SIDE_X, BOX_WIDTH = 60, 440, 340
ROW_GAP = 34
CHARS_PER_LINE = 44  # what fits in a box at 13 px of a sans-serif face
# Rows that hold a phase bar of their own are at least as tall as its label, written upwards.
MIN_ROW_HEIGHTS = (120, 0, 0, 0, 76)


@dataclass(frozen=True)
class _Box:
    lines: list[str]

    @property
    def height(self) -> int:
        return 2 * PADDING + LINE_HEIGHT * len(self.lines)


def _wrapped(text: str) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > CHARS_PER_LINE:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return [*lines, current] if current else lines


def _box(heading: str, count: int, details: dict[str, int] | None = None) -> _Box:
    lines = _wrapped(f"{heading} (n = {count})")
    for label, value in (details or {}).items():
        lines += _wrapped(f"{label.replace('_', ' ')} (n = {value})")
    return _Box(lines)


def _identified_box(flow: PrismaFlow) -> _Box:
    lines = ["Records identified from:"]
    for name, count in flow.identified.items():
        lines += _wrapped(f"{source_label(name)} (n = {count})")
    return _Box(lines if flow.identified else [*lines, "no source (n = 0)"])


def _rows(flow: PrismaFlow) -> list[tuple[_Box, _Box | None]]:
    reasons = flow.exclusion_reasons
    return [
        (
            _identified_box(flow),
            _Box(
                [
                    "Records removed before screening:",
                    *_wrapped(f"Duplicate records removed (n = {flow.duplicates_removed})"),
                ]
            ),
        ),
        (
            _box("Records screened", flow.screened),
            _box("Records excluded", flow.excluded_screening, reasons.screening),
        ),
        (
            _box("Reports sought for retrieval", flow.sought_for_retrieval),
            _box("Reports not retrieved", flow.not_retrieved, reasons.not_retrieved),
        ),
        (
            _box("Reports assessed for eligibility", flow.assessed_full_text),
            _box("Reports excluded", flow.excluded_full_text, reasons.full_text),
        ),
        (_box("Studies included in review", flow.included), None),
    ]


def _text_lines(x: int, y: int, lines: list[str]) -> list[str]:
    return [
        f'<text x="{x + PADDING}" y="{y + PADDING + LINE_HEIGHT * index + FONT_SIZE}">{escape(line)}</text>'
        for index, line in enumerate(lines)
    ]


def _drawn_box(x: int, y: int, box: _Box, height: int) -> list[str]:
    return [
        f'<rect x="{x}" y="{y}" width="{BOX_WIDTH}" height="{height}" fill="#ffffff" stroke="#1f2933"/>',
        *_text_lines(x, y, box.lines),
    ]


def _phase_bar(label: str, top: int, bottom: int) -> list[str]:
    middle = (top + bottom) // 2
    centre = BAR_X + BAR_WIDTH // 2
    return [
        f'<rect x="{BAR_X}" y="{top}" width="{BAR_WIDTH}" height="{bottom - top}" rx="4" fill="#9ec5e8"/>',
        f'<text x="{centre}" y="{middle}" text-anchor="middle" dominant-baseline="middle" font-weight="bold" '
        f'transform="rotate(-90 {centre} {middle})">{escape(label)}</text>',
    ]


def prisma_svg(flow: PrismaFlow) -> str:
    parts: list[str] = []
    tops: list[int] = []
    bottoms: list[int] = []
    y = 16
    for (main, side), least in zip(_rows(flow), MIN_ROW_HEIGHTS, strict=True):
        height = max(main.height, side.height if side else 0, least)
        parts += _drawn_box(MAIN_X, y, main, height)
        if side is not None:
            parts += _drawn_box(SIDE_X, y, side, height)
            arrow_y = y + height // 2
            parts.append(_arrow(MAIN_X + BOX_WIDTH, arrow_y, SIDE_X, arrow_y))
        if tops:
            parts.append(_arrow(MAIN_X + BOX_WIDTH // 2, bottoms[-1], MAIN_X + BOX_WIDTH // 2, y))
        tops.append(y)
        bottoms.append(y + height)
        y += height + ROW_GAP
    bars = [
        *_phase_bar("Identification", tops[0], bottoms[0]),
        *_phase_bar("Screening", tops[1], bottoms[3]),
        *_phase_bar("Included", tops[4], bottoms[4]),
    ]
    height = y - ROW_GAP + 16
    return (
        "\n".join(
            [
                f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
                f'viewBox="0 0 {WIDTH} {height}" font-family="Helvetica, Arial, sans-serif" '
                f'font-size="{FONT_SIZE}" fill="#1f2933" role="img">',
                "<title>PRISMA 2020 flow diagram</title>",
                '<defs><marker id="arrowhead" markerWidth="10" markerHeight="8" refX="9" refY="4" orient="auto">'
                '<path d="M0,0 L10,4 L0,8 z" fill="#1f2933"/></marker></defs>',
                f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
                *bars,
                *parts,
                "</svg>",
            ]
        )
        + "\n"
    )


def _arrow(x1: int, y1: int, x2: int, y2: int) -> str:
    return (
        f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#1f2933" stroke-width="1.5" '
        'marker-end="url(#arrowhead)"/>'
    )

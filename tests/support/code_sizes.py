"""The house's size gate, beside ruff's complexity gate (`make lint`): no class over 300 lines and no
function over 60 in `functions/` and `infra/`, so that no room grows past one responsibility unseen.

    python -m tests.support.code_sizes [PATH ...]   (default: functions infra)
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 60
DEFAULT_ROOTS = ("functions", "infra")


@dataclass(frozen=True)
class Oversized:
    path: str
    line: int
    name: str
    kind: str
    lines: int
    limit: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} {self.name} has {self.lines} lines (limit {self.limit})"


def oversized(source: str, path: str) -> Iterator[Oversized]:
    """The classes and functions of one module's `source` longer than the gate allows."""
    for node in ast.walk(ast.parse(source, filename=path)):
        if isinstance(node, ast.ClassDef):
            kind, limit = "class", MAX_CLASS_LINES
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kind, limit = "function", MAX_FUNCTION_LINES
        else:
            continue
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        if lines > limit:
            yield Oversized(path, node.lineno, node.name, kind, lines, limit)


def scan(roots: Iterable[str]) -> list[Oversized]:
    found: list[Oversized] = []
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            found.extend(oversized(path.read_text(encoding="utf-8"), str(path)))
    return found


def main(argv: list[str]) -> int:
    found = scan(argv or DEFAULT_ROOTS)
    for item in found:
        print(item)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The blocks a report section is made of (paragraphs, tables, charts) and how a value is shown.

A :class:`Section` holds its blocks in order; the templates in ``accel/report/templates`` lay
them out as HTML and as Markdown. Numbers are shown with 4 significant digits, NaN (a value
that could not be measured: an arm did not run) as ``n/a``; a cell that does not apply is empty.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any


def num(value: Any, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; ``n/a`` for NaN, ``—`` for missing."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "inf"
        if abs(value) >= 10**digits:
            return f"{value:,.0f}"  # 28,126 rather than 2.813e+04
        return f"{value:.{digits}g}"
    return str(value)


def checksum_text(values: Sequence[float]) -> str:
    """Checksums with 10 significant digits: they are there to be compared."""
    return "; ".join(num(v, 10) for v in values) or "—"


#: How a cell's text is shown: muted where nothing was measured, marked where arms disagree.
_MUTED = ("skipped", "n/a", "—", "not compared", "not run")
_BAD = ("failed", "differ", "DISAGREE", "timed out")


def cell_class(text: str, value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and text != "n/a":
        return "num"
    if text.startswith(_BAD) or " differ" in text:
        return "bad"
    if text.startswith(_MUTED):
        return "muted"
    if text == "agree" or text.startswith("agree "):
        return "good"
    counted = re.fullmatch(r"(\d+)/(\d+) agree", text)
    if counted:
        return "good" if counted[1] == counted[2] else "bad"
    return ""


class Section:
    """One part of the page: its blocks (paragraphs, tables, figures) in order."""

    def __init__(self, anchor: str, title: str):
        self.anchor, self.title = anchor, title
        self.blocks: list[dict[str, Any]] = []
        #: ``(path, why)`` of the files of this section's kind that were set aside.
        self.rejected: list[tuple[Any, str]] = []

    def para(self, text: str) -> None:
        self.blocks.append({"kind": "para", "text": text})

    def table(self, caption: str, header: Sequence[str], rows: Iterable[Sequence[Any]], table_id: str) -> None:
        """A table; numbers shown by :func:`num`, strings as they are, each cell with its class."""
        shown = [[(text := c if isinstance(c, str) else num(c), cell_class(text, c)) for c in r] for r in rows]
        self.blocks.append({"kind": "table", "id": table_id, "caption": caption, "header": list(header), "rows": shown})

    def chart(self, svg: str, alt: str) -> None:
        """A chart (base64 SVG from :mod:`accel.report.charts`) with its description."""
        self.blocks.append({"kind": "figure", "alt": alt, "svg": svg})

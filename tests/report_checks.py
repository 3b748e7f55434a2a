"""What every ``accel report`` page must hold, read from its HTML (always) and in a browser (where one is found).

- :class:`Page` parses a page: its tables (by id, rows of cell texts), its sections, its
  charts per section (each an SVG embedded as a data URI), and its visible text;
- :func:`check_page` asserts the page shows no placeholder where a value belongs (``None``,
  ``nan``, matplotlib's raw ``$\\mathdefault{...}`` tick labels) in its text or in any chart's
  text, and that every chart is an SVG that parses and labels its ticks;
- :func:`browser` finds a Chromium (Playwright's own, or one installed on the machine) and
  :func:`check_in_browser` renders the page there: a full-page screenshot, every chart decoded,
  the rendered text free of the same placeholders.
"""

from __future__ import annotations

import base64
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

#: Text that stands where a value was expected: a Python None, a NaN written as text, a
#: matplotlib tick label drawn without mathtext.
PLACEHOLDERS = re.compile(r"\bNone\b|\bnan\b|\bNaN\b|\$\\mathdefault|\\mathdefault")
SVG_URI = "data:image/svg+xml;base64,"


class Page(HTMLParser):
    """Every table (by id) as rows of cell texts, the section ids, the charts of each section,
    the visible text (scripts and styles left out) and the links."""

    def __init__(self, text: str):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.sections: list[str] = []
        self.charts: dict[str, list[str]] = {}
        self.images: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._skip = 0
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("style", "script"):
            self._skip += 1
        if tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "section":
            self.sections.append(a.get("id"))
            self.charts[a.get("id")] = []
        elif tag == "img":
            self.images.append(a.get("src", ""))
            if self.sections:
                self.charts[self.sections[-1]].append(a.get("src", ""))
        for key in ("src", "href"):
            if key in a:
                self.links.append(a[key])

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self._skip -= 1
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def visible(self) -> str:
        return " ".join(self.text)

    def column(self, table: str, name: str) -> list[str]:
        header, *body = self.tables[table]
        return [row[header.index(name)] for row in body]

    def rows(self, table: str) -> list[dict[str, str]]:
        header, *body = self.tables[table]
        return [dict(zip(header, row)) for row in body]


def svg_of(src: str) -> str:
    assert src.startswith(SVG_URI), f"a chart is an embedded SVG, not {src[:40]!r}"
    return base64.b64decode(src[len(SVG_URI) :]).decode("utf-8")


def svg_texts(src: str) -> list[str]:
    """The text of every ``<text>`` element of a chart (matplotlib writes ticks, labels and legends as text)."""
    root = ET.fromstring(svg_of(src))
    return ["".join(el.itertext()) for el in root.iter() if el.tag.endswith("}text") or el.tag == "text"]


def placeholders(text: str) -> list[str]:
    return [text[max(0, m.start() - 40) : m.end() + 40] for m in PLACEHOLDERS.finditer(text)]


def check_page(text: str) -> Page:
    """Parse ``text`` and assert it shows no placeholder, in its text or in any chart."""
    page = Page(text)
    assert not placeholders(page.visible), placeholders(page.visible)
    assert page.images, "the page has charts"
    for src in page.images:
        labels = svg_texts(src)
        assert labels, "a chart's ticks and labels are text"
        found = [t for t in labels if PLACEHOLDERS.search(t)]
        assert not found, f"tick or label text in a chart: {found}"
    assert all(not link.startswith(("http:", "https:", "//")) for link in page.links if not link.startswith("#")), "offline"
    return page


def browser() -> tuple[str | None, str]:
    """A Chromium to drive with Playwright (Playwright's own if it is installed, else one on
    PATH), or None and why there is none."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None, "Playwright is not installed (pip install 'accel-tabular[browser]')"
    with sync_playwright() as p:
        own = p.chromium.executable_path
    if own and Path(own).exists():
        return own, ""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name), ""
    return None, "no Chromium found (neither Playwright's own nor chromium / google-chrome on PATH)"


def check_in_browser(page_path: Path, screenshot: Path, executable: str) -> dict:
    """Render ``page_path`` in Chromium: a full-page screenshot to ``screenshot``; assert every
    chart decoded and the rendered text holds no placeholder. Returns what was measured."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            tab = chromium.new_page(viewport={"width": 1280, "height": 900})
            tab.goto(page_path.resolve().as_uri())
            tab.wait_for_load_state("load")
            images = tab.evaluate(
                "() => Promise.all([...document.images].map(i => i.decode().then(() => [i.naturalWidth, i.naturalHeight,"
                " i.getBoundingClientRect().width], () => [0, 0, 0])))"
            )
            text = tab.evaluate("() => document.body.innerText")
            width = tab.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            tab.screenshot(path=str(screenshot), full_page=True)
        finally:
            chromium.close()
    assert images and all(w > 0 and h > 0 and shown > 0 for w, h, shown in images), images
    assert not placeholders(text), placeholders(text)
    assert width[0] <= width[1], f"the page scrolls sideways: {width}"
    assert screenshot.stat().st_size > 10_000
    return {"images": images, "text": text}

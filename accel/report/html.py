"""``accel report DIR``: one self-contained HTML page and a Markdown summary from result files.

It reads every ``*.json`` under DIR as a typed record (:func:`accel.record.read_record`: an old
record upgraded, one of the wrong shape set aside with a line saying what is wrong) and sorts
the records by their ``kind``: runs (``accel run``, in one process or on Dask), searches (``accel
hpo``), scripts compared (``accel compare``), benchmark results (``accel bench`` and the
benchmarks of ``benchmarks/``, by their ``benchmark``), scaling studies (``accel scale``) and
experiments snapshots (``accel experiments``).

The page opens with a summary, one row per record (:mod:`accel.report.overview`): its data, rows,
devices, headline speedup, the metric of each arm and the parity; then where it was measured,
said once (the machine, the code, each reason an arm did not run); then a section per kind in
its own shape (:mod:`accel.report.sections`). A section appears only when records of its kind
exist. Charts are SVGs whose text is text (:mod:`accel.report.charts`), embedded as data URIs,
so the page is one file that opens anywhere, offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2

from accel.errors import AccelError
from accel.record import BENCHMARKS, RECORD_KINDS, BenchRecord, RecordError, read_record, record_files
from accel.report import overview, sections
from accel.report.layout import Section


@dataclass
class Collected:
    """The records found, each as an :class:`~accel.report.overview.Entry`, oldest first; and the
    files not used, with why."""

    entries: list[overview.Entry] = field(default_factory=list)
    ignored: list[tuple[Path, str]] = field(default_factory=list)


def _when(e: overview.Entry) -> tuple[bool, str, str]:
    """Oldest first; a record that says not when it started, last."""
    when = e.record.started
    return (when is None, when.astimezone(timezone.utc).isoformat() if when and when.tzinfo else str(when or ""), str(e.path))


def collect(folder: Path) -> Collected:
    """Every record under ``folder`` (recursively) whose kind the report lays out."""
    folder = Path(folder)
    if not folder.is_dir():
        raise AccelError(f"report folder {str(folder)!r} does not exist")
    found = Collected()
    files, others = record_files(folder)  # a FIFO or a link to a device is never opened
    found.ignored += others
    for path in files:
        try:
            record = read_record(path)  # typed; an old record upgraded; nulls listed in it read back as NaN
        except RecordError as exc:  # not JSON, not a record, not the shape of its kind: set aside, named
            found.ignored.append((path, str(exc)))
            continue
        if isinstance(record, BenchRecord) and record.benchmark not in BENCHMARKS:
            found.ignored.append((path, f"a {record.benchmark!r} benchmark result: the report has no section for it"))
            continue
        summary = record.summary()  # a record that names no data is named by its file
        if summary.data in ("?", ""):
            summary.data = path.name
        found.entries.append(overview.Entry(path, record, summary))
    found.entries.sort(key=_when)
    return found


def render(found: Collected, folder: Path) -> tuple[str, str]:
    """The HTML page and the Markdown summary for what was found."""
    entries = found.entries
    overview.label_all(entries)
    built: list[Section] = []
    if any(e.record.measures for e in entries):
        built.append(summary := Section("summary", "Summary: one row per record"))
        summary.table(
            "Every record, oldest first. speedup: the one each record is summed up by, named under 'speedup of' (of a run: "
            "CPU arm seconds / GPU arm seconds; n/a: an arm did not run); a metric is shown for each arm that ran",
            *overview.summary_table(entries),
            "summary",
        )
    built.append(measured := Section("measured", "Where it was measured"))
    for line in overview.measured_on(entries):
        measured.para(line)
    for key, builder in sections.SECTIONS.items():  # by kind, or a bench record by kind:benchmark
        if members := [e for e in entries if key in (e.record.kind, f"{e.record.kind}:{getattr(e.record, 'benchmark', '')}")]:
            built.append(builder(members))

    for section in built:
        found.ignored += section.rejected
    built = [s for s in built if s.blocks]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    context = {
        "intro": (
            f"{len(entries)} result files from {folder} (generated {now}). Every number here was measured; "
            "an arm that did not run is left out of the tables, and why is said once, under Where it was measured."
        ),
        "sections": built,
        "ignored": [(p.name, why) for p, why in found.ignored],
    }
    # The page and summary templates (package data in accel/report/templates): HTML autoescaped,
    # Markdown not, and an unknown name in a template is an error rather than an empty string.
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("accel.report", "templates"),
        autoescape=jinja2.select_autoescape(["html.j2"]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    page = env.get_template("report.html.j2").render(context)
    md = env.get_template("report.md.j2").render(context)
    return page, md.rstrip() + "\n"


#: The summary row's figures of each entry of ``accel report --json``, after its file, kind and data.
_FIGURES = ("rows", "devices", "speedup", "speedup_of", "metrics", "parity")


@dataclass(frozen=True)
class Report:
    """A report written: the page's path, the Markdown summary and the records it was made from."""

    path: Path
    markdown: str
    folder: Path
    found: Collected

    def figures(self) -> dict[str, Any]:
        """What ``accel report --json`` prints: the page written, how many records of each kind it
        shows, one entry per record (its summary row's figures) and the files not used, with why."""
        return {
            "report": str(self.path),
            "folder": str(self.folder),
            "records": len(self.found.entries),
            "by_kind": {k: n for k in RECORD_KINDS if (n := sum(e.record.kind == k for e in self.found.entries))},
            "entries": [
                {"file": str(e.path), "kind": e.record.kind_text, "data": e.label, **{k: getattr(e.summary, k) for k in _FIGURES}}
                for e in self.found.entries
            ],
            "ignored": [{"file": str(p), "reason": why} for p, why in self.found.ignored],
        }


def write_report(folder: Path, out: Path | None = None, overwrite: bool = False) -> Report:
    """Write the HTML page for the records under ``folder``.

    Parameters
    ----------
    folder : Path
        Searched recursively for run records and benchmark results.
    out : Path, optional
        The page to write, refused if it exists unless ``overwrite``. Not given:
        ``folder/report.html``, or the next free ``report-NNN.html`` (accel chose the name).
    overwrite : bool, default False
        Replace ``out`` if it exists.

    Returns
    -------
    Report
        The page's path, the Markdown summary and the records shown.
    """
    from accel.files import NUMBER, exists_policy, refuse_existing, write_new

    exists = NUMBER if out is None else exists_policy(overwrite)
    out = Path(out) if out is not None else Path(folder) / "report.html"
    if out.suffix.lower() not in (".html", ".htm"):
        raise AccelError(f"the report is HTML: name it .html, not {out.name!r}")
    if exists != NUMBER:
        refuse_existing(out, "the report", exists)  # before reading anything
    found = collect(folder)
    if not found.entries:  # said: the first file read and not used, with why, and how many more
        aside = "".join(f"; set aside: {p.name} ({why})" for p, why in found.ignored[:1])
        aside += f", and {len(found.ignored) - 1} more" * (len(found.ignored) > 1)
        raise AccelError(f"no run records or benchmark results in {str(folder)!r} (looked for *.json){aside}")
    page, markdown = render(found, Path(folder))
    out = write_new(out, page.encode("utf-8"), "the report", "choose another --out", exists=exists)
    return Report(out, markdown, Path(folder), found)

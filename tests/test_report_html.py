"""accel report: one self-contained HTML page whose tables hold the numbers of the records."""

from __future__ import annotations

import base64
import json
import math
from html.parser import HTMLParser
from pathlib import Path

import pytest

from accel.cli.main import main
from accel.report.html import num
from tests import bench_bodies as bodies
from tests.conftest import read_json, records_in

# One module fixture runs bench groupby/models/crossover and a flights run end to end: slow tier.
pytestmark = pytest.mark.slow


class Tables(HTMLParser):
    """Collects every table (by id) as rows of cell texts, the section ids and the images."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.sections: list[str] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "section":
            self.sections.append(a.get("id"))
        elif tag == "img":
            self.images.append(a.get("src", ""))
        for key in ("src", "href"):
            if key in a:
                self.links.append(a[key])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def same(cell: str, value) -> bool:
    """The cell shows ``value`` as the report formats it, and reads back within that precision."""
    if cell != num(value):
        return False
    if isinstance(value, float) and math.isfinite(value):
        return float(cell.replace(",", "")) == pytest.approx(value, rel=1e-3, abs=1e-12)
    return True


SCALING = {
    "benchmark": "scaling",
    "rows": [
        {
            "workers": 1,
            "kind": "local",
            "stage": "train",
            "seconds": 40.0,
            "speedup_vs_1": 1.0,
            "efficiency": 1.0,
            "metric": 0.8061,
        },
        {
            "workers": 2,
            "kind": "local",
            "stage": "train",
            "seconds": 21.5,
            "speedup_vs_1": 1.8605,
            "efficiency": 0.9302,
            "metric": 0.8059,
        },
        {
            "workers": 4,
            "kind": "local",
            "stage": "train",
            "seconds": 12.25,
            "speedup_vs_1": 3.2653,
            "efficiency": 0.8163,
            "metric": 0.8057,
        },
    ],
}
OVERHEAD = {
    "benchmark": "groupby_overhead",
    "rows": 10_000_000,
    "k": 100,
    "target": 1.1,
    "dispatch_overhead_seconds": 1.25e-06,
    "questions": [
        {"question": "q1", "title": "sum v1 by id1", "accel_median": 0.278, "plain_median": 0.2791, "ratio": 0.99606,
         "ratio_min": 1.0021, "checksums_equal": True, "max_rel_diff": 0.0},
    ],
}  # fmt: skip
EXPERIMENTS = {
    "benchmark": "experiments",
    "rows": [
        {"name": "trial-3", "metric": 0.812, "seconds": 30.5, "peak_mb": 900.0, "pareto": True},
        {"name": "trial-1", "metric": 0.79, "seconds": 4.25, "peak_mb": 300.0, "pareto": True},
        {"name": "trial-2", "metric": 0.78, "seconds": 9.0, "peak_mb": 310.0, "pareto": False},
    ],
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("results")
    data = bodies.make_groupby_file(tmp_path_factory.mktemp("data"), n=3000, k=10)
    assert main(["bench", "groupby", "--data", str(data), "--repeats", "1", "--results", str(folder)]) == 0
    assert (
        main(
            [
                "bench",
                "models",
                "--rows",
                "300",
                "--features",
                "8",
                "--models",
                "ridge",
                "--repeats",
                "1",
                "--results",
                str(folder),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "bench",
                "crossover",
                "--operations",
                "groupby",
                "--min-rows",
                "100",
                "--max-rows",
                "1e3",
                "--repeats",
                "1",
                "--results",
                str(folder),
            ]
        )
        == 0
    )
    wf = folder.parent / "fast.yaml"
    wf.write_text("workflow: flights\nrows: 3000\nxgboost:\n  n_estimators: 20\n  max_depth: 4\n")
    assert main(["run", str(wf), "--out", str(folder / "runs"), "--device", "cpu"]) == 0
    (folder / "scaling.json").write_text(json.dumps(SCALING))
    (folder / "hpo.json").write_text(json.dumps(EXPERIMENTS))
    (folder / "overhead.json").write_text(json.dumps(OVERHEAD))
    (folder / "notes.json").write_text(json.dumps({"something": "else"}))
    return folder


@pytest.fixture(scope="module")
def page(report, tmp_path_factory):
    out = tmp_path_factory.mktemp("page") / "report.html"
    assert main(["report", str(report), "--out", str(out)]) == 0
    parser = Tables()
    parser.feed(out.read_text())
    return parser


def records(folder: Path, prefix: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.rglob("*.json")) if p.name.split("-", 3)[-1].startswith(prefix)]


def test_sections_exist_only_for_what_was_found(page):
    assert {"runs", "db-groupby", "models", "crossover", "scaling", "experiments", "ignored"} <= set(page.sections)
    assert "db-join" not in page.sections and "flights-overhead" not in page.sections


def test_page_is_self_contained_with_plots_inline(page):
    assert page.images, "plots are embedded"
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert all(not link.startswith(("http:", "https:", "//")) for link in page.links if not link.startswith("#"))


def test_db_table_holds_the_recorded_numbers(page, report):
    [result] = records(report, "db-groupby")
    rows = page.tables["db-groupby-0"]
    header, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    assert len(body) == 10
    for cells, q in zip(body, result["questions"]):
        assert cells[col["q"]] == q["question"] and cells[col["question"]] == q["title"]
        for name, key in (("CPU run1", "run1"), ("CPU run2", "run2"), ("CPU median", "median")):
            assert same(cells[col[name]], q["cpu"][key]), (name, cells[col[name]], q["cpu"][key])
        assert same(cells[col["rows"]], q["cpu"]["rows"])
        assert cells[col["CPU checksum"]] == "; ".join(num(v, 10) for v in q["cpu"]["checksum"])
        if q["gpu"]["status"] != "ok":
            assert cells[col["GPU run1"]] == q["gpu"]["status"] and cells[col["speedup"]] == "n/a"
            assert cells[col["answers"]] == "not compared"


def test_run_record_table(page, report):
    [record] = [json.loads(p.read_text()) for p in (report / "runs").glob("*.json")]
    body = page.tables["run-0"][1:]
    stages = list(record["arms"]["cpu"]["stages"])
    assert [r[0] for r in body] == [*stages, "total"]
    for cells in body:
        stage = cells[0]
        cpu = record["arms"]["cpu"]["total_seconds"] if stage == "total" else record["arms"]["cpu"]["stages"][stage]
        assert same(cells[2], cpu)
        assert cells[1] == "skipped" and cells[3] == "n/a"


def test_models_and_crossover_tables(page, report):
    [models] = records(report, "models")
    [row] = page.tables["models-0"][1:]
    m = models["models"][0]
    assert row[0] == "ridge" and same(row[2], m["cpu"]["fit"]["median"]) and same(row[8], m["cpu"]["quality"])
    [cross] = records(report, "crossover")
    body = page.tables["crossover-0-0"][1:]
    assert [r[0] for r in body] == ["100", "1000"]
    for cells, p in zip(body, cross["operations"][0]["points"]):
        assert same(cells[1], p["cpu"]["median"])


def test_scaling_and_experiments_tables(page):
    body = page.tables["scaling-0"][1:]
    assert len(body) == 3
    for cells, r in zip(body, SCALING["rows"]):
        expected = [r["workers"], r["kind"], r["stage"], r["seconds"], r["speedup_vs_1"], r["efficiency"], r["metric"]]
        assert all(same(c, v) for c, v in zip(cells, expected)), (cells, expected)
    body = page.tables["experiments-0"][1:]
    assert [c[0] for c in body] == ["trial-1", "trial-2", "trial-3"], "sorted by time"
    assert [c[4] for c in body] == ["yes", "no", "yes"]
    assert same(body[2][1], 0.812) and same(body[2][3], 900.0)


def test_markdown_summary_on_the_terminal(report, tmp_path, capsys):
    assert main(["report", str(report), "--out", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    assert "# accel report" in out and "## Scaling" in out and "| q1 | sum v1 by id1 |" in out
    assert f"report: {tmp_path / 'r.html'}" in out


def test_report_refuses_bad_folders(tmp_path, capsys):
    for argv, needle in (
        (["report", str(tmp_path / "nope")], "does not exist"),
        (["report", str(tmp_path)], "no run records or benchmark results"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("accel: error: ") and needle in err and "\n" not in err


def test_overhead_table(page):
    [cells] = page.tables["overhead-0"][1:]
    q = OVERHEAD["questions"][0]
    expected = [q["question"], q["title"], q["accel_median"], q["plain_median"], q["ratio"], q["ratio_min"], "yes", 0.0]
    assert all(same(c, v) for c, v in zip(cells, expected)), (cells, expected)


def test_values_from_the_records_are_escaped_in_the_page(tmp_path, capsys):
    """A run name, a caption, a paragraph or a file name holding HTML is shown as text, never markup."""
    nasty = "<b>&"
    folder = tmp_path / "results"
    folder.mkdir()
    rows = [{"name": nasty, "metric": 0.8, "seconds": 1.5, "peak_mb": 10.0, "pareto": True, "group": "<i>'g'\"</i>"}]
    (folder / "hpo.json").write_text(json.dumps({"benchmark": "experiments", "rows": rows}))
    (folder / "x<script>&.json").write_text(json.dumps({"something": "else"}))
    out = tmp_path / "r.html"
    assert main(["report", str(folder), "--out", str(out)]) == 0
    text = out.read_text()
    for raw in (nasty, "<i>", "<script>"):
        assert raw not in text, f"{raw!r} reached the page unescaped"
    assert "&lt;b&gt;&amp;" in text and "x&lt;script&gt;&amp;.json" in text
    parser = Tables()
    parser.feed(text)
    [cells] = parser.tables["experiments-0"][1:]
    assert cells[0] == nasty and cells[5] == "<i>'g'\"</i>", "the text reads back as it was recorded"
    assert parser.sections == ["experiments", "ignored"]
    # The Markdown summary is text for the terminal: not escaped.
    assert f"| {nasty} |" in capsys.readouterr().out


def test_a_search_record_is_shown_as_a_search_not_as_a_workflow_run(tmp_path, capsys):
    from accel.report.html import collect, kind_of

    out = tmp_path / "r"
    assert main(["hpo", "flights", "--trials", "2", "--rows", "3000", "--device", "cpu", "--out", str(out)]) == 0
    [path] = records_in(out)
    record = read_json(path)
    assert kind_of(record) == "hpo" and collect(out).by_kind["run"] == []
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    page = (out / "report.html").read_text()
    assert "Hyperparameter searches" in page and "Workflow runs" not in page
    assert "Parity: None" not in page
    study = record["study"]["name"]
    assert study in page and f"{record['trials']['complete']} of {record['trials']['total']}" in page

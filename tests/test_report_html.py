"""accel report on every kind of record: one self-contained HTML page whose tables hold the numbers of the records."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from accel.cli.bench import SHOWN_IGNORED
from accel.cli.main import main
from accel.report.layout import num
from tests import bench_bodies as bodies
from tests import report_checks
from tests.conftest import ROOT, read_json, records_in, run_accel

# One module fixture runs bench groupby/models/crossover, a flights run in one process and on
# Dask, a scaling study and accel compare end to end: slow tier.
pytestmark = pytest.mark.slow


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
    assert main(["run", str(wf), "--out", str(folder / "runs"), "--cluster", "local", "--workers", "1"]) == 0
    assert main(["scale", str(wf), "--cluster", "local", "--workers", "1,2", "--out", str(folder / "scale")]) == 0
    script = ROOT / "tests" / "compare_scripts" / "writes_files.py"
    proc = run_accel("compare", str(script), "--out", str(folder / "compare"), "--repeat", "1", "--", "2.5")
    assert proc.returncode == 0, proc.stderr
    (folder / "scaling.json").write_text(json.dumps(SCALING))
    (folder / "hpo.json").write_text(json.dumps(EXPERIMENTS))
    (folder / "overhead.json").write_text(json.dumps(OVERHEAD))
    (folder / "notes.json").write_text(json.dumps({"something": "else"}))
    return folder


@pytest.fixture(scope="module")
def page_path(report, tmp_path_factory):
    out = tmp_path_factory.mktemp("page") / "report.html"
    assert main(["report", str(report), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def page(page_path):
    return report_checks.check_page(page_path.read_text())


def records(folder: Path, prefix: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.rglob("*.json")) if p.name.split("-", 3)[-1].startswith(prefix)]


def test_sections_exist_only_for_what_was_found(page):
    assert page.sections == [
        "summary", "measured", "runs", "compare", "db-groupby", "models", "crossover", "overhead", "scaling",
        "experiments", "ignored",
    ]  # fmt: skip


def test_page_is_self_contained_with_charts_inline(page):
    assert page.images, "charts are embedded"
    for src in page.images:
        assert report_checks.svg_of(src).lstrip().startswith("<?xml")
    # Every chart of every section that draws one: the runs' stages and the top features of each
    # run's model (in one process and on Dask); a scaling chart per study.
    assert {s: len(c) for s, c in page.charts.items() if c} == {
        "runs": 3, "compare": 1, "db-groupby": 1, "models": 1, "crossover": 1, "scaling": 2, "experiments": 1,
    }  # fmt: skip


def test_summary_has_a_row_per_record_of_every_kind(page, report):
    rows = page.rows("summary")
    kinds = sorted(r["kind"] for r in rows)
    assert kinds == sorted(["run", "run on Dask", "scaling", "scaling", "compare", "bench db groupby", "bench models",
                            "bench crossover", "bench groupby overhead"])  # fmt: skip
    [dask] = [r for r in rows if r["kind"] == "run on Dask"]
    [record] = [read_json(p) for p in records_in(report / "runs") if read_json(p).get("mode") == "dask"]
    assert dask["devices"].startswith("Dask local: 1 CPU worker ×")
    assert dask["AUC (CPU arm)"] == num(record["arms"]["cpu"]["metrics"]["auc"])
    [compare] = [r for r in rows if r["kind"] == "compare"]
    assert compare["data"] == "writes_files.py 2.5" and compare["parity"] == "n/a"


def test_db_table_holds_the_recorded_numbers(page, report):
    [result] = records(report, "db-groupby")
    rows = page.tables["db-groupby-0"]
    header, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    assert len(body) == 10
    assert not [h for h in header if h.startswith("GPU")], "the GPU arm did not run: no column of skipped cells"
    for cells, q in zip(body, result["questions"]):
        assert cells[col["q"]] == q["question"] and cells[col["question"]] == q["title"]
        for name, key in (("CPU run1", "run1"), ("CPU run2", "run2"), ("CPU median", "median")):
            assert same(cells[col[name]], q["cpu"][key]), (name, cells[col[name]], q["cpu"][key])
        assert same(cells[col["rows"]], q["cpu"]["rows"])
        assert cells[col["CPU checksum"]] == "; ".join(num(v, 10) for v in q["cpu"]["checksum"])


def test_run_record_tables(page, report):
    records_ = [read_json(p) for p in records_in(report / "runs")]
    body = page.rows("runs-stages")
    assert [r["arm"] for r in body] == ["CPU arm", "CPU arm"], "one row per arm that ran, every run"
    for cells, record in zip(body, records_):
        cpu = record["arms"]["cpu"]
        for stage, seconds in cpu["stages"].items():
            assert same(cells[stage], seconds)
        assert same(cells["total"], cpu["total_seconds"])
    [dask] = page.rows("runs-dask")
    assert dask["workers"] == "1" and dask["worker kind"] == "CPU" and dask["training attempts"] == "1"


def test_models_and_crossover_tables(page, report):
    [models] = records(report, "models")
    m = models["models"][0]
    [row] = page.rows(f"models-0-{m['metric']}")
    assert (
        row["model"] == "ridge" and same(row["CPU fit"], m["cpu"]["fit"]["median"]) and same(row["CPU R²"], m["cpu"]["quality"])
    )
    [cross] = records(report, "crossover")
    body = page.tables["crossover-0-0"][1:]
    assert [r[0] for r in body] == ["100", "1000"]
    for cells, p in zip(body, cross["operations"][0]["points"]):
        assert same(cells[1], p["cpu"]["median"])


def test_scaling_and_experiments_tables(page, report):
    [study] = [read_json(p) for p in records_in(report / "scale")]
    body = page.rows("scaling-0")
    assert [(r["workers"], r["run"]) for r in body] == [("1", "single process"), ("1", "CPU workers"), ("2", "CPU workers")]
    kinds = {"single process": "single-process", "CPU workers": "cpu"}
    for cells in body:
        total = next(r for r in study["rows"] if r["stage"] == "total" and str(r["workers"]) == cells["workers"]
                     and r["kind"] == kinds[cells["run"]])  # fmt: skip
        assert same(cells["total"], total["seconds"]) and same(cells["speedup vs 1"], total["speedup_vs_1"])
        assert same(cells["AUC"], total["metric"])
    body = page.rows("scaling-1")  # a record written before records carried a kind: one stage timed
    assert len(body) == 3
    for cells, r in zip(body, SCALING["rows"]):
        assert cells["workers"] == str(r["workers"]) and cells["run"] == r["kind"] and cells["total"] == ""
        for column, key in (
            ("train", "seconds"),
            ("speedup vs 1", "speedup_vs_1"),
            ("efficiency", "efficiency"),
            ("metric", "metric"),
        ):
            assert same(cells[column], r[key]), (column, cells, r)
    body = page.tables["experiments-0-metric"][1:]
    assert [c[0] for c in body] == ["trial-1", "trial-2", "trial-3"], "sorted by time"
    assert [c[7] for c in body] == ["yes", "no", "yes"]
    assert same(body[2][4], 0.812) and same(body[2][6], 900.0)


def test_the_page_in_a_browser(page_path, page, tmp_path):
    executable, why = report_checks.browser()
    if executable is None:
        pytest.skip(why)
    shot = tmp_path / "report.png"
    seen = report_checks.check_in_browser(page_path, shot, executable)
    assert len(seen["images"]) == len(page.images)
    if os.environ.get("ACCEL_REPORT_SCREENSHOT"):  # where to keep the screenshot, to look at it
        shutil.copy(shot, os.environ["ACCEL_REPORT_SCREENSHOT"])


def test_markdown_summary_on_the_terminal_when_asked(report, tmp_path, capsys):
    assert main(["report", str(report), "--out", str(tmp_path / "r.html"), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "# accel report" in out and "## Scaling" in out and "| q1 | sum v1 by id1 |" in out
    assert f"report: {tmp_path / 'r.html'}" in out
    # Without --markdown: what the page holds in a few lines, and where it is.
    assert main(["report", str(report), "--out", str(tmp_path / "r2.html")]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 3 + SHOWN_IGNORED and "record(s) from" in out and "| q1 |" not in out, out
    assert out.splitlines()[-1] == f"report: {tmp_path / 'r2.html'}"
    # --quiet: only where it went.
    assert main(["report", str(report), "--out", str(tmp_path / "r3.html"), "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"report: {tmp_path / 'r3.html'}\n" and captured.err == ""


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
    assert main(["report", str(folder), "--out", str(out), "--markdown"]) == 0
    text = out.read_text()
    for raw in (nasty, "<i>", "<script>"):
        assert raw not in text, f"{raw!r} reached the page unescaped"
    assert "&lt;b&gt;&amp;" in text and "x&lt;script&gt;&amp;.json" in text
    parser = report_checks.Page(text)
    [cells] = parser.tables["experiments-0-metric"][1:]
    assert cells[0] == nasty and cells[8] == "<i>'g'\"</i>", "the text reads back as it was recorded"
    assert parser.sections == ["experiments", "ignored"]
    # The Markdown summary is text for the terminal: not escaped.
    assert f"| {nasty} |" in capsys.readouterr().out


def test_a_search_record_is_shown_as_a_search_not_as_a_workflow_run(tmp_path, capsys):
    from accel.record import kind_of
    from accel.report.html import collect

    out = tmp_path / "r"
    assert main(["hpo", "flights", "--trials", "2", "--rows", "3000", "--device", "cpu", "--out", str(out)]) == 0
    [path] = records_in(out)
    record = read_json(path)
    assert kind_of(record) == "hpo" and [e for e in collect(out).entries if e.record.kind == "run"] == []
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    page = (out / "report.html").read_text()
    assert "Hyperparameter searches" in page and "Workflow runs" not in page
    assert "Parity: None" not in page
    study = record["study"]["name"]
    assert study in page and f"{record['trials']['complete']} of {record['trials']['total']}" in page


def _page_of(record: dict, folder: Path) -> report_checks.Page:
    folder.mkdir()
    record.pop("nulls", None)
    (folder / "record.json").write_text(json.dumps(record))
    assert main(["report", str(folder), "--out", str(folder / "r.html")]) == 0
    return report_checks.check_page((folder / "r.html").read_text())


def test_a_cluster_run_whose_gpu_arm_ran_on_gpu_workers(report, tmp_path):
    """The layout of a --cluster local-cuda record: the GPU arm on Dask-CUDA workers, the CPU arm
    in this process. No GPU here: the CPU arm's dict is copied into the gpu slot, named so on the
    page; it is test data for the layout, not a measurement."""
    [record] = [read_json(p) for p in records_in(report / "runs") if read_json(p).get("mode") == "dask"]
    cpu = record["arms"]["cpu"]
    cluster = {**cpu["cluster"], "kind": "local-cuda", "worker_kind": "gpu"}
    gpu = {**cpu, "backend": "gpu", "device_name": "the CPU arm copied", "cluster": cluster}
    here = {k: v for k, v in cpu.items() if k not in ("cluster", "train_attempts", "workers_memory")}
    here |= {"placement": "process", "placement_note": "the CPU baseline in this process", "cluster": None}
    record["arms"] = {"gpu": gpu, "cpu": here}
    record["speedup"] = {k: 1.0 for k in record["speedup"]}
    record["parity"] |= {"gpu": record["parity"]["cpu"], "ok": True}
    page = _page_of(record, tmp_path / "in")
    [row] = page.rows("summary")
    threads = cluster["threads_per_worker"]
    assert row["kind"] == "run on Dask" and row["speedup"] == "1" and row["parity"] == "agree"
    assert row["devices"] == f"Dask local-cuda: 1 GPU worker × {threads} threads + CPU in this process"
    assert row["AUC GPU arm"] == row["AUC CPU arm"] == num(cpu["metrics"]["auc"])
    [dask] = page.rows("runs-dask")  # only the arm that ran on the cluster
    assert dask["arm"] == "GPU arm" and dask["cluster"] == "local-cuda" and dask["worker kind"] == "GPU"
    assert [r["arm"] for r in page.rows("runs-stages")] == ["GPU arm", "CPU arm", "speedup (CPU s / GPU s)"]


def test_a_scaling_study_of_both_arms(report, tmp_path):
    """The layout of an accel scale record whose GPU workers ran beside the CPU workers at each
    count. No GPU here: the CPU rows are copied as GPU rows with a GPU vs CPU of 2; test data for
    the layout, not a measurement."""
    [study] = [read_json(p) for p in records_in(report / "scale")]
    cpu_rows = [r for r in study["rows"] if r["kind"] == "cpu"]
    study["rows"] += [{**r, "kind": "gpu", "gpu_vs_cpu": 2.0} for r in cpu_rows]
    study["speedup_reference"] = {"gpu": 1, "cpu": 1}
    study.pop("skipped_arms")
    page = _page_of(study, tmp_path / "in")
    [row] = page.rows("summary")
    top = max(r["workers"] for r in cpu_rows)
    assert row["speedup"] == "2" and row["speedup of"] == f"total, {top} GPU workers vs as many CPU workers"
    assert row["devices"] == "Dask local: 1, 2 GPU and CPU workers; one process"
    total = next(r for r in cpu_rows if r["stage"] == "total" and r["workers"] == top)
    assert row["AUC GPU arm"] == row["AUC CPU arm"] == num(total["metric"])
    body = page.rows("scaling-0")
    assert [r["run"] for r in body] == ["single process", "CPU workers", "CPU workers", "GPU workers", "GPU workers"]
    assert [r["GPU vs CPU"] for r in body] == ["n/a", "n/a", "n/a", "2", "2"]
    labels = report_checks.svg_texts(page.charts["scaling"][0])
    assert "GPU workers, total" in labels and "CPU workers, total" in labels and "CPU workers, train" not in labels

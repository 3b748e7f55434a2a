"""accel report on real records of small runs: each record's kind, the summary first, each kind in
its own section, every run charted, what is common said once, and a page with no placeholder
where a value belongs; rendered in a headless Chromium where one is found."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from accel.cli.main import main
from accel.record import RECORD_KINDS, SCHEMA_VERSION, kind_of, record_files, record_head
from accel.report.html import write_report
from accel.report.layout import num
from tests import report_checks, tables
from tests.conftest import read_json
from tests.hpo_bodies import SMALL

FAST = {"workflow": "flights", "rows": 3000, "xgboost": {"n_estimators": 20, "max_depth": 4}}
#: A scaling study as records had it before they carried ``kind`` (schema version 1).
OLD_SCALING = {
    "benchmark": "scaling",
    "workflow": "flights",
    "metric_name": "auc",
    "rows": [
        {"workers": 1, "kind": "local", "stage": "total", "seconds": 40.0, "speedup_vs_1": 1.0, "efficiency": 1.0, "metric": 0.8061},
        {"workers": 2, "kind": "local", "stage": "total", "seconds": 21.5, "speedup_vs_1": 1.8605, "efficiency": 0.9302, "metric": 0.8059},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Real records: a flights run, a classification and a regression table, a search, a
    models benchmark, two experiments snapshots of the folder; and one old scaling record."""
    root = tmp_path_factory.mktemp("report")
    out, data = root / "records", root / "data"
    data.mkdir()
    tables.customers(400).to_csv(data / "customers.csv", index=False)
    tables.house_prices(300).to_parquet(data / "houses.parquet")
    (root / "fast.yaml").write_text(yaml.safe_dump(FAST))
    (root / "search.yaml").write_text(yaml.safe_dump(SMALL))
    runs = ["--out", str(out / "runs"), "--device", "cpu"]
    assert main(["run", str(root / "fast.yaml"), *runs]) == 0
    assert main(["run", "--data", str(data / "customers.csv"), "--target", "churned", *runs]) == 0
    assert main(["run", "--data", str(data / "houses.parquet"), "--target", "price", *runs]) == 0
    assert main(["hpo", str(root / "search.yaml"), "--trials", "2", "--device", "cpu", "--out", str(out / "hpo")]) == 0
    bench = ["bench", "models", "--rows", "300", "--features", "8", "--models", "ridge", "--repeats", "1"]
    assert main([*bench, "--results", str(out / "bench")]) == 0
    for _ in range(2):
        assert main(["experiments", str(out), "--out", str(out / "experiments")]) == 0
    (out / "old-scaling.json").write_text(json.dumps(OLD_SCALING))
    return out


@pytest.fixture(scope="module")
def built(folder, tmp_path_factory):
    report = write_report(folder, tmp_path_factory.mktemp("page") / "report.html")
    path, markdown = report.path, report.markdown
    return path, report_checks.check_page(path.read_text()), markdown


def written(folder):
    return {p: read_json(p) for p in record_files(folder)[0] if p.name != "old-scaling.json"}


def test_every_record_starts_with_its_kind(folder):
    expected = {"runs": "run", "hpo": "hpo", "bench": "bench", "experiments": "experiments"}
    records = written(folder)
    assert {p.parent.name for p in records} == set(expected)
    for path, record in records.items():
        assert list(record)[:3] == ["schema_version", "kind", "run_id"], path
        assert record["schema_version"] == SCHEMA_VERSION and record["kind"] == expected[path.parent.name]
        assert kind_of(record) == record["kind"]


def test_kind_is_read_and_inferred_only_for_old_records():
    assert record_head("hpo")["kind"] == "hpo" and set(RECORD_KINDS) >= {
        "run",
        "hpo",
        "compare",
        "bench",
        "scaling",
        "experiments",
    }
    with pytest.raises(ValueError, match="unknown record kind"):
        record_head("nonsense")  # type: ignore[arg-type]
    # Records of schema version 1 (or none) had no kind: it is inferred from the keys they had.
    assert kind_of({"schema_version": 1, "workflow": "flights", "arms": {}}) == "run"
    assert kind_of({"benchmark": "scaling", "rows": []}) == "scaling"
    assert kind_of({"benchmark": "experiments", "rows": []}) == "experiments"
    assert kind_of({"benchmark": "db_groupby"}) == "bench"
    assert kind_of({"schema_version": 1, "kind": "hpo", "arms": {}}) == "hpo"
    # From version 2 on the kind is read, never guessed; what is not a record has none.
    assert kind_of({"schema_version": SCHEMA_VERSION, "workflow": "flights", "arms": {}}) is None
    assert kind_of({"schema_version": SCHEMA_VERSION, "kind": "scaling", "workflow": "x", "arms": {}}) == "scaling"
    assert kind_of({"workflow": "x", "arms": ["not", "a", "mapping"]}) == "run"  # its shape is the reader's to check
    assert kind_of([1, 2]) is None and kind_of({"something": "else"}) is None


def test_summary_comes_first_with_one_row_per_record(folder, built):
    _, page, _ = built
    assert page.sections[0] == "summary"
    records = {p: r for p, r in written(folder).items() if r["kind"] != "experiments"}
    rows = page.rows("summary")
    assert len(rows) == len(records) + 1  # and the old scaling record
    assert sorted(r["kind"] for r in rows) == sorted(["run"] * 3 + ["hpo", "bench models", "scaling"])
    by_data = {r["data"]: r for r in rows if r["kind"] == "run"}
    assert set(by_data) == {"flights", "customers.csv", "houses.parquet"}  # a user's table by its file name
    # AUC and RMSE never share a column: a column per metric, for the arm that ran.
    assert not any(h.lower().startswith("metric") for h in page.tables["summary"][0])
    for record in records.values():
        if record["kind"] != "run":
            continue
        label = Path(record["config"]["data"]).name if record["config"]["data"] else record["workflow"]
        row, metric = by_data[label], record["parity"]["metric"]
        other = {"auc": "RMSE (CPU arm)", "rmse": "AUC (CPU arm)"}[metric]
        assert row[f"{metric.upper()} (CPU arm)"] == num(record["arms"]["cpu"]["metrics"][metric]) and row[other] == ""
        assert row["rows"] == f"{record['arms']['cpu']['rows']['train'] + record['arms']['cpu']['rows']['test']:,}"
        assert row["speedup"] == "n/a" and row["parity"] == "n/a" and row["devices"].startswith("CPU")
    [search] = [r for r in rows if r["kind"] == "hpo"]
    [hpo] = [r for r in records.values() if r["kind"] == "hpo"]
    assert search["AUC (CPU arm)"] == num(hpo["arms"]["cpu"]["metric"]) and search["parity"] == ""


def test_each_kind_in_its_own_section(folder, built):
    _, page, _ = built
    assert page.sections == ["summary", "measured", "runs", "hpo", "models", "scaling", "experiments"]
    [hpo] = [r for r in written(folder).values() if r["kind"] == "hpo"]
    # A search is never laid out as a workflow run with empty arms.
    assert "hpo" not in {r["run"] for r in page.rows("runs-stages")} and "Parity: None" not in page.visible
    [search] = page.rows("hpo-auc")
    assert search["study"] == hpo["study"]["name"] and search["trials"].startswith(f"{hpo['trials']['complete']} of 2")
    assert search["default AUC"] == num(hpo["baseline"]["metric"]) and search["tuned AUC"] == num(hpo["final"]["metric"])
    assert [r["arm"] for r in page.rows("runs-stages")] == ["CPU arm"] * 3, "an arm that did not run has no row"
    assert {r["run"] for r in page.rows("runs-classification")} == {"flights", "customers.csv"}
    assert [r["run"] for r in page.rows("runs-regression")] == ["houses.parquet"]
    assert "RMSE" in page.tables["runs-regression"][0] and "AUC" not in page.tables["runs-regression"][0]


def test_every_run_is_charted(built):
    _, page, _ = built
    # The runs: one chart of their stages, then the top features of the three runs' models.
    assert {s: len(c) for s, c in page.charts.items()} == {
        "summary": 0, "measured": 0, "runs": 4, "hpo": 1, "models": 1, "scaling": 1, "experiments": 1,
    }  # fmt: skip
    labels = " ".join(report_checks.svg_texts(page.charts["runs"][0]))
    for run in ("flights", "customers.csv", "houses.parquet"):
        assert f"{run} · CPU" in labels
    for stage in ("load", "features", "train", "predict"):
        assert stage in labels, "the legend names every stage"
    importances = [" ".join(report_checks.svg_texts(chart)) for chart in page.charts["runs"][1:]]
    assert all(re.search(r"top \d+ features", text) and "mean abs shap" in text for text in importances), importances
    assert any("carrier_hour_delay_rate" in text for text in importances), "the flights model's features are named"


def test_machine_and_each_skip_reason_said_once(folder, built):
    _, page, _ = built
    text = page.visible
    assert text.count("Machine: ") == 1 and "unknown CPU" not in text and "? cores" not in text
    reasons = set()
    for record in written(folder).values():
        gpu = (record.get("arms") or {}).get("gpu") or record.get("gpu") or {}
        if gpu.get("status") == "skipped":
            reasons.add(gpu["reason"])
    assert reasons
    for reason in reasons:
        assert text.count(reason) == 1, reason


def test_experiments_snapshots_are_not_repeated(folder, built):
    _, page, _ = built
    snapshots = sorted((folder / "experiments").glob("*.json"))
    assert len(snapshots) == 2
    assert f"left out: {snapshots[0].name}" in page.visible
    tables = [t for t in page.tables if t.startswith("experiments-")]
    assert tables == ["experiments-0-auc", "experiments-0-rmse"], "one snapshot, a table per metric"
    names = [r["name"] for t in tables for r in page.rows(t)]
    assert len(names) == len(set(names))
    assert "RMSE" in page.tables["experiments-0-rmse"][0] and "AUC" not in page.tables["experiments-0-rmse"][0]


def test_an_old_record_without_kind_is_read(built):
    _, page, _ = built
    [one, two] = page.rows("scaling-0")
    assert one["workers"] == "1" and two["workers"] == "2" and two["speedup vs 1"] == num(1.8605) and two["AUC"] == num(0.8059)


def test_both_arms_are_laid_out_when_both_ran(folder, tmp_path):
    """The layout of a record whose two arms ran. No GPU here: the CPU arm's dict is copied into
    the gpu slot, named so on the page; it is test data for the layout, not a measurement."""
    [(path, record)] = [
        (p, r) for p, r in written(folder).items() if r.get("config", {}).get("data", "") and "customers" in r["config"]["data"]
    ]
    record = copy.deepcopy(record)
    record["arms"]["gpu"] = {**record["arms"]["cpu"], "backend": "gpu", "device_name": "the CPU arm copied"}
    record["speedup"] = {k: 1.0 for k in record["speedup"]}
    record["parity"] |= {"gpu": record["parity"]["cpu"], "ok": True}
    record.pop("nulls", None)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / path.name).write_text(json.dumps(record))
    out = write_report(tmp_path / "in", tmp_path / "r.html").path
    page = report_checks.check_page(out.read_text())
    [row] = page.rows("summary")
    assert row["AUC GPU arm"] == row["AUC CPU arm"] and row["speedup"] == "1" and row["parity"] == "agree"
    assert row["devices"].startswith("the CPU arm copied + CPU")
    assert [r["arm"] for r in page.rows("runs-stages")] == ["GPU arm", "CPU arm", "speedup (CPU s / GPU s)"]
    labels = report_checks.svg_texts(page.charts["runs"][0])
    assert "customers.csv · GPU" in labels and "customers.csv · CPU" in labels


def test_the_page_in_a_browser(built, tmp_path):
    executable, why = report_checks.browser()
    if executable is None:
        pytest.skip(why)
    path, page, _ = built
    shot = tmp_path / "report.png"
    seen = report_checks.check_in_browser(path, shot, executable)
    assert len(seen["images"]) == sum(len(c) for c in page.charts.values())
    assert "Summary" in seen["text"] and "Where it was measured" in seen["text"]
    keep = os.environ.get("ACCEL_REPORT_SCREENSHOT")
    if keep:  # where to keep the screenshot, to look at it
        shutil.copy(shot, keep)

"""The fitted pipeline on the CPU arm: saved by every run, loaded afresh, scoring exactly what the
run predicted; ``accel predict`` in a fresh process; bad pipelines and bad rows refused in one line."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

import accel
from accel.errors import AccelError
from tests import pipeline_bodies as bodies
from tests.conftest import read_json, run_accel


@pytest.mark.parametrize(("table", "model"), bodies.CASES)
def test_every_model_round_trips_exactly(tmp_path, table, model):
    record, data = bodies.run_table(tmp_path, table, model, "cpu")
    pipeline = bodies.check_round_trip(record, data, "cpu", "cpu")
    bodies.check_api(pipeline, data)
    kinds = set(read_json(record)["arms"]["cpu"]["importances"])
    expected = {"xgboost": {"gain", "mean_abs_shap"}, "random_forest": {"impurity"}, "knn": set()}
    assert kinds == expected.get(model, {"abs_coefficient"})


def test_a_parquet_table_round_trips(tmp_path):
    record, data = bodies.run_table(tmp_path, "customers", "xgboost", "cpu", kind="parquet")
    bodies.check_round_trip(record, data, "cpu", "cpu")


def test_a_streamed_runs_pipeline_round_trips(tmp_path):
    record, data = bodies.run_table(tmp_path, "customers", "xgboost", "cpu", rows=5000, batch_rows=1024)
    assert read_json(record)["arms"]["cpu"]["executor"] == "streamed"
    pipeline = bodies.check_round_trip(record, data, "cpu", "cpu")
    assert set(pipeline.importances) == {"gain", "mean_abs_shap"}


@pytest.mark.slow
def test_a_dask_runs_pipeline_round_trips(tmp_path):
    cluster = {"kind": "local", "workers": 2, "threads_per_worker": 1}
    record, data = bodies.run_table(tmp_path, "customers", "xgboost", "cpu", rows=3000, cluster=cluster)
    r = read_json(record)
    assert r["arms"]["cpu"]["executor"] == "dask" and r["pipelines"]["cpu"]["trained_on"] == "cpu"
    bodies.check_round_trip(record, data, "cpu", "cpu")


@pytest.fixture(scope="module")
def customers_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("customers")
    record, data = bodies.run_table(folder, "customers", "xgboost", "cpu")
    return record, data, folder


def test_accel_predict_in_a_fresh_process_equals_the_run(customers_run, tmp_path):
    record, data, _ = customers_run
    out = tmp_path / "p.parquet"
    proc = run_accel(
        "predict", str(record), "--data", str(data), "--out", str(out), "--records", str(tmp_path), "--device", "cpu"
    )
    assert proc.returncode == 0, proc.stderr
    assert f"predictions: {out}" in proc.stdout
    predictions = pd.read_parquet(out)
    holdout = accel.load(record).holdout
    assert list(predictions.columns) == ["row", "prediction", "proba_no", "proba_yes"]
    assert predictions["row"].tolist() == list(range(len(pd.read_csv(data)))), "every row, in input order"
    np.testing.assert_array_equal(predictions["proba_yes"].to_numpy()[holdout["row"]], bodies.holdout_output(holdout))
    scoring = read_json(next(tmp_path.glob("*-predict-001.json")))
    assert scoring["kind"] == "predict" and scoring["output"]["arm"] == "cpu"
    assert scoring["arms"]["cpu"]["metrics"]["auc"] > 0.6, "the target is there: the metrics are computed"
    assert scoring["arms"]["cpu"]["rows_per_second"] > 0


def test_streamed_scoring_equals_scoring_in_memory(customers_run, tmp_path):
    record, data, _ = customers_run
    whole = accel.predict(record, data=data, out=tmp_path / "a.parquet", records=tmp_path, device="cpu")
    streamed = accel.predict(record, data=data, out=tmp_path / "b.csv", records=tmp_path, device="cpu", batch_rows=128)
    assert streamed.record["arms"]["cpu"]["executor"] == "streamed"
    assert streamed.record["arms"]["cpu"]["memory"]["batches"]["batches"] == 6
    pd.testing.assert_frame_equal(whole.predictions, streamed.predictions, check_dtype=False)
    assert whole.record["arms"]["cpu"]["metrics"] == streamed.record["arms"]["cpu"]["metrics"]


def test_unseen_categories_and_extra_columns_are_said(customers_run, tmp_path):
    record, data, _ = customers_run
    bodies.check_unseen_categories_are_counted(record, data, "cpu")


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda f: f.drop(columns=["monthly_spend", "city"]), "lacks column(s) the pipeline needs: 'city', 'monthly_spend'"),
        (lambda f: f.assign(monthly_spend=["n/a"] + f["monthly_spend"].astype(str).tolist()[1:]), "'monthly_spend' held numbers"),
    ],
)
def test_rows_it_cannot_score_are_refused_in_one_line(customers_run, change, needle):
    record, data, _ = customers_run
    with pytest.raises(AccelError, match=None) as caught:
        accel.load(record).predict(change(pd.read_csv(data)))
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def _copy(folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    return copy


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        (lambda f: (f / "model.ubj").unlink(), "incomplete: model.ubj is missing"),
        (lambda f: (f / "model.ubj").write_bytes((f / "model.ubj").read_bytes()[:-10]), "changed after it was saved"),
        (lambda f: (f / "tables" / "encoder-0.parquet").write_bytes(b"PAR1"), "changed after it was saved"),
        (lambda f: (f / "pipeline.json").write_text("{not json"), "not a readable pipeline manifest"),
        (lambda f: (f / "pipeline.json").write_text('{"format": "sklearn"}'), "is not an accel pipeline"),
        (
            lambda f: (f / "pipeline.json").write_text(
                json.dumps({**json.loads((f / "pipeline.json").read_text()), "format_version": 99})
            ),
            "written by a newer accel",
        ),
    ],
)
def test_a_damaged_or_foreign_pipeline_is_refused(customers_run, tmp_path, damage, needle):
    record, _, _ = customers_run
    folder, _ = accel.pipeline.pipeline_folder(record)
    copy = _copy(folder, tmp_path)
    damage(copy)
    with pytest.raises(AccelError) as caught:
        accel.load(copy)
    assert needle in str(caught.value)


def test_predict_refusals_are_one_line_and_write_nothing(customers_run, tmp_path):
    record, data, _ = customers_run
    existing = tmp_path / "there.csv"
    existing.write_text("x\n")
    cases = [
        (["--out", str(existing)], "already exists"),
        (["--out", str(tmp_path / "p.txt")], "a .parquet or .csv file"),
        (["--out", str(tmp_path / "p.csv"), "--arm", "gpu"], "has no gpu pipeline"),
    ]
    for extra, needle in cases:
        proc = run_accel("predict", str(record), "--data", str(data), "--records", str(tmp_path / "r"), *extra)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0], proc.stderr
    proc = run_accel("predict", str(data), "--data", str(data), "--out", str(tmp_path / "q.csv"))
    assert proc.returncode == 2 and "not a run record" in proc.stderr
    text = tmp_path / "text.csv"
    pd.read_csv(data).astype({"monthly_spend": object}).assign(
        monthly_spend=lambda f: f["monthly_spend"].where(f.index != 3, "abc")
    ).to_csv(text, index=False)
    proc = run_accel(
        "predict", str(record), "--data", str(text), "--out", str(tmp_path / "t.csv"), "--records", str(tmp_path / "r")
    )
    lines = [line for line in proc.stderr.splitlines() if line.startswith("accel: error")]
    assert proc.returncode == 2 and len(lines) == 1 and "'monthly_spend'" in lines[0] and "'abc'" in lines[0], proc.stderr
    text.unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["there.csv"], "nothing written, no record folder made"


@pytest.mark.slow
def test_dask_scoring_of_a_parquet_folder_equals_single_process_scoring(customers_run, tmp_path):
    record, data, _ = customers_run
    folder = tmp_path / "parts"
    folder.mkdir()
    frame = pd.read_csv(data)
    for i, start in enumerate(range(0, len(frame), 250)):
        frame.iloc[start : start + 250].to_parquet(folder / f"part-{i}.parquet", index=False)
    one = accel.predict(record, data=folder, out=tmp_path / "one.parquet", records=tmp_path, device="cpu")
    on_dask = accel.predict(
        record, data=folder, out=tmp_path / "dask.csv", records=tmp_path, device="cpu", cluster="local", workers=2,
        threads_per_worker=1,
    )  # fmt: skip
    arm = on_dask.record["arms"]["cpu"]
    assert arm["executor"] == "dask" and set(arm["stages"]) == {"load", "features", "predict"}
    pd.testing.assert_frame_equal(one.predictions, on_dask.predictions, check_dtype=False)
    assert arm["metrics"] == one.record["arms"]["cpu"]["metrics"]
    assert on_dask.record["clusters"]["cpu"]["workers"] == 2


def test_numbers_with_words_are_scored(tmp_path):
    bodies.check_numbers_with_words_are_scored(tmp_path, "cpu")

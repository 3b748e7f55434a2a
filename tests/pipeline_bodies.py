"""Test bodies of the fitted pipeline, shared by tests/test_pipeline.py (CPU) and
tests/test_pipeline_gpu.py (the GPU arm): a run keeps its hold-out rows' ids and predictions,
and the saved pipeline, loaded afresh, scores those rows of the source file to the same values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import accel
from tests import tables


def holdout_output(holdout: pd.DataFrame) -> np.ndarray:
    """The model's output kept in a pipeline's hold-out frame (``accel.pipeline.from_run``),
    as the run's predict stage gave it."""
    columns = [c for c in holdout.columns if c.startswith("prediction")]
    return holdout[columns[0]].to_numpy() if columns == ["prediction"] else holdout[columns].to_numpy()


#: Boosting rounds of the XGBoost runs here (the model's default is 300): enough trees to
#: have every kind of split, few enough for the default tier.
ROUNDS = 25

#: (name, table, target): a binary table with dates, missing values, booleans as text and a
#: target-encoded high-cardinality column; a regression; a multiclass target.
TABLES = {
    "customers": (lambda n=700: tables.customers(n), "churned"),
    "houses": (lambda n=500: tables.house_prices(n), "price"),
    "species": (lambda n=450: tables.iris_like(n), "species"),
}
TASKS = {"customers": "binary", "houses": "regression", "species": "multiclass"}
#: Every registry model, on the tables whose task it does.
MODELS = {
    "customers": ["xgboost", "random_forest", "logistic_regression", "knn"],
    "houses": ["xgboost", "random_forest", "linear_regression", "lasso", "knn"],
    "species": ["xgboost", "random_forest", "logistic_regression", "knn"],
}
CASES = [(table, model) for table, models in MODELS.items() for model in models]


def write_table(folder: Path, table: str, kind: str = "csv", rows: int | None = None) -> Path:
    frame = TABLES[table][0](rows) if rows else TABLES[table][0]()
    path = folder / f"{table}.{kind}"
    if kind == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


def workflow_file(folder: Path, data: Path, target: str, model: str, **extra: object) -> Path:
    """A workflow file naming the table and fewer boosting rounds."""
    import yaml

    settings = {"data": str(data), "target": target, "model": model, "xgboost": {"n_estimators": ROUNDS}, **extra}
    path = folder / f"{data.stem}-{model}.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


def run_table(
    folder: Path, table: str, model: str, device: str, kind: str = "csv", rows: int | None = None, **extra: object
) -> tuple[Path, Path]:
    """A run of ``model`` on ``table`` (``rows``: a larger one), with the workflow file's ``extra``
    settings; returns the record's path and the table's."""
    data = write_table(folder, table, kind, rows)
    flow = workflow_file(folder, data, TABLES[table][1], model, **extra)
    result = accel.run(flow, device=device, out=folder / "runs")
    arm = "gpu" if device == "gpu" else "cpu"
    assert result.record["arms"][arm]["status"] == "ok", result.record["arms"][arm].get("reason")
    assert arm in result.record["pipelines"], "the arm's pipeline is named in the record"
    return result.path, data


def source_rows(data: Path, rows: np.ndarray) -> pd.DataFrame:
    frame = pd.read_csv(data) if data.suffix == ".csv" else pd.read_parquet(data)
    return frame.iloc[rows].reset_index(drop=True)


def check_round_trip(record: Path, data: Path, device: str, arm: str, atol: float = 0.0) -> accel.pipeline.Pipeline:
    """The pipeline of ``arm``, loaded on ``device``, scores the run's hold-out rows of the source
    file to what the run predicted for them (exactly, or within ``atol``)."""
    pipeline = accel.load(record, device=device, arm=arm)
    assert pipeline.holdout is not None and len(pipeline.holdout) > 0
    rows = pipeline.holdout["row"].to_numpy()
    scored = pipeline.score(source_rows(data, rows))
    kept = holdout_output(pipeline.holdout)
    if atol == 0.0:
        np.testing.assert_array_equal(scored, kept)
    else:
        np.testing.assert_allclose(scored, kept, rtol=0, atol=atol)
    return pipeline


def check_api(pipeline: accel.pipeline.Pipeline, data: Path) -> None:
    """What a scikit-learn user reaches for: classes_, predict, predict_proba, importances."""
    rows = source_rows(data, np.arange(40))
    predicted = pipeline.predict(rows)
    assert len(predicted) == 40
    if pipeline.task == "regression":
        assert pipeline.classes_.size == 0 and np.isfinite(predicted).all()
        return
    proba = pipeline.predict_proba(rows)
    assert proba.shape == (40, len(pipeline.classes_))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)
    assert set(predicted) <= set(pipeline.classes_)
    np.testing.assert_array_equal(predicted, pipeline.classes_[np.argmax(proba, axis=1)])
    whole = pd.read_csv(data) if data.suffix == ".csv" else pd.read_parquet(data)
    assert len(pipeline.predict(str(data))) == len(whole), "a path is read as accel run reads it"


def check_unseen_categories_are_counted(record: Path, data: Path, device: str) -> None:
    """Rows to score with categories the run never saw, missing categories and a column it does
    not use: scored (finite), the unseen values counted (not the missing ones), the extra column named."""
    frame = pd.read_csv(data)
    frame.loc[:9, "plan"] = "platinum"
    frame.loc[10:14, "plan"] = None  # missing, as the training rows may have had: not unseen
    frame["extra"] = 1
    pipeline = accel.load(record, device=device)
    scored = pipeline.predict_proba(frame.drop(columns=["churned"]))
    assert np.isfinite(scored).all()
    assert any("'plan': 10 value(s) not seen in training" in n for n in pipeline.notices), pipeline.notices
    assert any("extra" in n and "ignored" in n for n in pipeline.notices), pipeline.notices


def check_numbers_with_words_are_scored(folder: Path, device: str, atol: float = 0.0) -> None:
    """A run on a table whose numeric columns hold a few words (``unknown``, ``?``, ``-``): its
    pipeline scores the hold-out rows as the run did, and new rows with another word there are
    scored too, the words counted as missing values."""
    data = folder / "words.csv"
    tables.customers_with_words(700).to_csv(data, index=False)
    result = accel.run(workflow_file(folder, data, "churned", "xgboost"), device=device, out=folder / "runs")
    pipeline = check_round_trip(result.path, data, device, "gpu" if device == "gpu" else "cpu", atol)
    frame = pd.read_csv(data).drop(columns=["churned"])
    frame.loc[:4, "monthly_spend"] = "not given"
    assert np.isfinite(pipeline.predict_proba(frame)).all()
    said = [n for n in pipeline.notices if n.startswith("column 'monthly_spend': ")]
    assert said and said[0].endswith("value(s) not numbers, scored as missing"), pipeline.notices

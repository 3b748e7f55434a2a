"""Bring your own table: ``accel run --data FILE --target COLUMN``.

:func:`plan_table` looks at the file and plans the run once, on the host (readers + schema):
how to read it, the column kinds, the task, the rows, the split, the leaks to drop. Each arm
then reads the same files with its own library (``load``) and applies the plan
(``features``, :mod:`accel.data.autofeatures`), so the two arms are comparable column for column.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from accel import _compat
from accel.backend import Backend
from accel.data.autofeatures import TableFeaturizer, build_table_features, probe_native_categories, target_codes
from accel.data.prepared import Prepared
from accel.data.readers import fingerprint, planned_source, read_source, resolve_source
from accel.data.schema import PlannedTable, TablePlan, make_plan, real_name
from accel.models import build_model
from accel.registry import MODELS
from accel.workflows.base import Workflow, WorkflowSettings

#: Column kinds are inferred from at most this many first rows (categories from all rows).
SCHEMA_ROWS = 200_000


def plan_table(
    data: str,
    target: str,
    task: str | None,
    drop: list[str],
    settings: WorkflowSettings,
    delimiter: str | None = None,
    family: str | None = None,
    date_formats: dict[str, str] | None = None,
) -> PlannedTable:
    """Check the file and plan the run (raises AccelError for every bad input).

    Reads on the host: the first rows (column kinds, leakage guard), the whole target column
    (rows, task, split) and, for a file longer than that, the distinct values of its
    categorical columns (streamed with pyarrow). A table larger than memory is never read whole.
    For the ``native`` ``family`` (a model that takes categories as they are), those first rows
    are kept for the encoding probe, the step after planning (:func:`probe_encodings`).
    ``date_formats`` (``--date-format``) gives columns' date layouts over the detected ones.
    """
    from accel.data.readers import column_uniques, read_column, read_head
    from accel.errors import AccelError
    from accel.guards import check_features, check_target

    source = planned_source(resolve_source(data, delimiter))  # each arm checks it is still what was planned
    t0 = time.perf_counter()
    try:
        head = read_head(source, SCHEMA_ROWS)
        target = real_name(target, list(source.columns))
        target_values = read_column(source, target) if target in source.columns and len(head) >= SCHEMA_ROWS else None
    except Exception as exc:  # noqa: BLE001 - a parser error on a user's file is their input's problem
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise AccelError(f"--data: cannot parse {str(source.original)!r} as {source.kind.upper()}: {first}") from None
    t1 = time.perf_counter()
    plan = make_plan(
        head, target, task, drop, settings.rows, settings.test_size, settings.seed, target_values, date_formats,
        source.arrow_kinds,
    )  # fmt: skip
    if target_values is not None:
        categorical = [c.name for c in plan.features if c.kind == "categorical"]
        plan.widen_vocabularies(column_uniques(source, categorical))
    check_target(plan, target_values if target_values is not None else head[target], settings.test_size, settings.seed)
    plan.notices += check_features(plan, head)
    t2 = time.perf_counter()
    plan.notices[:0] = list(source.notices)
    if settings.rows is not None and settings.rows >= plan.rows_in_file:
        plan.notices.append(
            f"--rows {settings.rows:,} is not less than the table's {plan.rows_in_file:,} rows: using all {plan.rows_in_file:,} rows"
        )
    kept = head if family == "native" else None  # the family of the models that take categories natively
    return PlannedTable(source, plan, t1 - t0, t2 - t1, head=kept)


def probe_encodings(planned: PlannedTable, seed: int, mode: str = "auto", train_rounds: int | None = None) -> None:
    """The encoding probe, a timed step of its own after planning (``planned.probe_seconds``).

    Where the table was planned for a model that takes categories natively, the encoding of
    categorical columns with many values is chosen by
    :func:`~accel.data.autofeatures.probe_native_categories` on the first rows planning read,
    which are then dropped. ``mode`` (``--probe auto|off|force``) and ``train_rounds`` (the
    model's boosting rounds, which bound the probe's cost) go to the probe; its decision is
    cached per file fingerprint.
    """
    t0 = time.perf_counter()
    if planned.head is not None:
        probe_native_categories(planned.head, planned.plan, seed, mode, fingerprint(planned.source), train_rounds)
    planned.head = None
    planned.probe_seconds = time.perf_counter() - t0


def probe_rows(chunks: Iterator[tuple[int, Any]], positions: np.ndarray) -> Any:
    """The plan rows of the first chunk that holds any: the rows a batch-size probe may use.

    Parameters
    ----------
    chunks : iterator of (int, DataFrame)
        ``(first_row, frame)`` chunks in file order (:func:`accel.data.readers.iter_chunks`).
    positions : ndarray
        The plan's rows (ascending file rows, each with a target).

    Returns
    -------
    DataFrame
        Those rows, with a fresh index; chunks without a plan row are read past.

    Raises
    ------
    ValueError
        When no chunk holds a plan row (the file changed since it was planned).
    """
    from accel.data.readers import planned_rows

    for start, frame in chunks:
        rows, _ = planned_rows(positions, start, frame)
        del frame
        if rows is not None:
            return rows.reset_index(drop=True)
    raise ValueError("no row of the file is a planned row: the file changed since the run was planned")


class TableWorkflow(Workflow):
    """A user's table with automatic features and the chosen model."""

    name = "table"
    plan: TablePlan
    planned: PlannedTable

    def __init__(self, settings: WorkflowSettings, planned: PlannedTable, model: str, model_params: dict[str, Any]):
        super().__init__()
        self.settings, self.planned, self.plan, self.model_name = settings, planned, planned.plan, model
        self.task = self.plan.task
        self.family = MODELS[model].caps.family
        self.model = build_model(model, self.task, model_params, settings.seed, n_classes=max(len(self.plan.classes or []), 2))

    def describe_data(self) -> dict[str, Any]:
        return {
            "source": self.planned.source.describe(),
            "schema": self.plan.describe(),
            "planning_seconds": {
                "read_on_host": round(self.planned.read_seconds, 6),
                "schema_inference": round(self.planned.infer_seconds, 6),
            },
            "encoding_probe_seconds": round(self.planned.probe_seconds, 6),
            "target": self.plan.target,
            "rows_requested": self.settings.rows,
        }

    def plan_batches(self, backend: Backend, budget: int, budget_source: str, batch_rows: int | None) -> Any:
        """In memory when the table fits the budget, else streamed from the file in batches.

        A streamed XGBoost run also plans what it holds besides the batch (XGBoost's quantile
        matrix pages and histograms, measured on the probe's rows, its training state and accel's
        own arrays), so that the budget covers the whole run (:func:`accel.batching.plan_streaming`).

        The probe's rows are plan rows (each with a target, :func:`probe_rows`), as every batch's
        are: a missing target has no class code (pandas gives -1, cuDF a null that becomes NaN),
        and XGBoost refuses such labels.
        """
        from accel.batching import BUDGET_USE, PROBE_ROWS, measure_bytes_per_row, plan_batches, plan_streaming
        from accel.data.readers import iter_chunks
        from accel.precision import frame_matrix, xgboost_features
        from accel.workflows.streaming_costs import measure_costs

        rows_total = len(self.plan.row_positions)
        if batch_rows is not None:
            return plan_batches(rows_total, 0.0, budget, budget_source, batch_rows)
        probed: dict[str, Any] = {}

        def probe() -> Any:
            # The real pipeline on the first plan rows: read, features (fitted on them), model input.
            chunks = iter_chunks(backend.xdf, self.planned.source, self.plan.read_columns, PROBE_ROWS, self.plan.csv_dtypes())
            frame = probe_rows(chunks, self.plan.row_positions)
            del chunks
            featurizer = TableFeaturizer(backend.xdf, self.plan, self.family, self.settings.seed)
            y = target_codes(backend.xdf, frame[self.plan.target], self.plan)
            folds = featurizer.folds[: len(frame)] if len(featurizer.folds) >= len(frame) else np.zeros(len(frame), int)
            featurizer.partial_fit(frame, y, folds)
            featurizer.finalize()
            X = featurizer.transform(frame, folds)
            matrix = frame_matrix(X, featurizer.categorical)
            probed.update(rows=len(frame), matrix=matrix, y=y, X=X, categorical=list(featurizer.categorical))
            return [frame, X, matrix]

        # The probe's row count is known once it has read (the plan rows among a chunk's rows):
        # it is measured whole, then divided.
        probe_bytes = measure_bytes_per_row(backend, probe, 1)
        probed_rows = int(probed.pop("rows"))
        per_row = probe_bytes / max(probed_rows, 1)
        if not MODELS[self.model_name].caps.streams or rows_total * per_row <= budget * BUDGET_USE:
            return plan_batches(rows_total, per_row, budget, budget_source, None, probe_rows=probed_rows)
        # What a streamed run holds besides its batch, measured on the probe's model input.
        names, types = xgboost_features(probed.pop("X").columns, probed.pop("categorical"))
        label = _compat.series_to_array(probed.pop("y"))
        costs = measure_costs(backend, self.model, self.plan, probed.pop("matrix"), label, names, types)
        return plan_streaming(rows_total, len(self.plan.train_pos), per_row, costs, budget, budget_source, probe_rows=probed_rows)

    def load(self, backend: Backend) -> Any:
        frame = read_source(backend.xdf, self.planned.source, self.plan.read_columns, self.plan.csv_dtypes())
        return frame.iloc[self.plan.row_positions].reset_index(drop=True)

    def features(self, backend: Backend, frame: Any) -> Prepared:
        prepared, report = build_table_features(backend.xdf, frame, self.plan, self.family, self.settings.seed)
        self.feature_reports[backend.name] = report.describe()
        return prepared

"""Streaming a table larger than the memory budget: every pass reads the table batch by batch.

The first pass parses the file and keeps its chunks as Arrow IPC in a temporary folder
(:class:`~accel.data.readers.ColumnarCache`); the later passes read them back from there instead of
parsing the CSV again. The folder is removed when the run ends.

1. **fit** — read each batch, keep its training rows, add their partial statistics (target
   sums and counts per category and fold); the statistics are then combined, and equal those of
   one pass over all rows (tested).
2. **to_device** — XGBoost builds its ``QuantileDMatrix`` from an ``xgboost.DataIter`` that reads
   and featurises the training rows batch by batch; only XGBoost's compressed matrix is held.
   When the plan puts that matrix in external memory (``ExtMemQuantileDMatrix``), its pages
   live on disk on the CPU arm and in host memory on the GPU arm (:meth:`~accel.backend.Backend.external_memory`).
3. **train** — boosting on that matrix.
4. **predict** — read each batch, featurise its test rows, predict, keep the predictions.

Times are accumulated per stage (reading counts as ``load`` and featurising as ``features`` in
every pass), so the table of stages means the same as for an in-memory run. Streaming trains
XGBoost only: scikit-learn and cuML estimators fit on one matrix in memory.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from accel import _compat
from accel._compat import Array, Frame
from accel.backend import Backend
from accel.batching import BatchPlan, with_backoff
from accel.data.autofeatures import TableFeaturizer, TableTransform, target_codes
from accel.data.readers import ColumnarCache, iter_chunks, planned_rows
from accel.early_stopping import search_between_stages
from accel.memory import MemorySettings, release_host_memory
from accel.metrics import task_metrics
from accel.pipeline import from_run
from accel.precision import frame_matrix, plan_precision, xgboost_features
from accel.registry import MODELS
from accel.result import Executed, Executor
from accel.timing import StageTimer, announced, timed_items
from accel.workflows.base import Workflow
from accel.workflows.streaming_costs import FOLD_DTYPE, row_dtype

if TYPE_CHECKING:
    from xgboost import Booster

    from accel.models import XGBoostModel
    from accel.result import Listener
    from accel.workflows.table import TableWorkflow


class Streamed(Executor[Workflow]):
    """The executor of a table larger than the memory budget: every pass reads it batch by batch."""

    name = "streamed"

    def __init__(self, plan: BatchPlan, settings: MemorySettings, rmm: dict[str, Any]):
        self.plan, self.settings, self.rmm = plan, settings, rmm

    def execute(self, backend: Backend, workflow: Workflow, timer: StageTimer, listener: Listener | None) -> Executed:
        plan = self.plan
        table = cast("TableWorkflow", workflow)  # a user's table is what streams: it has a plan
        run = _Stream(backend, table, plan, timer, listener)
        tplan, model, featurizer, cache = table.plan, run.model, run.featurizer, run.cache
        try:
            with announced(listener, backend.name, "fit pass"):
                batches = with_backoff(run.fit_pass, plan, backend, "fit pass")
            dtrain = run.to_device()
            search_between_stages(backend, model, listener, run.search)
            # Only the test rows are read again: the training rows' list and folds go before boosting.
            run.train, featurizer.folds = np.empty(0, run.test.dtype), np.empty(0, FOLD_DTYPE)

            # 3. boosting (on a trimmed heap: what the passes freed goes back to the system first)
            release_host_memory()
            with timer.stage("train"):
                booster = model.fit(backend, dtrain)
            del dtrain
            release_host_memory()
            prediction, y_test, pipeline = run.predict(booster)
        finally:
            cache_record = cache.describe()
            cache.close()

        metrics = task_metrics(table.task, y_test, prediction)
        memory_record = {
            "rmm": {**self.rmm, **(backend.rmm_statistics() or {})},
            "batches": {**plan.describe(), "batches_read_per_pass": batches, "external_memory": run.external_memory},
            "chunk_cache": cache_record,
            "precision": {
                "precision": self.settings.precision,
                "note": "streaming holds no feature matrix (XGBoost keeps its compressed one): float16 storage does not apply",
            },
        }
        report = featurizer.report
        table.feature_reports[backend.name] = {
            "encodings": report.encodings, "imputed": [], "scaled": False,
            **({"renamed": dict(report.renamed)} if report.renamed else {}),
        }  # fmt: skip
        rows_record = {
            "loaded": tplan.rows_in_file, "with_target": len(tplan.row_positions),
            "train": len(tplan.train_pos), "test": len(tplan.test_pos),
        }  # fmt: skip
        return Executed(model, booster, metrics, rows_record, list(run.names), memory_record, pipeline=pipeline)


class _Stream:
    """What the passes of one streamed run share (the arm, the plan, the chunk cache, the fitted
    features), and XGBoost's training matrix (2.) built from batches read and featurised on demand.

    When the budget cannot hold XGBoost's whole matrix it goes to XGBoost's external memory:
    pages on disk (CPU arm; files next to the chunk cache, removed with it) or in host memory
    (GPU arm), brought back page by page while boosting. The early-stopping search (the first
    arm to train) builds a matrix of its own, with the validation part of the training rows
    (the same rows as in memory: positions among the training rows) held apart.
    """

    def __init__(self, backend: Backend, workflow: TableWorkflow, plan: BatchPlan, timer: StageTimer, listener: Listener | None):
        self.backend, self.workflow, self.plan, self.timer, self.listener = backend, workflow, plan, timer, listener
        tplan, self.model = workflow.plan, cast("XGBoostModel", workflow.model)
        self.featurizer = TableFeaturizer(backend.xdf, tplan, MODELS[workflow.model_name].caps.family, workflow.settings.seed)
        self.featurizer.folds = self.featurizer.folds.astype(FOLD_DTYPE)  # the same folds, in a byte each
        # The first pass parses the file; the later ones read its chunks back from an Arrow cache.
        self.cache = ColumnarCache(backend.xdf, workflow.planned.source, tplan.read_columns, tplan.csv_dtypes())
        used, dtype = tplan.row_positions, row_dtype(max(int(tplan.rows_in_file), len(tplan.row_positions)))
        #: Which file rows are training / test rows (ascending), in :func:`row_dtype`.
        self.train, self.test = used[tplan.train_pos].astype(dtype), used[tplan.test_pos].astype(dtype)
        self.n_train = len(tplan.train_pos)  # the training rows (self.train is let go before boosting)
        es = self.model.early_stopping
        self.valid_mask = es.mask(self.n_train) if es is not None and es.searching else None
        self.held: dict[int, tuple[Any, Any]] = {}
        self.names: list[str] = []
        self.types: list[str] = []
        self.columns: list[str] = []
        self.placement = backend.external_memory()
        self.external = plan.training_matrix == "external"
        self.external_memory = self.placement if self.external else None

    def chunks(self, batch_rows: int, timed: bool = True) -> Iterator[tuple[int, Any]]:
        """The cached chunks as ``(first_row, frame)``, their reading timed as ``load`` unless not ``timed``."""
        return timed_items(self.cache.chunks(batch_rows), self.timer if timed else None)

    def fit_pass(self, batch_rows: int) -> int:
        """1. Fit the statistics from partial results of each batch's training rows; the batches read."""
        featurizer, tplan, xdf = self.featurizer, self.workflow.plan, self.backend.xdf
        featurizer.reset()  # a retry after an out-of-memory starts the sums afresh
        n = 0
        for start, frame in self.chunks(batch_rows):
            with self.timer.accumulate("features"):
                train, where = planned_rows(self.train, start, frame)
                if train is not None:
                    featurizer.partial_fit(train, target_codes(xdf, train[tplan.target], tplan), featurizer.folds[where])
                    del train
                del frame
                release_host_memory(collect=False)
            n += 1
        with self.timer.accumulate("features"):
            featurizer.finalize()
        return n

    def predict(self, booster: Booster) -> tuple[np.ndarray, np.ndarray, Any]:
        """4. Predictions batch by batch: (predictions, target codes, the fitted pipeline), its importances explained."""
        workflow, backend, explain_rows = self.workflow, self.backend, self.workflow.settings.explain_rows
        sample: list[Any] = []  # the first hold-out rows' matrices, for SHAP

        def keep(matrix: Any) -> None:
            if sum(len(m) for m in sample) < explain_rows:
                sample.append(matrix[:explain_rows])

        def predict_pass(batch_rows: int) -> tuple[np.ndarray, np.ndarray]:
            sample.clear()
            source, featurizer = workflow.planned.source, self.featurizer
            chunks = self.cache.chunks
            return predict_batches(backend.xdf, featurizer, booster, source, self.test, batch_rows, self.timer, chunks, keep)

        with announced(self.listener, backend.name, "predict pass"):
            prediction, y_test = with_backoff(predict_pass, self.plan, backend, "predict pass")
        precision = plan_precision("fp32", self.columns, [])
        pipeline = from_run(
            workflow, backend, self.model, booster, TableTransform(self.featurizer), precision, self.timer,
            lambda n: backend.xp.concatenate(sample)[:n] if sample else None,
            (workflow.plan.row_positions[workflow.plan.test_pos], prediction),
        )  # fmt: skip
        return prediction, y_test, pipeline

    def batch(self, start: int, frame: Frame, search: bool) -> tuple[Array, Array] | None:
        """One chunk's training rows as (matrix, labels), the validation rows held apart in the
        search's pass; None when the chunk has no training rows."""
        tplan, featurizer = self.workflow.plan, self.featurizer
        train, where = planned_rows(self.train, start, frame)
        if train is None:
            return None
        X = featurizer.transform(train, featurizer.folds[where])
        y = _compat.series_to_array(target_codes(self.backend.xdf, train[tplan.target], tplan))
        matrix = frame_matrix(X, featurizer.categorical)
        if search and self.valid_mask is not None and self.valid_mask[where].any():
            valid = self.backend.xp.asarray(self.valid_mask[where])
            self.held[start] = (matrix[valid], y[valid])
            matrix, y = matrix[~valid], y[~valid]
        if not self.names:
            self.names, self.types = xgboost_features(X.columns, featurizer.categorical)
            self.columns = [str(c) for c in X.columns]
        return matrix, y

    def build(self, batch_rows: int, search: bool = False) -> Any:
        """The ``QuantileDMatrix`` (or ``ExtMemQuantileDMatrix``) of ``batch_rows`` batches, read by an
        ``xgboost.DataIter`` (``search``: the early-stopping search's pass, validation rows held apart, untimed)."""
        import xgboost

        run, placement = self, self.placement
        self.held.clear()  # a retry with smaller batches holds the validation rows afresh
        prefix = str(run.cache.scratch() / ("matrix-search" if search else "matrix")) if self.external else None

        class FileBatches(xgboost.DataIter):
            def __init__(self) -> None:
                self._it: Iterator[tuple[int, Any]] | None = None
                super().__init__(
                    cache_prefix=prefix, on_host=placement["on_host"], min_cache_page_bytes=placement.get("min_cache_page_bytes")
                )

            def reset(self) -> None:
                self._it = None

            def next(self, input_data: Any) -> bool:
                if self._it is None:
                    self._it = run.chunks(batch_rows, timed=not search)
                for start, frame in self._it:
                    with run.timer.accumulate("features") if not search else nullcontext():
                        item = run.batch(start, frame, search)
                    del frame
                    if item is None:
                        continue
                    input_data(data=item[0], label=item[1], feature_names=run.names, feature_types=run.types)
                    del item
                    release_host_memory(collect=False)
                    return True
                return False

        options = {"max_bin": self.model.params.max_bin, "enable_categorical": True, "nthread": self.backend.n_threads}
        if not self.external:
            return xgboost.QuantileDMatrix(FileBatches(), **options)
        if "cache_host_ratio" in placement:  # the CPU matrix refuses the argument
            options["cache_host_ratio"] = placement["cache_host_ratio"]
        return xgboost.ExtMemQuantileDMatrix(FileBatches(), **options)

    def to_device(self) -> Any:
        """The training matrix, timed as ``to_device`` less the reading and featurising it did."""
        seconds = self.timer.seconds

        def clock() -> float:  # the time less the seconds reading and featurising took
            return time.perf_counter() - seconds.get("load", 0.0) - seconds.get("features", 0.0)

        with announced(self.listener, self.backend.name, "to_device"):
            start = clock()
            dtrain = with_backoff(self.build, self.plan, self.backend, "to_device")
            self.backend.synchronize()
            seconds["to_device"] = seconds.get("to_device", 0.0) + clock() - start
        return dtrain

    def search(self) -> None:
        """The early-stopping search: a pass of its own, outside the stages, on the training rows less
        the validation part, held apart as the batches go by and watched while it boosts; skipped
        when that part cannot be watched (too few rows, a class missing: known only once read; the
        record says so)."""
        import xgboost

        backend, model, held = self.backend, self.model, self.held
        dfit = with_backoff(lambda batch_rows: self.build(batch_rows, search=True), self.plan, backend, "rounds search")
        es = model.early_stopping
        assert es is not None  # the search runs only for a model that stops early
        if not held:
            es.check(self.n_train, np.empty(0), model.classes)  # too few training rows: says so
            return
        parts = [held[k] for k in sorted(held)]
        X, y = backend.xp.concatenate([m for m, _ in parts]), backend.xp.concatenate([v for _, v in parts])
        held.clear()
        if es.check(self.n_train, _compat.to_numpy(y), model.classes):
            dvalid = xgboost.QuantileDMatrix(
                X, label=y, ref=dfit, feature_names=self.names, feature_types=self.types,
                max_bin=model.params.max_bin, enable_categorical=True, nthread=backend.n_threads,
            )  # fmt: skip
            model.search(backend, dfit, dvalid)


def predict_batches(
    xdf: Any,
    featurizer: TableFeaturizer,
    booster: Any,
    source: Any,
    positions: np.ndarray,
    batch_rows: int,
    timer: StageTimer,
    chunks: Any = None,
    on_matrix: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Chunked features and inference: read the file ``batch_rows`` rows at a time, featurise the
    rows at ``positions`` (ascending file rows) with the fitted ``featurizer`` and predict them;
    only a batch and the predictions are held. Returns (predictions, target codes) in row order.
    Reading counts as ``load`` in ``timer``, featurising as ``features``, predicting as
    ``predict``; ``on_matrix(matrix)``, when given, sees each batch's float32 matrix. ``chunks(batch_rows)``, when given, yields the ``(first_row, frame)`` chunks
    instead of reading the file (a :class:`~accel.data.readers.ColumnarCache`).
    """
    tplan = featurizer.plan
    preds, labels = [], []
    reader = (
        chunks(batch_rows) if chunks is not None else iter_chunks(xdf, source, tplan.read_columns, batch_rows, tplan.csv_dtypes())
    )
    for start, frame in timed_items(reader, timer):
        with timer.accumulate("features"):
            rows, _ = planned_rows(positions, start, frame)
            del frame
            if rows is None:
                continue
            X = featurizer.transform(rows)
            y = target_codes(xdf, rows[tplan.target], tplan)
            del rows
        with timer.accumulate("predict"):
            matrix = frame_matrix(X, featurizer.categorical)
            preds.append(_compat.to_numpy(booster.inplace_predict(matrix)))
        if on_matrix is not None:
            on_matrix(matrix)
        labels.append(_compat.to_numpy(y))
        del X, y
        release_host_memory(collect=False)
    return np.concatenate(preds), np.concatenate(labels)

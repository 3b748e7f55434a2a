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
from contextlib import nullcontext
from typing import Any

import numpy as np

from accel import _compat
from accel.backend import Backend
from accel.batching import BatchPlan, with_backoff
from accel.data.autofeatures import TableFeaturizer, TableTransform, target_codes
from accel.data.readers import ColumnarCache, iter_chunks, planned_rows
from accel.early_stopping import search_between_stages
from accel.memory import MemorySettings, release_host_memory
from accel.metrics import task_metrics
from accel.pipeline import explained, from_run, holdout_frame
from accel.precision import frame_matrix, plan_precision, xgboost_features
from accel.registry import MODELS
from accel.result import Executed, Executor
from accel.timing import StageTimer
from accel.workflows.base import Workflow
from accel.workflows.streaming_costs import FOLD_DTYPE, row_dtype


class _Rows:
    """Which file rows are training / test rows (ascending), in :func:`row_dtype`."""

    def __init__(self, plan: Any):
        used = plan.row_positions
        dtype = row_dtype(max(int(plan.rows_in_file), len(used)))
        self.train: np.ndarray | None = used[plan.train_pos].astype(dtype)
        self.test = used[plan.test_pos].astype(dtype)


class Streamed(Executor[Workflow]):
    """The executor of a table larger than the memory budget: every pass reads it batch by batch."""

    name = "streamed"

    def __init__(self, plan: BatchPlan, settings: MemorySettings, rmm: dict[str, Any]):
        self.plan, self.settings, self.rmm = plan, settings, rmm

    def execute(self, backend: Backend, workflow: Workflow, timer: StageTimer, listener: Any) -> Executed:
        return _run_streaming(backend, workflow, self.plan, self.settings, self.rmm, timer, listener)


def _run_streaming(
    backend: Backend, workflow: Workflow, plan: BatchPlan, settings: MemorySettings, rmm: dict, timer: StageTimer, listener: Any
) -> Executed:
    tplan, source, model = workflow.plan, workflow.planned.source, workflow.model
    xdf = backend.xdf
    rows = _Rows(tplan)
    n_train = len(tplan.train_pos)  # the training rows (rows.train is let go before boosting)
    dtypes = tplan.csv_dtypes()
    columns = tplan.read_columns
    featurizer = TableFeaturizer(xdf, tplan, MODELS[workflow.model_name].caps.family, workflow.settings.seed)
    featurizer.folds = featurizer.folds.astype(FOLD_DTYPE)  # the same folds, in a byte each
    arm = backend.name

    # The first pass parses the file; the later ones read its chunks back from an Arrow cache.
    cache = ColumnarCache(xdf, source, columns, dtypes)

    def chunks(batch_rows: int, timed: bool = True):
        reader = cache.chunks(batch_rows)
        while True:
            with timer.accumulate("load") if timed else nullcontext():
                item = next(reader, None)
            if item is None:
                return
            yield item

    def announce(stage: str) -> float:
        if listener:
            listener.stage_started(arm, stage)
        return time.perf_counter()

    def done(stage: str, t0: float) -> None:
        if listener:
            listener.stage_finished(arm, stage, time.perf_counter() - t0)

    try:
        # 1. fit the statistics from partial results

        def fit_pass(batch_rows: int) -> int:
            featurizer.reset()  # a retry after an out-of-memory starts the sums afresh
            n = 0
            for start, frame in chunks(batch_rows):
                with timer.accumulate("features"):
                    train, where = planned_rows(rows.train, start, frame)
                    if train is not None:
                        featurizer.partial_fit(train, target_codes(xdf, train[tplan.target], tplan), featurizer.folds[where])
                        del train
                    del frame
                    release_host_memory(collect=False)
                n += 1
            with timer.accumulate("features"):
                featurizer.finalize()
            return n

        t0 = announce("fit pass")
        batches = with_backoff(fit_pass, plan, backend, "fit pass")
        done("fit pass", t0)

        # 2. XGBoost's matrix from batches read and featurised on demand
        import xgboost

        names: list[str] = []
        types: list[str] = []
        # The early-stopping search (the first arm to train): the validation part of the training
        # rows (the same rows as in memory: positions among the training rows) kept apart.
        es = getattr(model, "early_stopping", None)
        valid_mask = es.mask(n_train) if es is not None and es.searching else None
        held: dict[int, tuple[Any, Any]] = {}
        columns: list[str] = []

        placement = backend.external_memory()

        class FileBatches(xgboost.DataIter):
            def __init__(self, batch_rows: int, cache_prefix: str | None = None, search: bool = False) -> None:
                # search: the early-stopping search's pass (validation rows held apart, untimed)
                self.batch_rows, self.search = batch_rows, search
                self._it: Any = None
                super().__init__(
                    cache_prefix=cache_prefix,
                    on_host=placement["on_host"],
                    min_cache_page_bytes=placement.get("min_cache_page_bytes"),
                )

            def reset(self) -> None:
                self._it = None

            def next(self, input_data: Any) -> bool:
                if self._it is None:
                    self._it = chunks(self.batch_rows, timed=not self.search)
                while True:
                    item = next(self._it, None)
                    if item is None:
                        return False
                    start, frame = item
                    with timer.accumulate("features") if not self.search else nullcontext():
                        train, where = planned_rows(rows.train, start, frame)
                        if train is None:
                            continue
                        X = featurizer.transform(train, featurizer.folds[where])
                        y = _compat.series_to_array(target_codes(xdf, train[tplan.target], tplan))
                        matrix = frame_matrix(X, featurizer.categorical)
                        if self.search and valid_mask is not None and valid_mask[where].any():
                            valid = backend.xp.asarray(valid_mask[where])
                            held[start] = (matrix[valid], y[valid])
                            matrix, y = matrix[~valid], y[~valid]
                    if not names:
                        names[:], types[:] = xgboost_features(X.columns, featurizer.categorical)
                        columns[:] = [str(c) for c in X.columns]
                    input_data(data=matrix, label=y, feature_names=names, feature_types=types)
                    del frame, train, X, y, matrix
                    release_host_memory(collect=False)
                    return True

        t0 = announce("to_device")
        inner_before = timer.seconds.get("load", 0.0) + timer.seconds.get("features", 0.0)
        start_clock = time.perf_counter()

        external = plan.training_matrix == "external"

        def build(batch_rows: int, search: bool = False) -> Any:
            # When the budget cannot hold XGBoost's whole matrix it goes to XGBoost's external
            # memory: pages on disk (CPU arm; files next to the chunk cache, removed with it)
            # or in host memory (GPU arm), brought back page by page while boosting.
            held.clear()  # a retry with smaller batches holds the validation rows afresh
            prefix = str(cache.scratch() / ("matrix-search" if search else "matrix")) if external else None
            batches = FileBatches(batch_rows, prefix, search=search)
            options = {"max_bin": model.params.max_bin, "enable_categorical": True, "nthread": backend.n_threads}
            if not external:
                return xgboost.QuantileDMatrix(batches, **options)
            if "cache_host_ratio" in placement:  # the CPU matrix refuses the argument
                options["cache_host_ratio"] = placement["cache_host_ratio"]
            return xgboost.ExtMemQuantileDMatrix(batches, **options)

        dtrain = with_backoff(build, plan, backend, "to_device")
        backend.synchronize()
        inner = timer.seconds.get("load", 0.0) + timer.seconds.get("features", 0.0) - inner_before
        timer.seconds["to_device"] = timer.seconds.get("to_device", 0.0) + (time.perf_counter() - start_clock) - inner
        done("to_device", t0)

        def search() -> None:
            # A pass of its own, outside the stages: the training rows less the validation part,
            # which is held apart as the batches go by and watched while the search boosts.
            dfit = with_backoff(lambda batch_rows: build(batch_rows, search=True), plan, backend, "rounds search")
            dvalid = validation_matrix(backend, model, dfit, held, names, types, n_train)
            if dvalid is not None:
                model.search(backend, dfit, dvalid)

        search_between_stages(backend, model, listener, search)
        # Only the test rows are read again: the training rows' list and folds go before boosting.
        rows.train, featurizer.folds = None, np.empty(0, FOLD_DTYPE)

        # 3. boosting (on a trimmed heap: what the passes freed goes back to the system first)
        release_host_memory()
        with timer.stage("train"):
            booster = model.fit(backend, dtrain)
        del dtrain
        release_host_memory()

        # 4. predictions batch by batch
        sample: list[Any] = []  # the first hold-out rows' matrices, for SHAP

        def keep(matrix: Any) -> None:
            if sum(len(m) for m in sample) < workflow.settings.explain_rows:
                sample.append(matrix[: workflow.settings.explain_rows])

        def predict_pass(batch_rows: int) -> tuple[np.ndarray, np.ndarray]:
            sample.clear()
            return predict_batches(
                xdf, featurizer, booster, source, rows.test, batch_rows, timer, chunks=cache.chunks, on_matrix=keep
            )

        t0 = announce("predict pass")
        prediction, y_test = with_backoff(predict_pass, plan, backend, "predict pass")
        done("predict pass", t0)
        kept = from_run(workflow, backend, model, booster, TableTransform(featurizer), plan_precision("fp32", columns, []))
        explained(kept, timer, lambda n: backend.xp.concatenate(sample)[:n] if sample else None, workflow.settings.explain_rows)
        kept.holdout = holdout_frame(tplan.row_positions[tplan.test_pos], prediction)
    finally:
        cache_record = cache.describe()
        cache.close()

    metrics = task_metrics(workflow.task, y_test, prediction)
    memory_record = {
        "rmm": {**rmm, **(backend.rmm_statistics() or {})},
        "batches": {
            **plan.describe(),
            "batches_read_per_pass": batches,
            "external_memory": placement if external else None,
        },
        "chunk_cache": cache_record,
        "precision": {
            "precision": settings.precision,
            "note": "streaming holds no feature matrix (XGBoost keeps its compressed one): float16 storage does not apply",
        },
    }
    workflow.feature_reports[backend.name] = {
        "encodings": featurizer.report.encodings,
        "imputed": [],
        "scaled": False,
        **({"renamed": dict(featurizer.report.renamed)} if featurizer.report.renamed else {}),
    }
    rows_record = {
        "loaded": tplan.rows_in_file,
        "with_target": len(tplan.row_positions),
        "train": len(tplan.train_pos),
        "test": len(tplan.test_pos),
    }
    return Executed(model, booster, metrics, rows_record, list(names), memory_record, pipeline=kept)


def validation_matrix(
    backend: Backend, model: Any, dtrain: Any, held: dict[int, tuple[Any, Any]], names: list[str], types: list[str], n_train: int
) -> Any:
    """The validation part's ``QuantileDMatrix`` (on the search's matrix's cuts) from the rows held
    apart while that matrix was built; None when it cannot be watched (too few rows, a class
    missing: known only once read; the record says so)."""
    import xgboost

    es = getattr(model, "early_stopping", None)
    if es is None:
        return None
    if not held:
        es.check(n_train, np.empty(0), model.classes)  # too few training rows: says so
        return None
    xp = backend.xp
    parts = [held[k] for k in sorted(held)]
    X, y = xp.concatenate([m for m, _ in parts]), xp.concatenate([v for _, v in parts])
    held.clear()
    if not es.check(n_train, _compat.to_numpy(y), model.classes):
        return None
    return xgboost.QuantileDMatrix(
        X, label=y, ref=dtrain, feature_names=names, feature_types=types,
        max_bin=model.params.max_bin, enable_categorical=True, nthread=backend.n_threads,
    )  # fmt: skip


def predict_batches(
    xdf: Any,
    featurizer: TableFeaturizer,
    booster: Any,
    source: Any,
    positions: np.ndarray,
    batch_rows: int,
    timer: StageTimer | None = None,
    chunks: Any = None,
    on_matrix: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Chunked features and inference: read the file ``batch_rows`` rows at a time, featurise the
    rows at ``positions`` (ascending file rows) with the fitted ``featurizer`` and predict them;
    only a batch and the predictions are held. Returns (predictions, target codes) in row order.
    With a ``timer``, reading counts as ``load``, featurising as ``features``, predicting as
    ``predict``; ``on_matrix(matrix)``, when given, sees each batch's float32 matrix. ``chunks(batch_rows)``, when given, yields the ``(first_row, frame)`` chunks
    instead of reading the file (a :class:`~accel.data.readers.ColumnarCache`).
    """
    from contextlib import nullcontext

    tplan = featurizer.plan

    def stage(name: str) -> Any:
        return timer.accumulate(name) if timer is not None else nullcontext()

    preds, labels = [], []
    if chunks is not None:
        reader = chunks(batch_rows)
    else:
        reader = iter_chunks(xdf, source, tplan.read_columns, batch_rows, tplan.csv_dtypes())
    while True:
        with stage("load"):
            item = next(reader, None)
        if item is None:
            break
        start, frame = item
        item = None
        with stage("features"):
            rows, _ = planned_rows(positions, start, frame)
            del frame
            if rows is None:
                continue
            X = featurizer.transform(rows)
            y = target_codes(xdf, rows[tplan.target], tplan)
            del rows
        with stage("predict"):
            matrix = frame_matrix(X, featurizer.categorical)
            p = booster.inplace_predict(matrix)
            preds.append(_compat.to_numpy(p))
        if on_matrix is not None:
            on_matrix(matrix)
        labels.append(_compat.to_numpy(y))
        del X, y, p
        release_host_memory(collect=False)
    return np.concatenate(preds), np.concatenate(labels)

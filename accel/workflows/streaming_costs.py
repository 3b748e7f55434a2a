"""What a streamed XGBoost run holds besides the batch it reads, for its batch plan.

accel's own arrays are counted from their types (:func:`accel_bytes`, with the types the streamed
passes hold them in: :func:`row_dtype`, :data:`FOLD_DTYPE`, :data:`PREDICTION_BYTES`); XGBoost's
page bytes, build peak and histogram bins are measured on the probe's rows (:func:`measure_costs`).
The planner that adds them up phase by phase is :func:`accel.batching.plan_streaming`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from accel.backend import Backend


def row_dtype(rows_in_file: int) -> Any:
    """The integer type of the streamed passes' file-row lists: 4 bytes a row below 2**32 rows."""
    return np.uint32 if rows_in_file < 2**32 else np.int64


#: Target-encoding folds of the streamed passes, one per training row (values below TE_FOLDS).
FOLD_DTYPE = np.int8
#: Bytes per test row of the prediction pass's results: float32 predictions, int32 labels, each
#: held twice while the batches' parts are joined.
PREDICTION_BYTES = 2 * (4 + 4)


def accel_bytes(tplan: Any) -> int:
    """accel's own arrays in a streamed run, counted from their types: the plan's row positions
    and split, the passes' row lists, the target-encoding folds and the predictions with their
    labels. (The training rows' list and the folds are released before boosting; counted for the
    whole run, as they are held during the passes.)"""
    rows, train, test = len(tplan.row_positions), len(tplan.train_pos), len(tplan.test_pos)
    item = np.dtype(row_dtype(max(int(tplan.rows_in_file), rows))).itemsize
    plan_arrays = tplan.row_positions.nbytes + tplan.train_pos.nbytes + tplan.test_pos.nbytes
    return int(plan_arrays + (train + test) * item + train * np.dtype(FOLD_DTYPE).itemsize + test * PREDICTION_BYTES)


def measure_costs(backend: Backend, model: Any, tplan: Any, matrix: Any, label: Any, names: list[str], types: list[str]) -> Any:
    """What a streamed XGBoost run would hold besides its batch (:class:`~accel.batching.StreamingCosts`),
    from the probe's model input (``matrix``, ``label``).

    Where the arm keeps external-memory pages on disk (the CPU arm, :meth:`~accel.backend.Backend.external_memory`),
    the probe's rows become one page of an ``ExtMemQuantileDMatrix`` in a scratch folder (removed at once): the
    page file's size per row is what a page of the run holds, the peak while building it per row what building a
    page takes, and its quantile cuts give the histogram cache. Where they live in host memory (the GPU arm), the
    probe builds a ``QuantileDMatrix`` on the device and both figures are the device memory that build took.
    """
    import xgboost

    from accel import scratch
    from accel.batching import PAGE_NODE_BYTES, StreamingCosts, hist_bytes, measure_bytes_per_row
    from accel.cache import cache_dir

    rows, built = len(matrix), dict[str, Any]()
    options = {"max_bin": model.params.max_bin, "enable_categorical": True, "nthread": backend.n_threads}
    on_disk = backend.external_memory()["pages"] == "disk"

    class Probe(xgboost.DataIter):
        def __init__(self, cache_prefix: str | None) -> None:
            self.done = False
            super().__init__(cache_prefix=cache_prefix, on_host=False)

        def reset(self) -> None:
            self.done = False

        def next(self, input_data: Any) -> bool:
            if self.done:
                return False
            input_data(data=matrix, label=label, feature_names=names, feature_types=types)
            self.done = True
            return True

    folder = scratch.owned_folder(cache_dir() / "stream", "accel-probe-") if on_disk else None  # reclaimed if killed
    try:

        def build() -> Any:
            if folder is not None:
                built["m"] = xgboost.ExtMemQuantileDMatrix(Probe(str(Path(folder) / "probe")), **options)
            else:  # pages in host memory, the matrix built on the arm's device
                built["m"] = xgboost.QuantileDMatrix(matrix, label=label, feature_names=names, feature_types=types, **options)

        build_per_row = page_per_row = measure_bytes_per_row(backend, build, rows)
        if folder is not None:
            page_per_row = sum(p.stat().st_size for p in Path(folder).iterdir()) / max(rows, 1)
        cut = built.pop("m").get_quantile_cut()
    finally:
        if folder is not None:
            scratch.release(folder)
    depth = model.params.max_depth
    return StreamingCosts(
        accel_bytes=accel_bytes(tplan),
        page_bytes_per_row=page_per_row,
        build_bytes_per_row=build_per_row,
        hist_bytes=hist_bytes(len(cut[1]), depth),
        page_node_bytes=PAGE_NODE_BYTES * (2 ** (max(depth, 1) - 1) if 0 < depth < 16 else 2**15),
    )

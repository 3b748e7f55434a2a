"""Batch planning from a memory budget, and the out-of-memory backoff.

The budget (``--memory-budget``, by default half the free memory of the arm's device) is what a
run may hold. ``--batch-rows auto`` measures the bytes one row costs on a probe slice pushed
through the real pipeline (features and model input; the peak memory increase during the probe,
or the size of what it built, whichever is larger) and plans the largest batch whose peak stays
under the budget. When the whole table fits, it is processed in one piece; when it does not,
the table is streamed from its file batch by batch (see :mod:`accel.streaming`).

:func:`with_backoff` runs a batched step and, on an out-of-memory (``MemoryError`` on the host
or from RMM, CuPy's ``OutOfMemoryError``, XGBoost's CUDA allocation failures), halves the batch,
releases cached memory and retries; below :data:`MIN_BATCH_ROWS` it stops with an error naming
the budget and the bytes per row.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from accel.backend import Backend, is_out_of_memory
from accel.errors import AccelError
from accel.memory import MemoryMonitor, release_host_memory

log = logging.getLogger("accel.batching")
T = TypeVar("T")

#: No batch is planned or retried below this many rows.
MIN_BATCH_ROWS = 1024
#: Rows in the probe slice for ``--batch-rows auto``: large enough that the fixed costs of reading
#: (a Parquet row group decoded whole, buffers) do not dominate the bytes per row.
PROBE_ROWS = 100_000
#: Rows in a probe sized by the objects it returns (``peak=False``), which grow in proportion.
SIZE_PROBE_ROWS = 20_000
#: Headroom: a batch may use this share of the budget (temporaries, allocator slack).
BUDGET_USE = 0.8


@dataclass
class BatchPlan:
    """How a run is cut into batches, and why; stored in the run record."""

    budget_bytes: int
    budget_source: str
    bytes_per_row: float
    rows_total: int
    rows_per_batch: int
    mode: str  # "in-memory" (the table fits: one piece, batched model input) | "streaming"
    source: str  # "auto" (measured on a probe) | "given" (--batch-rows N) | "bound" (fits at a stated bound)
    probe_rows: int = 0
    retries: list[dict[str, Any]] = field(default_factory=list)
    #: XGBoost's training matrix when streaming: "in-memory" (``QuantileDMatrix``) or "external"
    #: (``ExtMemQuantileDMatrix``: pages on disk on the CPU arm, in host memory on the GPU arm; the
    #: record's ``external_memory`` says which); None when not planned (in-memory runs).
    training_matrix: str | None = None
    #: Bytes held besides the batch, as planned: XGBoost's matrix (or one page of it) and its
    #: per-row training state, with accel's own per-row arrays.
    held_bytes: int = 0
    matrix_bytes_per_row: float = 0.0

    @property
    def batches(self) -> int:
        return max(1, -(-self.rows_total // max(self.rows_per_batch, 1)))

    def describe(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "source": self.source,
            "budget_bytes": self.budget_bytes,
            "budget_source": self.budget_source,
            "bytes_per_row": round(self.bytes_per_row, 1),
            "probe_rows": self.probe_rows,
            "rows_total": self.rows_total,
            "rows_per_batch": self.rows_per_batch,
            "batches": self.batches,
            "oom_retries": list(self.retries),
            "training_matrix": self.training_matrix,
            "matrix_bytes_per_row": round(self.matrix_bytes_per_row, 1),
            "held_bytes": self.held_bytes,
        }


def measure_bytes_per_row(backend: Backend, probe: Callable[[], Any], rows: int, peak: bool = True) -> float:
    """Bytes per row of ``probe()`` (which pushes ``rows`` rows through the pipeline).

    The larger of: the peak memory increase while it ran (host RSS on the CPU arm; on the GPU
    arm :func:`device_increase`, which also sees allocations served by an RMM pool already
    reserved) and the bytes of what it returned (sized with ``nbytes`` or
    ``memory_usage(deep=True)``). ``peak=False`` counts only the latter, for a probe with a
    fixed cost that does not grow with rows (the flights loader reads its whole file).
    """
    if peak and not backend.is_gpu:
        release_host_memory()  # else memory cached from earlier work hides the probe's own peak
    monitor = MemoryMonitor(backend, interval=0.005)
    counting = backend.rmm_scope_begin()  # RMM's counters for the probe alone (False without them)
    try:
        with monitor:
            before_host, before_device = monitor.sample()
            built = probe()
            backend.synchronize()
            monitor.sample()
    finally:
        pool_peak = backend.rmm_scope_end() if counting else None
    if backend.is_gpu:
        increase = device_increase(before_device, monitor.peak_device, pool_peak)
    else:
        increase = monitor.peak_host - before_host
    size = _size_of(built)
    return max(increase if peak else 0, size, 1) / max(rows, 1)


def device_increase(in_use_before: int | None, in_use_peak: int | None, pool_peak: int | None) -> int:
    """The device memory a probe took at its peak.

    The larger of the rise of the device-wide memory in use (``cudaMemGetInfo``: allocations
    outside an RMM pool, such as XGBoost's own, and the pool growing) and the peak of what RMM
    allocated during the probe (``pool_peak``, RMM's statistics counted from the probe's start):
    an RMM pool reserved beforehand already counts as used, so allocations it serves do not move
    the device-wide figure. None readings count as 0.
    """
    return max((in_use_peak or 0) - (in_use_before or 0), pool_peak or 0, 0)


def _size_of(obj: Any) -> int:
    if obj is None:
        return 0
    if isinstance(obj, (list, tuple)):
        return sum(_size_of(o) for o in obj)
    if hasattr(obj, "memory_usage"):
        usage = obj.memory_usage(deep=True)
        return int(usage.sum()) if hasattr(usage, "sum") else int(usage)
    if hasattr(obj, "nbytes"):
        return int(obj.nbytes)
    return 0


def plan_batches(
    rows_total: int,
    bytes_per_row: float,
    budget_bytes: int,
    budget_source: str,
    batch_rows: int | None,
    probe_rows: int = 0,
) -> BatchPlan:
    """Plan batches for ``rows_total`` rows; a one-line error when not even one batch fits."""
    usable = budget_bytes * BUDGET_USE
    fits_rows = int(usable // max(bytes_per_row, 1.0))
    if batch_rows is None and fits_rows < min(MIN_BATCH_ROWS, rows_total):
        raise AccelError(
            f"--memory-budget {_human(budget_bytes)} is below the minimum for one batch: "
            f"{MIN_BATCH_ROWS:,} rows × {bytes_per_row:,.0f} bytes per row need "
            f"{_human(MIN_BATCH_ROWS * bytes_per_row / BUDGET_USE)}; raise the budget"
        )
    if batch_rows is not None:
        rows, source = min(batch_rows, rows_total), "given"
    else:
        rows, source = min(fits_rows, rows_total), "auto"
    mode = "in-memory" if rows >= rows_total else "streaming"
    return BatchPlan(budget_bytes, budget_source, bytes_per_row, rows_total, max(rows, 1), mode, source, probe_rows)


#: Bytes per training row held while boosting besides the matrix: XGBoost's own state (gradient
#: pairs, predictions, labels, row partitions, the external-memory pages it has mapped) and
#: accel's per-row arrays (file positions, split, target-encoding folds, the streaming row
#: lists). Not measured per run: set from XGBoost 3.2 on the 3e6-row table of
#: benchmarks/bench_own_table_speed.py, where boosting from external memory raised the RSS by
#: 166 bytes per training row and accel's arrays add about 35.
TRAIN_STATE_BYTES = 200
#: Streaming keeps XGBoost's quantile matrix in memory while it takes at most this share of the
#: usable budget (the batches get the rest); above it the matrix goes to external memory.
MATRIX_SHARE = 0.5
#: The batch size a refusal quotes a budget for, besides the bare minimum (fewer rows per batch
#: mean more batches, each a pass of reading and featurising).
PRACTICAL_BATCH_ROWS = 100_000


def plan_streaming(
    rows_total: int,
    train_rows: int,
    bytes_per_row: float,
    matrix_bytes_per_row: float,
    budget_bytes: int,
    budget_source: str,
    probe_rows: int = 0,
) -> BatchPlan:
    """Batches for a streamed XGBoost run whose whole process stays within the budget.

    What is held besides a batch is planned first: XGBoost's per-row training state and its
    quantile matrix (``matrix_bytes_per_row``, measured on the probe) when that takes at most
    :data:`MATRIX_SHARE` of the usable budget; else the matrix goes to XGBoost's external memory
    (``ExtMemQuantileDMatrix``: one page, the size of a batch, in memory at a time; on the device on
    the GPU arm, which prefetches up to two pages). The batch
    gets what is left. When not even :data:`MIN_BATCH_ROWS` rows fit, a one-line error says
    what budget would fit, before any work starts.
    """
    usable = budget_bytes * BUDGET_USE
    state = train_rows * TRAIN_STATE_BYTES
    matrix = train_rows * matrix_bytes_per_row
    if state + matrix <= usable * MATRIX_SHARE:
        kind, held, per_batch_row = "in-memory", state + matrix, bytes_per_row
    else:
        kind, held, per_batch_row = "external", state, bytes_per_row + matrix_bytes_per_row
    fits_rows = int((usable - held) // max(per_batch_row, 1.0))
    least = min(MIN_BATCH_ROWS, rows_total)
    if fits_rows < least:
        per_batch = bytes_per_row + matrix_bytes_per_row
        need = (state + least * per_batch) / BUDGET_USE
        practical = (state + min(PRACTICAL_BATCH_ROWS, rows_total) * per_batch) / BUDGET_USE
        # --rows that this budget holds: the training state shrinks with the rows.
        train_share = train_rows / max(rows_total, 1)
        rows_fit = int(max(usable - least * per_batch, 0) // max(TRAIN_STATE_BYTES * train_share, 1.0))
        raise AccelError(
            f"--memory-budget {_human(budget_bytes)} cannot hold this run: XGBoost's state for "
            f"{train_rows:,} training rows needs {_human(state)} even with its matrix in external memory, "
            f"and a batch of {least:,} rows {_human(least * per_batch)} more; at least {_human(need)} would fit "
            f"({_human(practical)} for batches of {min(PRACTICAL_BATCH_ROWS, rows_total):,} rows): "
            f"raise --memory-budget, or use --rows {rows_fit:,} or fewer"
        )
    rows = min(fits_rows, rows_total)
    plan = BatchPlan(budget_bytes, budget_source, bytes_per_row, rows_total, max(rows, 1), "streaming", "auto", probe_rows)
    plan.training_matrix, plan.held_bytes, plan.matrix_bytes_per_row = kind, int(held), matrix_bytes_per_row
    return plan


def with_backoff(step: Callable[[int], T], plan: BatchPlan, backend: Backend, what: str) -> T:
    """``step(rows_per_batch)``, halving the batch after each out-of-memory until it fits."""
    rows = plan.rows_per_batch
    while True:
        try:
            return step(rows)
        except Exception as exc:  # noqa: BLE001 - only out-of-memory is retried; the rest re-raised
            if not is_out_of_memory(exc):
                raise
            smaller = rows // 2
            if smaller < min(MIN_BATCH_ROWS, plan.rows_total):
                raise AccelError(
                    f"{what}: out of memory even at {rows:,} rows per batch (budget {_human(plan.budget_bytes)}, "
                    f"{plan.bytes_per_row:,.0f} bytes per row); raise --memory-budget or free memory on the device"
                ) from None
            log.warning("%s: out of memory at %d rows per batch; retrying with %d", what, rows, smaller)
            plan.retries.append(
                {"step": what, "rows": rows, "retry_rows": smaller, "error": type(exc).__name__, "at": time.time()}
            )
            backend.release_memory()
            rows = smaller
            plan.rows_per_batch = rows


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"

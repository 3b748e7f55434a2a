"""Batch planning from a memory budget, and the out-of-memory backoff.

The budget (``--memory-budget``, by default half the free memory of the arm's device) is what a
run may hold. ``--batch-rows auto`` measures the bytes one row costs on a probe slice pushed
through the real pipeline (features and model input; the peak memory increase during the probe,
or the size of what it built, whichever is larger) and plans the largest batch whose peak stays
under the budget. When the whole table fits, it is processed in one piece; when it does not,
the table is streamed from its file batch by batch (see :mod:`accel.streaming`).

:func:`with_backoff` runs a batched step and, on an out-of-memory (``MemoryError`` on the host
or from RMM, CuPy's ``OutOfMemoryError``, XGBoost's CUDA allocation failures), halves the batch,
releases cached memory and retries; below :data:`~accel.config.MIN_BATCH_ROWS` it stops with an error naming
the budget and the bytes per row.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from accel.backend import Backend, is_out_of_memory
from accel.config import MIN_BATCH_ROWS
from accel.errors import AccelError
from accel.memory import MemoryMonitor, release_host_memory

log = logging.getLogger("accel.batching")
T = TypeVar("T")

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
    #: Bytes held while boosting, as planned: XGBoost's state, histograms and matrix (whole or the
    #: pages held at once) with accel's own arrays.
    held_bytes: int = 0
    matrix_bytes_per_row: float = 0.0
    #: The planned peak of each phase of a streamed XGBoost run, and the budget's parts while
    #: boosting with what each is for (:class:`StreamingCosts`).
    phase_bytes: dict[str, int] = field(default_factory=dict)
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def batches(self) -> int:
        return max(1, -(-self.rows_total // max(self.rows_per_batch, 1)))

    def describe(self) -> dict[str, Any]:
        """The plan as the run record stores it (the bytes per row to one decimal)."""
        out = asdict(self)
        out.update(oom_retries=out.pop("retries"), budget_parts=out.pop("parts"), batches=self.batches)
        return {**out, "bytes_per_row": round(self.bytes_per_row, 1), "matrix_bytes_per_row": round(self.matrix_bytes_per_row, 1)}


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
    increase = (
        device_increase(before_device, monitor.peak_device, pool_peak) if backend.is_gpu else monitor.peak_host - before_host
    )
    return max(increase if peak else 0, _size_of(built), 1) / max(rows, 1)


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
    if isinstance(obj, (list, tuple)):
        return sum(_size_of(o) for o in obj)
    if hasattr(obj, "memory_usage"):
        usage = obj.memory_usage(deep=True)
        return int(usage.sum()) if hasattr(usage, "sum") else int(usage)
    if hasattr(obj, "nbytes"):
        return int(obj.nbytes)
    return 0


def plan_batches(
    rows_total: int, bytes_per_row: float, budget_bytes: int, budget_source: str, batch_rows: int | None, probe_rows: int = 0
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
    rows, source = (min(batch_rows, rows_total), "given") if batch_rows is not None else (min(fits_rows, rows_total), "auto")
    mode = "in-memory" if rows >= rows_total else "streaming"
    return BatchPlan(budget_bytes, budget_source, bytes_per_row, rows_total, max(rows, 1), mode, source, probe_rows)


# --------------------------------------------------------------------------- streamed XGBoost runs
#
# What a streamed XGBoost run holds besides its batch, each part measured (XGBoost 3.2, CPU
# ``hist``, benchmarks/bench_streamed_bytes.py: a standalone script feeding the same
# ``ExtMemQuantileDMatrix`` from the same batches, 1e5 to 3e6 rows) or counted (accel's arrays).

#: XGBoost's state per training row while boosting: gradient pairs, predictions, labels, the row
#: partition and its per-block buffers. XGBoost alone, boosting from pages of 80,000 training rows,
#: rose 66.6 B per training row (least-squares slope over 80,000-800,000 rows,
#: benchmarks/results/2026-12-02-streamed-bytes-cpu-001.json); less those pages' partition buffers
#: (:data:`PAGE_NODE_BYTES` x 128 nodes per 80,000 rows = 26.2 B), counted apart, 40 B.
TRAIN_STATE_BYTES = 40
#: Per external-memory page while boosting: every page has its own row partitioner, whose buffers
#: grow with the nodes split at the tree's last level (``2 ** (max_depth - 1)``); bytes per such
#: node and page (1.6 MiB per page measured at depth 8, i.e. 12.8 KiB a node, rounded up).
PAGE_NODE_BYTES = 16 * 1024
#: Pages of the quantile matrix held at once while boosting: the one being read, the one XGBoost
#: prefetches (it has two workers for that) and the last one built (measured: 2.3 pages' bytes).
PAGES_HELD = 3
#: XGBoost's histogram cache: one histogram per node of a tree (the CPU keeps up to 2**16), each
#: of its quantile bins holding a gradient and a hessian sum in float64.
HIST_BIN_BYTES = 16
HIST_MAX_NODES = 2**16
#: XGBoost's bytes while boosting that do not grow with the rows or pages (thread pools, buffers;
#: the least-squares intercept less the histogram cache).
XGBOOST_FIXED_BYTES = 16 * 10**6
#: Streaming keeps XGBoost's quantile matrix in memory when that still leaves batches of at least
#: this many rows (fewer rows per batch mean more batches, each a pass of reading and
#: featurising); above it the matrix goes to external memory. Also the batch size a refusal
#: quotes a budget for, besides the bare minimum.
PRACTICAL_BATCH_ROWS = 100_000


def hist_bytes(total_bins: int, max_depth: int) -> int:
    """XGBoost's histogram cache for trees of ``max_depth`` (0: no limit) on ``total_bins`` bins."""
    nodes = HIST_MAX_NODES if max_depth <= 0 or max_depth >= 16 else min(2 ** (max_depth + 1) - 1, HIST_MAX_NODES)
    return int(nodes * total_bins * HIST_BIN_BYTES)


@dataclass(frozen=True)
class StreamingCosts:
    """What a streamed XGBoost run holds besides the batch being read and featurised.

    Attributes
    ----------
    accel_bytes : int
        accel's own arrays for the whole run (the plan's row positions, the streamed passes' row
        lists and target-encoding folds, the predictions and their labels), counted from their dtypes.
    page_bytes_per_row : float
        XGBoost's quantile matrix per training row: the size of the probe's external-memory page.
    build_bytes_per_row : float
        XGBoost's peak while it builds a page from a batch, per row of the batch (the probe's).
    hist_bytes : int
        XGBoost's histogram cache (:func:`hist_bytes`).
    page_node_bytes : int
        Each external-memory page's row-partition buffers (:data:`PAGE_NODE_BYTES` per node).
    row_bytes : float
        XGBoost's state per training row (:data:`TRAIN_STATE_BYTES`).
    pages_held : int
        Pages held at once while boosting (:data:`PAGES_HELD`).
    fixed_bytes : int
        XGBoost's fixed bytes (:data:`XGBOOST_FIXED_BYTES`).
    """

    accel_bytes: int = 0
    page_bytes_per_row: float = 0.0
    build_bytes_per_row: float = 0.0
    hist_bytes: int = 0
    page_node_bytes: int = 0
    row_bytes: float = TRAIN_STATE_BYTES
    pages_held: int = PAGES_HELD
    fixed_bytes: int = XGBOOST_FIXED_BYTES

    def phases(self, kind: str, rows_total: int, train_rows: int, batch_rows: int, bytes_per_row: float) -> dict[str, float]:
        """The bytes held at the peak of each phase for batches of ``batch_rows`` plan rows.

        ``kind`` is the training matrix: "in-memory" or "external" (a page per batch). Boosting
        holds the parts of :meth:`boosting`, and with a whole matrix one page's partition buffers.
        """
        page_rows, _ = _pages(rows_total, train_rows, batch_rows)
        accel, batch, whole = self.accel_bytes, batch_rows * bytes_per_row, kind == "in-memory"
        build = accel + train_rows * self.page_bytes_per_row if whole else accel
        boosting = sum(v for v, _ in self.boosting(kind, rows_total, train_rows, batch_rows).values())
        return {
            "passes": accel + batch,
            "matrix build": build + batch + page_rows * self.build_bytes_per_row,
            "boosting": boosting + self.page_node_bytes if whole else boosting,
        }

    def boosting(self, kind: str, rows_total: int, train_rows: int, batch_rows: int) -> dict[str, tuple[float, str]]:
        """The budget's parts while boosting: bytes, and what each is for (for the run record)."""
        page_rows, pages = _pages(rows_total, train_rows, batch_rows)
        out = {
            "accel_arrays": (self.accel_bytes, "accel's row positions, split, streamed row lists, folds, predictions"),
            "xgboost_rows": (
                train_rows * self.row_bytes,
                f"XGBoost's gradient pairs, predictions, labels and row partition: {self.row_bytes:g} B per training row",
            ),
            "xgboost_histograms": (self.hist_bytes, "XGBoost's histogram cache: a histogram per tree node"),
            "xgboost_fixed": (self.fixed_bytes, "XGBoost's thread pools and buffers"),
        }
        if kind == "in-memory":
            out["matrix"] = (train_rows * self.page_bytes_per_row, "XGBoost's quantile matrix, whole, in memory")
        else:
            out["page_partitions"] = (pages * self.page_node_bytes, f"row-partition buffers of {pages} pages")
            out["pages_held"] = (
                self.pages_held * page_rows * self.page_bytes_per_row,
                f"{self.pages_held} external-memory pages of {page_rows:,.0f} rows in memory at once (read, prefetched, last built)",
            )
        return out


def _pages(rows_total: int, train_rows: int, batch_rows: int) -> tuple[float, int]:
    """The training rows of a page (one per batch of ``batch_rows`` plan rows), and the pages."""
    page_rows = max(batch_rows * (train_rows / max(rows_total, 1)), 1.0)
    return page_rows, -(-train_rows // max(int(page_rows), 1))


def _peaks(costs: StreamingCosts, kind: str, rows_total: int, train_rows: int, bytes_per_row: float) -> dict[int, float]:
    """The bytes held at the highest phase's peak (:meth:`StreamingCosts.phases`) for each batch size
    (plan rows) from the least (:data:`~accel.config.MIN_BATCH_ROWS`, or the whole table) up by 5 % to the whole table."""
    rows, sizes = float(min(MIN_BATCH_ROWS, rows_total)), []
    while rows < rows_total:
        sizes.append(int(rows))
        rows *= 1.05
    return {r: max(costs.phases(kind, rows_total, train_rows, r, bytes_per_row).values()) for r in [*sizes, rows_total]}


def plan_streaming(rows_total: int, train_rows: int, bytes_per_row: float, costs: StreamingCosts, budget_bytes: int,
                   budget_source: str, probe_rows: int = 0) -> BatchPlan:  # fmt: skip
    """Batches for a streamed XGBoost run whose whole process stays within the budget.

    Each phase's peak is planned (:meth:`StreamingCosts.phases`): the passes (accel's arrays and a
    batch), the matrix build (a batch and the page XGBoost builds from it) and boosting (XGBoost's
    per-row state, histograms and fixed part; its matrix whole, or the external-memory pages
    held at once and each page's partition buffers). XGBoost's matrix stays in memory when that
    leaves batches of :data:`PRACTICAL_BATCH_ROWS` rows (or the largest external-memory batch);
    else it goes to external memory (``ExtMemQuantileDMatrix``: one page per batch). The batch is
    the largest whose every phase fits the budget: each part is a measured peak of the resident
    set (allocator slack included) or an exact count, so no share of the budget is kept back as
    headroom (:data:`BUDGET_USE` is for the in-memory plan's one bytes-per-row figure). When none
    fits, a one-line error says what budget would fit, before any work starts.
    """
    usable = float(budget_bytes)
    external, in_memory = (
        max((r for r, peak in _peaks(costs, kind, rows_total, train_rows, bytes_per_row).items() if peak <= usable), default=0)
        for kind in ("external", "in-memory")
    )
    if in_memory and in_memory >= min(PRACTICAL_BATCH_ROWS, rows_total, max(external, 1)):
        kind, rows = "in-memory", in_memory
    elif external:
        kind, rows = "external", external
    else:
        raise AccelError(_refusal(costs, rows_total, train_rows, bytes_per_row, budget_bytes))
    phases = {k: int(v) for k, v in costs.phases(kind, rows_total, train_rows, rows, bytes_per_row).items()}
    return BatchPlan(budget_bytes, budget_source, bytes_per_row, rows_total, rows, "streaming", "auto", probe_rows,
                     training_matrix=kind, held_bytes=phases["boosting"], matrix_bytes_per_row=costs.page_bytes_per_row,
                     phase_bytes=phases, parts={k: {"bytes": int(v), "for": why} for k, (v, why)
                                                in costs.boosting(kind, rows_total, train_rows, rows).items()})  # fmt: skip


def _refusal(costs: StreamingCosts, rows_total: int, train_rows: int, bytes_per_row: float, budget_bytes: int) -> str:
    least, practical = min(MIN_BATCH_ROWS, rows_total), min(PRACTICAL_BATCH_ROWS, rows_total)
    # The fewest bytes a streamed run with an external-memory matrix holds at its peak (at the best batch size, or at practical).
    need = min(_peaks(costs, "external", rows_total, train_rows, bytes_per_row).values())
    need_practical = max(costs.phases("external", rows_total, train_rows, practical, bytes_per_row).values())
    state = train_rows * costs.row_bytes + costs.hist_bytes + costs.fixed_bytes + costs.accel_bytes

    def fits(n: int) -> bool:  # --rows n: accel's arrays and the training rows shrink with the rows
        scale = n / max(rows_total, 1)
        scaled = StreamingCosts(**{**costs.__dict__, "accel_bytes": int(costs.accel_bytes * scale)})
        return min(_peaks(scaled, "external", n, int(train_rows * scale), bytes_per_row).values()) <= budget_bytes

    lo, hi = 0, rows_total  # the largest --rows that fits, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if mid >= least and fits(mid) else (lo, mid - 1)
    rows_hint = f"use --rows {lo:,} or fewer" if lo >= least else "no --rows fits it"
    return (
        f"--memory-budget {_human(budget_bytes)} cannot hold this run: boosting {train_rows:,} training rows needs "
        f"{_human(state)} even with XGBoost's matrix in external memory (XGBoost's state "
        f"{_human(train_rows * costs.row_bytes)}, histograms {_human(costs.hist_bytes)}, accel's row arrays "
        f"{_human(costs.accel_bytes)}), and a batch of {least:,} rows more; at least {_human(need)} would fit "
        f"({_human(need_practical)} for batches of {practical:,} rows): raise --memory-budget, or {rows_hint}"
    )


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
            rows = plan.rows_per_batch = smaller


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"

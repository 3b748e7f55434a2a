"""The crossover size: from how many rows on the GPU arm beats the CPU arm.

Small inputs are often slower on the GPU: kernel launches, transfers and fixed costs dominate
until there is enough work to fill the device. :func:`sweep` measures chosen operations at row
counts spaced evenly on a log scale (1e3 .. 1e7 by default) on both arms and finds the smallest
size from which the GPU is faster at every larger size measured. Without a GPU the CPU curve is
measured and the GPU part is recorded as skipped with the reason: nothing is invented.

Operations:

- ``groupby``: db-benchmark groupby q3 ("sum v1 mean v3 by id3", K=100) on generated data;
- ``join``: db-benchmark join q2 ("medium inner on int") on generated data;
- any model of :data:`accel.bench.models.PAIRS` (``xgboost``, ``kmeans``, ...): fit time.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from accel.backend import Backend
from accel.bench.db import both_arms
from accel.errors import AccelError
from accel.registry import DEFAULT_MODEL
from accel.timing import measure, speedup

if TYPE_CHECKING:
    from accel.backend import Arms

#: The db-benchmark operations: the suite's question timed, and the operation's description.
FRAME_OPERATIONS = {
    "groupby": ("q3", "db-benchmark groupby q3 (sum v1 mean v3 by id3), K=100"),
    "join": ("q2", "db-benchmark join q2 (medium inner on int)"),
}
DEFAULT_OPERATIONS = ("groupby", "join", DEFAULT_MODEL)


def select_operations(names: str | Sequence[str] | None, say: Callable[[str], None] | None = None) -> list[str]:
    """The operations ``--operations`` names (older spellings of model keys noticed to ``say``)."""
    from accel.bench.db import pick_names
    from accel.bench.models import PAIRS, pair_name

    if names is None:
        return list(DEFAULT_OPERATIONS)
    return pick_names("operation", names, [*FRAME_OPERATIONS, *PAIRS], lambda n: pair_name(n, say, "--operations"))


def row_counts(min_rows: int, max_rows: int, steps_per_decade: int = 1) -> list[int]:
    """Row counts from ``min_rows`` to ``max_rows``, ``steps_per_decade`` per factor of 10 (log-spaced)."""
    if min_rows < 1 or max_rows < min_rows:
        raise AccelError(f"--min-rows ({min_rows}) must be at least 1 and at most --max-rows ({max_rows})")
    lo, hi = math.log10(min_rows), math.log10(max_rows)
    steps = int(math.floor((hi - lo) * steps_per_decade + 1e-9))
    return sorted({*(int(round(10 ** (lo + i / steps_per_decade))) for i in range(steps + 1)), max_rows})


def _operation(name: str, rows: int, seed: int, features: int) -> Callable[[Backend], Callable[[], Any]]:
    """Data for one size, and a factory giving each arm its timed call: the question on the
    arm's tables, loaded from generated data, or the model's fit on 80% of the rows."""
    from accel.bench.db import SUITES, load_tables
    from accel.bench.models import PAIRS, fitting, make_data
    from accel.data import datagen

    if name not in FRAME_OPERATIONS:
        pair = PAIRS[name]
        data = make_data(pair.task, max(rows, 10), features, seed)
        return lambda backend: fitting(pair, backend, data, seed)[0]
    suite, q = SUITES[name], SUITES[name].questions[FRAME_OPERATIONS[name][0]]
    arrow = (
        {"x": datagen.groupby_table(rows, min(100, rows), seed=seed)}
        if name == "groupby"
        else datagen.join_tables(rows, seed=seed)
    )
    return lambda backend: functools.partial(q.answer, load_tables(backend, suite, arrow))


def sweep(
    operations: Sequence[str], sizes: Sequence[int], arms: Arms, s: Mapping[str, Any], say: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Measure each operation at each size on both ``arms`` (the suite's settings ``s`` give the
    counts, seed and features; each size measured is told to ``say``); one entry per operation with its curve."""
    from accel.bench.models import PAIRS, gpu_pair_skip

    repeats, warmup, seed, features = s["repeats"], s["warmup"], s["seed"], s["features"]
    out = []
    for name in operations:
        points = []
        gpu_skip = gpu_pair_skip(PAIRS[name], arms.gpu, arms.gpu_skip) if name in PAIRS else arms.gpu_skip
        description = (
            FRAME_OPERATIONS[name][1] if name in FRAME_OPERATIONS else f"{name} fit, {features} features, 80% of the rows"
        )
        for rows in sizes:
            factory = _operation(name, rows, seed, features)

            def timed_at(_arm: str, backend: Backend) -> dict[str, Any]:
                timing, _ = measure(factory(backend), backend, repeats=repeats, warmup=warmup)
                return {"status": "ok", "median": timing.median, "timing": timing.as_dict()}

            # A size that fails on an arm (out of memory at the largest, say) is recorded; the sweep goes on.
            point: dict[str, Any] = {"rows": rows, **both_arms(arms, gpu_skip, timed_at)}
            point["speedup"] = speedup(point["cpu"].get("median"), point["gpu"].get("median"))  # NaN unless both ran
            points.append(point)
            cpu, gpu = (
                f"{point[a]['median']:.4f} s" if point[a]["status"] == "ok" else point[a]["status"] for a in ("cpu", "gpu")
            )
            say(f"{name:<20} {rows:>12,} rows  CPU {cpu:>12}  GPU {gpu}")
        # The smallest size from which the GPU arm is faster at every larger size measured (None if never: NaN is not > 1).
        wins = list(itertools.takewhile(lambda p: p["speedup"] > 1.0, reversed(points)))
        ran = {"gpu_status": "ok" if gpu_skip is None else "skipped", "gpu_reason": gpu_skip}
        first_win = {"crossover_rows": wins[-1]["rows"] if wins else None}
        out.append({"operation": name, "description": description, "points": points, **ran, **first_win})
    return out

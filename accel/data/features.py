"""Feature engineering written once against the pandas API, run on pandas or cuDF.

Each function takes frames of the arm's dataframe library (``backend.xdf``) and returns the
same kind. Statistics that look at the target (group rates) are fitted on the training split
only and then applied to both splits: :class:`GroupStats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import ModuleType

import numpy as np

from accel._compat import Column, Frame

_ROW = "__accel_row__"


def left_join(left: Frame, right: Frame, on: Sequence[str]) -> Frame:
    """Left join that keeps the left frame's row order and length.

    pandas keeps the left order in a left merge; cuDF does not promise it. Sorting on the left
    row position afterwards makes both arms give the same rows in the same order (and costs
    pandas little: the positions come out already sorted). ``right`` must be unique on ``on``.
    """
    n = len(left)
    left = left.reset_index(drop=True)
    left[_ROW] = np.arange(n, dtype=np.int64)  # cuDF copies it to the device
    out = left.merge(right, on=list(on), how="left", sort=False)
    if len(out) != n:
        raise ValueError(f"left_join on {list(on)} changed the row count from {n} to {len(out)}: right side is not unique")
    return out.sort_values(_ROW).drop(columns=[_ROW]).reset_index(drop=True)


def date_parts(xdf: ModuleType, frame: Frame, year: str, month: str, day: str) -> dict[str, Column]:
    """Day of week (Monday=0) and day of year from year/month/day columns."""
    date = xdf.to_datetime(frame[[year, month, day]].rename(columns={year: "year", month: "month", day: "day"}))
    return {"day_of_week": date.dt.day_of_week.astype("int16"), "day_of_year": date.dt.day_of_year.astype("int16")}


@dataclass
class GroupStats:
    """Per-group row count and smoothed target rate, fitted on training rows only.

    ``rate = (sum + prior * m) / (count + m)``: groups with few rows are pulled towards the
    overall training rate ``prior``. Groups unseen in training get ``count = 0`` and the prior.

    Attributes
    ----------
    keys : list of str
        Group key columns.
    count_name, rate_name : str or None
        Output column names; ``None`` leaves that statistic out.
    table : frame
        One row per training group: keys, count, rate (None until fitted: :meth:`fit`, :meth:`from_sums`).
    prior : float
        Target mean of the training rows.
    """

    keys: list[str]
    count_name: str | None
    rate_name: str | None
    table: Frame = None
    prior: float = 0.0

    def fit(self, xdf: ModuleType, train: Frame, target: Column, smoothing: float = 20.0) -> GroupStats:
        """These statistics fitted on the training rows ``train`` and their ``target``."""
        frame = train[self.keys].reset_index(drop=True)
        frame["__y__"] = target.reset_index(drop=True).astype("float64")
        grouped = frame.groupby(self.keys)["__y__"]
        return self.from_sums(xdf, grouped.sum(), grouped.count(), float(frame["__y__"].mean()), smoothing)

    def from_sums(self, xdf: ModuleType, total: Column, count: Column, prior: float, smoothing: float = 20.0) -> GroupStats:
        """The statistics from per-group target sums and row counts (Series indexed by the keys).

        Sums and counts add up across row partitions, so a distributed run reduces them over its
        partitions and builds the very table :meth:`fit` builds (``accel.workflows.flights_dask``).
        """
        table = xdf.DataFrame({"__sum__": total, "__count__": count}).reset_index()
        if self.count_name:
            table[self.count_name] = table["__count__"].astype("float64")
        if self.rate_name:
            table[self.rate_name] = (table["__sum__"] + prior * smoothing) / (table["__count__"] + smoothing)
        return replace(self, table=table[[*self.keys, *(n for n in (self.count_name, self.rate_name) if n)]], prior=prior)

    def transform(self, frame: Frame) -> Frame:
        out = left_join(frame, self.table, self.keys)
        for name, fill in ((self.count_name, 0.0), (self.rate_name, self.prior)):
            if name:
                out[name] = out[name].fillna(fill)
        return out

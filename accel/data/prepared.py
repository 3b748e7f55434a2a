"""Model-ready data of one arm, and the fitted features that made it.

:class:`Prepared` is what a workflow's ``features`` step gives the runner: the training and test
frames of the arm's library (pandas or cuDF) and the fitted :class:`FeatureTransform`, which the
fitted pipeline keeps to turn new raw rows into the same features.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from accel._compat import Array, Column, Frame


@dataclass
class Prepared:
    """Model-ready data of one arm: frames of that arm's library (pandas or cuDF)."""

    X_train: Frame
    y_train: Column
    X_test: Frame
    y_test: Column
    #: The fitted features that made ``X_train`` / ``X_test``, which the fitted pipeline keeps to
    #: score new rows.
    transform: FeatureTransform
    categorical: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    #: The test rows' positions in the source file (the run's hold-out row ids); None where the
    #: rows have no position in a file (replicated copies).
    test_ids: Array | None = None

    @property
    def feature_names(self) -> list[str]:
        return [str(c) for c in self.X_train.columns]


@runtime_checkable
class FeatureTransform(Protocol):
    """Fitted features: the raw rows of a table in, the model's feature frame out.

    :class:`accel.data.autofeatures.TableTransform` (a user's table) and
    :class:`accel.workflows.flights.FlightsTransform` (the flights workflow) have it; the fitted
    pipeline (:mod:`accel.pipeline`) saves and loads them through :mod:`accel.transforms`, and a
    Dask run maps them over its partitions (:mod:`accel.workflows.partitions`).
    """

    @property
    def categorical(self) -> list[str]: ...

    def transform(self, frame: Frame, folds: Array | None = None) -> Frame:
        """The feature frame of ``frame``'s rows; training rows pass their target-encoding ``folds``."""

    def labels(self, frame: Frame) -> Column:
        """The target of ``frame``'s rows (each has one) as the model's codes or values."""

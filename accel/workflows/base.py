"""What every workflow shares: its settings and the shape of its prepared data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class WorkflowSettings:
    """Settings a workflow's data steps read (the model has its own)."""

    rows: int | None = None
    test_size: float = 0.2
    seed: int = 42
    #: Copies of the data (with jitter, :func:`accel.data.flights.replicate_with_jitter`) for scaling runs.
    scale: int = 1


@dataclass
class Prepared:
    """Model-ready data of one arm: frames of that arm's library (pandas or cuDF)."""

    X_train: Any
    y_train: Any
    X_test: Any
    y_test: Any
    categorical: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def feature_names(self) -> list[str]:
        return [str(c) for c in self.X_train.columns]

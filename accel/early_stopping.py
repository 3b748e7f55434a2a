"""Early stopping of XGBoost: the validation part carved from the training rows, and the rounds decided once.

A paired run trains XGBoost as practitioners do: a validation part is carved from the training
rows (never from the test rows, which only score), XGBoost watches it every round and stops
when its metric has not improved for :data:`PATIENCE` rounds; ``n_estimators`` stays the most
rounds it may train, and the trees up to the best round predict.

**The rounds are decided once, by the first arm that trains, and the other arm trains exactly
as many.** The first arm stops early; the other trains the same number of rounds, watching the
same validation rows every round (the same per-round work), and predicts with the same best
round. So both arms do equal work and the speedup compares like with like, at no cost beyond
the run itself. (Deciding the rounds in a planning step before either arm would train the model
once more outside the arms — the whole training again on the slower side; letting each arm stop
on its own would let their work differ by however many rounds their metrics' last decimals
part them.) :class:`EarlyStopping` holds the settings and, once made, the decision; a paired
run gives one to both arms (the in-process arms share the workflow's model, a Dask run hands it
to each arm's executor), and the run record states it (:meth:`EarlyStopping.describe`).

The validation part is :data:`VALIDATION_SHARE` of the training rows, at least
:data:`VALIDATION_FLOOR` rows on a small table (an AUC on 150 rows moves by chance more than by
a round), never more than a quarter of them, and at most :data:`VALIDATION_CAP` rows on a large
one (more rows buy no steadier stopping and would be taken from training). Below
:data:`MIN_VALIDATION_ROWS` rows, or when a class is missing from it, there is no early stopping
and every round is trained (the record says why).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Share of the training rows held out to watch.
VALIDATION_SHARE = 0.1
#: At least this many rows are watched on a small table (up to a quarter of its training rows).
VALIDATION_FLOOR = 1_000
#: At most this many rows are watched on a large table.
VALIDATION_CAP = 50_000
#: Fewer validation rows than this: no early stopping.
MIN_VALIDATION_ROWS = 100
#: Rounds without improvement of the validation metric before boosting stops.
PATIENCE = 30


def validation_size(n_train: int) -> int:
    """How many of ``n_train`` training rows the validation part takes (0: none)."""
    size = max(int(n_train * VALIDATION_SHARE), min(VALIDATION_FLOOR, n_train // 4))
    size = min(size, VALIDATION_CAP, n_train // 4)
    return size if size >= MIN_VALIDATION_ROWS else 0


@dataclass
class EarlyStopping:
    """Early stopping of one paired run: the validation rows (from ``seed``) and the rounds, once decided.

    ``decided`` is None until the first arm has trained; then ``{"rounds", "trained",
    "decided_by", "validation_rows", "metric"}``: the rounds that predict (up to the best round),
    the rounds trained (the best round plus the patience, or the cap), and which arm decided.
    ``off`` says why a run trains without early stopping (too few rows, a class missing from the
    validation part).
    """

    seed: int = 0
    patience: int = PATIENCE
    decided: dict[str, Any] | None = None
    off: str | None = None
    validation_rows: int = 0
    _positions: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def positions(self, n_train: int) -> np.ndarray:
        """Sorted positions, among ``n_train`` training rows, of the validation part (empty: none).

        The same on every arm and executor: drawn on the host from the seed (a stream apart
        from the test split's).
        """
        if n_train not in self._positions:
            size = validation_size(n_train)
            order = np.random.default_rng([self.seed, 1]).permutation(n_train)
            self._positions[n_train] = np.sort(order[:size])
        return self._positions[n_train]

    def mask(self, n_train: int) -> np.ndarray:
        """Boolean mask over the training rows: True for a validation row."""
        out = np.zeros(n_train, dtype=bool)
        out[self.positions(n_train)] = True
        return out

    def check(self, n_train: int, labels: Any, n_classes: int | None) -> bool:
        """Whether the validation part of ``n_train`` rows can be watched: enough rows, and with
        ``n_classes`` (classification) every class among ``labels`` (its targets, on the host).

        Sets :attr:`off` with the reason when it cannot.
        """
        size = len(self.positions(n_train))
        if size == 0:
            self.off = f"{n_train:,} training rows are too few to hold out a validation part of {MIN_VALIDATION_ROWS}"
            return False
        if n_classes is not None and len(np.unique(np.asarray(labels))) < n_classes:
            self.off = f"a class is missing from the validation part ({size:,} rows)"
            return False
        self.validation_rows = size
        return True

    def rounds(self, cap: int) -> tuple[int, int | None]:
        """``(num_boost_round, early_stopping_rounds)`` for the next arm to train."""
        if self.decided is None:
            return cap, self.patience
        return int(self.decided["trained"]), None

    def settle(self, booster: Any, arm: str, metric: str) -> None:
        """After an arm trained: the first decides; the others' boosters predict with the decided rounds."""
        if self.decided is None:
            best = booster.attr("best_iteration")
            trained = int(booster.num_boosted_rounds())
            self.decided = {
                "rounds": int(best) + 1 if best is not None else trained,
                "trained": trained,
                "decided_by": arm,
                "metric": metric,
            }
        else:
            booster.set_attr(best_iteration=str(int(self.decided["rounds"]) - 1))

    def describe(self) -> dict[str, Any]:
        """The record's ``model.early_stopping``."""
        out: dict[str, Any] = {
            "validation": {
                "share": VALIDATION_SHARE,
                "floor_rows": VALIDATION_FLOOR,
                "cap_rows": VALIDATION_CAP,
                "rows": self.validation_rows,
            },
            "patience": self.patience,
        }
        if self.off is not None:
            return {**out, "used": False, "reason": self.off}
        return {**out, "used": self.decided is not None, **(self.decided or {})}

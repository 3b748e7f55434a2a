"""Early stopping of a model that can (XGBoost, by its registry entry's capabilities): the rounds found once, on a validation part of the training rows, then trained by every arm on all of them.

A paired run finds XGBoost's rounds as practitioners do: a validation part is carved from the
training rows (never from the test rows, which only score), XGBoost boosts on the rest watching
it every round, and stops when its metric has not improved for :data:`PATIENCE` rounds;
``n_estimators`` stays the most rounds it may train. That **search** runs once per paired run,
in the first arm that trains, between its ``to_device`` and ``train`` stages and outside them
(its seconds are recorded apart and shown in the wall line's "outside the stages"). Then
**every arm's timed train stage trains the rounds found, on all the training rows**: the arms do
the same work, so the speedup compares like with like, and the final model loses no training
row to the validation part. Where the search never stopped (still improving at the cap, as on a
large table) every arm trains ``n_estimators`` rounds on all rows, exactly the model of a run
without early stopping.

(The alternatives: letting each arm stop on its own would let their work differ by however many
rounds their metrics' last decimals part them; predicting with the search's model, trained
without the validation rows, cost the flights workflow 0.004 AUC on 336,776 rows.)

:class:`EarlyStopping` holds the settings and, once found, the rounds; a paired run gives one to
every arm (the in-process arms share the workflow's model, a Dask run hands it to each arm's
executor, ``accel scale`` to all its runs), and the run record states it
(:meth:`EarlyStopping.describe`).

The validation part is :data:`VALIDATION_SHARE` of the training rows, at least
:data:`VALIDATION_FLOOR` rows on a small table (an AUC on 150 rows moves by chance more than by
a round), never more than a quarter of them, and at most :data:`VALIDATION_CAP` rows on a large
one. Below :data:`MIN_VALIDATION_ROWS` rows, or when a class is missing from it, there is no
search and every round is trained (the record says why).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from accel.registry import MODELS
from accel.timing import announced

#: Share of the training rows held out to watch.
VALIDATION_SHARE = 0.1
#: At least this many rows are watched on a small table (up to a quarter of its training rows).
VALIDATION_FLOOR = 1_000
#: At most this many rows are watched on a large table.
VALIDATION_CAP = 50_000
#: Fewer validation rows than this: no early stopping.
MIN_VALIDATION_ROWS = 100
#: Rounds without improvement of the validation metric before the search stops.
PATIENCE = 50


def validation_size(n_train: int) -> int:
    """How many of ``n_train`` training rows the validation part takes (0: none)."""
    size = max(int(n_train * VALIDATION_SHARE), min(VALIDATION_FLOOR, n_train // 4))
    size = min(size, VALIDATION_CAP, n_train // 4)
    return size if size >= MIN_VALIDATION_ROWS else 0


@dataclass
class EarlyStopping:
    """Early stopping of one paired run: the validation rows (from ``seed``) and the rounds, once found.

    ``decided`` is None until the search has run; then ``{"rounds", "searched", "decided_by",
    "metric", "search_seconds"}``: the rounds every arm trains (up to the best round, or
    ``n_estimators`` where the search never stopped), the rounds the search boosted, the arm
    that ran it and its seconds. ``off`` says why there is no search (too few rows, a class
    missing from the validation part).
    """

    seed: int = 0
    patience: int = PATIENCE
    decided: dict[str, Any] | None = None
    off: str | None = None
    validation_rows: int = 0

    @property
    def searching(self) -> bool:
        """Whether the next arm to train runs the search (nothing decided, nothing ruled it out)."""
        return self.decided is None and self.off is None

    def positions(self, n_train: int) -> np.ndarray:
        """Sorted positions, among ``n_train`` training rows, of the validation part (empty: none).

        The same on every arm and executor: drawn on the host from the seed (a stream apart
        from the test split's).
        """
        order = np.random.default_rng([self.seed, 1]).permutation(n_train)
        return np.sort(order[: validation_size(n_train)])

    def mask(self, n_train: int) -> np.ndarray:
        """Boolean mask over the training rows: True for a validation row."""
        out = np.zeros(n_train, dtype=bool)
        out[self.positions(n_train)] = True
        return out

    def check(self, n_train: int, labels: np.ndarray, n_classes: int | None) -> bool:
        """Whether the validation part of ``n_train`` rows can be watched: enough rows, and with
        ``n_classes`` (classification) every class among ``labels`` (its targets, on the host).

        Sets :attr:`off` with the reason when it cannot.
        """
        size = validation_size(n_train)
        if size == 0:
            self.off = f"{n_train:,} training rows are too few to hold out a validation part of {MIN_VALIDATION_ROWS}"
            return False
        if n_classes is not None and len(np.unique(np.asarray(labels))) < n_classes:
            self.off = f"a class is missing from the validation part ({size:,} rows)"
            return False
        self.validation_rows = size
        return True

    def settle(self, booster: Any, arm: str, metric: str, seconds: float, cap: int) -> None:
        """After the search: the rounds every arm trains, from its booster's best round."""
        best = booster.attr("best_iteration")
        searched = int(booster.num_boosted_rounds())
        # never stopped (searched to the cap): still improving at the cap, which every arm trains
        rounds = cap if searched >= cap else int(best) + 1 if best is not None else searched
        self.decided = dict(rounds=rounds, searched=searched, decided_by=arm, metric=metric, search_seconds=round(seconds, 6))

    def rounds(self, cap: int) -> int:
        """The rounds an arm's train stage boosts: those found, else ``cap`` (``n_estimators``)."""
        return int(self.decided["rounds"]) if self.decided is not None else cap

    def describe(self) -> dict[str, Any]:
        """The record's ``model.early_stopping``."""
        validation = dict(share=VALIDATION_SHARE, floor_rows=VALIDATION_FLOOR, cap_rows=VALIDATION_CAP, rows=self.validation_rows)
        out: dict[str, Any] = {"validation": validation, "patience": self.patience}
        if self.off is not None:
            return {**out, "used": False, "reason": self.off}
        return {**out, "used": self.decided is not None, **(self.decided or {})}


def search_between_stages(backend: Any, model: Any, listener: Any, search: Callable[[], object]) -> None:
    """``search()``, the early-stopping search of a model that stops early (its registry entry's
    :attr:`~accel.registry.Capabilities.stops_early`), between an arm's ``to_device`` and
    ``train`` stages where this arm is the one to run it; the ``listener``
    (:class:`~accel.result.Listener`) is told of it as of a stage, but no stage times it."""
    if not MODELS[model.name].caps.stops_early or model.early_stopping is None or not model.early_stopping.searching:
        return
    with announced(listener, backend.name, "rounds search"):  # no timed stage: the arms' stages do the same work
        search()

"""Checks of a user's table that run while the run is planned, before either arm starts.

Each refusal is one :class:`~accel.errors.AccelError` line naming the column, the counts and
what to do; what is only worked around comes back as a notice for the screen and the record.

- The target: infinite values, or values beyond float32's range (the model's label type), are
  refused; a class with a single row, or a class whose rows all fall in the test split (the
  model would never train on it), is refused with the class counts.
- The test split: fewer than :data:`MIN_TEST_ROWS` rows, a single class (classification) or a
  single target value (regression) cannot be scored (AUC, R² undefined): refused with the test
  size, seed or rows that would give a split that can (:func:`check_test_split`), for a user's
  table and for the flights workflow alike; so is a training split of fewer than
  :data:`MIN_TRAIN_ROWS` rows (``--test-size 0.99``), which no model learns from.
- Numeric features: infinite values are treated as missing, the convention of every model here
  for absent values (XGBoost's ``missing=NaN``, the imputer in front of scikit-learn and cuML
  models), and the notice says so (the readers turn them into missing values on both arms:
  :func:`accel.data.readers.infinite_as_missing`); finite values beyond float32's range (the
  feature matrices are float32) are refused.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from accel._compat import numbers_in_text
from accel.errors import AccelError

FLOAT32_MAX = float(np.finfo(np.float32).max)
#: Fewest rows a class needs: one to train on and one to test on.
MIN_CLASS_ROWS = 2
#: Fewest rows the test split needs for its score to mean something.
MIN_TEST_ROWS = 10
#: Fewest rows the training split needs for a model trained on it to mean something.
MIN_TRAIN_ROWS = 10


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _counts_text(counts: pd.Series, limit: int = 6) -> str:
    parts = [f"{_shown(k)} {int(n):,}" for k, n in counts.head(limit).items()]
    more = f", ... {len(counts) - limit:,} more" if len(counts) > limit else ""
    return ", ".join(parts) + more


def _test_size_from(rows: int, n: int) -> float:
    """The smallest ``--test-size`` (two decimals, rounded up) that gives ``rows`` of ``n`` test rows."""
    return math.ceil((rows - 0.5) / n * 100) / 100


def split_order(n: int, seed: int) -> np.ndarray:
    """The seeded order of ``n`` rows whose first ``round(n * test_size)`` are the test split.

    :func:`accel.data.rows.split_positions` splits by it; :func:`check_test_split` checks
    the test split it gives, and finds the test sizes that would give one that can be scored.
    """
    return np.random.default_rng(seed).permutation(n)


def check_test_rows(n: int, test_size: float) -> None:
    """Refuse a split of ``n`` rows whose test part would hold fewer than :data:`MIN_TEST_ROWS` rows,
    or its training part fewer than :data:`MIN_TRAIN_ROWS`."""
    n_test = int(round(n * test_size))
    if n_test >= MIN_TEST_ROWS:
        if n - n_test >= MIN_TRAIN_ROWS:
            return
        size = math.floor((n - MIN_TRAIN_ROWS + 0.5) / n * 100) / 100
        fix = (
            f"use --test-size {size:g} or less, or more rows"
            if size >= 0.01 and round(n * size) >= MIN_TEST_ROWS
            else "use more rows"
        )
        raise AccelError(
            f"the training split would hold {n - n_test:,} of {n:,} rows (--test-size {test_size:g}): at least "
            f"{MIN_TRAIN_ROWS} are needed to train a model; {fix} (--rows, or a larger table)"
        )
    size = _test_size_from(MIN_TEST_ROWS, n)
    options = f"--test-size {size:g} or more, or " if size <= 0.5 else ""
    rows = math.ceil(MIN_TEST_ROWS / test_size) if test_size > 0 else None
    # A share so small that no table could hold enough rows (1e-300) asks for a larger share only.
    more = f"at least {rows:,} rows" if rows is not None and rows <= 10**12 else "more rows"
    raise AccelError(
        f"the test split would hold {n_test:,} of {n:,} rows (--test-size {test_size:g}): at least {MIN_TEST_ROWS} "
        f"are needed to score the model; use {options}{more} (--rows, or a larger table)"
    )


def quantity_hint(task_reason: str) -> str:
    """What every refusal of an integer target read as classes ends with: the task it may be
    (``task_reason``: the plan's, ``inferred: integer target with ...``)."""
    return "; if the integers are a count or amount, use --task regression" if task_reason.startswith("inferred: integer") else ""


def check_test_split(labels: Any, task: str, test_size: float, seed: int, what: str = "target", hint: str = "") -> None:
    """Refuse a split whose test part cannot be scored, naming sizes that would give one that can.

    Parameters
    ----------
    labels : array-like
        The target of the rows the run uses, in their order (the order the split permutes).
    task : {"binary", "multiclass", "classification", "regression"}
    test_size : float
        ``--test-size``.
    seed : int
        ``--seed`` (the split is seeded: :func:`split_order`).
    what : str
        The target's name, for the message.
    hint : str
        Said at the end of the refusal (:func:`quantity_hint`).

    Raises
    ------
    AccelError
        Fewer than :data:`MIN_TEST_ROWS` test rows; a single class (classification) or a single
        value (regression) in the test split.
    """
    values = pd.Series(np.asarray(labels)).reset_index(drop=True)
    n = len(values)
    check_test_rows(n, test_size)
    n_test = int(round(n * test_size))
    order = split_order(n, seed)
    test = values.iloc[order[:n_test]]
    if test.nunique(dropna=True) >= 2:
        return
    # The fewest test rows (in the seeded order) that hold two classes or values.
    first = values.iloc[order].to_numpy()
    differs = np.flatnonzero(pd.Series(first).ne(first[0]).to_numpy() & pd.Series(first).notna().to_numpy())
    if len(differs) and differs[0] + 1 <= n // 2:
        size = max(_test_size_from(int(differs[0]) + 1, n), test_size)
        fix = f"use --test-size {size:g} or more, another --seed, or more rows"
    else:
        fix = "use another --seed, or more rows"
    single = "a single class" if task != "regression" else "a single value"
    score = "AUC and accuracy across classes are" if task != "regression" else "R² is"
    raise AccelError(
        f"the test split ({n_test:,} rows, --test-size {test_size:g}, --seed {seed}) holds {single} of {what} "
        f"({_shown(test.iloc[0])}): {score} undefined on it; {fix}{hint}"
    )


def check_target(plan: Any, target_values: pd.Series, test_size: float, seed: int) -> None:
    """Refuse a target the models cannot learn from, or test on, as planned (``target_values``: the whole column).

    ``test_size`` and ``seed`` are the split's (``--test-size``, ``--seed``): a test split that
    cannot be scored is refused too (:func:`check_test_split`).
    """
    name = plan.target
    y = target_values.iloc[plan.row_positions].reset_index(drop=True)
    # Infinite target values, and values beyond float32's range.
    if pd.api.types.is_numeric_dtype(y.dtype) and not pd.api.types.is_bool_dtype(y.dtype):
        values = y.to_numpy(dtype=np.float64, na_value=np.nan)
        if infinite := int(np.isinf(values).sum()):
            raise AccelError(
                f"target {name!r} has {infinite:,} infinite value(s): a model cannot learn from them; "
                "remove those rows or leave the target empty there (rows without a target are dropped)"
            )
        if (beyond := np.abs(values) > FLOAT32_MAX).any():
            raise AccelError(
                f"target {name!r} has {int(beyond.sum()):,} value(s) beyond float32's range "
                f"(largest {np.nanmax(np.abs(values)):.3g}; the models train on float32): rescale it"
            )
    if plan.task == "regression":
        return check_test_split(y.to_numpy(dtype=np.float64, na_value=np.nan), plan.task, test_size, seed, repr(name))
    labels = y.astype(str) if not plan.classes_numeric else y
    counts = labels.value_counts()
    rare = counts[counts < MIN_CLASS_ROWS]
    if len(rare):
        if len(rare) == len(counts):
            raise AccelError(
                f"target {name!r} has one row per class ({len(counts):,} classes of one row each, e.g. "
                f"{_counts_text(rare, 3)}): nothing to learn or to test; is it an identifier? choose another --target"
                + quantity_hint(plan.task_reason)
            )
        raise AccelError(
            f"target {name!r}: {len(rare):,} class(es) with a single row ({_counts_text(rare)}; classes: "
            f"{_counts_text(counts)}); every class needs at least {MIN_CLASS_ROWS} rows, one to train on and one "
            "to test: remove those rows or merge the class into another" + quantity_hint(plan.task_reason)
        )
    train = set(labels.iloc[plan.train_pos])
    test_only = [k for k in pd.unique(labels.iloc[plan.test_pos]) if k not in train]
    if test_only:
        shown = ", ".join(f"{_shown(k)} ({int(counts[k]):,} rows)" for k in test_only[:4])
        raise AccelError(
            f"target {name!r}: class {shown} falls only in the test split, so the model never trains on it; "
            "use another --seed or --test-size, or remove those rows" + quantity_hint(plan.task_reason)
        )
    check_test_split(labels, plan.task, test_size, seed, repr(name), quantity_hint(plan.task_reason))


def check_features(plan: Any, head: pd.DataFrame) -> list[str]:
    """Notices for infinite feature values (treated as missing); refuse values beyond float32's range."""
    notices = []
    for column in plan.features:
        if column.kind != "numeric" or column.name not in head.columns:
            continue
        s = numbers_in_text(head[column.name]) if column.numbers_in_text else head[column.name]
        if s.dtype.kind != "f":
            continue
        values = s.to_numpy(dtype=np.float64, na_value=np.nan)
        finite = values[np.isfinite(values)]
        if finite.size and np.abs(finite).max() > FLOAT32_MAX:
            n = int((np.abs(finite) > FLOAT32_MAX).sum())
            raise AccelError(
                f"column {column.name!r} has {n:,} value(s) beyond float32's range (largest {np.abs(finite).max():.3g}); "
                "the feature matrices are float32: rescale the column or --drop it"
            )
        if (infinite := np.isinf(values)).any():
            notices.append(
                f"column {column.name!r}: {int(infinite.sum()):,} infinite value(s) treated as missing "
                "(how XGBoost and the imputer treat absent values)"
            )
    return notices

"""Checks of a user's table that run while the run is planned, before either arm starts.

Each refusal is one :class:`~accel.errors.AccelError` line naming the column, the counts and
what to do; what is only worked around comes back as a notice for the screen and the record.

- The target: infinite values, or values beyond float32's range (the model's label type), are
  refused; a class with a single row, or a class whose rows all fall in the test split (the
  model would never train on it), is refused with the class counts.
- Numeric features: infinite values are treated as missing, the convention of every model here
  for absent values (XGBoost's ``missing=NaN``, the imputer in front of scikit-learn and cuML
  models), and the notice says so (the readers turn them into missing values on both arms:
  :func:`accel.data.readers.infinite_as_missing`); finite values beyond float32's range (the
  feature matrices are float32) are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from accel.errors import AccelError

FLOAT32_MAX = float(np.finfo(np.float32).max)
#: Fewest rows a class needs: one to train on and one to test on.
MIN_CLASS_ROWS = 2


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _counts_text(counts: pd.Series, limit: int = 6) -> str:
    parts = [f"{_shown(k)} {int(n):,}" for k, n in counts.head(limit).items()]
    more = f", ... {len(counts) - limit:,} more" if len(counts) > limit else ""
    return ", ".join(parts) + more


def check_target(plan: Any, target_values: pd.Series) -> None:
    """Refuse a target the models cannot learn from as planned (``target_values``: the whole column)."""
    name = plan.target
    y = target_values.iloc[plan.row_positions].reset_index(drop=True)
    if pd.api.types.is_numeric_dtype(y.dtype) and not pd.api.types.is_bool_dtype(y.dtype):
        values = y.to_numpy(dtype=np.float64, na_value=np.nan)
        infinite = int(np.isinf(values).sum())
        if infinite:
            raise AccelError(
                f"target {name!r} has {infinite:,} infinite value(s): a model cannot learn from them; "
                "remove those rows or leave the target empty there (rows without a target are dropped)"
            )
        beyond = np.abs(values) > FLOAT32_MAX
        if beyond.any():
            raise AccelError(
                f"target {name!r} has {int(beyond.sum()):,} value(s) beyond float32's range "
                f"(largest {np.nanmax(np.abs(values)):.3g}; the models train on float32): rescale it"
            )
    if plan.task == "regression":
        return
    labels = y.astype(str) if not plan.classes_numeric else y
    counts = labels.value_counts()
    rare = counts[counts < MIN_CLASS_ROWS]
    if len(rare):
        if len(rare) == len(counts):
            raise AccelError(
                f"target {name!r} has one row per class ({len(counts):,} classes of one row each, e.g. "
                f"{_counts_text(rare, 3)}): nothing to learn or to test; is it an identifier? choose another --target"
            )
        raise AccelError(
            f"target {name!r}: {len(rare):,} class(es) with a single row ({_counts_text(rare)}; classes: "
            f"{_counts_text(counts)}); every class needs at least {MIN_CLASS_ROWS} rows, one to train on and one "
            "to test: remove those rows or merge the class into another"
        )
    train = set(labels.iloc[plan.train_pos])
    test_only = [k for k in pd.unique(labels.iloc[plan.test_pos]) if k not in train]
    if test_only:
        shown = ", ".join(f"{_shown(k)} ({int(counts[k]):,} rows)" for k in test_only[:4])
        raise AccelError(
            f"target {name!r}: class {shown} falls only in the test split, so the model never trains on it; "
            "use another --seed or --test-size, or remove those rows"
        )


def check_features(plan: Any, head: pd.DataFrame) -> list[str]:
    """Notices for infinite feature values (treated as missing); refuse values beyond float32's range."""
    notices = []
    for column in plan.features:
        if column.kind != "numeric" or column.name not in head.columns:
            continue
        s = head[column.name]
        if s.dtype.kind != "f":
            continue
        values = s.to_numpy(dtype=np.float64, na_value=np.nan)
        infinite = np.isinf(values)
        finite = values[np.isfinite(values)]
        if finite.size and np.abs(finite).max() > FLOAT32_MAX:
            n = int((np.abs(finite) > FLOAT32_MAX).sum())
            raise AccelError(
                f"column {column.name!r} has {n:,} value(s) beyond float32's range (largest {np.abs(finite).max():.3g}); "
                "the feature matrices are float32: rescale the column or --drop it"
            )
        if infinite.any():
            notices.append(
                f"column {column.name!r}: {int(infinite.sum()):,} infinite value(s) treated as missing "
                "(how XGBoost and the imputer treat absent values)"
            )
    return notices

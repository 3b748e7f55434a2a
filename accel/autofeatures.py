"""Automatic features for a user's table, from a :class:`~accel.schema.TablePlan`.

Written once against the pandas API and run on pandas or cuDF. What each model family gets:

=================  ==================================  ===================  =========  =======
family             categoricals (≤ 32 / ≤ 20 values)   high cardinality     missing    scaling
=================  ==================================  ===================  =========  =======
xgboost            native XGBoost categories           out-of-fold target   native     no
                                                       + count encoding
random_forest      ordinal codes                       same                 imputed    no
linear, knn        one-hot                             same                 imputed    yes
=================  ==================================  ===================  =========  =======

Every statistic (target rates, counts, medians, modes, means and deviations) is fitted on the
training rows only. Target encoding of the training rows is out-of-fold (K folds drawn on the
host with the run's seed): a row's own target never enters its own encoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from accel import _compat
from accel.features import left_join
from accel.schema import FALSE_STRINGS, TRUE_STRINGS, ColumnPlan, TablePlan
from accel.workflows.base import Prepared

NATIVE_MAX = 32  # XGBoost native categories / ordinal codes up to this many values
ONEHOT_MAX = 20  # one-hot up to this many values (linear models, KNN)
TE_FOLDS = 5
TE_SMOOTHING = 20.0
FAMILIES = ("xgboost", "random_forest", "linear", "knn")


@dataclass
class FeatureReport:
    """What was built from which column, for the run record."""

    encodings: dict[str, str] = field(default_factory=dict)
    imputed: list[str] = field(default_factory=list)
    scaled: bool = False


# --------------------------------------------------------------------------- casting


def cast_column(xdf: ModuleType, s: Any, plan: ColumnPlan) -> Any:
    """The column as the plan says: float64 for numeric/boolean, categorical, or naive datetime."""
    if plan.kind == "numeric":
        return s.astype("float64")
    if plan.kind == "boolean":
        if str(s.dtype) == "bool":
            return s.astype("float64")
        low = s.astype("str").str.strip().str.lower()
        known = low.isin(list(TRUE_STRINGS + FALSE_STRINGS))
        return low.isin(list(TRUE_STRINGS)).astype("float64").where(known)
    if plan.kind == "categorical":
        if plan.categories_numeric:
            s = s.astype("float64")
        elif not _compat.is_text_dtype(s):
            s = s.astype("str")
        return s.astype(_compat.categorical_dtype(xdf, plan.categories or []))
    if plan.kind == "datetime":
        if _compat.is_datetime_dtype(s):
            return _compat.naive_datetime(s)
        return xdf.to_datetime(s, format=plan.date_format, errors="coerce")
    raise ValueError(f"cannot cast a {plan.kind} column")


def category_codes(s: Any) -> Any:
    """Codes of a categorical column as float64, missing (and unseen) values as NaN."""
    codes = s.cat.codes
    return codes.astype("float64").where(codes >= 0)


def target_codes(xdf: ModuleType, y: Any, plan: TablePlan) -> Any:
    """The target as the model sees it: class codes 0..K-1 (int32), or float64 for regression."""
    if plan.task == "regression":
        return y.astype("float64")
    if str(y.dtype) == "bool":
        return y.astype("int32")
    if plan.classes_numeric:
        y = y.astype("float64")
    elif not _compat.is_text_dtype(y):
        y = y.astype("str")
    return y.astype(_compat.categorical_dtype(xdf, plan.classes or [])).cat.codes.astype("int32")


# --------------------------------------------------------------------------- encoders


def _group_sums(xdf: ModuleType, frame: Any, keys: list[str], value: str, prefix: str) -> Any:
    grouped = frame.groupby(keys)[value]
    return xdf.DataFrame({f"{prefix}s": grouped.sum(), f"{prefix}n": grouped.count()}).reset_index()


def target_encode(
    xdf: ModuleType, codes_train: Any, t_train: Any, codes_test: Any, folds: np.ndarray, smoothing: float = TE_SMOOTHING
) -> tuple[Any, Any, Any]:
    """Out-of-fold smoothed target means for training rows, full-train means for test rows.

    Also returns the count of each training category for both splits (count encoding).

    Returns
    -------
    (train_encoded, test_encoded, (train_counts, test_counts))
    """
    prior = float(t_train.mean())
    frame = xdf.DataFrame({"c": codes_train.reset_index(drop=True), "t": t_train.reset_index(drop=True).astype("float64")})
    frame["f"] = folds
    totals = _group_sums(xdf, frame, ["c"], "t", "all_")
    per_fold = _group_sums(xdf, frame, ["c", "f"], "t", "fold_")

    train = left_join(frame[["c", "f"]], totals, ["c"])
    train = left_join(train, per_fold, ["c", "f"])
    s = train["all_s"].fillna(0.0) - train["fold_s"].fillna(0.0)
    n = train["all_n"].fillna(0.0) - train["fold_n"].fillna(0.0)
    train_encoded = (s + prior * smoothing) / (n + smoothing)

    test = left_join(xdf.DataFrame({"c": codes_test.reset_index(drop=True)}), totals, ["c"])
    test_encoded = (test["all_s"].fillna(0.0) + prior * smoothing) / (test["all_n"].fillna(0.0) + smoothing)
    counts = (train["all_n"].fillna(0.0), test["all_n"].fillna(0.0))
    return train_encoded, test_encoded, counts


# --------------------------------------------------------------------------- the builder


def _mode(s: Any) -> float | None:
    """The most frequent value (the smallest of ties, the same on both arms)."""
    modes = s.dropna().mode()
    return None if len(modes) == 0 else float(modes.min())


def _datetime_parts(name: str, s: Any) -> dict[str, Any]:
    dt = s.dt
    return {
        f"{name}__year": dt.year.astype("float64"),
        f"{name}__month": dt.month.astype("float64"),
        f"{name}__day": dt.day.astype("float64"),
        f"{name}__day_of_week": dt.day_of_week.astype("float64"),
        f"{name}__day_of_year": dt.day_of_year.astype("float64"),
        f"{name}__hour": dt.hour.astype("float64"),
    }


def build_table_features(xdf: ModuleType, frame: Any, plan: TablePlan, family: str, seed: int) -> tuple[Prepared, FeatureReport]:
    """Model input for one arm from the rows of ``frame`` the plan selected (in plan order)."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}")
    report = FeatureReport()
    y = target_codes(xdf, frame[plan.target], plan)
    train_rows, test_rows = plan.train_pos, plan.test_pos
    train = frame.iloc[train_rows].reset_index(drop=True)
    test = frame.iloc[test_rows].reset_index(drop=True)
    y_train = y.iloc[train_rows].reset_index(drop=True)
    y_test = y.iloc[test_rows].reset_index(drop=True)
    folds = np.random.default_rng(seed + 1).integers(0, TE_FOLDS, size=len(train))

    # Target columns to encode against: the target itself, or one indicator per class.
    if plan.task == "multiclass":
        targets = {f"class{k}": (y_train == k).astype("float64") for k in range(len(plan.classes or []))}
    else:
        targets = {"": y_train.astype("float64")}

    out_train: dict[str, Any] = {}
    out_test: dict[str, Any] = {}
    categorical_out: list[str] = []
    ordinal: set[str] = set()
    for col in plan.features:
        a, b = cast_column(xdf, train[col.name], col), cast_column(xdf, test[col.name], col)
        if col.kind in ("numeric", "boolean"):
            out_train[col.name], out_test[col.name] = a, b
            report.encodings[col.name] = col.kind
        elif col.kind == "datetime":
            out_train.update(_datetime_parts(col.name, a))
            out_test.update(_datetime_parts(col.name, b))
            report.encodings[col.name] = "date parts"
        elif family == "xgboost" and col.cardinality <= NATIVE_MAX:
            out_train[col.name], out_test[col.name] = a, b
            categorical_out.append(col.name)
            report.encodings[col.name] = "native categorical"
        elif family in ("linear", "knn") and col.cardinality <= ONEHOT_MAX:
            ca, cb = a.cat.codes, b.cat.codes
            for k, value in enumerate(col.categories or []):
                name = f"{col.name}=={value}"
                out_train[name], out_test[name] = (ca == k).astype("float64"), (cb == k).astype("float64")
            report.encodings[col.name] = "one-hot"
        elif family == "random_forest" and col.cardinality <= NATIVE_MAX:
            out_train[col.name], out_test[col.name] = category_codes(a), category_codes(b)
            ordinal.add(col.name)
            report.encodings[col.name] = "ordinal codes"
        else:
            ca, cb = category_codes(a), category_codes(b)
            for suffix, t in targets.items():
                name = f"{col.name}__te{('_' + suffix) if suffix else ''}"
                out_train[name], out_test[name], counts = target_encode(xdf, ca, t, cb, folds)
            out_train[f"{col.name}__count"], out_test[f"{col.name}__count"] = counts
            report.encodings[col.name] = f"out-of-fold target encoding ({TE_FOLDS} folds) + count"

    # Imputation and scaling work column by column on the dicts, and the frames are built once
    # (a 5,000-column table stays fast, and pandas does not fragment).
    numeric = [c for c in out_train if c not in categorical_out]
    if family != "xgboost":
        for c in numeric:
            a, b = out_train[c], out_test[c]
            if bool(a.isna().any()) or bool(b.isna().any()):
                fill = _mode(a) if c in ordinal else a.median()
                fill = 0.0 if fill is None or fill != fill else float(fill)
                out_train[c], out_test[c] = a.fillna(fill), b.fillna(fill)
                report.imputed.append(str(c))
    if family in ("linear", "knn"):
        for c in numeric:
            mean, std = float(out_train[c].mean()), float(out_train[c].std())
            std = std if std > 0 and std == std else 1.0
            out_train[c], out_test[c] = (out_train[c] - mean) / std, (out_test[c] - mean) / std
        report.scaled = True
    for c in numeric:
        out_train[c], out_test[c] = out_train[c].astype("float32"), out_test[c].astype("float32")
    X_train = xdf.DataFrame(out_train)
    X_test = xdf.DataFrame(out_test)
    prepared = Prepared(
        X_train=X_train,
        y_train=y_train,
        X_test=X_test,
        y_test=y_test,
        categorical=categorical_out,
        rows={"loaded": len(frame), "with_target": len(frame), "train": len(X_train), "test": len(X_test)},
    )
    return prepared, report

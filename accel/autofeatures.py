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
        categories = plan.categories or []
        if plan.categories_numeric:
            # XGBoost refuses float categories; re-index the values by their integer codes,
            # which both libraries cast exactly (-1, missing or unseen, becomes missing).
            codes = s.astype("float64").astype(_compat.categorical_dtype(xdf, categories)).cat.codes
            return codes.astype("int64").astype(_compat.categorical_dtype(xdf, list(range(len(categories)))))
        if not _compat.is_text_dtype(s):
            s = s.astype("str")
        return s.astype(_compat.categorical_dtype(xdf, categories))
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
    if plan.classes == [False, True]:
        # A boolean target, typed or as text ("True"/"true"): 1 for true. Rows without a
        # target are not in the plan's rows.
        if str(y.dtype) == "bool":
            return y.astype("int32")
        return (y.astype("str").str.strip().str.lower() == "true").astype("int32")
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


def _assemble(xdf: ModuleType, frame: Any, numeric: list[str], built: dict[str, Any]) -> Any:
    parts = []
    if numeric:
        parts.append(frame[numeric].astype("float64").reset_index(drop=True))
    if built:
        parts.append(xdf.DataFrame(built))
    if not parts:
        raise ValueError("no features")
    return parts[0] if len(parts) == 1 else xdf.concat(parts, axis=1)


def _with_float32(xdf: ModuleType, frame: Any, dense: list[str], columns: list[str]) -> Any:
    rest = [c for c in columns if c not in dense]
    block = frame[dense].astype("float32")
    return (xdf.concat([block, frame[rest]], axis=1) if rest else block)[columns]


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

    # Plain numeric columns travel as one block (a 5,000-column table stays fast); the rest is
    # built column by column.
    numeric_names = [c.name for c in plan.features if c.kind == "numeric"]
    out_train: dict[str, Any] = {}
    out_test: dict[str, Any] = {}
    categorical_out: list[str] = []
    ordinal: list[str] = []
    for col in plan.features:
        if col.kind == "numeric":
            report.encodings[col.name] = "numeric"
            continue
        a, b = cast_column(xdf, train[col.name], col), cast_column(xdf, test[col.name], col)
        if col.kind == "boolean":
            out_train[col.name], out_test[col.name] = a, b
            report.encodings[col.name] = "boolean"
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
            ordinal.append(col.name)
            report.encodings[col.name] = "ordinal codes"
        else:
            ca, cb = category_codes(a), category_codes(b)
            for suffix, t in targets.items():
                name = f"{col.name}__te{('_' + suffix) if suffix else ''}"
                out_train[name], out_test[name], counts = target_encode(xdf, ca, t, cb, folds)
            out_train[f"{col.name}__count"], out_test[f"{col.name}__count"] = counts
            report.encodings[col.name] = f"out-of-fold target encoding ({TE_FOLDS} folds) + count"

    X_train = _assemble(xdf, train, numeric_names, out_train)
    X_test = _assemble(xdf, test, numeric_names, out_test)
    columns = [str(c) for c in X_train.columns]
    dense = [c for c in columns if c not in categorical_out]
    if family != "xgboost" and dense:
        missing = _compat.to_pandas(X_train[dense].isna().any() | X_test[dense].isna().any())
        need = [c for c in dense if bool(missing[c])]
        if need:
            medians = _compat.to_pandas(X_train[need].median())
            fills = {c: (_mode(X_train[c]) if c in ordinal else medians[c]) for c in need}
            fills = {c: (0.0 if v is None or v != v else float(v)) for c, v in fills.items()}
            X_train, X_test = X_train.fillna(fills), X_test.fillna(fills)
            report.imputed = need
    if family in ("linear", "knn") and dense:
        block = X_train[dense]
        means, stds = block.mean(), block.std()
        stds = stds.where(stds > 0, 1.0).fillna(1.0)
        scaled_train = block.sub(means, axis="columns").div(stds, axis="columns")
        scaled_test = X_test[dense].sub(means, axis="columns").div(stds, axis="columns")
        rest = [c for c in columns if c not in dense]
        X_train = (xdf.concat([scaled_train, X_train[rest]], axis=1) if rest else scaled_train)[columns]
        X_test = (xdf.concat([scaled_test, X_test[rest]], axis=1) if rest else scaled_test)[columns]
        report.scaled = True
    if dense:
        X_train = _with_float32(xdf, X_train, dense, columns)
        X_test = _with_float32(xdf, X_test, dense, columns)
    prepared = Prepared(
        X_train=X_train,
        y_train=y_train,
        X_test=X_test,
        y_test=y_test,
        categorical=categorical_out,
        rows={"loaded": len(frame), "with_target": len(frame), "train": len(X_train), "test": len(X_test)},
    )
    return prepared, report

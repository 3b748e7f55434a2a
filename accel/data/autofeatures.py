"""Automatic features for a user's table, from a :class:`~accel.data.schema.TablePlan`.

Written once against the pandas API and run on pandas or cuDF. What each model family gets:

=================  ==================================  ===================  =========  =======
family             categoricals (≤ 32 / ≤ 20 values)   high cardinality     missing    scaling
=================  ==================================  ===================  =========  =======
native             categories as they are              out-of-fold target   native     no
                                                       + count encoding
trees              ordinal codes                       same                 imputed    no
linear             one-hot, last category left out     same                 imputed    yes
distance           one-hot                             same                 imputed    yes
=================  ==================================  ===================  =========  =======

A model's family is its registry entry's :attr:`accel.registry.Capabilities.family` (XGBoost's
is ``native``, a forest's ``trees``, k-nearest neighbours' ``distance``). (A linear model's one-hot columns leave out the last category, the reference level: with all of
them they sum to the intercept's column.)

Every statistic (target rates, counts, medians, modes, means and deviations) is fitted on the
training rows only. Target encoding of the training rows is out-of-fold (K folds drawn on the
host with the run's seed): a row's own target never enters its own encoding.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from accel import _compat
from accel._compat import Frame
from accel.cache import cache_dir
from accel.data.dates import ALL_PARTS
from accel.data.features import left_join
from accel.data.prepared import Prepared
from accel.data.schema import FALSE_STRINGS, TRUE_STRINGS, ColumnPlan, TablePlan
from accel.errors import AccelError
from accel.files import REPLACE, write_new
from accel.registry import OLD_FAMILIES

NATIVE_MAX = 32  # XGBoost native categories / ordinal codes up to this many values
#: Above NATIVE_MAX and up to this many values, the encoding probe may choose native categories.
#: A repeated key of thousands of values (a player, a shop) can carry most of the signal, which
#: native splits find and a smoothed target encoding of a few rows per value does not (baseball
#: salaries by player: R² 0.81 native vs 0.65 target-encoded); the probe decides. The cap bounds
#: XGBoost's histogram, which holds a bin per category per node.
NATIVE_CAP = 65_536
PROBE_ROWS = 20_000  # training rows (of the planning rows) the encoding probe uses at most
PROBE_MIN_ROWS = 500
PROBE_ROUNDS = 50  # boosting rounds of each probe model (depth 6)
#: ``--probe auto``: the probe's boosting work (rows x rounds, both encodings) may be at most this
#: share of the run's training work (training rows x rounds); a probe that would cost more is not
#: run and target + count encoding is kept. ``--probe force`` ignores the bound.
PROBE_SHARE = 0.10
#: Bumped whenever the probe's method changes, so that cached decisions of an older method are not reused.
PROBE_METHOD = 2
ONEHOT_MAX = 20  # one-hot up to this many values (linear models, KNN)
TE_FOLDS = 5
TE_SMOOTHING: float | str = "auto"  # per category, as scikit-learn's TargetEncoder(smooth="auto")
#: How each family encodes a categorical column of at most so many values (``native``: also the
#: columns the encoding probe chose); one of more values gets :data:`TARGET_ENCODING`.
FEW_VALUES = {"native": ("native categorical", NATIVE_MAX), "trees": ("ordinal codes", NATIVE_MAX),
              "linear": ("one-hot", ONEHOT_MAX), "distance": ("one-hot", ONEHOT_MAX)}  # fmt: skip
TARGET_ENCODING = f"out-of-fold target encoding ({TE_FOLDS} folds) + count"


@dataclass
class FeatureReport:
    """What was built from which column, for the run record."""

    encodings: dict[str, str] = field(default_factory=dict)
    imputed: list[str] = field(default_factory=list)
    scaled: bool = False
    dates: dict[str, str] = field(default_factory=dict)  # datetime column -> where its text was parsed
    #: Generated names that a column of the table already had -> the names given instead.
    renamed: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """The run record's part for what the features did on an arm (``feature_reports``)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v or k != "renamed"}


# --------------------------------------------------------------------------- casting


def cast_column(xdf: ModuleType, s: Any, plan: ColumnPlan) -> Any:
    """The column as the plan says: float64 for numeric/boolean, else categorical (a datetime
    column is not cast here but by :func:`cast_datetime`)."""
    if plan.numbers_in_text and _compat.is_text_dtype(s):
        s = _compat.numbers_in_text(s)
    if plan.kind == "numeric" or (plan.kind == "boolean" and str(s.dtype) == "bool"):
        return s.astype("float64")
    if plan.kind == "boolean":
        low = s.astype("str").str.strip().str.lower()
        known = low.isin(list(TRUE_STRINGS + FALSE_STRINGS))
        return low.isin(list(TRUE_STRINGS)).astype("float64").where(known)
    categories = plan.categories or []
    if _compat.has_categories(s, range(len(categories)) if plan.categories_numeric else categories):
        return s  # cast already (TableFeaturizer.cast): fitting and encoding share one cast
    if plan.categories_numeric:
        # XGBoost refuses float categories; re-index the values by their integer codes,
        # which both libraries cast exactly (-1, missing or unseen, becomes missing).
        codes = _compat.as_categorical(xdf, s.astype("float64"), categories).cat.codes
        return _compat.as_categorical(xdf, codes.astype("int64"), range(len(categories)))
    return _compat.as_categorical(xdf, s if _compat.is_text_dtype(s) else s.astype("str"), categories)


def numbers(xdf: ModuleType, frame: Frame, columns: list[ColumnPlan]) -> Frame:
    """The numeric ``columns`` of ``frame``; a column of numbers written as text among words
    (``numbers_in_text``) as its numbers, each word missing."""
    texts = {c.name: cast_column(xdf, frame[c.name], c) for c in columns if c.numbers_in_text}
    return frame[[c.name for c in columns]].assign(**texts)


def cast_datetime(xdf: ModuleType, s: Any, plan: ColumnPlan) -> tuple[Any, str]:
    """A datetime column as naive datetimes, and where its text was parsed (``typed`` when the
    reader already gave datetimes; see :func:`accel._compat.parse_datetime_where`)."""
    if str(s.dtype).startswith("datetime64"):
        return _compat.naive_datetime(s), "typed"
    if plan.date_format is not None and getattr(s.dtype, "kind", "") in ("i", "u", "f"):
        s = _compat.integer_text(xdf, s)  # --date-format on a column of numbers such as 20210315
    return _compat.parse_datetime_where(xdf, s, plan.date_format)


def one_hot(name: str, s: Any, categories: list[Any], reference: bool = False) -> dict[str, Any]:
    """One float64 indicator column per category of a categorical column; 0.0 where it is missing.

    A missing value's code is -1 on pandas but null on cuDF, where ``codes == k`` is then null
    too (and would be imputed later): so the comparison's missing results are False on both
    arms, and a missing category is all zeros, as scikit-learn's ``OneHotEncoder`` writes it.

    With ``reference`` the last category has no column (it is the reference level, all zeros,
    as ``OneHotEncoder(drop=...)`` writes it): a linear model's indicators of every category sum
    to one, the intercept's column, and that collinearity kept lasso's coordinate descent from
    converging (a ConvergenceWarning after 1,000 iterations; 33 without it).
    """
    codes = s.cat.codes
    kept = categories[:-1] if reference and len(categories) > 1 else categories
    return {f"{name}=={value}": (codes == k).fillna(False).astype("float64") for k, value in enumerate(kept)}


def category_codes(s: Any) -> Any:
    """Codes of a categorical column as float64, missing (and unseen) values as NaN."""
    codes = s.cat.codes
    return codes.astype("float64").where(codes >= 0)


def target_codes(xdf: ModuleType, y: Any, plan: TablePlan) -> Any:
    """The target as the model sees it: class codes 0..K-1 (int32), or float64 for regression."""
    if plan.task == "regression":
        return y.astype("float64")
    if not plan.classes_numeric and plan.classes == [False, True]:
        # A boolean target, typed or as text ("True"/"true"): 1 for true. Rows without a
        # target are not in the plan's rows.
        if str(y.dtype) == "bool":
            return y.astype("int32")
        return (y.astype("str").str.strip().str.lower() == "true").astype("int32")
    if plan.classes_numeric:
        y = y.astype("float64")
    elif not _compat.is_text_dtype(y):
        y = y.astype("str")
    return _compat.as_categorical(xdf, y, plan.classes or []).cat.codes.astype("int32")


# --------------------------------------------------------------------------- encoders


class TargetEncoder:
    """Smoothed target means per category, fitted from batches of training rows.

    Per batch it keeps sums and counts per (category, fold); :meth:`finalize` adds the batches
    up, so fitting batch by batch gives exactly the statistics of one pass over all rows.
    Training rows are encoded out of fold (their own fold's rows left out), other rows with all
    training rows; unseen or missing categories get the prior (the mean over all training rows).

    A category with ``n`` rows and target sum ``s`` is encoded ``(s + prior * m) / (n + m)``.
    ``smoothing`` is ``m``: a number, the same for every category, or ``"auto"``, the empirical
    Bayes weight of scikit-learn's ``TargetEncoder(smooth="auto")``: ``m`` is the category's
    target variance over the variance of the whole training target, so a category whose rows
    agree keeps its own mean and a noisy one is pulled to the prior.
    """

    def __init__(self, xdf: ModuleType, targets: list[str], smoothing: float | str = TE_SMOOTHING):
        self.xdf, self.targets, self.smoothing = xdf, targets, smoothing
        self._parts: list[Any] = []
        self._stats = [*targets, *(f"{t}__sq" for t in targets)]
        self._columns = [*self._stats, "n"]  # what the parts, per-fold and total tables hold per category
        self._sums = dict.fromkeys(self._columns, 0.0)  # each target's sum and sum of squares, and the rows
        self.variance: dict[str, float] = {}
        self.per_fold: Any = None
        self.totals: Any = None
        self.prior: dict[str, float] = {}

    def partial_fit(self, codes: Any, targets: dict[str, Any], folds: np.ndarray) -> None:
        frame = self.xdf.DataFrame({"c": codes.reset_index(drop=True)})
        frame["f"] = folds
        for name in self.targets:
            frame[name] = targets[name].reset_index(drop=True).astype("float64")
            frame[f"{name}__sq"] = frame[name] * frame[name]
        for name in self._stats:
            self._sums[name] += float(frame[name].sum())
        self._sums["n"] += len(frame)
        grouped = frame.groupby(["c", "f"])
        part = grouped[self._stats].sum()
        part["n"] = grouped[self.targets[0]].count()
        self._parts.append(part.reset_index())

    def partial_state(self) -> tuple[list[Any], dict[str, float]]:
        """What :meth:`partial_fit` has gathered and :meth:`finalize` adds up: the parts (sums and
        counts per category and fold), and the target sums, squares and rows."""
        return list(self._parts), dict(self._sums)

    def add_partial_state(self, state: tuple[list[Any], dict[str, float]]) -> None:
        """Add another encoder's :meth:`partial_state` (its batches of training rows, fitted elsewhere:
        a Dask worker's partition) as if its batches had been fitted here."""
        self._parts.extend(state[0])
        for name, value in state[1].items():
            self._sums[name] += value

    def finalize(self) -> None:
        parts = self._parts[0] if len(self._parts) == 1 else self.xdf.concat(self._parts, ignore_index=True)
        self.per_fold = parts.groupby(["c", "f"])[self._columns].sum().reset_index()
        self.totals = self.per_fold.groupby("c")[self._columns].sum().reset_index()
        rows = max(self._sums["n"], 1)
        self.prior = {t: self._sums[t] / rows for t in self.targets}
        self.variance = {t: max(self._sums[f"{t}__sq"] / rows - self.prior[t] ** 2, 0.0) for t in self.targets}
        self._parts = []

    def transform(self, codes: Any, folds: np.ndarray | None = None) -> dict[str, Any]:
        """Encoded columns (one per target) and ``count`` for rows with these category codes."""
        frame = self.xdf.DataFrame({"c": codes.reset_index(drop=True)})
        out = left_join(frame, self.totals.rename(columns={t: f"{t}__all" for t in self._columns}), ["c"])
        if folds is not None:
            out["f"] = folds
            out = left_join(out, self.per_fold.rename(columns={t: f"{t}__fold" for t in self._columns}), ["c", "f"])
        result = {"count": out["n__all"].fillna(0.0).astype("float64")}

        def held(name: str) -> Any:  # the statistic over the rows that may inform these rows
            value = out[f"{name}__all"].fillna(0.0)
            return value if folds is None else value - out[f"{name}__fold"].fillna(0.0)

        count = held("n")
        for t in self.targets:
            s = held(t)
            # m: the fixed smoothing, or per row the category's variance over the target's.
            if self.smoothing != "auto" or self.variance[t] == 0.0:
                m: Any = 0.0 if self.smoothing == "auto" else float(self.smoothing)
            else:
                rows = count.where(count > 0, 1.0)
                mean = s / rows
                m = (held(f"{t}__sq") / rows - mean * mean).clip(lower=0.0) / self.variance[t]
            # No informing rows (unseen, missing, or only in the row's own fold): the prior.
            result[t] = ((s + self.prior[t] * m) / (count + m)).where(count > 0, self.prior[t])
        return result


# --------------------------------------------------------------------------- the builder


def _mode(s: Any) -> float | None:
    """The most frequent value (the smallest of ties, the same on both arms)."""
    modes = s.dropna().mode()
    return None if len(modes) == 0 else float(modes.min())


class TableFeaturizer:
    """The plan's features for one model family: fitted on training rows (all at once or batch
    by batch), then applied to any rows.

    Parameters
    ----------
    xdf : module
        pandas or cudf.
    plan : TablePlan
    family : {"native", "trees", "linear", "distance"}
        :attr:`accel.registry.Capabilities.family` of the model.
    seed : int
        Seeds the target-encoding folds (one per training row, in plan order).
    """

    def __init__(self, xdf: ModuleType, plan: TablePlan, family: str, seed: int):
        self.xdf, self.plan, self.family = xdf, plan, family
        self.folds = np.random.default_rng(seed + 1).integers(0, TE_FOLDS, size=len(plan.train_pos))
        self.report = FeatureReport()
        few, most = FEW_VALUES[family]
        native = set(plan.native_categorical) if family == "native" else set()
        kinds = {"datetime": "date parts", "categorical": TARGET_ENCODING}
        self.encoding = self.report.encodings = {
            c.name: few if c.kind == "categorical" and (c.cardinality <= most or c.name in native) else kinds.get(c.kind, c.kind)
            for c in plan.features
        }
        self.targets = [f"class{k}" for k in range(len(plan.classes or []))] if plan.task == "multiclass" else ["t"]
        self.encoders = {n: TargetEncoder(xdf, self.targets) for n, kind in self.encoding.items() if kind == TARGET_ENCODING}
        self.categorical = [n for n, kind in self.encoding.items() if kind == "native categorical"]
        self._taken = {c.name for c in plan.columns} | {plan.target}
        self._names: dict[tuple[str, str], str] = {}

    def _named(self, column: str, built: dict[str, Any]) -> dict[str, Any]:
        """The features ``built`` from ``column``, each under its wanted name suffixed until unique.

        A table's own columns keep their names; a generated name that one of them (or another
        generated feature) already has gets ``_2``, ``_3``, ... and the feature report records
        it (``renamed``). The same ``(column, wanted)`` always gets the same name, on every batch.
        """
        for wanted in built:
            if (column, wanted) not in self._names:
                name, n = wanted, 1
                while name in self._taken:
                    n += 1
                    name = f"{wanted}_{n}"
                self._taken.add(name)
                self._names[(column, wanted)] = name
                if name != wanted:
                    self.report.renamed[wanted] = name
        return {self._names[(column, wanted)]: value for wanted, value in built.items()}

    def cast(self, frame: Any) -> Any:
        """``frame`` with its categorical columns cast once to the plan's categories, so that
        fitting and encoding the same rows do not cast them again (:func:`cast_column` returns
        a column cast already as it is)."""
        names = [c for c in self.plan.features if c.kind == "categorical" and c.name in frame.columns]
        if names:
            frame = frame.copy(deep=False)
        for col in names:
            frame[col.name] = cast_column(self.xdf, frame[col.name], col)
        return frame

    def reset(self) -> None:
        """Forget what was fitted (before fitting again from the first batch)."""
        self.encoders = {name: TargetEncoder(self.xdf, self.targets) for name in self.encoders}

    def partial_fit(self, train: Any, y_train: Any, folds: np.ndarray) -> None:
        """Add a batch of training rows (``folds``: their target-encoding folds)."""
        if not self.encoders:
            return
        # Multiclass: one indicator per class (``class0``, ...); else the codes or values as they are.
        targets = {t: (y_train == k) if self.plan.task == "multiclass" else y_train for k, t in enumerate(self.targets)}
        for col in (c for c in self.plan.features if c.name in self.encoders):
            self.encoders[col.name].partial_fit(category_codes(cast_column(self.xdf, train[col.name], col)), targets, folds)

    def finalize(self) -> None:
        for encoder in self.encoders.values():
            encoder.finalize()

    def transform(self, frame: Any, folds: np.ndarray | None = None) -> Any:
        """Feature frame for these rows; training rows pass their ``folds`` (out-of-fold encoding)."""
        xdf, frame = self.xdf, frame.reset_index(drop=True)
        numeric = [c for c in self.plan.features if c.kind == "numeric"]
        built: dict[str, Any] = {}
        for col in (c for c in self.plan.features if c.kind != "numeric"):
            kind, name = self.encoding[col.name], col.name
            if kind == "date parts":  # the parts the plan chose (every part when it chose none)
                a, self.report.dates[name] = cast_datetime(xdf, frame[name], col)
                dated = {f"{name}__{p}": getattr(a.dt, p).astype("float64") for p in (col.date_parts or ALL_PARTS)}
                built |= self._named(name, dated)
                continue
            a = cast_column(xdf, frame[name], col)
            if kind == "boolean" or kind == "native categorical":
                built[name] = a
            elif kind == "one-hot":
                built |= self._named(name, one_hot(name, a, col.categories or [], self.family == "linear"))
            elif kind == "ordinal codes":
                built[name] = category_codes(a)
            else:
                encoded = self.encoders[name].transform(category_codes(a), folds)
                te = {f"{name}__te" + ("" if t == "t" else f"_{t}"): encoded[t] for t in self.targets}
                built |= self._named(name, {**te, f"{name}__count": encoded["count"]})
        # The native family needs no imputation or scaling (DenseFinish): its numbers are final here,
        # each cast to float32 once, as it is built, rather than the whole frame copied at the end.
        dense = "float32" if self.family == "native" else "float64"
        built = {k: v if str(v.dtype) in ("category", "bool", dense) else v.astype(dense) for k, v in built.items()}
        parts = [numbers(xdf, frame, numeric).astype(dense)] if numeric else []
        parts += [xdf.DataFrame(built)] if built else []
        return parts[0] if len(parts) == 1 else xdf.concat(parts, axis=1)


@dataclass
class DenseFinish:
    """Imputation (median; most frequent for codes) and scaling fitted on training rows, then float32.

    The native family's features get none of it (its models take missing values and need no scaling); the other
    families get every dense column filled with its training fill value (a no-op where a column
    has none missing) and, for linear models and KNN, standardised with the training means and
    deviations. Fitted once, applied to any rows: the run's training and test rows and, later,
    new rows scored by the fitted pipeline (:mod:`accel.pipeline`).
    """

    #: The feature columns, in order, all of them filled, scaled and cast (``dense`` lists them
    #: again: a saved pipeline holds both).
    columns: list[str]
    dense: list[str]
    fills: dict[str, float] = field(default_factory=dict)
    means: dict[str, float] = field(default_factory=dict)
    stds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def fit(cls, X_train: Any, X_test: Any, featurizer: TableFeaturizer) -> DenseFinish | None:
        """The finish of ``featurizer``'s family, fitted on ``X_train`` (``X_test`` only tells which
        columns the report lists as imputed); None for the native family, whose numbers are final."""
        family, report = featurizer.family, featurizer.report
        if family == "native":
            return None
        dense = [str(c) for c in X_train.columns]  # every column: only the native family has categories
        missing = _compat.to_pandas(X_train[dense].isna().any() | X_test[dense].isna().any())
        report.imputed = [c for c in dense if bool(missing[c])]
        ordinal = {n for n, k in featurizer.encoding.items() if k == "ordinal codes"}
        medians = _compat.to_pandas(X_train[dense].median())
        fills = {c: (_mode(X_train[c]) if c in ordinal else medians[c]) for c in dense}
        finish = cls(dense, dense, {c: (0.0 if v is None or v != v else float(v)) for c, v in fills.items()})
        if family in ("linear", "distance"):
            block = X_train[dense].fillna(finish.fills)
            stds = block.std()
            stds = _compat.to_pandas(stds.where(stds > 0, 1.0).fillna(1.0))
            means = _compat.to_pandas(block.mean())
            finish.means = {c: float(means[c]) for c in dense}
            finish.stds = {c: float(stds[c]) for c in dense}
            report.scaled = True
        return finish

    def apply(self, xdf: ModuleType, X: Any) -> Any:
        """``X`` (the featurizer's columns, in order) filled, scaled and in float32."""
        dense = self.dense
        X = X.fillna(self.fills)[dense]
        if self.means:
            means = xdf.Series([self.means[c] for c in dense], index=dense, dtype="float64")
            stds = xdf.Series([self.stds[c] for c in dense], index=dense, dtype="float64")
            X = X.sub(means, axis="columns").div(stds, axis="columns")
        return X.astype("float32")


@dataclass
class TableTransform:
    """A user's table's fitted features: raw rows in, the model's feature frame out.

    ``featurizer`` holds the plan (column kinds, vocabularies, date layouts) and the target
    encoders fitted on the training rows; ``finish`` the imputation and scaling of the model's
    family (None for the native family). New rows are encoded as the run's test rows were: with every
    training row's statistics, unseen categories as missing.
    """

    featurizer: TableFeaturizer
    finish: DenseFinish | None = None

    def __post_init__(self) -> None:
        # ``required``: the columns a row must have to be scored.
        self.plan, self.categorical = self.featurizer.plan, list(self.featurizer.categorical)
        self.required = [c.name for c in self.plan.features]

    def transform(self, frame: Any, folds: np.ndarray | None = None) -> Any:
        """The feature frame of ``frame``'s rows (any rows holding the plan's feature columns);
        training rows pass their ``folds`` (out-of-fold target encoding)."""
        X = self.featurizer.transform(frame, folds)
        return X if self.finish is None else self.finish.apply(self.featurizer.xdf, X)

    def labels(self, frame: Any) -> Any:
        """The target codes of ``frame``'s rows (:func:`target_codes`)."""
        return target_codes(self.featurizer.xdf, frame[self.plan.target], self.plan)

    def state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The fitted state as JSON values and tables (pandas frames, one per target encoder);
        :meth:`from_state` reads it back on either arm."""
        f, tables, encoders = self.featurizer, {}, {}
        for i, (name, e) in enumerate(f.encoders.items()):
            tables[f"encoder-{i}"] = _compat.to_pandas(e.totals)
            encoders[name] = {"table": f"encoder-{i}", "prior": e.prior, "variance": e.variance, "smoothing": e.smoothing}
        names = [[column, wanted, name] for (column, wanted), name in f._names.items()]
        finish = dataclasses.asdict(self.finish) if self.finish is not None else None
        return {"family": f.family, "plan": f.plan.fitted_state(), "names": names, "encoders": encoders, "finish": finish}, tables

    @classmethod
    def from_state(cls, xdf: ModuleType, state: dict[str, Any], tables: dict[str, Any]) -> TableTransform:
        """The transform :meth:`state` saved, on the arm of ``xdf`` (pandas or cudf)."""
        plan = TablePlan.from_fitted_state(state["plan"])
        featurizer = TableFeaturizer(xdf, plan, OLD_FAMILIES.get(state["family"], state["family"]), 0)
        featurizer._names = {(column, wanted): name for column, wanted, name in state["names"]}
        featurizer._taken |= set(featurizer._names.values())
        for name, saved in state["encoders"].items():
            encoder = featurizer.encoders[name]
            encoder.totals = _compat.from_pandas(xdf, tables[saved["table"]])
            encoder.prior, encoder.variance, encoder.smoothing = saved["prior"], saved["variance"], saved["smoothing"]
        finish = DenseFinish(**state["finish"]) if state["finish"] is not None else None
        return cls(featurizer, finish)


def build_table_features(xdf: ModuleType, frame: Any, plan: TablePlan, family: str, seed: int) -> tuple[Prepared, FeatureReport]:
    """Model input for one arm from the rows of ``frame`` the plan selected (in plan order);
    ``prepared.transform`` is the fitted :class:`TableTransform` that made it, ``prepared.rows["loaded"]``
    the file's rows (``plan.rows_in_file``)."""
    featurizer = TableFeaturizer(xdf, plan, family, seed)
    frame = featurizer.cast(frame)
    y = target_codes(xdf, frame[plan.target], plan)
    train, test = (frame.iloc[rows].reset_index(drop=True) for rows in (plan.train_pos, plan.test_pos))
    y_train, y_test = (y.iloc[rows].reset_index(drop=True) for rows in (plan.train_pos, plan.test_pos))
    featurizer.partial_fit(train, y_train, featurizer.folds)
    featurizer.finalize()
    X_train, X_test = featurizer.transform(train, featurizer.folds), featurizer.transform(test)
    finish = DenseFinish.fit(X_train, X_test, featurizer)
    if finish is not None:
        X_train, X_test = finish.apply(xdf, X_train), finish.apply(xdf, X_test)
    rows = {"loaded": plan.rows_in_file, "with_target": len(frame), "train": len(X_train), "test": len(X_test)}
    t = TableTransform(featurizer, finish)
    prepared = Prepared(X_train, y_train, X_test, y_test, t, t.categorical, rows, plan.row_positions[plan.test_pos])
    return prepared, featurizer.report


# --------------------------------------------------------------------------- the encoding probe


def probe_cache_key(fingerprint: str, plan: TablePlan, candidates: list[str], seed: int, rounds: int) -> str:
    """What a probe decision depends on: the file (paths, sizes, modification times), the columns
    probed with their cardinalities, the target and task, the rows and split, the seed, the
    training rounds (the cost bound) and the probe's own method."""
    import hashlib

    cards = {c.name: c.cardinality for c in plan.features if c.name in candidates}
    key = {
        "file": fingerprint, "candidates": cards, "target": plan.target, "task": plan.task,
        "rows": int(len(plan.row_positions)), "train": int(len(plan.train_pos)), "seed": seed, "rounds": rounds,
        "method": [PROBE_METHOD, PROBE_ROWS, PROBE_MIN_ROWS, PROBE_ROUNDS, PROBE_SHARE, NATIVE_MAX, NATIVE_CAP],
    }  # fmt: skip
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]


def probe_native_categories(
    head: Any, plan: TablePlan, seed: int, mode: str, fingerprint: str | None, train_rounds: int | None
) -> None:
    """Choose, for XGBoost, between target + count encoding and native categories for the
    categorical columns with more than :data:`NATIVE_MAX` (and at most :data:`NATIVE_CAP`) values.

    Neither wins everywhere: native partition splits overfit a column like flights' ``tailnum``
    (4,000 aircraft; AUC 0.74 against 0.81 with target encoding), while target encoding, one
    number per value, loses what native splits find in interactions (restaurant inspections by
    business and year: RMSE 3.9 against 3.3). So both are tried once, on the host, before either
    arm runs: up to :data:`PROBE_ROWS` training rows among the planning rows ``head`` (the
    file's first rows, indexed by file position), split 75/25, a small XGBoost model
    (:data:`PROBE_ROUNDS` rounds, depth 6) on each encoding, scored on the held-out quarter
    with the task's metric. Native categories are kept only when they score better. Sets ``plan.native_categorical``
    and ``plan.encoding_probe``; nothing is fitted on test rows.

    ``mode`` (``--probe``): ``off`` keeps target + count encoding without probing; ``auto``
    reuses the decision cached for the same file and columns (``fingerprint``; see
    :func:`probe_cache_key`) and runs the probe only when its boosting work stays within
    :data:`PROBE_SHARE` of the training's (``train_rounds`` rounds on the training rows), using
    fewer probe rows where that keeps it within; ``force`` always probes, on up to
    :data:`PROBE_ROWS` rows. A decision a probe measured is cached for the next run.
    """
    candidates = [c.name for c in plan.features if c.kind == "categorical" and NATIVE_MAX < c.cardinality <= NATIVE_CAP]
    if not candidates:
        return
    rounds = int(train_rounds or 300)
    cache, cached = None, None
    if fingerprint and mode != "off":
        with contextlib.suppress(Exception):  # no usable cache folder: the probe just runs
            cache = cache_dir() / "encoding-probe" / f"{probe_cache_key(fingerprint, plan, candidates, seed, rounds)}.json"
    if mode == "auto" and cache is not None:
        with contextlib.suppress(OSError, ValueError):
            cached = json.loads(cache.read_text())
    if isinstance(cached, dict) and cached.get("chosen") in ("native", "target_encoding"):
        decision = {**cached, "cached": str(cache)}  # decided by an earlier run of this table
    elif isinstance(rows := "--probe off" if mode == "off" else _probe_rows(len(head), plan, seed, mode, rounds), str):
        decision = {"chosen": "target_encoding", "skipped": rows}
    else:
        decision = measure_encodings(head, plan, candidates, *rows, seed)
        if cache is not None:  # the next run of the same table reuses it (without a cache it probes again)
            with contextlib.suppress(AccelError):
                write_new(cache, json.dumps(decision).encode(), "the probe decision", exists=REPLACE)
    native = decision["chosen"] == "native"
    plan.native_categorical = list(candidates) if native else []
    plan.encoding_probe = {**decision, "candidates": candidates}
    what = "native categories" if native else "target + count encoding"
    cols = f"{', '.join(candidates[:4])}{', ...' if len(candidates) > 4 else ''}"
    measured = decision.get("skipped", "")
    if "metric" in decision and "native" in decision:
        measured = f"probe on {decision['rows']:,} training rows: {decision['metric']} {decision['native']:.4g} native, "
        measured += f"{decision['target_encoding']:.4g} target-encoded"
    how = "; decided by an earlier run of this table, --probe force measures again" if "cached" in decision else ""
    plan.notices.append(
        f"{len(candidates)} categorical column(s) with {NATIVE_MAX + 1}-{NATIVE_CAP} values ({cols}): "
        f"{what} for XGBoost ({measured}{how})"
    )


def _probe_rows(n: int, plan: TablePlan, seed: int, mode: str, rounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | str:
    """The probe's rows (file positions among the first ``n``) and their 75/25 split (positions
    among them), or why there is no probe."""
    positions = plan.row_positions[plan.train_pos]
    positions = positions[positions < n]
    rng = np.random.default_rng(seed + 2)
    # auto: both encodings' boosting (rows x PROBE_ROUNDS each) within PROBE_SHARE of training's.
    train = len(plan.train_pos)
    limit = min(PROBE_ROWS, int(PROBE_SHARE * rounds * train / (2 * PROBE_ROUNDS))) if mode == "auto" else PROBE_ROWS
    if limit < PROBE_MIN_ROWS:
        return f"a probe would cost more than {PROBE_SHARE:.0%} of training ({train:,} rows x {rounds} rounds)"
    if len(positions) > limit:
        positions = np.sort(rng.choice(positions, limit, replace=False))
    if len(positions) < PROBE_MIN_ROWS:
        return f"fewer than {PROBE_MIN_ROWS} training rows"
    order = rng.permutation(len(positions))
    cut = int(len(order) * 0.75)
    return positions, np.sort(order[:cut]), np.sort(order[cut:])


def measure_encodings(
    head: Frame, plan: TablePlan, candidates: list[str], positions: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int
) -> dict[str, Any]:
    """The encoding probe: a small XGBoost model (:data:`PROBE_ROUNDS` rounds, depth 6) trained on
    the rows ``positions`` of ``head`` at ``train`` with target + count encoding and with native
    categories for ``candidates``, each scored on those at ``test`` with the task's metric; the
    decision (``chosen``: native only when it scores better), as :func:`probe_native_categories` records it."""
    import pandas as pd
    import xgboost as xgb

    from accel.backend import cpu_backend
    from accel.metrics import PARITY, task_metrics
    from accel.models import XGBoostModel, XGBoostSettings

    frame = head.iloc[positions].reset_index(drop=True)
    metric, scores = PARITY[plan.task][0], {}
    model = XGBoostModel(XGBoostSettings(max_depth=6), plan.task, seed, n_classes=max(len(plan.classes or []), 2))
    params = model.booster_params(cpu_backend())
    for option, native in (("target_encoding", []), ("native", candidates)):
        sub = dataclasses.replace(
            plan, row_positions=positions, train_pos=train, test_pos=test, native_categorical=native, notices=[]
        )
        prepared, _ = build_table_features(pd, frame, sub, "native", seed)
        dtrain = xgb.QuantileDMatrix(prepared.X_train, label=_compat.to_numpy(prepared.y_train), enable_categorical=True)
        prediction = xgb.train(params, dtrain, num_boost_round=PROBE_ROUNDS).inplace_predict(prepared.X_test)
        scores[option] = float(task_metrics(plan.task, _compat.to_numpy(prepared.y_test), np.asarray(prediction))[metric])
    better = scores["native"] < scores["target_encoding"] if metric == "rmse" else scores["native"] > scores["target_encoding"]
    return {"rows": int(len(positions)), "metric": metric, **scores, "chosen": "native" if better else "target_encoding"}

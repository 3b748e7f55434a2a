"""Schema inference and the leakage guard: the plan of a ``--data`` run, made once on the host.

The plan is computed once, with pandas, before either arm runs, and both arms then apply it to
their own frames: the same column kinds, the same category vocabularies, the same date formats,
the same rows and the same split. Deciding once keeps the arms comparable (cuDF's and pandas'
readers do not always give a column the same dtype) and makes every decision reportable.

Column kinds: ``numeric`` (numbers, and text of :data:`MOSTLY_NUMBERS` numbers whose other values
are read as missing), ``boolean``, ``categorical`` (strings, low-cardinality integers, mixed
numbers and text, text that looks like dates but fits no layout), ``datetime`` (typed, or
text in a layout detected by :mod:`accel.data.dates` or given with ``--date-format COL=FMT``), and
``dropped`` (ID-like or free text, constant, named in ``--drop``, or a leak of the target). A
Parquet column whose Arrow type decides its kind gets that kind (``typed``, from
:func:`accel.data.readers.arrow_kind`). ``--target``, ``--drop`` and ``--date-format`` find a
column whose header name has surrounding spaces by the name without them (:func:`real_name`).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from accel._compat import cudf_date_gap, numbers_in_text, pandas_datetime
from accel.data import dates
from accel.data.rows import sample_positions, split_positions
from accel.errors import AccelError
from accel.guards import quantity_hint
from accel.yamlsafe import quote

if TYPE_CHECKING:
    from accel.data.readers import ArrowKind, TableSource

#: An integer column with at most this many distinct values is categorical.
LOW_CARDINALITY_INT = 10
#: A classification target may have at most this many classes when inferred from integers.
MAX_INFERRED_CLASSES = 20
#: ``--task classification`` is refused for a numeric target with more distinct values than
#: this, or with non-integer values more than :data:`MAX_CLASS_SHARE` of its rows distinct.
MAX_CLASSES = 100
MAX_CLASS_SHARE = 0.05
#: A text column whose distinct values are at least this share of its values is ID-like.
ID_LIKE_SHARE = 0.9
#: Fewer rows than this cannot make a meaningful train/test split.
MIN_ROWS = 20
_ID_NAME = re.compile(r"(^|_)(id|uuid|guid|key)$|id$", re.IGNORECASE)
TRUE_STRINGS = ("true", "t", "yes", "y")
FALSE_STRINGS = ("false", "f", "no", "n")
#: A text column with at least this share of its values numbers is numeric, the rest read as missing.
MOSTLY_NUMBERS = 0.95


@dataclass
class ColumnPlan:
    """How one column is read and used."""

    name: str
    kind: str  # numeric | boolean | categorical | datetime | dropped
    reason: str = ""
    categories: list[Any] | None = None  # categorical: the vocabulary, sorted, in the column's type
    categories_numeric: bool = False
    date_format: str | None = None  # datetime given as text: the format that parses it
    date_source: str = ""  # "detected" or "--date-format"
    date_note: str = ""  # month-first/day-first resolution, share parsed
    date_parts: list[str] | None = None  # the parts it becomes (None: every part)
    date_gpu: str = ""  # how the GPU arm parses it: "cuDF" or "host (pandas): why"
    numbers_in_text: bool = False  # text on disk: its numbers are used, the rest read as missing

    @property
    def cardinality(self) -> int:
        return len(self.categories or [])

    def describe(self) -> dict[str, Any]:
        """The column in the record: its kind, and each other field that is set."""
        out = {k: v for k, v in vars(self).items() if k not in ("name", "categories_numeric") and v not in (None, "", False)}
        return {**out, "categories": self.cardinality} if self.categories is not None else out


@dataclass
class TablePlan:
    """Everything both arms need to turn the table into model input the same way."""

    target: str
    task: str  # binary | multiclass | regression
    task_reason: str
    classes: list[Any] | None
    classes_numeric: bool
    columns: list[ColumnPlan]
    row_positions: np.ndarray  # rows of the file used (sampled, with a target), in file order
    train_pos: np.ndarray  # positions within row_positions
    test_pos: np.ndarray
    notices: list[str] = field(default_factory=list)
    rows_in_file: int = 0
    # Categorical columns above NATIVE_MAX values that XGBoost gets as native categories (chosen
    # by accel.data.autofeatures.probe_native_categories), and what that probe measured.
    native_categorical: list[str] = field(default_factory=list)
    encoding_probe: dict[str, Any] | None = None

    def widen_vocabularies(self, uniques: dict[str, list[Any]]) -> None:
        """Categories seen anywhere in the file, where the kinds came from its first rows."""
        for c in self.columns:
            if c.kind == "categorical" and c.name in uniques:
                values = pd.Series(uniques[c.name], dtype=object)
                values = numbers_in_text(values).dropna() if c.numbers_in_text else values
                c.categories = sorted(set(map(float if c.categories_numeric else str, values)))

    def csv_dtypes(self) -> dict[str, str]:
        """Column types to read CSV chunks with, so that every chunk parses alike."""
        numeric = {c.name for c in self.features if (c.kind == "numeric" or c.categories_numeric) and not c.numbers_in_text}
        out = {c.name: "float64" if c.name in numeric else "str" for c in self.features}
        return {**out, self.target: "float64" if self.task == "regression" or self.classes_numeric else "str"}

    @property
    def features(self) -> list[ColumnPlan]:
        return [c for c in self.columns if c.kind != "dropped"]

    @property
    def read_columns(self) -> list[str]:
        return [c.name for c in self.features] + [self.target]

    def by_kind(self) -> dict[str, list[ColumnPlan]]:
        return {kind: [c for c in self.columns if c.kind == kind] for kind in dict.fromkeys(c.kind for c in self.columns)}

    def fitted_state(self) -> dict[str, Any]:
        """What applying the plan to new rows needs (no row positions: they are the training
        table's), as JSON values: :meth:`from_fitted_state` reads it back."""
        keep = ("target", "task", "task_reason", "classes", "classes_numeric", "native_categorical")
        return {**{k: getattr(self, k) for k in keep}, "columns": [dataclasses.asdict(c) for c in self.features]}

    @classmethod
    def from_fitted_state(cls, state: dict[str, Any]) -> TablePlan:
        """The plan :meth:`fitted_state` wrote, with no rows."""
        none = np.empty(0, dtype=np.int64)
        columns = [ColumnPlan(**c) for c in state["columns"]]
        return cls(**{**state, "columns": columns, "row_positions": none, "train_pos": none, "test_pos": none})

    def describe(self) -> dict[str, Any]:
        rows = {"rows_used": self.row_positions, "rows_train": self.train_pos, "rows_test": self.test_pos}
        return {
            **{k: getattr(self, k) for k in ("target", "task", "task_reason", "rows_in_file", "encoding_probe")},
            "classes": [str(c) for c in self.classes] if self.classes is not None else None,
            **{k: len(v) for k, v in rows.items()},
            "columns": {c.name: c.describe() for c in self.columns},
            "notices": list(self.notices),
            "native_categorical": list(self.native_categorical),
        }


# --------------------------------------------------------------------------- helpers


def _numeric_share(s: pd.Series) -> float:
    """Share of non-null values of a text column that parse as numbers (each distinct value
    parsed once, weighted by its count: a column of a few hundred values parses a few hundred)."""
    counts = s.value_counts()
    if counts.empty:
        return 0.0
    parsed = numbers_in_text(pd.Series(counts.index, dtype=object)).notna().to_numpy()
    return float(counts.to_numpy()[parsed].sum() / counts.sum())


def _sorted_categories(values: pd.Series, numeric: bool) -> list[Any]:
    return sorted(map(float if numeric else str, values.dropna().unique()))


def _datetime_plan(name: str, layout: dates.DateLayout, source: str, notices: list[str], text: pd.Series) -> ColumnPlan:
    """A column of date text in ``layout`` (``text``: its non-null values), and its line in the schema notice."""
    fmt, note, gap = layout.format, layout.note, cudf_date_gap(layout.format)
    gpu = f"host (pandas): {gap}" if gap is not None else "cuDF (month names as numbers)" if re.search("%[bB]", fmt) else "cuDF"
    parts, why = dates.date_parts(fmt, pandas_datetime(text.astype(str), fmt))
    utc = "; times with UTC offsets read as UTC" if "%z" in fmt else ""
    parsed = f"{layout.parsed:.0%} of {layout.sampled:,} sampled values parsed{utc}"
    notices.append(
        f"column {name!r}: dates as {fmt} ({source}; {parsed}{'; ' + note if note else ''}); "
        f"features {', '.join(parts)}{' (' + why + ')' if why else ''}; GPU arm parses with {gpu}"
    )
    note = "; ".join(x for x in (parsed, note, why) if x)
    reason = f"date text ({source})"
    return ColumnPlan(
        name, "datetime", reason, date_format=fmt, date_source=source, date_note=note, date_parts=parts, date_gpu=gpu
    )


def _override_plan(name: str, s: pd.Series, fmt: str, notices: list[str]) -> ColumnPlan:
    """``--date-format NAME=FMT``: checked on the sampled values. A column with nothing to parse (no
    values, or numbers that are not whole, such as 0.5) and a format that parses none are errors."""
    flag, only = f"--date-format {name}={fmt}", "; give --date-format only for a column of dates"
    values = s.dropna()
    if values.empty:
        raise AccelError(f"{flag}: column {name!r} has no values to parse{only}")
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        notices.append(f"column {name!r} is already typed as datetimes: {flag} not needed")
        return ColumnPlan(name, "datetime", "typed")
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        whole = values[values % 1 == 0]  # 20210315 read as a number
        if whole.empty:
            raise AccelError(f"{flag}: column {name!r} holds numbers that are not whole (e.g. {values.iloc[0]}), not dates{only}")
        values = whole.astype("int64")
    sample = values.astype(str).head(dates.SAMPLE).reset_index(drop=True)
    try:
        pandas_datetime(sample.head(1), fmt)
    except (ValueError, TypeError) as exc:
        raise AccelError(f"{flag}: not a format pandas reads ({exc})") from None
    share = dates.parsed_share(sample, fmt)
    if share == 0:
        raise AccelError(
            f"{flag} parses none of the {len(sample):,} sampled values of {name!r} (e.g. {sample.iloc[0]!r}); "
            "give the format its values are written in"
        )
    layout = dates.DateLayout(fmt, share, len(sample), "" if share == 1 else "the rest become missing")
    return _datetime_plan(name, layout, "--date-format", notices, values.astype(str))


def _plan_column(name: str, s: pd.Series, notices: list[str], date_format: str | None, typed: ArrowKind | None) -> ColumnPlan:
    """How one column is used; ``typed``: the kind its Arrow type (:func:`accel.data.readers.arrow_kind`) or ``--drop`` gives."""
    kind, _, why = typed or ("", "", "")
    if kind == "dropped":
        return ColumnPlan(name, "dropped", why)
    if date_format is not None:
        return _override_plan(name, s, date_format, notices)
    values, dtype = s.dropna(), s.dtype
    n, nunique = len(values), int(values.nunique())
    if n == 0:
        return ColumnPlan(name, "dropped", "all values missing")
    if nunique == 1 and not why.startswith("hive partition"):
        return ColumnPlan(name, "dropped", "constant")
    if kind == "numeric":
        return ColumnPlan(name, "numeric", why)
    if kind == "categorical":
        numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
        return ColumnPlan(
            name, "categorical", why, _sorted_categories(values if numeric else values.astype(str), numeric), numeric
        )
    if pd.api.types.is_bool_dtype(dtype):
        return ColumnPlan(name, "boolean")
    if pd.api.types.is_datetime64_any_dtype(dtype):  # every date part, unless it is a monthly series
        parts, note = dates.date_parts(None, values.dt.tz_convert(None) if values.dt.tz is not None else values)
        return ColumnPlan(name, "datetime", "typed", date_note=note, date_parts=parts if note else None)
    if pd.api.types.is_integer_dtype(dtype) or (pd.api.types.is_float_dtype(dtype) and bool((values % 1 == 0).all())):
        if nunique == n and n >= 50 and (_ID_NAME.search(name) or values.is_monotonic_increasing):
            return ColumnPlan(name, "dropped", "ID-like (every value distinct)")
        if nunique <= LOW_CARDINALITY_INT:
            return ColumnPlan(name, "categorical", "low-cardinality integer", _sorted_categories(values, True), True)
        return ColumnPlan(name, "numeric")
    if pd.api.types.is_numeric_dtype(dtype):
        return ColumnPlan(name, "numeric")
    return _text_plan(name, values.astype(str), nunique, notices)


def _text_plan(name: str, text: pd.Series, nunique: int, notices: list[str]) -> ColumnPlan:
    """How a column of text ``text`` (its non-null values, ``nunique`` distinct) is used: true/false, dates,
    categories, or dropped."""
    if bool(text.str.strip().str.lower().isin(TRUE_STRINGS + FALSE_STRINGS).all()):
        return ColumnPlan(name, "boolean", "true/false text")
    reason = ""
    date_like = dates.date_like_share(text)
    if date_like >= dates.DATE_LIKE_SHARE:
        layout = dates.detect_layout(text)
        if layout is not None:
            return _datetime_plan(name, layout, "detected", notices, text)
        reason = "unparseable dates: kept as categorical"
        guess = dates.detect_layout(text, minimum=0.0)
        hint = f" (the closest, {guess.format}, parses {guess.parsed:.0%})" if guess is not None else ""
        notices.append(
            f"column {name!r} looks like dates ({date_like:.0%} of sampled values) but no known layout parses "
            f"{dates.MIN_PARSED:.0%} of them{hint}: not parsed as dates; give its layout with "
            f"--date-format {name}=FORMAT (a strptime format such as %d/%m/%Y %H:%M)"
        )
    if not reason and 0 < (numeric_share := _numeric_share(text)) < 1:
        if numeric_share >= MOSTLY_NUMBERS:
            return _numbers_plan(name, text, notices)
        reason = f"mixed types ({numeric_share:.0%} numbers, the rest text): treated as categorical"
    if nunique >= ID_LIKE_SHARE * len(text) and len(text) >= 50:
        return ColumnPlan(name, "dropped", "ID-like or free text (almost every value distinct)")
    return ColumnPlan(name, "categorical", reason, _sorted_categories(text, False), False)


def _numbers_plan(name: str, text: pd.Series, notices: list[str]) -> ColumnPlan:
    """A text column of numbers but for a few values (``unknown``, ``?``): planned as its numbers
    are, by the rules for a numeric column, each other value read as missing (on both arms)."""
    numbers = numbers_in_text(text)
    words = text[numbers.isna()].value_counts()
    shown = ", ".join(map(repr, words.index[:3])) + (f" and {len(words) - 3:,} more" if len(words) > 3 else "")
    plan = _plan_column(name, numbers, notices, None, None)
    if plan.kind != "dropped":
        said = f"{int(words.sum()):,} of {len(text):,} values not numbers ({shown}), read as missing"
        plan.numbers_in_text, plan.reason = True, "; ".join(filter(None, (plan.reason, said)))
        notices.append(f"column {name!r}: numbers, but {said}")
    return plan


def _identical(a: np.ndarray, b: np.ndarray, finite: np.ndarray) -> bool:
    """``np.allclose(a, b)`` without overflow: the same infinities, and on the finite values the
    halves' difference within half the tolerance (``1e308`` against ``-1e308`` overflows no sum)."""
    if not np.array_equal(a[~finite], b[~finite]):
        return False
    a, b = a[finite], b[finite]
    return bool(np.all(np.abs(a / 2 - b / 2) <= (1e-8 + 1e-5 * np.abs(b)) / 2))


def _abs_correlations(X: np.ndarray, t: np.ndarray) -> np.ndarray:
    """|Pearson correlation| of each column of ``X`` with the finite ``t``.

    Each column (and the target) scaled by its largest magnitude first, so that no sum of
    squares overflows; a missing or infinite value counts as absent from its column. A column
    with no finite value other than 0, or a constant one, correlates with nothing (0).
    """
    finite = np.isfinite(X)
    scale = np.where(finite, np.abs(X), 0.0).max(axis=0)
    Xs = np.where(finite, X, 0.0) / np.where(scale > 0, scale, 1.0)
    mean = Xs.sum(axis=0) / np.maximum(finite.sum(axis=0), 1)
    Xc = np.where(finite, Xs - mean, 0.0)
    t_scale = float(np.abs(t).max()) if len(t) else 0.0
    tc = t / (t_scale or 1.0)
    tc = tc - tc.mean() if len(tc) else tc
    num = np.abs(Xc.T @ tc)
    den = np.sqrt((Xc**2).sum(axis=0) * float(np.sum(tc**2)))
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def _leak_reason(feature: pd.Series, plan: ColumnPlan, y: pd.Series, task: str) -> str | None:
    """Why ``feature`` gives the target away on the training rows, or None."""
    mask = feature.notna() & y.notna()
    f, t = feature[mask], y[mask]
    if len(f) < MIN_ROWS:
        return None
    if plan.kind == "numeric" or plan.kind == "boolean" or (plan.kind == "categorical" and plan.categories_numeric):
        fv = pd.to_numeric(f, errors="coerce")
        if plan.kind == "boolean" and fv.isna().all():
            fv = f.astype(str).str.strip().str.lower().isin(TRUE_STRINGS).astype(float)
        if task == "regression":
            fa, ta = fv.to_numpy(dtype=float), t.to_numpy(dtype=float)
            finite = np.isfinite(fa) & np.isfinite(ta)
            if _identical(fa, ta, finite):
                return "identical to the target"
            if finite.sum() >= 2 and _abs_correlations(fa[finite, None], ta[finite])[0] > 0.9999:
                return "a linear function of the target (|correlation| > 0.9999)"
            return None
        # Classification: a perfect threshold predictor. Sorted by value, the class changes
        # no more often than there are class boundaries, and no value holds two classes.
        values = pd.DataFrame({"f": fv.to_numpy(), "t": t.to_numpy()}).dropna().groupby("f")["t"]
        if (values.nunique() > 1).any() or values.ngroups < 2:
            return None
        ordered = values.first().to_numpy()  # the class of each value, in order of value
        if (ordered[1:] != ordered[:-1]).sum() <= t.nunique() - 1:
            return "a perfect predictor of the target (one threshold separates the classes)"
        return None
    if plan.kind == "categorical":
        if task == "regression":
            return None
        groups = pd.DataFrame({"f": f.astype(str).to_numpy(), "t": t.astype(str).to_numpy()}).groupby("f")["t"]
        if len(f) / max(groups.ngroups, 1) >= 5 and bool((groups.nunique() == 1).all()):
            return "a perfect predictor of the target (every value has a single class)"
    return None


def _numeric_leak_candidates(frame: pd.DataFrame, names: list[str], y: pd.Series, task: str, rows: np.ndarray) -> set[str]:
    """Numeric columns that might give the target away, found for all columns at once.

    A cheap vectorised pass (one sort per column in NumPy) so that a 5,000-column table needs
    the exact per-column check only for the few columns that pass it. ``rows``: the positions
    of ``frame`` that ``y`` belongs to.
    """
    X = np.empty((len(y), len(names)), dtype=np.float64)
    for j, name in enumerate(names):  # one column at a time: no float64 copy of the whole frame first
        X[:, j] = frame[name].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
    if task == "regression":
        t = y.to_numpy(dtype=np.float64)
        if not np.isfinite(t).all():
            return set()  # a target with gaps correlates with nothing here
        return {n for n, c in zip(names, _abs_correlations(X, t)) if c > 0.999}
    codes = pd.factorize(y)[0]
    order = np.argsort(np.where(np.isnan(X), np.inf, X), axis=0, kind="stable")
    sorted_y = codes[order]
    valid = ~np.isnan(np.take_along_axis(X, order, axis=0))
    changes = ((sorted_y[1:] != sorted_y[:-1]) & valid[1:] & valid[:-1]).sum(axis=0)
    return {n for n, c in zip(names, changes) if c <= len(np.unique(codes)) - 1}


# --------------------------------------------------------------------------- the plan


def real_name(name: str, columns: list[str]) -> str:
    """The column ``name`` means: itself, else the one column whose name without surrounding spaces it is.

    A header keeps its names as written (``" churned "``); a user who types ``--target churned``
    means that column when no other fits. Where none or several fit, ``name`` comes back as given
    (and is refused as not a column).
    """
    if name in columns:
        return name
    fits = [c for c in columns if c.strip() == name.strip()]
    return fits[0] if len(fits) == 1 else name


def _check_spellings(y: pd.Series, target: str) -> None:
    """Refuse text classes that differ only in case or surrounding spaces (``yes``, `` yes``, ``Yes``):
    the model would learn them as different classes. The error names each group."""
    labels = pd.Series(y.dropna().astype(str).unique())
    near = [sorted(g) for g in labels.groupby(labels.str.strip().str.casefold().to_numpy()).agg(list) if len(g) > 1]
    if near:
        more = f"; and {len(near) - 3} more" if len(near) > 3 else ""
        shown = "; ".join(" / ".join(repr(v) for v in g[:4]) for g in near[:3]) + more
        raise AccelError(
            f"target {target!r} has classes that differ only in case or surrounding spaces ({shown}): a model would "
            "learn each spelling as a class of its own; write each class one way in the file"
        )


def _target_task(y: pd.Series, target: str, task: str | None) -> tuple[str, str, list[Any] | None, bool]:
    """(task, why, classes, classes_numeric) for the non-null target values ``y`` (``task`` None or ``"auto"``: inferred)."""
    nunique = int(y.nunique())
    is_bool = pd.api.types.is_bool_dtype(y.dtype) or (
        y.dtype == object and bool(y.map(lambda v: isinstance(v, (bool, np.bool_))).all())
    )
    is_numeric = pd.api.types.is_numeric_dtype(y.dtype) and not is_bool
    integral = is_numeric and bool((y % 1 == 0).all())
    if task in (None, "auto"):
        if is_bool:
            task, why = "classification", "boolean target"
        elif not is_numeric:
            task, why = "classification", f"text target with {nunique} distinct values"
        elif integral and nunique <= MAX_INFERRED_CLASSES:
            why = f"integer target with {nunique} distinct values, at most {MAX_INFERRED_CLASSES} read as classes"
            task, why = "classification", f"{why}; --task regression if they are a count or amount"
        else:
            task, why = "regression", f"numeric target with {nunique} distinct values"
        why = f"inferred: {why}"
    else:
        why = "given with --task"
        many = nunique > MAX_CLASSES or (not integral and nunique > MAX_CLASS_SHARE * len(y))
        if task == "classification" and is_numeric and many:
            raise AccelError(
                f"--task classification: target {target!r} is numeric with {nunique:,} distinct "
                f"{'' if integral else 'non-'}integer values in {len(y):,} rows, which is a quantity to predict, not classes; "
                "use --task regression"
            )
    if task == "regression":
        if not is_numeric:
            raise AccelError(
                f"--task regression needs a numeric target, but {target!r} holds text (e.g. {str(y.iloc[0])!r}); "
                "use --task classification or another --target"
            )
        return "regression", why, None, False
    if not is_numeric and not is_bool:
        _check_spellings(y, target)
    if nunique < 2:
        raise AccelError(f"target {target!r} has a single class ({y.iloc[0]!r}): nothing to classify{quantity_hint(why)}")
    classes = _sorted_categories(y, is_numeric) if not is_bool else [False, True]
    return ("binary" if nunique == 2 else "multiclass"), why, classes, is_numeric


def make_plan(
    frame: pd.DataFrame,
    target: str,
    task: str | None = None,
    drop: list[str] | None = None,
    rows: int | None = None,
    test_size: float = 0.2,
    seed: int = 42,
    target_values: pd.Series | None = None,
    date_formats: dict[str, str] | None = None,
    typed: dict[str, ArrowKind] | None = None,
) -> TablePlan:
    """Infer the schema, pick the task, choose rows and split, and drop leaks. Raises AccelError.

    ``frame`` is the table, or its first rows when ``target_values`` (the whole target column)
    is given: rows, task and split then come from the whole column, column kinds and the
    leakage guard from the training rows among the first rows. ``typed`` gives the kinds that
    columns' Arrow types decide (:attr:`accel.data.readers.TableSource.arrow_kinds`).
    """
    typed = dict(typed or {})
    columns = [str(c) for c in frame.columns]
    target = real_name(target, columns)
    drop = [real_name(name, columns) for name in drop or []]
    date_formats = {real_name(name, columns): fmt for name, fmt in (date_formats or {}).items()}
    _check_names(columns, target, drop, date_formats, typed)
    full_target = frame[target] if target_values is None else target_values.reset_index(drop=True)
    if len(full_target) == 0 or len(frame) == 0:
        raise AccelError("the table has a header but no data rows")

    notices: list[str] = []
    positions = _rows_with_target(full_target, target, rows, seed, notices)
    y = full_target.iloc[positions].reset_index(drop=True)
    task_kind, why, classes, classes_numeric = _target_task(y, target, task)
    train_pos, test_pos = split_positions(len(positions), test_size, seed)
    sub = _schema_rows(frame, positions, notices)
    typed.update((name, ("dropped", "", "named in --drop")) for name in drop)
    plans = [
        _plan_column(name, sub[name], notices, date_formats.get(name), typed.get(name)) for name in columns if name != target
    ]
    # The leakage guard looks at training rows only: the split came first.
    train_in_sub = train_pos[train_pos < len(sub)]
    y_train = y.iloc[train_in_sub]
    if task_kind != "regression" and not classes_numeric:
        y_train = y_train.astype(str)
    _drop_leaks(plans, sub, train_in_sub, y_train, task_kind, notices)

    if not any(p.kind != "dropped" for p in plans):
        raise AccelError("no usable feature left after dropping ID-like, constant, leaking and --drop columns")
    if task_kind != "regression" and y.iloc[train_pos].nunique(dropna=True) < 2:  # counted as they are: no text copy
        raise AccelError(f"the training split of target {target!r} has a single class: use more rows{quantity_hint(why)}")
    return TablePlan(
        target=target, task=task_kind, task_reason=why, classes=classes, classes_numeric=classes_numeric, columns=plans,
        row_positions=positions, train_pos=train_pos, test_pos=test_pos, notices=notices, rows_in_file=len(full_target),
    )  # fmt: skip


def _known(flag: str, name: str, columns: list[str]) -> None:
    """Refuse ``name`` (given as ``flag``) when it is not a column, naming the nearest columns, else the first ones."""
    if name not in columns:
        near = difflib.get_close_matches(name, columns, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(repr(c) for c in near)}?" if near else f"columns: {', '.join(columns[:10])}"
        raise AccelError(f"{flag} is not a column of the table; {hint}")


def _check_names(
    columns: list[str], target: str, drop: list[str], date_formats: dict[str, str], typed: dict[str, ArrowKind]
) -> None:
    """Refuse a ``--target``, ``--drop`` or ``--date-format`` that names no column, or the wrong one."""
    _known(f"--target {quote(target)}", target, columns)
    for name in drop:
        _known(f"--drop {name!r}", name, columns)
    if target in drop:
        raise AccelError(f"--drop names the target {target!r}; drop other columns only")
    if typed.get(target, ("",))[0] == "dropped":
        raise AccelError(f"--target {target!r} cannot be a target: {typed[target][2]}; choose another --target")
    for name, fmt in date_formats.items():
        _known(f"--date-format {name}={fmt}: {name!r}", name, columns)
        if name == target:
            raise AccelError(f"--date-format {name}={fmt} names the target; it applies to feature columns")
        if name in drop:
            raise AccelError(f"--date-format {name}={fmt} names a column that --drop leaves out")


def _rows_with_target(full_target: pd.Series, target: str, rows: int | None, seed: int, notices: list[str]) -> np.ndarray:
    """The positions of the rows used (a seeded sample of ``rows``), less those without a target value."""
    positions = sample_positions(len(full_target), rows, seed)
    if positions is not None:
        notices.append(f"using a seeded sample of {rows:,} of {len(full_target):,} rows")
    positions = np.arange(len(full_target)) if positions is None else positions
    has_target = full_target.iloc[positions].notna().to_numpy()
    if not has_target.any():
        raise AccelError(f"target {target!r} has no values (every row is missing it)")
    if not has_target.all():
        notices.append(f"{int((~has_target).sum()):,} rows without a target value dropped")
    positions = positions[has_target]
    if len(positions) < MIN_ROWS:
        raise AccelError(f"only {len(positions)} rows with a target: at least {MIN_ROWS} are needed to train and test")
    return positions


def _schema_rows(frame: pd.DataFrame, positions: np.ndarray, notices: list[str]) -> pd.DataFrame:
    """The rows the schema is inferred from: the used rows among the first rows given."""
    in_frame = int(np.searchsorted(positions, len(frame)))
    if in_frame < len(positions):
        notices.append(f"column kinds inferred from the first {len(frame):,} rows; categories from all rows")
    if in_frame == len(frame) and bool((positions[:in_frame] == np.arange(in_frame)).all()):
        return frame.reset_index(drop=True)  # every first row is used: no copy of the rows
    return frame.iloc[positions[:in_frame]].reset_index(drop=True)


def _drop_leaks(
    plans: list[ColumnPlan], sub: pd.DataFrame, train_rows: np.ndarray, y_train: pd.Series, task_kind: str, notices: list[str]
) -> None:
    """Mark the columns that leak the target (on the training rows ``train_rows`` of ``sub``) dropped, saying why."""
    # Training rows are taken column by column, never as a copy of the whole sample.
    prefiltered = [p.name for p in plans if p.kind == "numeric" and pd.api.types.is_numeric_dtype(sub[p.name].dtype)]
    cleared = set(prefiltered) - _numeric_leak_candidates(sub, prefiltered, y_train, task_kind, rows=train_rows)
    for plan in (p for p in plans if p.kind not in ("dropped", "datetime") and p.name not in cleared):
        if leak := _leak_reason(sub[plan.name].iloc[train_rows], plan, y_train, task_kind):
            plan.kind, plan.reason = "dropped", f"leak: {leak}"
            notices.append(f"column {plan.name!r} dropped: {leak}")


@dataclass
class PlannedTable:
    """A user's table as planned (:func:`accel.workflows.table.plan_table`), and the seconds its planning and probe took."""

    source: TableSource
    plan: TablePlan
    read_seconds: float
    infer_seconds: float
    probe_seconds: float = 0.0
    #: The first rows, kept for the encoding probe (:func:`accel.workflows.table.probe_encodings`, which drops them)
    #: where the model's family takes categories natively; None otherwise.
    head: Any = field(default=None, repr=False)

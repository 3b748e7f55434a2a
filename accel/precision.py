"""Model input storage: the feature matrix held as float32, or as float16 to fit twice the rows.

:func:`store` turns a feature frame into a dense matrix in the arm's memory (CuPy on the GPU
arm, NumPy on the CPU arm). With ``fp16`` each column is held in float16, guarded:

- a column whose largest magnitude falls outside float16's comfortable range (above 65504, or
  so small that its values would be subnormal) is scaled by a power of two, which changes no
  mantissa bit; the scale is undone when the batch is read back;
- a column that would still lose more than :data:`REL_TOL` relative precision (values spanning
  more orders of magnitude than float16 can hold) stays in float32.

Each column's scale comes from its true largest and smallest non-zero magnitudes, reductions
over every row on the frame's device (:func:`column_extremes`), so that no value off a sample
overflows to ``inf``; the rounding error is measured on a sample of rows and on those extremes.

Training and inference read the matrix back batch by batch as float32
(:meth:`StoredMatrix.batch`), so only one batch is ever expanded. Categorical columns are held as
their integer codes, passed to XGBoost as categorical features: in float16 only where every
code is exact there (up to :data:`FP16_EXACT_CODES`), else in float32, so that no two
categories share a code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accel import _compat
from accel._compat import Array, Frame
from accel.backend import Backend

FP16_MAX = 65504.0
#: Largest relative rounding error a column may suffer in float16 (measured on a sample).
REL_TOL = 1e-3
#: Target magnitude after scaling: values up to 2**15, comfortably inside float16's range.
_TARGET_EXP = 15
_SAMPLE = 100_000
#: The largest integer up to which float16 holds every integer exactly (2**11): a categorical
#: column with a code above it is kept in float32 (2049 would read back as 2048).
FP16_EXACT_CODES = 2048
#: Rows :func:`frame_matrix` fills at a time (one block of every column stays in cache).
_FILL_ROWS = 1024


@dataclass
class ColumnPrecision:
    name: str
    storage: str  # "fp16" | "fp32"
    scale: float = 1.0
    reason: str = ""


@dataclass
class PrecisionPlan:
    """Per column: float16 (possibly scaled by a power of two) or float32, and why."""

    precision: str
    columns: list[ColumnPrecision]

    def indices(self, storage: str) -> list[int]:
        """Positions of the columns held in ``storage`` (``"fp16"`` or ``"fp32"``)."""
        return [i for i, c in enumerate(self.columns) if c.storage == storage]

    def describe(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "rel_tol": REL_TOL,
            "fp16_columns": sum(c.storage == "fp16" for c in self.columns),
            "scaled": {c.name: {"scale": c.scale, "reason": c.reason} for c in self.columns if c.scale != 1.0},
            "kept_fp32": {c.name: c.reason for c in self.columns if self.precision == "fp16" and c.storage == "fp32"},
        }


def _column_decision(
    name: str, values: np.ndarray, top: float | None = None, low: float | None = None, categorical: bool = False
) -> ColumnPrecision:
    """float16 (scaled by a power of two where needed) or float32 for one column.

    ``values``: a sample of its values; ``top`` and ``low``: its largest and smallest non-zero
    finite magnitudes over every row (:func:`column_extremes`; taken from the sample when not
    given). The scale comes from ``top``; the rounding error is measured on the sample and on
    both extremes. A categorical column's values are codes: float32 as soon as one is above
    :data:`FP16_EXACT_CODES`.
    """
    finite = values[np.isfinite(values)]
    nonzero = np.abs(finite[finite != 0])
    top = float(nonzero.max()) if top is None and nonzero.size else top
    low = float(nonzero.min()) if low is None and nonzero.size else low
    if top is None or not np.isfinite(top) or top == 0 or (categorical and top <= FP16_EXACT_CODES):
        return ColumnPrecision(name, "fp16")
    if categorical:
        why = f"categorical codes up to {top:.0f}: float16 holds them exactly only up to {FP16_EXACT_CODES}"
        return ColumnPrecision(name, "fp32", 1.0, why)
    # Outside float16's range, a power of two moves the column into it without touching any mantissa bit.
    scale = 2.0 ** (math.ceil(math.log2(top)) - _TARGET_EXP) if top > FP16_MAX or top < 2.0**-8 else 1.0
    reason = f"max |x| = {top:.4g} is outside float16's range: scaled by 2^{int(math.log2(scale))}" if scale != 1.0 else ""
    extremes = [v for v in (top, low) if v is not None and np.isfinite(v) and v > 0]
    sample = np.concatenate([nonzero[:: max(1, nonzero.size // _SAMPLE)], np.asarray(extremes, dtype=np.float64)]) / scale
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        back = sample.astype(np.float16).astype(np.float64)
        error = float(np.nanmax(np.abs(back - sample) / sample)) if sample.size else 0.0
    if not np.isfinite(error) or error > REL_TOL:
        shown = "overflows" if not np.isfinite(error) else f"{error:.2g} relative error"
        return ColumnPrecision(name, "fp32", 1.0, f"float16 would lose precision ({shown} > {REL_TOL:g})")
    return ColumnPrecision(name, "fp16", scale, reason)


def plan_precision(
    precision: str,
    columns: list[str],
    host_samples: list[np.ndarray],
    extremes: dict[str, tuple[float | None, float | None]] | None = None,
    categorical: list[str] | None = None,
) -> PrecisionPlan:
    """Decide each column's storage from host samples of its values (all the frames stored), its
    true extremes (``column -> (largest, smallest)`` non-zero magnitude) and which columns are
    categorical codes."""
    if precision == "fp32":
        return PrecisionPlan("fp32", [ColumnPrecision(c, "fp32") for c in columns])
    values = np.concatenate(host_samples, axis=0) if len(host_samples) > 1 else host_samples[0]
    extremes, coded = extremes or {}, set(categorical or [])
    decisions = [_column_decision(c, values[:, i], *extremes.get(c, (None, None)), c in coded) for i, c in enumerate(columns)]
    return PrecisionPlan("fp16", decisions)


def column_extremes(frames: list[Any], categorical: list[str]) -> dict[str, tuple[float | None, float | None]]:
    """Per column, the largest and the smallest non-zero finite magnitude over every row of
    ``frames`` (a categorical column: of its codes), by reductions on each frame's device.

    Missing and infinite values are left out; a column without a non-zero finite value gets
    ``(None, None)``.
    """
    wanted = set(categorical)
    out: dict[str, tuple[float | None, float | None]] = {}
    for name in frames[0].columns:
        found: list[tuple[float, float]] = []  # (largest, smallest) of each frame that has one
        for frame in frames:
            column = frame[name]
            if name in wanted:
                codes = column.cat.codes
                column = codes.where(codes >= 0)
            magnitude = _compat.as_float(column, "float64").abs()
            magnitude = magnitude.where((magnitude > 0) & (magnitude < float("inf")))
            top, low = _compat.host_float(magnitude.max()), _compat.host_float(magnitude.min())
            if top is not None and low is not None:
                found.append((top, low))
        out[str(name)] = (max(t for t, _ in found), min(s for _, s in found)) if found else (None, None)
    return out


def frame_matrix(frame: Frame, categorical: list[str], out: Array | None = None) -> Array:
    """A feature frame as a float32 matrix on the arm's device; categoricals become their codes.

    Each column is converted once, straight into the matrix (``out`` when given, else a new
    one): no float32 copy of the frame is made first.
    """
    if out is None:
        if not categorical:
            return _compat.frame_to_array(frame, "float32")
        xp = _compat.array_module(frame)
        out = xp.empty((len(frame), len(frame.columns)), dtype=xp.float32)
    wanted = set(categorical)
    values = []
    for name in frame.columns:
        column = frame[name]
        if name in wanted:
            codes = column.cat.codes
            column = codes.astype("float32").where(codes >= 0)
        values.append(_compat.column_values(column))
    # Row blocks, columns within: on the host the writes into the row-major matrix stay in
    # cache (whole strided columns were 2.5x slower); on a GPU one copy per column.
    step = _FILL_ROWS if isinstance(out, np.ndarray) else max(len(frame), 1)
    for a in range(0, len(frame), step):
        for j, v in enumerate(values):
            out[a : a + step, j] = v[a : a + step]  # the last block's slices end at the last row
    return out


@dataclass
class StoredMatrix:
    """A feature matrix in the arm's memory, float16 and/or float32 parts, read back as float32."""

    xp: Any
    n_rows: int
    plan: PrecisionPlan
    half: Any = None  # (n, k16) float16
    full: Any = None  # (n, k32) float32
    scales: Any = None  # (k16,) float32
    feature_names: list[str] = field(default_factory=list)
    feature_types: list[str] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return int((self.half.nbytes if self.half is not None else 0) + (self.full.nbytes if self.full is not None else 0))

    @property
    def nbytes_fp32(self) -> int:
        return self.n_rows * len(self.feature_names) * 4

    def batch(self, start: int, stop: int) -> Any:
        """Rows ``start:stop`` as one float32 matrix (the only place float16 is expanded)."""
        xp = self.xp
        if self.half is None:
            return self.full[start:stop]
        if self.full is None and bool((self.scales == 1).all()):
            return self.half[start:stop].astype(xp.float32)
        out = xp.empty((stop - start, len(self.feature_names)), dtype=xp.float32)
        half_idx, full_idx = self.plan.indices("fp16"), self.plan.indices("fp32")
        out[:, half_idx] = self.half[start:stop].astype(xp.float32) * self.scales
        if full_idx:
            out[:, full_idx] = self.full[start:stop]
        return out


def xgboost_safe_name(name: str) -> str:
    # XGBoost refuses '[', ']' and '<' in feature names (one-hot names carry category values).
    return str(name).replace("[", "(").replace("]", ")").replace("<", "lt")


def xgboost_features(columns: Any, categorical: list[str]) -> tuple[list[str], list[str]]:
    """XGBoost's ``feature_names`` and ``feature_types`` (``"c"`` categorical, ``"q"`` numeric) of a frame's columns."""
    wanted = {str(c) for c in categorical}
    names = [str(c) for c in columns]
    return [xgboost_safe_name(c) for c in names], ["c" if c in wanted else "q" for c in names]


def store_frame(backend: Backend, frame: Frame, categorical: list[str], plan: PrecisionPlan, batch_rows: int) -> StoredMatrix:
    """Hold a feature frame as the precision plan says, filled ``batch_rows`` rows at a time.

    Only one float32 batch exists at a time besides the stored matrix.
    """
    xp, n = backend.xp, len(frame)
    names, types = xgboost_features(frame.columns, categorical)
    half_idx, full_idx = plan.indices("fp16"), plan.indices("fp32")
    half = xp.empty((n, len(half_idx)), dtype=xp.float16) if half_idx else None
    full = xp.empty((n, len(full_idx)), dtype=xp.float32) if full_idx else None
    scales = xp.asarray(np.array([plan.columns[i].scale for i in half_idx], dtype=np.float32)) if half_idx else None
    step = max(1, batch_rows)
    direct = half is None and _compat.array_module(frame) is xp
    for a in range(0, n, step):
        b = min(a + step, n)
        if direct and full is not None:
            # float32 only, on the frame's own device: each column is converted once, straight
            # into the stored matrix.
            frame_matrix(frame.iloc[a:b], categorical, out=full[a:b])
            continue
        # On the arm's device: a no-op for NumPy and for cuDF's CuPy matrix; a host-to-device
        # copy where a GPU arm keeps pandas frames (cuDF missing) and stores in CuPy.
        m = xp.asarray(frame_matrix(frame.iloc[a:b], categorical))
        if half is not None:
            half[a:b] = (m[:, half_idx] / scales).astype(xp.float16)
        if full is not None:
            full[a:b] = m[:, full_idx]
    return StoredMatrix(xp, n, plan, half, full, scales, names, types)


def plan_for_frames(precision: str, frames: list[Any], categorical: list[str]) -> PrecisionPlan:
    """The precision plan for frames that share columns: scales from every row's extremes
    (:func:`column_extremes`), rounding measured on host samples of their rows."""
    columns = [str(c) for c in frames[0].columns]
    if precision == "fp32":
        return plan_precision("fp32", columns, [])
    samples = [_compat.to_numpy(frame_matrix(f.iloc[:: max(1, len(f) // _SAMPLE)], categorical)) for f in frames]
    return plan_precision(precision, columns, samples, column_extremes(frames, categorical), categorical)

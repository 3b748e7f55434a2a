"""scikit-learn ↔ cuML model pairs and XGBoost CPU ↔ CUDA, fitted and scored on generated data.

Each pair is an :class:`accel.registry.Estimator`, declared once as cuML's own benchmark declares
its ``AlgorithmPair``: the CPU/GPU classes, the parameters both arms share (the model's default
settings), and the ones only one arm takes (``n_jobs`` on the CPU, XGBoost's ``device``). The data are made once on
the host (``make_classification`` / ``make_regression``, float32) and moved to the arm's array
module before the clock starts; fit and predict are timed with :func:`accel.timing.measure`;
the quality metric is computed on the host by the same code for both arms.

The CPU arm uses every core it may: ``n_jobs=-1`` where scikit-learn takes it, XGBoost
``n_jobs`` = the cores available, and BLAS/OpenMP pools at their default (all cores), recorded
with threadpoolctl.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from accel import _compat
from accel.backend import Backend, probe_gpu
from accel.bench.db import both_arms, pick_names
from accel.registry import BENCH_PAIRS, Estimator
from accel.timing import measure, speedup

if TYPE_CHECKING:
    from accel.backend import Arms

#: The pairs, as declared in :mod:`accel.registry` (those with a bench metric), by name: the
#: ``--model`` name where the pair serves one (``random_forest``), else its own (``kmeans``).
PAIRS = BENCH_PAIRS


def pair_name(name: str, say: Callable[[str], None] | None = None, flag: str = "--models") -> str:
    """The key ``name`` means: itself, or the key an older spelling (``random_forest_classifier``)
    stands for, with a one-line notice to ``say``."""
    new = {pair.key: new for new, pair in PAIRS.items()}.get(name, name)
    if new != name and say is not None:
        say(f"notice: {flag} {name} is called {new} now (the same model)")
    return new


def select_models(names: str | Sequence[str] | None, say: Callable[[str], None] | None = None) -> list[Estimator]:
    """The pairs ``--models`` names, in the registry's order (older spellings noticed to ``say``)."""
    wanted = PAIRS if names in (None, "all") else pick_names("model", names, PAIRS, lambda n: pair_name(n, say))
    return [PAIRS[n] for n in PAIRS if n in wanted]


@dataclass
class HostData:
    """Generated data on the host, split 80/20 (the generators already shuffle rows)."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def make_data(task: str, rows: int, features: int, seed: int) -> HostData:
    """Data for a model of ``task``: for a regression, ``make_regression``; else ``make_classification``."""
    from sklearn.datasets import make_classification, make_regression

    regression = task == "regression"
    make, own = (make_regression, {"noise": 10.0}) if regression else (make_classification, {"n_redundant": features // 4})
    X, y = make(
        n_samples=rows, n_features=features, n_informative=max(features // 2, 1 if regression else 2), random_state=seed, **own
    )
    X = X.astype(np.float32)
    y = y.astype(np.float32 if regression else np.int32)
    cut = int(rows * 0.8)
    return HostData(X[:cut], y[:cut], X[cut:], y[cut:])


def fitting(pair: Estimator, backend: Backend, data: HostData, seed: int, test_rows: int | None = None) -> tuple[Any, Any, dict]:
    """The fit of ``pair`` on ``data``'s training rows on ``backend``'s arm, the first ``test_rows``
    test rows (None: none) and what it fits, as a result says it (the arm's ``class`` and its
    ``params``); the data moves to the arm's device here, before any clock."""
    xp = backend.xp
    cls = backend.models[pair.key]
    params = pair.bench_params(gpu=backend.is_gpu, n_threads=backend.n_threads, xgb_device=backend.xgb_device, seed=seed)
    X_train = xp.asarray(data.X_train)
    X_test = None if test_rows is None else xp.asarray(data.X_test[:test_rows])
    y_train = xp.asarray(data.y_train) if pair.task in ("classification", "regression") else None
    backend.synchronize()

    def fit() -> Any:
        model = cls(**params)
        return model.fit(X_train) if y_train is None else model.fit(X_train, y_train)

    return fit, X_test, {"class": f"{cls.__module__.split('.')[0]}.{cls.__name__}", "params": params}


def quality(pair: Estimator, model: Any, prediction: Any, data: HostData, test_rows: int) -> float:
    """The pair's metric, on the host, by the same code for both arms."""
    from sklearn.metrics import accuracy_score, r2_score

    pred, y, X = _compat.to_numpy(prediction), data.y_test[:test_rows], data.X_test[:test_rows]
    metrics: dict[str, Callable[[], Any]] = {
        "accuracy": lambda: accuracy_score(y, pred.astype(y.dtype)),
        "r2": lambda: r2_score(y, pred),
        "inertia": lambda: np.mean(np.sum((X - _compat.to_numpy(model.cluster_centers_)[pred.astype(np.int64)]) ** 2, axis=1)),
        "explained_variance": lambda: np.sum(_compat.to_numpy(model.explained_variance_ratio_)),
    }
    return float(metrics[str(pair.metric)]())


def run_pair(
    pair: Estimator,
    backend: Backend,
    data: HostData,
    *,
    seed: int,
    repeats: int,
    warmup: int,
    progress: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    """Fit and predict one model on one arm; the data moves to the arm's device before any clock.

    ``progress`` is told when the arm starts and after each fit and predict call (a forest on
    1e5 rows fits for a minute: the user sees which call runs)."""
    test_rows = min(len(data.X_test), pair.max_predict_rows or len(data.X_test))
    fit, X_test, fits = fitting(pair, backend, data, seed, test_rows)

    tag = f"[{backend.name}] {pair.name:<20}"
    calls = 1 + warmup + repeats
    progress(
        f"{tag} fitting on {len(data.X_train):,} rows × {data.X_train.shape[1]} features, {calls} times (cold, warm-up, timed)"
    )

    def told(step: str, which: str, seconds: float) -> None:
        if seconds >= 1.0:  # the calls worth a line; the arm's summary line follows anyway
            progress(f"{tag} {step} {which}: {seconds:.2f} s")

    fit_timing, model = measure(fit, backend, repeats=repeats, warmup=warmup, on_call=functools.partial(told, "fit"))
    predict = getattr(model, pair.predict)
    predict_timing, prediction = measure(
        lambda: predict(X_test), backend, repeats=repeats, warmup=warmup, on_call=functools.partial(told, "predict")
    )
    score = quality(pair, model, prediction, data, test_rows)
    used = pair.device_used(model, backend.xgb_device)
    if not backend.ran_here(used):
        # XGBoost only warns when it cannot use the GPU: not a GPU result.
        return {"status": "failed", "reason": f"the model ran on {used!r} although {backend.xgb_device!r} was asked for"}
    fitted = {"fit": fit_timing.as_dict(), "predict": predict_timing.as_dict(), "predict_rows": test_rows}
    return {"status": "ok", **fits, **fitted, "quality": score, "device_used": used}  # fits: class, params


def gpu_pair_skip(pair: Estimator, gpu: Backend | None, gpu_reason: str | None) -> str | None:
    """Why the GPU arm of ``pair`` cannot run (None when it can): the GPU arm, or the library
    the pair needs on it (cuML for the scikit-learn twins, XGBoost built with CUDA)."""
    if gpu is None:
        return gpu_reason  # why there is no GPU arm (resolve_arms says it whenever there is none)

    probe = probe_gpu()
    if pair.needs_cuml:
        if probe.libraries.get("cuml") != "installed":
            return "cuML not installed (pip install 'accel-tabular[gpu-cu12]' or [gpu-cu13])"
        if not probe.available("cuml"):
            return f"cuML cannot run here: {probe.missing('cuml')}"
    elif not probe.available("xgboost_cuda"):
        return f"XGBoost cannot use the GPU here: {probe.missing('xgboost_cuda')}"
    return None


def run_models(
    pairs: Sequence[Estimator],
    arms: Arms,
    s: Mapping[str, Any],
    say: Callable[[str], None],
    on_result: Callable[[str, str, dict], None],
) -> list[dict[str, Any]]:
    """Every pair on both ``arms``, with the data and counts the suite's settings ``s`` give (each
    measurement told to ``say``): one row per model with both arms, quality and speedups.
    An arm that fails is ``failed`` with its reason: the other models still run.

    ``on_result(arm, model, result)`` is called as each arm of each model finishes.
    """
    data_for = functools.cache(lambda task: make_data(task, s["rows"], s["features"], s["seed"]))  # one per kind of task
    rows_out = []
    for pair in pairs:
        data = data_for("regression" if pair.task == "regression" else "classification")

        def measure(arm: str, backend: Backend, pair: Estimator = pair, data: HostData = data) -> dict[str, Any]:
            return run_pair(pair, backend, data, seed=s["seed"], repeats=s["repeats"], warmup=s["warmup"], progress=say)

        def told(arm: str, a: dict[str, Any], pair: Estimator = pair) -> None:
            # One line per arm of each pair, measured or failed.
            if a["status"] == "ok":
                fit, predict = a["fit"]["median"], a["predict"]["median"]
                say(f"[{arm}] {pair.name:<20} fit {fit:8.3f} s  predict {predict:8.3f} s  {pair.metric} {a['quality']:.4f}")
            else:
                say(f"[{arm}] {pair.name:<20} {a['status'].upper()}: {a['reason']}")
            on_result(arm, pair.name, dict(a))

        measured = both_arms(arms, gpu_pair_skip(pair, arms.gpu, arms.gpu_skip), measure, told)
        g, c = measured["gpu"], measured["cpu"]
        row: dict[str, Any] = {"model": pair.name, "task": pair.task, "metric": pair.metric, "gpu": g, "cpu": c}
        for step in ("fit", "predict"):  # NaN unless both ran
            row[f"{step}_speedup"] = speedup(c.get(step, {}).get("median"), g.get(step, {}).get("median"))
        rows_out.append(row)
    return rows_out

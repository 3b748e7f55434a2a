"""Models on either arm, one code path each.

- XGBoost: one estimator with ``device=`` as a parameter (``backend.xgb_device``). After training
  the device XGBoost really used is read back from the booster's own configuration: with
  ``device="cuda"`` and no usable GPU, XGBoost only warns and trains on the CPU.
- Everything else: a scikit-learn class on the CPU arm and its cuML twin on the GPU arm
  (``backend.models``, declared in pairs in :data:`accel.backend.MODEL_CLASSES`), with the
  shared parameters in one dict and the arm-only ones apart, as cuML's benchmark does.

Each model has the same four steps the paired run times: ``to_device`` (model input built where
the model runs), ``fit``, ``predict`` (probabilities for classification), and ``device_used``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from accel import _compat
from accel.backend import Backend
from accel.errors import AccelError
from accel.precision import StoredMatrix


def batch_ranges(n_rows: int, batch_rows: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``n_rows`` in batches of at most ``batch_rows``."""
    step = max(1, batch_rows)
    return [(a, min(a + step, n_rows)) for a in range(0, n_rows, step)]


def _batches(X: StoredMatrix, y: Any, batch_rows: int) -> Any:
    import xgboost

    class StoredBatches(xgboost.DataIter):
        """Hands XGBoost one float32 batch of a stored matrix at a time."""

        def __init__(self) -> None:
            self._ranges = batch_ranges(X.n_rows, batch_rows)
            self._i = 0
            super().__init__()

        def next(self, input_data: Any) -> bool:
            if self._i >= len(self._ranges):
                return False
            a, b = self._ranges[self._i]
            input_data(data=X.batch(a, b), label=y[a:b], feature_names=X.feature_names, feature_types=X.feature_types)
            self._i += 1
            return True

        def reset(self) -> None:
            self._i = 0

    return StoredBatches()

#: ``--model`` choices -> (feature family, MODEL_CLASSES key for classification, for regression).
MODELS: dict[str, tuple[str, str | None, str | None]] = {
    "xgboost": ("xgboost", "xgboost_classifier", "xgboost_regressor"),
    "random_forest": ("random_forest", "random_forest_classifier", "random_forest_regressor"),
    "logistic_regression": ("linear", "logistic_regression", None),
    "linear_regression": ("linear", None, "linear_regression"),
    "knn": ("knn", "knn_classifier", "knn_regressor"),
}


def is_classification(task: str) -> bool:
    return task in ("binary", "multiclass")


@dataclass(frozen=True)
class XGBoostParams:
    """The boosting parameters both arms share.

    Subsampling is off by default so that both arms see the same rows; a search
    (:mod:`accel.hpo`) may turn it on, and then each arm draws its own rows from the seed.
    """

    n_estimators: int = 300
    max_depth: int = 8
    learning_rate: float = 0.1
    max_bin: int = 256
    min_child_weight: float = 1.0
    reg_lambda: float = 1.0
    reg_alpha: float = 0.0
    subsample: float = 1.0
    colsample_bytree: float = 1.0


#: XGBoost's evaluation metric per task, for early stopping and pruning on a validation set.
#: It is the task's own metric (or, for multiclass, XGBoost's one-vs-rest AUC), so that it
#: points the same way as the study's objective.
XGBOOST_EVAL_METRIC = {"binary": "auc", "multiclass": "auc", "regression": "rmse"}


@dataclass
class XGBoostModel:
    """Gradient-boosted trees (``tree_method="hist"``) on the arm's device.

    :meth:`to_device` builds the training ``QuantileDMatrix`` where the model runs (the quantile
    sketch is computed on the GPU from a cuDF frame, on the host from pandas); :meth:`fit`
    boosts; :meth:`predict` predicts in place on the arm's frame.
    """

    params: XGBoostParams = field(default_factory=XGBoostParams)
    task: str = "binary"
    seed: int = 0
    n_classes: int = 2
    name: str = "xgboost"

    def booster_params(self, backend: Backend) -> dict[str, Any]:
        p = self.params
        objective = {"binary": "binary:logistic", "multiclass": "multi:softprob", "regression": "reg:squarederror"}
        out = {
            "objective": objective[self.task],
            "tree_method": "hist",
            "device": backend.xgb_device,
            "nthread": backend.n_threads,
            "max_depth": p.max_depth,
            "eta": p.learning_rate,
            "max_bin": p.max_bin,
            "min_child_weight": p.min_child_weight,
            "lambda": p.reg_lambda,
            "alpha": p.reg_alpha,
            "subsample": p.subsample,
            "colsample_bytree": p.colsample_bytree,
            "seed": self.seed,
        }
        if self.task == "multiclass":
            out["num_class"] = self.n_classes
        return out

    def to_device(self, backend: Backend, X: StoredMatrix, y: Any, batch_rows: int) -> Any:
        """The training ``QuantileDMatrix``, fed batch by batch through ``xgboost.DataIter``.

        Each batch is expanded to float32 only while XGBoost sketches and compresses it, so a
        float16 matrix never exists in float32 as a whole.
        """
        import xgboost

        return xgboost.QuantileDMatrix(
            _batches(X, _compat.series_to_array(y), batch_rows),
            max_bin=self.params.max_bin,
            enable_categorical=True,
            nthread=backend.n_threads,
        )

    def fit(self, backend: Backend, dtrain: Any) -> Any:
        import xgboost

        return xgboost.train(self.booster_params(backend), dtrain, num_boost_round=self.params.n_estimators)

    def fit_validated(
        self,
        backend: Backend,
        dtrain: Any,
        X_valid: StoredMatrix,
        y_valid: Any,
        batch_rows: int,
        rounds: int | None = None,
        early_stopping_rounds: int | None = None,
        callbacks: tuple = (),
    ) -> Any:
        """Boost with a validation set watched every round (early stopping, pruning callbacks).

        The validation matrix shares the training matrix's quantile cuts (``ref``), as XGBoost
        requires. After early stopping the booster remembers its best round and
        :meth:`predict` uses the trees up to it.
        """
        import xgboost

        dvalid = xgboost.QuantileDMatrix(
            _batches(X_valid, _compat.series_to_array(y_valid), batch_rows),
            ref=dtrain,
            max_bin=self.params.max_bin,
            enable_categorical=True,
            nthread=backend.n_threads,
        )
        params = {**self.booster_params(backend), "eval_metric": XGBOOST_EVAL_METRIC[self.task]}
        return xgboost.train(
            params,
            dtrain,
            num_boost_round=rounds or self.params.n_estimators,
            evals=[(dvalid, "validation")],
            early_stopping_rounds=early_stopping_rounds,
            callbacks=list(callbacks) or None,
            verbose_eval=False,
        )

    def predict(self, backend: Backend, booster: Any, X: StoredMatrix, batch_rows: int) -> Any:
        # A CuPy batch gives CuPy predictions, a NumPy batch NumPy ones. After early stopping
        # the trees past the best round are left out.
        best = booster.attr("best_iteration")
        kwargs = {} if best is None else {"iteration_range": (0, int(best) + 1)}
        parts = [booster.inplace_predict(X.batch(a, b), **kwargs) for a, b in batch_ranges(X.n_rows, batch_rows)]
        return parts[0] if len(parts) == 1 else backend.xp.concatenate(parts)

    def rounds_used(self, booster: Any) -> int:
        """Boosting rounds that count: up to the best round after early stopping, else all."""
        best = booster.attr("best_iteration")
        return int(best) + 1 if best is not None else int(booster.num_boosted_rounds())

    def device_used(self, backend: Backend, booster: Any) -> str:
        return xgboost_device_used(booster)

    def threads(self, backend: Backend, booster: Any) -> dict[str, Any]:
        return {"xgboost_nthread": xgboost_threads_used(booster)}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "library": "xgboost", "task": self.task, "params": vars(self.params)}


def xgboost_device_used(booster: Any) -> str:
    """The device the booster really trained on (``"cpu"`` or ``"cuda:0"``), from its own config."""
    config = json.loads(booster.save_config())
    return str(config["learner"]["generic_param"]["device"])


def xgboost_threads_used(booster: Any) -> int:
    config = json.loads(booster.save_config())
    return int(config["learner"]["generic_param"]["nthread"])


#: Parameters per model: shared by both arms, CPU-only (scikit-learn), GPU-only (cuML).
#: Shared values are chosen so both arms fit the same model (cuML's RandomForest has depth 16
#: by default, scikit-learn unlimited: both get 16).
ESTIMATOR_DEFAULTS: dict[str, dict[str, dict[str, Any]]] = {
    "random_forest_classifier": {
        "shared": {"n_estimators": 100, "max_depth": 16, "max_features": "sqrt"},
        "cpu": {"n_jobs": -1},
        "gpu": {},
    },
    "random_forest_regressor": {
        "shared": {"n_estimators": 100, "max_depth": 16, "max_features": 1.0},
        "cpu": {"n_jobs": -1},
        "gpu": {},
    },
    "logistic_regression": {"shared": {"C": 1.0, "max_iter": 1000}, "cpu": {}, "gpu": {}},
    "linear_regression": {"shared": {}, "cpu": {}, "gpu": {}},
    # linear_regression with a penalty (alpha set, as a search sets it): elastic net.
    "elastic_net": {"shared": {"alpha": 1.0, "l1_ratio": 0.5, "max_iter": 1000}, "cpu": {}, "gpu": {}},
    "knn_classifier": {"shared": {"n_neighbors": 5, "weights": "uniform"}, "cpu": {"n_jobs": -1}, "gpu": {}},
    "knn_regressor": {"shared": {"n_neighbors": 5, "weights": "uniform"}, "cpu": {"n_jobs": -1}, "gpu": {}},
}
#: Estimators that take ``random_state``.
_SEEDED = {"random_forest_classifier", "random_forest_regressor"}


@dataclass
class EstimatorModel:
    """A scikit-learn estimator on the CPU arm, its cuML twin on the GPU arm.

    :meth:`to_device` turns the feature frame into a float32 array in the arm's memory (CuPy on
    the GPU arm), which is what both libraries fit on.
    """

    name: str
    key: str
    task: str
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    def estimator_params(self, backend: Backend) -> dict[str, Any]:
        defaults = ESTIMATOR_DEFAULTS[self.key]
        out = {**defaults["shared"], **self.params, **defaults["gpu" if backend.is_gpu else "cpu"]}
        if "n_jobs" in out:
            out["n_jobs"] = backend.n_threads
        if self.key in _SEEDED:
            out["random_state"] = self.seed
        if self.key == "logistic_regression":
            out = _logistic_penalty(out, backend.is_gpu)
        return out

    def to_device(self, backend: Backend, X: StoredMatrix, y: Any, batch_rows: int) -> tuple[Any, Any]:
        # scikit-learn and cuML fit on one float32 matrix: it is expanded whole here.
        return X.batch(0, X.n_rows), _compat.series_to_array(y)

    def fit(self, backend: Backend, data: tuple[Any, Any]) -> Any:
        X, y = data
        estimator = backend.models[self.key](**self.estimator_params(backend))
        estimator.fit(X, y)
        return estimator

    def predict(self, backend: Backend, estimator: Any, X: StoredMatrix, batch_rows: int) -> Any:
        parts = []
        for a, b in batch_ranges(X.n_rows, batch_rows):
            batch = X.batch(a, b)
            if not is_classification(self.task):
                parts.append(estimator.predict(batch))
            else:
                proba = estimator.predict_proba(batch)
                parts.append(proba[:, 1] if self.task == "binary" else proba)
        return parts[0] if len(parts) == 1 else backend.xp.concatenate(parts)

    def device_used(self, backend: Backend, estimator: Any) -> str:
        # cuML estimators run on the GPU and nothing else; scikit-learn on the CPU.
        return backend.xgb_device if type(estimator).__module__.startswith("cuml") else "cpu"

    def threads(self, backend: Backend, estimator: Any) -> dict[str, Any]:
        n_jobs = getattr(estimator, "n_jobs", None)
        return {"estimator": f"{type(estimator).__module__}.{type(estimator).__name__}", "n_jobs": n_jobs}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "estimator": self.key, "task": self.task, "params": dict(self.params)}


def _logistic_penalty(params: dict[str, Any], gpu: bool) -> dict[str, Any]:
    """One ``l1_ratio`` (0: ridge, 1: lasso, between: elastic net) in each library's terms.

    scikit-learn >= 1.8 reads the penalty from ``l1_ratio`` alone but needs the ``saga`` solver
    for any L1 part; cuML names the penalty and reads ``l1_ratio`` for elastic net only.
    """
    out = dict(params)
    l1_ratio = float(out.pop("l1_ratio", 0.0) or 0.0)
    if gpu:
        out["penalty"] = "l2" if l1_ratio == 0 else "l1" if l1_ratio == 1 else "elasticnet"
        if out["penalty"] == "elasticnet":
            out["l1_ratio"] = l1_ratio
    elif l1_ratio > 0:
        out["l1_ratio"] = l1_ratio
        out["solver"] = "saga"
    return out


def model_family(name: str) -> str:
    return MODELS[name][0]


def build_model(name: str, task: str, params: dict[str, Any], seed: int, n_classes: int = 2) -> Any:
    """The model ``--model name`` means for ``task``; a one-line error when it cannot do the task."""
    if name not in MODELS:
        raise AccelError(f"unknown --model {name!r}; choose one of {', '.join(MODELS)}")
    family, clf_key, reg_key = MODELS[name]
    key = clf_key if is_classification(task) else reg_key
    if key is None:
        other = "linear_regression" if name == "logistic_regression" else "logistic_regression"
        kind = "classification" if is_classification(task) else "regression"
        raise AccelError(f"--model {name} cannot do {kind}; use --model {other} (or xgboost, random_forest, knn)")
    if name == "xgboost":
        return XGBoostModel(XGBoostParams(**params), task=task, seed=seed, n_classes=n_classes)
    if name == "linear_regression" and params.get("alpha") is not None:
        key = "elastic_net"
    return EstimatorModel(name=name, key=key, task=task, params=params, seed=seed)

"""The model adapters: each trains the models of its registry entries on either arm, one code path each.

The registry names an entry's adapter (:attr:`accel.registry.ModelSpec.adapter`);
:func:`build_model` makes a run's model with the adapter's ``build``. Two adapters here:

- XGBoost: one estimator with ``device=`` as a parameter (``backend.xgb_device``). After training
  the device XGBoost really used is read back from the booster's own configuration: with
  ``device="cuda"`` and no usable GPU, XGBoost only warns and trains on the CPU.
- scikit-learn and cuML: a scikit-learn class on the CPU arm and its cuML twin on the GPU arm
  (``backend.models``), declared in pairs in :mod:`accel.registry` with the shared parameters in
  one dict and the arm-only ones apart, as cuML's benchmark does.

A model from another library brings its own adapter (the :class:`accel.workflows.base.Model`
protocol). Each model has the same four steps the paired run times: ``to_device`` (model input built where
the model runs), ``fit``, ``predict`` (probabilities for classification), and ``device_used``.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from accel import _compat
from accel._compat import Array
from accel.backend import Backend, ModelClasses
from accel.early_stopping import EarlyStopping
from accel.errors import AccelError
from accel.precision import StoredMatrix
from accel.registry import MODELS, Estimator, ModelSpec, XGBoostSettings, xgboost_device_used, xgboost_threads_used
from accel.timing import timed_call

if TYPE_CHECKING:
    import optuna
    import xgboost


def batch_ranges(n_rows: int, batch_rows: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``n_rows`` in batches of at most ``batch_rows``."""
    step = max(1, batch_rows)
    return [(a, min(a + step, n_rows)) for a in range(0, n_rows, step)]


def predict_batches(backend: Backend, method: Callable[[Array], Any], X: StoredMatrix, batch_rows: int) -> Any:
    """``method`` on each float32 batch of ``X``, its answers joined on the arm's device (a cuML
    estimator made from a saved scikit-learn one answers in NumPy; a CuPy batch gives XGBoost's
    answers in CuPy)."""
    parts = [method(X.batch(a, b)) for a, b in batch_ranges(X.n_rows, batch_rows)]
    return parts[0] if len(parts) == 1 else backend.xp.concatenate([backend.xp.asarray(p) for p in parts])


def _batches(X: StoredMatrix, y: Any, batch_rows: int, keep: Any = None) -> Any:
    """Batches of ``X`` and labels ``y`` for XGBoost; ``keep`` (a boolean mask on the arm's
    device, or None for all) picks the rows."""
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
            data, label = X.batch(a, b), y[a:b]
            if keep is not None:
                data, label = data[keep[a:b]], label[keep[a:b]]
            input_data(data=data, label=label, feature_names=X.feature_names, feature_types=X.feature_types)
            self._i += 1
            return True

        def reset(self) -> None:
            self._i = 0

    return StoredBatches()


#: ``on_round(done, total)``: told after each boosting round (the progress display's rounds and ETA).
RoundListener = Callable[[int, int], None]


def round_callback(on_round: RoundListener, total: int) -> Any:
    """An XGBoost ``TrainingCallback`` that tells ``on_round`` each round done, out of ``total``.

    It only reports (``after_iteration`` returns False: training goes on); one Python call per
    round, next to the round's own work.
    """
    import xgboost

    class Rounds(xgboost.callback.TrainingCallback):
        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            on_round(epoch + 1, total)
            return False

    return Rounds()


def is_classification(task: str) -> bool:
    return task in ("binary", "multiclass")


#: XGBoost's names of the settings it spells differently (:meth:`XGBoostModel.booster_params`).
_BOOSTER_NAMES = {"learning_rate": "eta", "reg_lambda": "lambda", "reg_alpha": "alpha"}

#: XGBoost's evaluation metric per task, for early stopping and pruning on a validation set.
#: It is the task's own metric (or, for multiclass, XGBoost's one-vs-rest AUC), so that it
#: points the same way as the study's objective.
XGBOOST_EVAL_METRIC = {"binary": "auc", "multiclass": "auc", "regression": "rmse"}


@dataclass
class XGBoostModel:
    """Gradient-boosted trees (``tree_method="hist"``) on the arm's device.

    :meth:`to_device` builds the training ``QuantileDMatrix`` where the model runs (the quantile
    sketch is computed on the GPU from a cuDF frame, on the host from pandas); :meth:`fit`
    boosts; :meth:`predict` predicts in place on the arm's frame. With ``early_stopping``
    (:class:`~accel.early_stopping.EarlyStopping`, shared by the arms of a paired run)
    :meth:`search_rounds` finds the rounds once, on a validation part of the training rows,
    and :meth:`fit` trains them on all the training rows.
    """

    params: XGBoostSettings = field(default_factory=XGBoostSettings)
    task: str = "binary"
    seed: int = 0
    n_classes: int = 2
    name: str = "xgboost"
    early_stopping: EarlyStopping | None = None

    @property
    def classes(self) -> int | None:
        """The number of classes (None for regression)."""
        return None if not is_classification(self.task) else (self.n_classes if self.task == "multiclass" else 2)

    @classmethod
    def build(
        cls, spec: ModelSpec, estimator: Estimator, task: str, params: dict[str, Any], seed: int, n_classes: int
    ) -> XGBoostModel:
        """The model of a run (:func:`build_model`): ``spec``'s settings as XGBoost's parameters."""
        return cls(XGBoostSettings(**params), task=task, seed=seed, n_classes=n_classes, name=spec.name)

    @staticmethod
    def pruning_callbacks(trial: optuna.trial.Trial, task: str) -> tuple:
        """Optuna's pruning callback on the validation metric, told after each boosting round."""
        from optuna_integration.xgboost import XGBoostPruningCallback

        return (XGBoostPruningCallback(trial, f"validation-{XGBOOST_EVAL_METRIC[task]}"),)

    def booster_params(self, backend: Backend) -> dict[str, Any]:
        objective = {"binary": "binary:logistic", "multiclass": "multi:softprob", "regression": "reg:squarederror"}[self.task]
        out = {"objective": objective, "tree_method": "hist", "device": backend.xgb_device, "nthread": backend.n_threads}
        # Every setting but the rounds, in its order, under XGBoost's name (learning_rate is eta ...).
        out.update((_BOOSTER_NAMES.get(k, k), v) for k, v in self.params.model_dump(exclude={"n_estimators"}).items())
        out["seed"] = self.seed
        if self.task == "multiclass":
            out["num_class"] = self.n_classes
        return out

    def to_device(self, backend: Backend, X: StoredMatrix, y: Any, batch_rows: int) -> Any:
        """The training ``QuantileDMatrix``, fed batch by batch through ``xgboost.DataIter``.

        Each batch is expanded to float32 only while XGBoost sketches and compresses it, so a
        float16 matrix never exists in float32 as a whole.
        """
        return self._matrix(backend, _batches(X, _compat.series_to_array(y), batch_rows))

    def _matrix(self, backend: Backend, batches: xgboost.DataIter, ref: xgboost.QuantileDMatrix | None = None) -> Any:
        """A ``QuantileDMatrix`` of ``batches`` (with ``ref``: on that matrix's quantile cuts, as a validation set needs)."""
        import xgboost

        return xgboost.QuantileDMatrix(
            batches, ref=ref, max_bin=self.params.max_bin, enable_categorical=True, nthread=backend.n_threads
        )

    def fit(self, backend: Backend, dtrain: Any, on_round: RoundListener | None = None) -> Any:
        """Boost the rounds early stopping found (:meth:`search_rounds`), else ``n_estimators``;
        ``on_round(done, total)`` is told of each one."""
        es = self.early_stopping
        rounds = es.rounds(self.params.n_estimators) if es is not None else self.params.n_estimators
        callbacks = (round_callback(on_round, rounds),) if on_round is not None else ()
        return self.boost(backend, dtrain, None, rounds, None, callbacks)

    def search_rounds(self, backend: Backend, X: StoredMatrix, y: Any, batch_rows: int) -> bool:
        """The early-stopping search, where this arm runs it (the first to train): the validation
        part of the rows of ``X`` held out, the rest boosted watching it, the rounds found kept in
        :attr:`early_stopping` for every arm. Untimed by the stages (the caller runs it between
        ``to_device`` and ``train``). Returns whether it ran."""
        es = self.early_stopping
        if es is None or not es.searching:
            return False
        labels = _compat.series_to_array(y)
        valid = backend.xp.asarray(es.mask(X.n_rows))
        if not es.check(X.n_rows, _compat.to_numpy(labels[valid]), self.classes):
            return False
        dfit = self._matrix(backend, _batches(X, labels, batch_rows, ~valid))
        self.search(backend, dfit, self._matrix(backend, _batches(X, labels, batch_rows, valid), ref=dfit))
        return True

    def search(self, backend: Backend, dfit: Any, dvalid: Any) -> None:
        """Boost on ``dfit`` watching ``dvalid``, stopping after the patience; the rounds found go to :attr:`early_stopping`."""
        es = self.early_stopping
        assert es is not None
        seconds, booster = timed_call(lambda: self.boost(backend, dfit, dvalid, self.params.n_estimators, es.patience, ()))
        es.settle(booster, backend.name, XGBOOST_EVAL_METRIC[self.task], seconds, self.params.n_estimators)

    def fit_validated(
        self,
        backend: Backend,
        dtrain: Any,
        X_valid: StoredMatrix,
        y_valid: Any,
        batch_rows: int,
        early_stopping_rounds: int | None = None,
        callbacks: tuple = (),
    ) -> Any:
        """Boost with a validation set watched every round (early stopping, pruning callbacks).

        The validation matrix shares the training matrix's quantile cuts (``ref``), as XGBoost
        requires. After early stopping the booster remembers its best round and
        :meth:`predict` uses the trees up to it.
        """
        dvalid = self._matrix(backend, _batches(X_valid, _compat.series_to_array(y_valid), batch_rows), ref=dtrain)
        return self.boost(backend, dtrain, dvalid, None, early_stopping_rounds, callbacks)

    def boost(
        self, backend: Backend, dtrain: Any, dvalid: Any, rounds: int | None, early_stopping_rounds: int | None, callbacks: tuple
    ) -> Any:
        """``xgboost.train``: ``rounds`` (default ``n_estimators``), ``dvalid`` (when given)
        watched every round, stopping after ``early_stopping_rounds`` rounds without gain."""
        import xgboost

        params = self.booster_params(backend)
        evals = [(dvalid, "validation")] if dvalid is not None else None
        if evals:
            params["eval_metric"] = XGBOOST_EVAL_METRIC[self.task]
        return xgboost.train(
            params,
            dtrain,
            num_boost_round=rounds or self.params.n_estimators,
            evals=evals,
            early_stopping_rounds=early_stopping_rounds if evals else None,
            callbacks=list(callbacks) or None,
            verbose_eval=False,
        )

    def predict(self, backend: Backend, booster: Any, X: StoredMatrix, batch_rows: int) -> Any:
        kwargs = _best_rounds(booster)
        return predict_batches(backend, lambda batch: booster.inplace_predict(batch, **kwargs), X, batch_rows)

    def rounds_used(self, booster: Any) -> int:
        """Boosting rounds that count: up to the best round after early stopping, else all."""
        return _best_rounds(booster).get("iteration_range", (0, int(booster.num_boosted_rounds())))[1]

    def device_used(self, backend: Backend, booster: Any) -> str:
        return xgboost_device_used(booster)

    def threads(self, backend: Backend, booster: Any) -> dict[str, Any]:
        return {"xgboost_nthread": xgboost_threads_used(booster)}

    def describe(self) -> dict[str, Any]:
        out = {"name": self.name, "library": "xgboost", "task": self.task, "params": self.params.model_dump()}
        if self.early_stopping is not None:
            out["early_stopping"] = self.early_stopping.describe()
        return out

    def settings(self) -> dict[str, Any]:
        """What rebuilds this model (:func:`build_model`): its name, task, settings, seed, classes."""
        return {
            "name": self.name,
            "task": self.task,
            "params": self.params.model_dump(),
            "seed": self.seed,
            "n_classes": self.n_classes,
        }

    #: The saved model's file in a pipeline folder: XGBoost's own UBJSON (trees, best round,
    #: feature names and types), which loads on either device.
    file_name = "model.ubj"

    def save(self, booster: Any, path: Path) -> None:
        booster.save_model(str(path))

    def load(self, backend: Backend, path: Path) -> Any:
        """The booster saved at ``path``, set to predict on ``backend``'s device."""
        import xgboost

        booster = xgboost.Booster(model_file=str(path))
        booster.set_param({"device": backend.xgb_device, "nthread": backend.n_threads})
        return booster

    def importances(self, backend: Backend, booster: Any, names: list[str], sample: Array | None) -> dict[str, dict[str, float]]:
        """Gain per feature (XGBoost's ``gain``: the mean loss reduction of its splits) and, for
        the float32 matrix ``sample`` of hold-out rows, the mean absolute SHAP value (TreeSHAP;
        GPU TreeSHAP on the GPU arm); classes' SHAP values are summed per feature."""
        gain = booster.get_score(importance_type="gain")  # keyed by XGBoost's names (xgboost_safe_name)
        out = {"gain": {name: float(gain.get(safe, 0.0)) for safe, name in zip(booster.feature_names or names, names)}}
        if sample is not None and len(sample):
            # Mean absolute contribution per feature (the bias column left out).
            shap = np.abs(self.contributions(backend, booster, sample)[:, :-1]).mean(axis=0)
            out["mean_abs_shap"] = dict(zip(names, map(float, shap)))
        return out

    def contributions(self, backend: Backend, booster: Any, matrix: Array) -> np.ndarray:
        """Per-row SHAP contributions ``(rows, features + 1)`` (the last column is the bias), summed
        over classes for a multiclass model; as NumPy."""
        import xgboost

        data = xgboost.DMatrix(
            matrix, feature_names=booster.feature_names, feature_types=booster.feature_types, enable_categorical=True
        )
        values = _compat.to_numpy(booster.predict(data, pred_contribs=True, **_best_rounds(booster)))
        return values.sum(axis=1) if values.ndim == 3 else values


def _best_rounds(booster: xgboost.Booster) -> dict[str, Any]:
    """Prediction's arguments that leave out the trees past the best round, after early stopping."""
    best = booster.attr("best_iteration")
    return {} if best is None else {"iteration_range": (0, int(best) + 1)}


@dataclass
class EstimatorModel:
    """A scikit-learn estimator on the CPU arm, its cuML twin on the GPU arm (one registry entry).

    :meth:`to_device` turns the feature frame into a float32 array in the arm's memory (CuPy on
    the GPU arm), which is what both libraries fit on.
    """

    name: str
    estimator: Estimator
    task: str
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    @classmethod
    def build(
        cls, spec: ModelSpec, estimator: Estimator, task: str, params: dict[str, Any], seed: int, n_classes: int
    ) -> EstimatorModel:
        """The model of a run (:func:`build_model`): ``estimator``'s class pair with ``params``."""
        return cls(name=spec.name, estimator=estimator, task=task, params=params, seed=seed)

    def to_device(self, backend: Backend, X: StoredMatrix, y: Any, batch_rows: int) -> tuple[Any, Any]:
        # scikit-learn and cuML fit on one float32 matrix: it is expanded whole here.
        return X.batch(0, X.n_rows), _compat.series_to_array(y)

    def fit(self, backend: Backend, data: tuple[Any, Any], on_round: RoundListener | None = None) -> Any:
        """One ``fit`` call of the arm's class. scikit-learn and cuML report no progress while
        they fit, so ``on_round`` is never called (the display shows the elapsed time)."""
        params = self.estimator.params(
            self.params, gpu=backend.is_gpu, n_threads=backend.n_threads, xgb_device=backend.xgb_device, seed=self.seed
        )
        estimator = backend.models[self.estimator.key](**params)
        estimator.fit(*data)
        return estimator

    def predict(self, backend: Backend, estimator: Any, X: StoredMatrix, batch_rows: int) -> Any:
        method = estimator.predict_proba if is_classification(self.task) else estimator.predict
        out = predict_batches(backend, method, X, batch_rows)
        return out[:, 1] if self.task == "binary" else out

    def device_used(self, backend: Backend, estimator: Any) -> str:
        return self.estimator.device_used(estimator, backend.xgb_device)

    def threads(self, backend: Backend, estimator: Any) -> dict[str, Any]:
        n_jobs = getattr(estimator, "n_jobs", None)
        return {"estimator": f"{type(estimator).__module__}.{type(estimator).__name__}", "n_jobs": n_jobs}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "estimator": self.estimator.key, "task": self.task, "params": dict(self.params)}

    def settings(self) -> dict[str, Any]:
        """What rebuilds this model (:func:`build_model`): its name, task, settings, seed."""
        return {"name": self.name, "task": self.task, "params": dict(self.params), "seed": self.seed, "n_classes": None}

    #: The saved model's file: skops (no pickle), the scikit-learn form of either arm's estimator.
    file_name = "model.skops"

    def save(self, estimator: Any, path: Path) -> None:
        """Save ``estimator`` with skops; a cuML estimator as its scikit-learn twin (``as_sklearn``),
        so that one saved form loads on either arm."""
        import skops.io

        if type(estimator).__module__.startswith("cuml"):
            estimator = estimator.as_sklearn()
        skops.io.dump(estimator, path)

    def load(self, backend: Backend, path: Path) -> Any:
        """The estimator saved at ``path``, read with skops trusting only the types
        :func:`trusted_types` names; on the GPU arm as its cuML twin (``from_sklearn``)."""
        import skops.io

        trusted = trusted_types(self.estimator)
        untrusted = [t for t in skops.io.get_untrusted_types(file=path) if t not in trusted]
        if untrusted:
            raise AccelError(f"the saved model holds types accel does not load: {', '.join(untrusted[:3])}")
        estimator = skops.io.load(path, trusted=trusted)
        expected = ModelClasses("cpu")[self.estimator.key]
        if type(estimator) is not expected:
            raise AccelError(f"the saved model is a {type(estimator).__name__}, not the {expected.__name__} its pipeline names")
        return backend.adopt_estimator(self.estimator.key, estimator)

    def importances(
        self, backend: Backend, estimator: Any, names: list[str], sample: Array | None
    ) -> dict[str, dict[str, float]]:
        """The estimator's own importances (a forest's impurity decrease) or, for a linear model on
        standardised features, its coefficients' magnitude (summed over classes); none for KNN."""
        found = getattr(estimator, "feature_importances_", None)
        if found is not None:
            return {"impurity": dict(zip(names, map(float, _compat.to_numpy(found))))}
        coef = getattr(estimator, "coef_", None)
        if coef is None:
            return {}
        values = np.abs(_compat.to_numpy(coef)).reshape(-1, len(names)).sum(axis=0)
        return {"abs_coefficient": dict(zip(names, map(float, values)))}

    def contributions(self, backend: Backend, estimator: Any, matrix: Array) -> np.ndarray:
        raise AccelError(f"per-row contributions are XGBoost's (pred_contribs); --model {self.name} has none")


def trusted_types(estimator: Estimator) -> list[str]:
    """The only types a saved scikit-learn model may hold beyond skops' own defaults: the
    registry's CPU class for ``estimator`` and the types the registry says it holds (a forest's trees).

    The list is accel's, fixed by the registry, never read from the file."""
    cls = ModelClasses("cpu")[estimator.key]
    return [f"{cls.__module__}.{cls.__qualname__}", *estimator.saved_types]


def adapter(spec: ModelSpec) -> Any:
    """The class that trains ``spec`` (:attr:`accel.registry.ModelSpec.adapter`), imported on first use."""
    return pkgutil.resolve_name(spec.adapter) if isinstance(spec.adapter, str) else spec.adapter


def build_model(name: str, task: str, params: dict[str, Any], seed: int, n_classes: int = 2) -> Any:
    """The model ``--model name`` means for ``task``; a one-line error when it cannot do the task."""
    if name not in MODELS:
        raise AccelError(f"unknown --model {name!r}; choose one of {', '.join(MODELS)}")
    spec = MODELS[name]
    estimator = spec.estimator(is_classification(task), params)
    if estimator is None:
        kind = "classification" if is_classification(task) else "regression"
        able = [m for m in MODELS.values() if m.estimator(is_classification(task)) is not None]
        able.sort(key=lambda m: m.caps.family != spec.caps.family)  # the same family first
        others = f" (or {', '.join(m.name for m in able[1:])})" if len(able) > 1 else ""
        raise AccelError(f"--model {name} cannot do {kind}; use --model {able[0].name}{others}")
    return adapter(spec).build(spec, estimator, task, params, seed, n_classes)

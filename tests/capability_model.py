"""A model from another library added the way any model is: one registry entry and its adapter.

scikit-learn's histogram gradient boosting (``HistGradientBoostingClassifier`` /
``HistGradientBoostingRegressor``) is declared here as :func:`accel.registry.register` takes
it, with a small adapter of its own (the :class:`accel.workflows.base.Model` protocol) that
trains, predicts, saves and loads it; nothing in ``accel/`` names it. Its capabilities say it
trains in one process on a matrix in memory: no streamed batches, no Dask trainer, no early
stopping or pruning of accel's.

``python -m tests.capability_model ARGS`` registers it, then runs the ``accel`` command line
with ``ARGS`` (the ``--model`` choices are read from the registry when the configuration is
first imported, so the entry is registered before that).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from accel import _compat
from accel.backend import Backend
from accel.errors import AccelError
from accel.precision import StoredMatrix
from accel.registry import Capabilities, Dist, Estimator, ModelSpec, register

NAME = "hist_gradient_boosting"
_CLASSIFIER = "sklearn.ensemble:HistGradientBoostingClassifier"
_REGRESSOR = "sklearn.ensemble:HistGradientBoostingRegressor"
#: What a saved model holds besides its own class: its trees.
_SAVED = ("sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",)


class HistGradientBoostingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_iter: int = Field(10, ge=1, le=10_000)
    learning_rate: float = Field(0.1, gt=0, le=1)
    max_leaf_nodes: int = Field(31, ge=2, le=4096)


@dataclass
class HistGradientBoostingModel:
    """The adapter: one scikit-learn estimator fitted on the arm's float32 matrix, on the CPU only."""

    name: str
    estimator: Estimator
    task: str
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    file_name = "model.skops"

    @classmethod
    def build(cls, spec: ModelSpec, estimator: Estimator, task: str, params: dict[str, Any], seed: int, n_classes: int) -> Any:
        return cls(spec.name, estimator, task, params, seed)

    def _class(self) -> type:
        import importlib

        module, _, name = self.estimator.cpu.partition(":")
        return getattr(importlib.import_module(module), name)

    def to_device(self, backend: Backend, X: StoredMatrix, y: Any, batch_rows: int) -> tuple[Any, Any]:
        if backend.is_gpu:
            raise AccelError(f"--model {self.name} has no GPU twin: run it with --device cpu")
        return X.batch(0, X.n_rows), _compat.series_to_array(y)

    def fit(self, backend: Backend, data: tuple[Any, Any], on_round: Any = None) -> Any:
        from threadpoolctl import threadpool_limits

        X, y = data
        with threadpool_limits(backend.n_threads):  # the arm's cores (it takes no n_jobs)
            return self._class()(**self.params, random_state=self.seed).fit(X, y)

    def predict(self, backend: Backend, fitted: Any, X: StoredMatrix, batch_rows: int) -> Any:
        matrix = X.batch(0, X.n_rows)
        if self.task == "regression":
            return fitted.predict(matrix)
        proba = fitted.predict_proba(matrix)
        return proba[:, 1] if self.task == "binary" else proba

    def device_used(self, backend: Backend, fitted: Any) -> str:
        return "cpu"

    def threads(self, backend: Backend, fitted: Any) -> dict[str, Any]:
        return {"estimator": f"{type(fitted).__module__}.{type(fitted).__name__}"}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "estimator": self.estimator.key, "task": self.task, "params": dict(self.params)}

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "task": self.task, "params": dict(self.params), "seed": self.seed, "n_classes": None}

    def save(self, fitted: Any, path: Path) -> None:
        import skops.io

        skops.io.dump(fitted, path)

    def load(self, backend: Backend, path: Path) -> Any:
        import skops.io

        cls = self._class()
        return skops.io.load(path, trusted=[f"{cls.__module__}.{cls.__qualname__}", *_SAVED])

    def importances(self, backend: Backend, fitted: Any, names: list[str], sample: Any) -> dict[str, dict[str, float]]:
        return {}

    def contributions(self, backend: Backend, fitted: Any, matrix: Any) -> np.ndarray:
        raise AccelError(f"--model {self.name} has no per-row contributions")


def _estimator(key: str, cls: str, task: str) -> Estimator:
    # No GPU twin: the GPU arm names the same class, and the adapter refuses that arm.
    return Estimator(key, cls, cls, task, saved_types=_SAVED)


SPEC = ModelSpec(
    NAME,
    caps=Capabilities("trees"),
    settings=HistGradientBoostingSettings,
    classifier=_estimator("hist_gradient_boosting_classifier", _CLASSIFIER, "classification"),
    regressor=_estimator("hist_gradient_boosting_regressor", _REGRESSOR, "regression"),
    search_space={"learning_rate": Dist("float", 0.05, 0.3, log=True), "max_iter": Dist("int", 5, 15)},
    labels=(("max_iter", "rounds"), ("learning_rate", "lr")),
    adapter=HistGradientBoostingModel,
)


def main(argv: list[str]) -> int:
    register(SPEC)
    from accel.cli.main import main as accel_main

    return accel_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Models on either arm: XGBoost with ``device=`` as a parameter, the same code on CPU and GPU.

After training, the device XGBoost really used is read back from the booster's own
configuration: with ``device="cuda"`` and no usable GPU, XGBoost only warns and trains on the
CPU, and a run record must not call that a GPU result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from accel.backend import Backend


@dataclass(frozen=True)
class XGBoostParams:
    """The boosting parameters both arms share. Subsampling is off so both arms see the same rows."""

    n_estimators: int = 300
    max_depth: int = 8
    learning_rate: float = 0.1
    max_bin: int = 256
    min_child_weight: float = 1.0
    reg_lambda: float = 1.0


@dataclass
class XGBoostModel:
    """Gradient-boosted trees (``tree_method="hist"``) on the arm's device.

    Stages: :meth:`to_device` builds the training ``QuantileDMatrix`` where the model runs (the
    quantile sketch is computed on the GPU from a cuDF frame, on the host from pandas);
    :meth:`fit` boosts; :meth:`predict` predicts in place on the arm's frame.
    """

    params: XGBoostParams
    objective: str = "binary:logistic"
    seed: int = 0

    def booster_params(self, backend: Backend) -> dict[str, Any]:
        p = self.params
        return {
            "objective": self.objective,
            "tree_method": "hist",
            "device": backend.xgb_device,
            "nthread": backend.n_threads,
            "max_depth": p.max_depth,
            "eta": p.learning_rate,
            "max_bin": p.max_bin,
            "min_child_weight": p.min_child_weight,
            "lambda": p.reg_lambda,
            "seed": self.seed,
        }

    def to_device(self, backend: Backend, X: Any, y: Any) -> Any:
        import xgboost

        return xgboost.QuantileDMatrix(
            X, label=y, enable_categorical=True, max_bin=self.params.max_bin, nthread=backend.n_threads
        )

    def fit(self, backend: Backend, dtrain: Any) -> Any:
        import xgboost

        return xgboost.train(self.booster_params(backend), dtrain, num_boost_round=self.params.n_estimators)

    def predict(self, backend: Backend, booster: Any, X: Any) -> Any:
        # A cuDF frame gives a CuPy array, a pandas frame a NumPy array.
        return booster.inplace_predict(X)


def xgboost_device_used(booster: Any) -> str:
    """The device the booster really trained on (``"cpu"`` or ``"cuda:0"``), from its own config."""
    config = json.loads(booster.save_config())
    return str(config["learner"]["generic_param"]["device"])


def xgboost_threads_used(booster: Any) -> int:
    config = json.loads(booster.save_config())
    return int(config["learner"]["generic_param"]["nthread"])

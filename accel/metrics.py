"""Hold-out metrics, computed on the host with scikit-learn: the same code scores both arms.

scikit-learn is imported when a metric is computed, not with this module: it loads the OpenMP
runtime, which must load after the arms' setting (:mod:`accel.openmp`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def task_metrics(task: str, y_true: np.ndarray, prediction: np.ndarray) -> dict[str, float]:
    """The hold-out metrics of ``task``.

    binary: AUC, accuracy at 0.5, log loss of the positive class's probabilities and the
    positive rate; multiclass: macro one-vs-rest AUC (over the classes present when one is
    absent from the hold-out), accuracy of the most probable class, log loss; regression: RMSE,
    MAE and R².
    """
    from sklearn.metrics import accuracy_score, log_loss, mean_absolute_error, mean_squared_error, r2_score, roc_auc_score

    if task == "regression":
        y_true = np.asarray(y_true, dtype=np.float64)
        prediction = np.asarray(prediction, dtype=np.float64).reshape(-1)
        return {
            "rmse": float(np.sqrt(mean_squared_error(y_true, prediction))),
            "mae": float(mean_absolute_error(y_true, prediction)),
            "r2": float(r2_score(y_true, prediction)),
        }
    if task not in ("binary", "multiclass"):
        raise ValueError(f"unknown task {task!r}")
    y_true = np.asarray(y_true).astype(np.int64)
    if task == "binary":
        probability = np.clip(np.asarray(prediction, dtype=np.float64).reshape(-1), 1e-15, 1 - 1e-15)
        return {
            "auc": float(roc_auc_score(y_true, probability)),
            "accuracy": float(accuracy_score(y_true, probability >= 0.5)),
            "log_loss": float(log_loss(y_true, probability, labels=[0, 1])),
            "positive_rate": float(y_true.mean()),
        }
    proba = np.clip(np.asarray(prediction, dtype=np.float64), 1e-15, 1.0)
    proba = proba / proba.sum(axis=1, keepdims=True)
    labels = np.arange(proba.shape[1])
    present = np.unique(y_true)
    if len(present) == len(labels):
        auc = float(roc_auc_score(y_true, proba, multi_class="ovr", average="macro", labels=labels))
    else:  # a class absent from the hold-out: average over the classes present
        auc = float(np.mean([roc_auc_score(y_true == k, proba[:, k]) for k in present]))
    return {
        "auc": auc,
        "accuracy": float(accuracy_score(y_true, proba.argmax(axis=1))),
        "log_loss": float(log_loss(y_true, proba, labels=labels)),
    }


def remarks(metrics: Mapping[str, float | None]) -> list[str]:
    """What a reader should know of hold-out metrics that look worse than a constant's.

    A negative R² means the model predicts the hold-out worse than its mean would; a binary
    model's log loss above that of always predicting the positive rate means its probabilities
    are worse than knowing the rate alone; an AUC at or below 0.5 ranks no better than chance.
    """
    out = []
    r2 = metrics.get("r2")
    if r2 is not None and r2 < 0:
        out.append(
            f"R² {r2:.3f} is below 0: the model predicts the hold-out worse than its mean would (a constant); "
            "the features may not explain this target, or there are too few rows"
        )
    auc = metrics.get("auc")
    if auc is not None and auc <= 0.5:
        out.append(f"AUC {auc:.3f}: the model ranks the hold-out no better than chance")
    rate, loss = metrics.get("positive_rate"), metrics.get("log_loss")
    if rate is not None and loss is not None and 0 < rate < 1:
        constant = -(rate * np.log(rate) + (1 - rate) * np.log(1 - rate))
        if loss > constant:
            out.append(
                f"log loss {loss:.4f} is above {constant:.4f}, a constant's (the positive rate {rate:.3f} for every row): "
                "its probabilities are worse than the rate alone"
            )
    return out


#: The metric the parity check compares per task: (name, tolerance, relative?).
#: XGBoost, linear models and KNN compute the same model on both arms; cuML's random forest
#: bins features (128 bins) where scikit-learn's does not, so it gets a wider tolerance.
PARITY = {"binary": ("auc", 0.005, False), "multiclass": ("auc", 0.005, False), "regression": ("rmse", 0.02, True)}


def parity_rule(task: str, model: str) -> tuple[str, float, bool]:
    """The task's rule, its tolerance widened by the model's :attr:`~accel.registry.ModelSpec.parity_scale`."""
    from accel.registry import MODELS

    metric, tolerance, relative = PARITY[task]
    spec = MODELS.get(model)
    return metric, tolerance * (spec.parity_scale if spec else 1.0), relative

"""Hold-out metrics, computed on the host with scikit-learn: the same code scores both arms."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    log_loss,
    mean_absolute_error,
    mean_squared_error,
    r2_score,
    roc_auc_score,
)


def binary_metrics(y_true: np.ndarray, probability: np.ndarray) -> dict[str, float]:
    """AUC, accuracy at 0.5 and log loss of predicted probabilities of the positive class."""
    y_true = np.asarray(y_true).astype(np.int64)
    probability = np.clip(np.asarray(probability, dtype=np.float64).reshape(-1), 1e-15, 1 - 1e-15)
    return {
        "auc": float(roc_auc_score(y_true, probability)),
        "accuracy": float(accuracy_score(y_true, probability >= 0.5)),
        "log_loss": float(log_loss(y_true, probability, labels=[0, 1])),
        "positive_rate": float(y_true.mean()),
    }


def multiclass_metrics(y_true: np.ndarray, probability: np.ndarray) -> dict[str, float]:
    """Macro one-vs-rest AUC, accuracy of the most probable class, log loss."""
    y_true = np.asarray(y_true).astype(np.int64)
    proba = np.asarray(probability, dtype=np.float64)
    proba = np.clip(proba, 1e-15, 1.0)
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


def regression_metrics(y_true: np.ndarray, prediction: np.ndarray) -> dict[str, float]:
    y_true = np.asarray(y_true, dtype=np.float64)
    prediction = np.asarray(prediction, dtype=np.float64).reshape(-1)
    return {
        "rmse": float(np.sqrt(mean_squared_error(y_true, prediction))),
        "mae": float(mean_absolute_error(y_true, prediction)),
        "r2": float(r2_score(y_true, prediction)),
    }


def task_metrics(task: str, y_true: np.ndarray, prediction: np.ndarray) -> dict[str, float]:
    if task == "binary":
        return binary_metrics(y_true, prediction)
    if task == "multiclass":
        return multiclass_metrics(y_true, prediction)
    if task == "regression":
        return regression_metrics(y_true, prediction)
    raise ValueError(f"unknown task {task!r}")


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

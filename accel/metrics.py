"""Hold-out metrics, computed on the host with scikit-learn: the same code scores both arms."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import accuracy_score, log_loss, roc_auc_score


def binary_metrics(y_true: np.ndarray, probability: np.ndarray) -> dict[str, float]:
    """AUC, accuracy at 0.5 and log loss of predicted probabilities of the positive class."""
    y_true = np.asarray(y_true).astype(np.int64)
    probability = np.clip(np.asarray(probability, dtype=np.float64), 1e-15, 1 - 1e-15)
    return {
        "auc": float(roc_auc_score(y_true, probability)),
        "accuracy": float(accuracy_score(y_true, probability >= 0.5)),
        "log_loss": float(log_loss(y_true, probability, labels=[0, 1])),
        "positive_rate": float(y_true.mean()),
    }


#: The metric the parity check compares, and how far apart the arms may be.
PARITY = {"binary": ("auc", 0.005)}

"""The rows a run takes: a seeded sample and a seeded train/test split, drawn on the host with
NumPy so that both arms (and every workflow, in one process or on a cluster) take the same rows."""

from __future__ import annotations

import numpy as np


def sample_positions(n: int, rows: int | None, seed: int) -> np.ndarray | None:
    """Row positions of a seeded sample of ``rows`` out of ``n``, sorted; None for all rows.

    Drawn on the host with NumPy so that both arms take exactly the same rows.
    """
    if rows is None or rows >= n:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=rows, replace=False))


def split_positions(n: int, test_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train, test) row positions of a seeded random split, the same on both arms.

    A split with an empty part is refused (:func:`accel.guards.check_test_rows`).
    """
    from accel.guards import check_test_rows, split_order

    n_test = int(round(n * test_size))
    if n_test < 1 or n - n_test < 1:
        check_test_rows(n, test_size)  # refuses, with the sizes that give a split that can be trained and scored
    order = split_order(n, seed)
    return np.sort(order[n_test:]), np.sort(order[:n_test])

"""Generated tables the benchmarks measure and the tests check.

- :func:`write_own_table`: a user's table of ``n`` rows × 20 columns (ten numeric with 5% missing,
  ten strings of 5-500 values, a binary target ``y``), as CSV;
- :func:`write_wide_table`: a table several times a Dask worker's memory limit whose partitions
  must spill.

``python -m accel_fixtures.tables ROWS PATH [--no-target]`` writes the own table (in a process of
its own, so that a measuring process never held it).
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The number of values of each of the own table's ten string columns.
CARDS = [5, 12, 40, 100, 200, 300, 500, 500, 50, 8]


def write_own_table(n: int, path: Path, seed: int = 0, target: bool = True) -> None:
    """The own table of ``n`` rows as a CSV file at ``path`` (without its target ``y`` unless
    ``target``: new rows to score)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    cols = {}
    for i in range(10):
        x = rng.normal(size=n)
        x[rng.random(n) < 0.05] = np.nan
        cols[f"num{i}"] = x
    codes = {}
    for i, k in enumerate(CARDS):
        codes[i] = rng.integers(0, k, n)
        cols[f"cat{i}"] = np.array([f"v{j}" for j in range(k)])[codes[i]]
    logit = np.nan_to_num(cols["num0"]) + np.nan_to_num(cols["num1"]) - np.nan_to_num(cols["num2"])
    for i, k in enumerate(CARDS[:5]):
        logit = logit + rng.normal(0, 0.5, k)[codes[i]]
    cols["y"] = (logit + rng.normal(size=n) > 0).astype(int)
    if not target:
        del cols["y"]
    pd.DataFrame(cols).to_csv(path, index=False)


def write_wide_table(rows: int, folder: Path, width: int, files: int = 48) -> tuple[Path, int]:
    """A table whose rows are mostly text, as ``files`` Parquet files; ``(folder, its bytes in Arrow)``.

    Three text columns of 300 values ``width`` characters long, three numeric columns, a binary
    target ``y`` from the first numeric column and the first text column. At ``width`` 400 a row
    holds ~1.25 kB, so a table several times a worker's memory limit has few rows: the features
    and XGBoost's matrix (numbers) stay small while the partitions loaded must spill.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    vocab = np.array([f"{i:04d}-" + "x" * width for i in range(300)], dtype=object)
    nbytes = 0
    for f in range(files):
        n = rows // files + (1 if f < rows % files else 0)
        num = rng.normal(size=(n, 3))
        codes = rng.integers(0, 300, size=(n, 3))
        signal = num[:, 0] + 0.01 * (codes[:, 0] - 150) + rng.normal(scale=0.5, size=n)
        columns = {f"num{i}": num[:, i] for i in range(3)}
        columns |= {f"text{i}": pa.array(vocab[codes[:, i]], type=pa.string()) for i in range(3)}
        columns["y"] = (signal > 0).astype(np.int64)
        table = pa.table(columns)
        nbytes += table.nbytes
        pq.write_table(table, folder / f"part-{f:03d}.parquet")
    return folder, nbytes


if __name__ == "__main__":
    write_own_table(int(float(sys.argv[1])), Path(sys.argv[2]), target="--no-target" not in sys.argv[3:])

"""Generated tables a benchmark measures and a test checks (``write_wide_table``: a table several
times a Dask worker's memory limit whose partitions must spill)."""

from __future__ import annotations

from pathlib import Path


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

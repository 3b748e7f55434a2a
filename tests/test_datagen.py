"""The db-benchmark data generators follow the benchmark's column recipes."""

from __future__ import annotations

import numpy as np
import pytest

from accel.data import datagen
from accel.errors import AccelError


def test_groupby_columns_and_cardinalities():
    t = datagen.groupby_table(20_000, 10, seed=1)
    assert t.column_names == list(datagen.GROUPBY_COLUMNS)
    df = t.to_pandas()
    assert df["id1"].nunique() == 10 and df["id4"].nunique() == 10
    assert df["id3"].nunique() <= 2000 and df["id6"].max() <= 2000
    assert set(df["id1"].astype(str).unique()) <= {f"id{i:03d}" for i in range(1, 11)}
    assert df["id3"].astype(str).str.fullmatch(r"id\d{10}").all()
    assert df["v1"].between(1, 5).all() and df["v2"].between(1, 15).all()
    assert df["v3"].between(0, 100).all() and (df["v3"].round(6) == df["v3"]).all()
    assert df.isna().sum().sum() == 0


def test_groupby_nas_take_whole_id_values_and_random_v_rows():
    n, k, nas = 20_000, 100, 10
    df = datagen.groupby_table(n, k, nas=nas, seed=2).to_pandas()
    # In id columns, 10% of the distinct values are NA wherever they occur: no value is partly NA.
    assert 0.05 < df["id4"].isna().mean() < 0.15
    assert df["id6"].isna().sum() > 0
    # In v columns, exactly 10% of the rows.
    for c in ("v1", "v2", "v3"):
        assert df[c].isna().sum() == n * nas // 100


def test_groupby_sort_flag_orders_rows():
    df = datagen.groupby_table(5000, 10, sort=True, seed=3).to_pandas()
    codes = [df[c].cat.codes if hasattr(df[c], "cat") else df[c] for c in ("id1", "id2", "id3", "id4", "id5", "id6")]
    order = np.lexsort(tuple(np.asarray(c) for c in reversed(codes)))
    assert (order == np.arange(len(df))).all(), "rows sorted by id1..id6"


def test_join_keys_are_split_as_the_benchmark_does():
    n = 50_000
    t = datagen.join_tables(n, seed=4)
    sizes = datagen.join_sizes(n)
    assert {r: t[r].num_rows for r in ("small", "medium", "big")} == sizes
    x = t["x"].to_pandas()
    for role, key in (("small", "id1"), ("medium", "id2"), ("big", "id3")):
        right = t[role].to_pandas()
        assert right[key].is_unique, f"{role} keys are unique"
        shared = len(set(x[key]) & set(right[key]))
        assert shared == round(0.9 * sizes[role]), (role, shared)
        # Every left key set is used in full (sample_all): shared + left-only.
        assert x[key].nunique() == sizes[role] if role != "big" else x[key].nunique() == n
    assert t["x"].column_names == ["id1", "id2", "id3", "id4", "id5", "id6", "v1"]
    assert t["medium"].column_names == ["id1", "id2", "id4", "id5", "v2"]
    assert (("id" + x["id2"].astype(str)) == x["id5"].astype(str)).all(), "id5 is id2 as a string"


def test_names_follow_the_benchmark():
    assert datagen.groupby_name(10**7, 100) == "G1_1e7_1e2_0_0"
    assert datagen.groupby_name(12345, 10, 5, True) == "G1_12345_1e1_5_1"
    assert datagen.join_names(10**7) == {
        "x": "J1_1e7_NA_0_0", "small": "J1_1e7_1e1_0_0", "medium": "J1_1e7_1e4_0_0", "big": "J1_1e7_1e7_0_0",
    }  # fmt: skip


def test_bad_counts():
    with pytest.raises(AccelError, match="K must be between 1 and N"):
        datagen.groupby_table(10, 20)
    with pytest.raises(AccelError, match="N >= 1000"):
        datagen.join_tables(999)
    with pytest.raises(ValueError):
        datagen.rows_from_text("1.5")
    assert datagen.rows_from_text("1e7") == 10**7 and datagen.rows_from_text("10_000") == 10_000

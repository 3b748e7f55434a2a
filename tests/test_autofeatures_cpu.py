"""Automatic features on the CPU arm; the same bodies run on the GPU in test_autofeatures_gpu.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accel.backend import cpu_backend
from tests import bodies, null_bodies, tables


@pytest.fixture(scope="module")
def backend():
    return cpu_backend()


def test_target_encoding_is_out_of_fold(backend):
    bodies.check_target_encoding_is_out_of_fold(backend)


def test_auto_smoothing_matches_scikit_learn(backend):
    bodies.check_auto_smoothing_matches_scikit_learn(backend)


@pytest.mark.parametrize("family", ["native", "trees", "linear", "distance"])
def test_table_features(backend, family):
    X_train, X_test, report = bodies.check_table_features(backend, tables.customers(400), "churned", family)
    assert list(X_train.columns) == list(X_test.columns)
    if family == "native":
        assert isinstance(X_train["plan"].dtype, pd.CategoricalDtype)
    if family in ("linear", "distance"):
        dense = X_train.select_dtypes("number")
        np.testing.assert_allclose(dense.mean().to_numpy(), 0.0, atol=1e-4)
        assert "plan==basic" in X_train.columns
    assert "city__te" in X_train.columns and "city__count" in X_train.columns


def test_statistics_come_from_training_rows_only(backend):
    # Changing the test rows' targets must not change any feature of any row.
    from accel.data.schema import make_plan

    df = tables.customers(400)
    plan = make_plan(df, "churned", seed=5)
    flipped = df.copy()
    test_rows = plan.row_positions[plan.test_pos]
    flipped.loc[test_rows, "churned"] = np.where(flipped.loc[test_rows, "churned"] == "yes", "no", "yes")
    a_train, a_test, _ = bodies.check_table_features(backend, df, "churned", "linear")
    b_train, b_test, _ = bodies.check_table_features(backend, flipped, "churned", "linear")
    pd.testing.assert_frame_equal(a_train, b_train)
    pd.testing.assert_frame_equal(a_test, b_test)


# The encoding probe runs once, on the host, while the run is planned (both arms then use its
# choice), so it has no GPU twin.


def _shops(n: int, seed: int = 0, shops: int = 80) -> pd.DataFrame:
    """``shops`` shops (more than NATIVE_MAX): half gain with x, half lose. Each shop's mean is 0, so a
    target encoding says nothing; native categories can group the shops and then split on x."""
    rng = np.random.default_rng(seed)
    shop = rng.integers(0, shops, n)
    sign = np.where(rng.random(shops) < 0.5, -1.0, 1.0)
    x = rng.normal(size=n)
    return pd.DataFrame({"shop": [f"shop{k:05d}" for k in shop], "x": x, "y": 3 * sign[shop] * x + rng.normal(0, 0.3, n)})


def _plan(tmp_path, frame: pd.DataFrame, target: str, family: str | None, probe: str = "auto"):
    from accel.workflows import WorkflowSettings
    from accel.workflows.table import plan_table, probe_encodings

    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False)
    planned = plan_table(str(path), target, None, [], WorkflowSettings(seed=0), family=family)
    probe_encodings(planned, 0, probe)
    return planned


def test_encoding_probe_keeps_native_categories_where_they_score_better(tmp_path):
    from accel.data.autofeatures import TableFeaturizer

    planned = _plan(tmp_path, _shops(4000), "y", "native", probe="force")  # every training row
    plan = planned.plan
    probe = plan.encoding_probe
    assert probe["candidates"] == ["shop"] and probe["metric"] == "rmse" and probe["rows"] == len(plan.train_pos)
    assert probe["native"] < 0.8 * probe["target_encoding"], probe
    assert plan.native_categorical == ["shop"] and probe["chosen"] == "native"
    assert any("native categories for XGBoost" in notice for notice in plan.notices)
    assert plan.describe()["encoding_probe"] == probe
    assert planned.probe_seconds > 0
    assert TableFeaturizer(pd, plan, "native", 0).encoding["shop"] == "native categorical"
    # Models that cannot take native categories still get the target encoding.
    assert TableFeaturizer(pd, plan, "linear", 0).encoding["shop"].startswith("out-of-fold")


def test_a_repeated_key_of_thousands_of_values_is_probed_too(tmp_path):
    """6,000 shops of about 4 rows each, each at its own level: a key (not an ID) that native
    splits use better than a target encoding of a few rows per value; the probe measures it."""
    rng = np.random.default_rng(0)
    shop, level = rng.integers(0, 6000, 24_000), rng.lognormal(0, 1, 6000)  # a shop's own level, skewed as prices are
    x = rng.normal(size=shop.size)
    frame = pd.DataFrame({"shop": [f"shop{k:05d}" for k in shop], "x": x, "y": level[shop] * (1 + 0.2 * x)})
    planned = _plan(tmp_path, frame, "y", "native", probe="force")
    probe = planned.plan.encoding_probe
    shop = next(c for c in planned.plan.columns if c.name == "shop")
    assert shop.kind == "categorical" and shop.cardinality > 4096, shop
    assert probe["candidates"] == ["shop"] and probe["chosen"] == "native", probe
    assert probe["native"] < probe["target_encoding"], probe


def test_encoding_probe_runs_only_for_xgboost_and_with_enough_rows(tmp_path):
    from accel.data.autofeatures import PROBE_MIN_ROWS, TableFeaturizer

    assert _plan(tmp_path, _shops(4000), "y", "trees").plan.encoding_probe is None
    small = _plan(tmp_path, _shops(PROBE_MIN_ROWS), "y", "native").plan  # 80% of the rows train
    assert small.native_categorical == [] and "skipped" in small.encoding_probe
    assert TableFeaturizer(pd, small, "native", 0).encoding["shop"].startswith("out-of-fold")
    # Nothing above NATIVE_MAX values: nothing to probe.
    assert _plan(tmp_path, tables.house_prices(), "price", "native").plan.encoding_probe is None


# --------------------------------------------------------------------------- missing values as cuDF holds them


def test_model_matrix_of_integer_and_boolean_columns_with_missing_values(backend):
    null_bodies.check_matrix_of_nullable_columns(backend)


def test_one_hot_of_a_missing_category_is_all_zeros(backend):
    null_bodies.check_one_hot_of_missing_categories_is_zero(backend)


def test_linear_features_impute_no_one_hot_column(backend):
    null_bodies.check_linear_features_of_missing_categories(backend)


def test_the_float_cast_comes_before_any_conversion():
    # cuDF fills missing values before it casts, which an integer column cannot take: the one
    # cast (as_float) turns every non-float column to float first and leaves float ones alone.
    from accel import _compat

    frame = null_bodies.nullable_frame()[["year", "flag", "x", "count"]]
    cast = _compat.as_float(frame, "float32")
    assert [str(t) for t in cast.dtypes] == ["float32", "float32", "float64", "float32"]
    assert cast["year"].isna().tolist() == frame["year"].isna().tolist()
    x = frame["x"]
    assert _compat.as_float(x) is x


@pytest.mark.parametrize(("old", "new"), [("xgboost", "native"), ("random_forest", "trees"), ("knn", "distance")])
def test_a_transform_saved_under_a_familys_old_name_loads_as_the_family(old, new):
    """Families are named for what they mean; a pipeline saved before, under a model's name, still loads."""
    from accel.data.autofeatures import TableTransform, build_table_features
    from accel.data.schema import make_plan

    frame = tables.customers(400)
    plan = make_plan(frame, "churned", seed=5)
    prepared, _ = build_table_features(pd, frame.iloc[plan.row_positions].reset_index(drop=True), plan, new, seed=5)
    state, saved = prepared.transform.state()
    state["family"] = old
    loaded = TableTransform.from_state(pd, state, saved)
    assert loaded.featurizer.family == new
    pd.testing.assert_frame_equal(loaded.transform(frame.head(50)), prepared.transform.transform(frame.head(50)))


def test_planning_keeps_the_head_for_the_probe_only_and_the_probe_drops_it(tmp_path):
    """The probe is a step after planning: planning keeps the first rows only where the model
    takes native categories, and the probe, timed on its own, lets them go."""
    from accel.workflows import WorkflowSettings
    from accel.workflows.table import plan_table, probe_encodings

    path = tmp_path / "table.csv"
    _shops(2000).to_csv(path, index=False)
    trees = plan_table(str(path), "y", None, [], WorkflowSettings(seed=0), family="trees")
    native = plan_table(str(path), "y", None, [], WorkflowSettings(seed=0), family="native")
    assert trees.head is None and len(native.head) == 2000 and native.probe_seconds == 0.0
    assert native.plan.encoding_probe is None  # planning trains nothing
    probe_encodings(native, 0, "force")
    assert native.head is None and native.probe_seconds > 0 and native.plan.encoding_probe["candidates"] == ["shop"]


def test_the_numeric_share_of_a_text_column_counts_every_value():
    """Each distinct value is parsed once and weighted by its count: the share of values, not of distinct values."""
    from accel.data.schema import _numeric_share

    assert _numeric_share(pd.Series(["1", "1", "1", "x", None, "2.5e3", "nan"])) == pytest.approx(4 / 6)
    assert _numeric_share(pd.Series([None, None], dtype=object)) == 0.0
    assert _numeric_share(pd.Series(["a", "b"], dtype="category")) == 0.0


@pytest.mark.parametrize(("numbers", "texts", "said"), [(50, 50, "50% numbers"), (94, 6, "94% numbers")])
def test_a_mixed_column_names_its_share_of_numbers(numbers, texts, said):
    from accel.data.schema import _text_plan

    text = pd.Series([str(1950 + i % 60) for i in range(numbers)] + ["unknown"] * texts)
    plan = _text_plan("year", text, text.nunique(), [])
    assert plan.kind == "categorical" and not plan.numbers_in_text
    assert f"mixed types ({said}, the rest text)" in plan.reason


@pytest.mark.parametrize(("numbers", "texts"), [(3321, 1), (99, 1), (95, 5)])
def test_a_column_of_numbers_with_a_few_words_is_numeric_with_the_words_missing(numbers, texts):
    from accel.data.schema import _text_plan

    text = pd.Series([str(1950 + i % 60) for i in range(numbers)] + ["unknown"] * texts)
    notices: list[str] = []
    plan = _text_plan("year", text, text.nunique(), notices)
    assert plan.kind == "numeric" and plan.numbers_in_text
    said = f"{texts:,} of {numbers + texts:,} values not numbers ('unknown'), read as missing"
    assert said in plan.reason and notices == [f"column 'year': numbers, but {said}"]
    assert plan.describe()["numbers_in_text"] is True


def test_few_distinct_numbers_with_a_word_are_categories_of_numbers():
    from accel.data.schema import TablePlan, _text_plan

    text = pd.Series(["1", "2", "3", "4"] * 30 + ["n.a."])
    plan = _text_plan("engines", text, text.nunique(), [])
    assert plan.kind == "categorical" and plan.categories == [1.0, 2.0, 3.0, 4.0] and plan.numbers_in_text
    table = TablePlan("y", "binary", "", [0, 1], True, [plan], np.arange(3), np.arange(2), np.arange(2, 3))
    assert table.csv_dtypes()["engines"] == "str"
    table.widen_vocabularies({"engines": ["1", "5", "unknown", None]})  # every value of the file, words among them
    assert plan.categories == [1.0, 5.0]


def test_a_tidy_numeric_column_says_nothing_of_text():
    from accel.data.schema import ColumnPlan

    assert "numbers_in_text" not in ColumnPlan("x", "numeric").describe()


def test_a_number_in_text_is_what_both_arms_read_as_one():
    from accel._compat import numbers_in_text

    given = ["1", " 2 ", "\t3", "1e3", "+5", ".5", "5.", "-3.2E-2", None, "", "unknown", "inf", "nan", "1,000",
             "\u0661\u0662", "0x10", "-", "1e", "1_000", ".", "1e400", "-1e400"]  # fmt: skip
    read = numbers_in_text(pd.Series(given, dtype=object)).tolist()
    assert read[:8] == [1.0, 2.0, 3.0, 1000.0, 5.0, 0.5, 5.0, -0.032]
    assert all(np.isnan(v) for v in read[8:])


def test_numbers_with_words_on_the_arm(backend):
    bodies.check_numbers_with_words(backend)

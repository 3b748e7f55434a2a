"""Test bodies shared by the CPU and GPU suites (as xgboost keeps ``xgboost/testing``).

Each takes a :class:`~accel.backend.Backend` and checks a property that must hold on both
arms; ``test_*_cpu.py`` calls it with the CPU backend, ``test_*_gpu.py`` with the GPU backend.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accel import _compat
from accel.backend import Backend
from accel.data.features import GroupStats, left_join
from accel.models import XGBoostSettings
from accel.runner import run_arm
from accel.timing import EXTRA_STAGES, STAGES
from accel.workflows import FlightsWorkflow, WorkflowSettings
from tests import tables


def to_pandas(frame) -> pd.DataFrame:
    return frame.to_pandas() if _compat.is_cudf(frame) else frame


def check_left_join_keeps_order(backend: Backend) -> None:
    xdf = backend.xdf
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, size=5000)
    left = xdf.DataFrame({"k": keys, "v": np.arange(5000)})
    right = xdf.DataFrame({"k": np.arange(0, 40)[::-1], "w": np.arange(0, 40)[::-1] * 10.0})
    out = to_pandas(left_join(left, right, ["k"]))
    assert len(out) == 5000
    np.testing.assert_array_equal(out["v"].to_numpy(), np.arange(5000))
    expected = np.where(keys < 40, keys * 10.0, np.nan)
    np.testing.assert_array_equal(out["w"].to_numpy(), expected)


def check_group_stats_fit_on_train_only(backend: Backend) -> None:
    xdf = backend.xdf
    train = xdf.DataFrame({"g": ["a", "a", "b", "b", "b"], "x": [1, 2, 3, 4, 5]})
    y_train = xdf.Series([1, 0, 1, 1, 1])
    test = xdf.DataFrame({"g": ["a", "b", "c"], "x": [0, 0, 0]})
    stats = GroupStats(["g"], count_name="n", rate_name="rate").fit(xdf, train, y_train, smoothing=2.0)
    out = to_pandas(stats.transform(test))
    prior = 4 / 5
    np.testing.assert_allclose(out["n"].to_numpy(), [2.0, 3.0, 0.0])
    np.testing.assert_allclose(out["rate"].to_numpy(), [(1 + 2 * prior) / 4, (3 + 2 * prior) / 5, prior])
    # The test rows' own targets never enter: changing them cannot change their encoding.
    assert stats.prior == prior


def check_categories_identical_across_splits(backend: Backend) -> None:
    xdf = backend.xdf
    full = xdf.DataFrame({"c": ["z", "a", "m", "a", "z"]})
    vocabulary = _compat.sorted_unique(full["c"])  # as the flights transform takes it: from every row
    a, b = (f.assign(c=_compat.as_categorical(xdf, f["c"], vocabulary)) for f in (full.iloc[[0, 1]], full.iloc[[2, 3, 4]]))
    assert list(to_pandas(a)["c"].cat.categories) == ["a", "m", "z"]
    assert list(to_pandas(a)["c"].cat.categories) == list(to_pandas(b)["c"].cat.categories)
    assert to_pandas(a)["c"].cat.codes.tolist() == [2, 0] and to_pandas(b)["c"].cat.codes.tolist() == [1, 0, 2]
    assert str(full["c"].dtype) != "category"  # the frames given are left as they were


def check_finish_features_on_untidy_rows(backend: Backend) -> None:
    """The flights workflow's last feature step, as a function and as the fitted transform a Dask
    partition goes through (:class:`~accel.workflows.flights.FlightsTransform`, on the arm's
    library, its target beside), on rows with missing carriers and hours, carriers the vocabulary
    does not hold, group keys never seen in training and a column the model does not take: the
    same frame both ways, in input order."""
    from accel.workflows.flights import CATEGORICAL, FEATURES, GROUP_STATS, FlightsTransform, finish_features, target

    xdf = backend.xdf
    n = 8
    values = {c: [float(i) for i in range(n)] for c in FEATURES}
    values.update(
        carrier=["AA", None, "UA", "ZZ", "AA", "UA", None, "B6"],  # ZZ, B6: not in the vocabulary
        origin=["JFK", "LGA", "JFK", "EWR", "JFK", "LGA", "EWR", "JFK"],
        dest=["LAX", "SFO", "LAX", "ORD", "MIA", "SFO", "LAX", None],
        hour=[5.0, 6.0, None, 5.0, 23.0, 6.0, 5.0, 7.0],
    )
    del values["route_flights"], values["carrier_hour_delay_rate"]  # what the group statistics add
    joined = xdf.DataFrame({**values, "tailnum": ["N1"] * n, "arr_delay": [30.0, 0, 16, 15, 99, 20, -5, 1]})
    fit_rows = [0, 1, 2, 5, 6]  # the training rows; row 4's (JFK, MIA) and (AA, 23) are never seen
    train = joined.iloc[fit_rows].reset_index(drop=True)
    stats = [GroupStats(list(k), c, r).fit(xdf, train, target(train)) for k, c, r in GROUP_STATS]
    vocabulary = {"carrier": ["AA", "UA"], "origin": ["EWR", "JFK", "LGA"], "dest": ["LAX", "MIA", "ORD", "SFO"]}
    whole = to_pandas(finish_features(xdf, joined, stats, vocabulary))
    fitted = FlightsTransform(xdf=xdf, weather=None, planes=None, stats=stats, vocabulary=vocabulary)
    part = to_pandas(fitted.finish(joined))
    assert list(whole.columns) == FEATURES and "tailnum" not in whole.columns
    pd.testing.assert_frame_equal(part, whole)
    assert to_pandas(fitted.labels(joined)).tolist() == [1, 0, 1, 0, 1, 1, 0, 0]
    assert whole["distance"].tolist() == values["distance"]  # input order kept through the joins
    for c in CATEGORICAL:
        assert list(whole[c].cat.categories) == vocabulary[c]
    assert whole["carrier"].cat.codes.tolist() == [0, -1, 1, -1, 0, 1, -1, -1]  # missing and unknown: missing
    assert whole["dest"].cat.codes.tolist()[-1] == -1
    prior = float(target(train).mean())
    assert whole["route_flights"].tolist()[4] == 0.0 and whole["carrier_hour_delay_rate"].tolist()[4] == prior
    # A missing key matches no group (none was fitted on a missing key): the count and rate of the unseen.
    assert whole["carrier_hour_delay_rate"].tolist()[1] == prior and whole["carrier_hour_delay_rate"].tolist()[2] == prior


def check_partial_fit_on_untidy_rows(backend: Backend) -> None:
    """The flights transform fitted from partial fits (:func:`~accel.workflows.flights.group_sums`,
    one partition in a single process, several on Dask) on rows with missing group keys, keys seen
    once and categories only outside the training rows: the same features as group statistics
    fitted on the training rows directly, whatever the partitioning, and vocabularies of every
    row's non-missing values."""
    from accel.workflows.flights import CATEGORICAL, FEATURES, GROUP_STATS, FlightsTransform, group_sums, target

    xdf = backend.xdf
    n = 10
    values = {c: [float(i) for i in range(n)] for c in FEATURES}
    values.update(
        carrier=["AA", None, "UA", "AA", "B6", "UA", None, "AA", "ZZ", "UA"],  # ZZ: a test row only
        origin=["JFK", "LGA", "JFK", None, "JFK", "LGA", "EWR", "JFK", "EWR", "LGA"],
        dest=["LAX", "SFO", "LAX", "ORD", None, "SFO", "LAX", "MIA", "ORD", "SFO"],
        hour=[5.0, 6.0, None, 5.0, 23.0, 6.0, 5.0, None, 7.0, 6.0],
    )
    del values["route_flights"], values["carrier_hour_delay_rate"]
    joined = xdf.DataFrame({**values, "arr_delay": [30.0, 0, 16, 15, 99, 20, -5, 1, 40, 17]})
    train = np.array([0, 1, 2, 3, 4, 5, 6, 7, 9])  # row 8 (carrier ZZ) is a test row
    rows = joined.iloc[train].reset_index(drop=True)
    direct = [GroupStats(list(k), c, r).fit(xdf, rows, target(rows), smoothing=20.0) for k, c, r in GROUP_STATS]
    vocabulary = {c: _compat.sorted_unique(joined[c]) for c in CATEGORICAL}
    expected = to_pandas(FlightsTransform(xdf, None, None, direct, vocabulary).finish(joined))

    whole = FlightsTransform.fit(xdf, [group_sums(joined, train)], None, None)
    halves = [joined.iloc[:5].reset_index(drop=True), joined.iloc[5:].reset_index(drop=True)]
    parts = FlightsTransform.fit(
        xdf, [group_sums(halves[0], train[train < 5]), group_sums(halves[1], train[train >= 5] - 5)], None, None
    )
    assert (
        whole.vocabulary == parts.vocabulary == vocabulary and "ZZ" in vocabulary["carrier"] and None not in vocabulary["carrier"]
    )
    for fitted in (whole, parts):
        assert [g.prior for g in fitted.stats] == pytest.approx([g.prior for g in direct], rel=1e-12)
        pd.testing.assert_frame_equal(to_pandas(fitted.finish(joined)), expected, check_exact=False, rtol=1e-12)


def check_flights_features(backend: Backend, rows: int = 4000, seed: int = 7) -> pd.DataFrame:
    """The features stage on a sample; returns the training frame as pandas for comparison."""
    wf = FlightsWorkflow(WorkflowSettings(rows=rows, seed=seed))
    prepared = wf.features(backend, wf.load(backend))
    X = to_pandas(prepared.X_train)
    assert prepared.rows["loaded"] == rows
    assert prepared.rows["train"] + prepared.rows["test"] == prepared.rows["with_target"]
    assert len(X) == prepared.rows["train"] and len(to_pandas(prepared.X_test)) == prepared.rows["test"]
    for column in ("carrier", "origin", "dest"):
        assert isinstance(X[column].dtype, pd.CategoricalDtype)
    assert X["day_of_week"].between(0, 6).all()
    assert X["route_flights"].min() >= 0
    assert X["carrier_hour_delay_rate"].between(0, 1).all()
    return X


def check_flights_arm(backend: Backend, rows: int = 6000, seed: int = 3):
    """Every stage runs, is timed, and XGBoost ran on the arm's own device."""
    wf = FlightsWorkflow(WorkflowSettings(rows=rows, seed=seed), XGBoostSettings(n_estimators=40, max_depth=6))
    result = run_arm(backend, wf)
    assert result.status == "ok", result.reason
    assert set(result.stages) == {*STAGES, *EXTRA_STAGES} and all(s >= 0 for s in result.stages.values())
    assert abs(result.total_seconds - sum(result.stages[s] for s in STAGES)) < 1e-3, "the total is the five stages, explain apart"
    assert result.device_used.startswith("cuda" if backend.is_gpu else "cpu")
    assert 0.55 < result.metrics["auc"] <= 1.0
    assert result.peak_host_mb > 0
    assert (result.peak_device_mb is not None) == backend.is_gpu
    return result


def target_encode(xdf, codes_train, t_train, codes_test, folds: np.ndarray, smoothing: float | str = "auto") -> tuple:
    """A :class:`~accel.data.autofeatures.TargetEncoder` fitted on all training rows at once: the
    training rows' out-of-fold encodings, the test rows', and both splits' category counts."""
    from accel.data.autofeatures import TargetEncoder

    encoder = TargetEncoder(xdf, ["t"], smoothing)
    encoder.partial_fit(codes_train, {"t": t_train}, folds)
    encoder.finalize()
    train, test = encoder.transform(codes_train, folds), encoder.transform(codes_test)
    return train["t"], test["t"], (train["count"], test["count"])


def check_target_encoding_is_out_of_fold(backend: Backend) -> None:
    """A training row's own target never enters its own encoding; test rows use all training rows."""
    xdf = backend.xdf
    codes = xdf.Series([0.0, 0.0, 0.0, 1.0, 1.0, np.nan])
    t = xdf.Series([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    folds = np.array([0, 1, 2, 0, 1, 2])
    enc_train, enc_test, (n_train, n_test) = target_encode(xdf, codes, t, xdf.Series([0.0, 1.0, 7.0]), folds, smoothing=1.0)
    prior = 4 / 6
    got = _compat.to_numpy(enc_train)
    # Row 0 (category 0, fold 0): the other rows of category 0 are rows 1 and 2 (targets 0, 1).
    assert np.isclose(got[0], (1.0 + prior) / (2 + 1))
    # Row 3 (category 1, fold 0): only row 4 (target 1) is out of its fold.
    assert np.isclose(got[3], (1.0 + prior) / (1 + 1))
    # Missing category: the prior.
    assert np.isclose(got[5], prior)
    np.testing.assert_allclose(_compat.to_numpy(enc_test), [(2 + prior) / 4, (2 + prior) / 3, prior])
    np.testing.assert_allclose(_compat.to_numpy(n_test), [3.0, 2.0, 0.0])


def check_auto_smoothing_matches_scikit_learn(backend: Backend) -> None:
    """``smoothing="auto"`` is scikit-learn's ``TargetEncoder(smooth="auto")``: the same encoding
    of rows outside the training rows, for a continuous and a binary target; out-of-fold rows use
    the same weights over the rows outside their fold."""
    from sklearn.preprocessing import TargetEncoder as SkTargetEncoder

    rng = np.random.default_rng(3)
    n = 600
    codes = rng.integers(0, 40, size=n).astype("float64")
    # Category means that differ, with noise that differs by category, so the weights matter.
    continuous = codes * 0.5 + rng.normal(0, 1 + codes % 5, size=n)
    binary = (rng.random(n) < (codes % 7) / 7).astype("float64")
    test_codes = np.arange(-1, 42, dtype="float64")  # -1, 40 and 41 never seen: the prior
    folds = rng.integers(0, 5, size=n)
    for target, kind in ((continuous, "continuous"), (binary, "binary")):
        enc_train, enc_test, _ = target_encode(
            backend.xdf, backend.xdf.Series(codes), backend.xdf.Series(target), backend.xdf.Series(test_codes), folds
        )
        reference = SkTargetEncoder(smooth="auto", target_type=kind).fit(codes.reshape(-1, 1), target)
        expected = reference.transform(test_codes.reshape(-1, 1))[:, 0]
        np.testing.assert_allclose(_compat.to_numpy(enc_test), expected, rtol=1e-9)
        # Row 0, out of fold: the rows of its category outside its fold, weighted by their variance.
        same = (codes == codes[0]) & (folds != folds[0])
        within, overall = target[same].var(), target.var()
        weight = same.sum() * overall / (same.sum() * overall + within)
        expected_row0 = weight * target[same].mean() + (1 - weight) * target.mean()
        assert np.isclose(_compat.to_numpy(enc_train)[0], expected_row0)


def check_table_features(backend: Backend, frame: pd.DataFrame, target: str, family: str):
    """Plan on the host, build features on ``backend``; returns pandas frames for comparison."""
    from accel.data.autofeatures import build_table_features
    from accel.data.schema import make_plan

    plan = make_plan(frame, target, seed=5)
    arm_frame = frame if backend.xdf.__name__ == "pandas" else backend.xdf.from_pandas(frame)
    arm_frame = arm_frame.iloc[plan.row_positions].reset_index(drop=True)
    prepared, report = build_table_features(backend.xdf, arm_frame, plan, family, seed=5)
    X_train, X_test = to_pandas(prepared.X_train), to_pandas(prepared.X_test)
    assert len(X_train) == len(plan.train_pos) and len(X_test) == len(plan.test_pos)
    if family != "native":
        assert not X_train.isna().any().any() and not X_test.isna().any().any()
    return X_train, X_test, report


def check_precision_guard(backend: Backend) -> None:
    """float16 storage: in-range columns halve their bytes; out-of-range ones are scaled or kept."""
    from accel.precision import plan_for_frames, store_frame

    rng = np.random.default_rng(0)
    n = 5000
    frame = pd.DataFrame(
        {
            "small_int": rng.integers(0, 300, n).astype(np.float32),
            "normal": rng.normal(0, 1, n).astype(np.float32),
            "huge": (rng.uniform(1e5, 1e7, n)).astype(np.float32),
            "tiny": (rng.uniform(1e-9, 1e-7, n)).astype(np.float32),
            "wide_range": (10.0 ** rng.uniform(-9, 6, n)).astype(np.float32),
        }
    )
    frame.loc[::7, "normal"] = np.nan
    arm_frame = frame if backend.xdf.__name__ == "pandas" else backend.xdf.from_pandas(frame)
    plan = plan_for_frames("fp16", [arm_frame], [])
    by = {c.name: c for c in plan.columns}
    assert by["small_int"].storage == "fp16" and by["small_int"].scale == 1.0
    assert by["normal"].storage == "fp16"
    assert by["huge"].storage == "fp16" and by["huge"].scale > 1 and "outside float16" in by["huge"].reason
    assert by["tiny"].storage == "fp16" and by["tiny"].scale < 1
    assert by["wide_range"].storage == "fp32" and "lose precision" in by["wide_range"].reason
    stored = store_frame(backend, arm_frame, [], plan, batch_rows=1234)
    back = _compat.to_numpy(stored.batch(0, n))
    original = frame.to_numpy(dtype=np.float64)
    np.testing.assert_array_equal(np.isnan(back), np.isnan(original))
    ok = ~np.isnan(original)
    rel = np.abs(back[ok] - original[ok]) / np.maximum(np.abs(original[ok]), 1e-30)
    assert rel.max() <= 1e-3
    np.testing.assert_array_equal(back[:, 0], original[:, 0])  # small integers are exact
    assert stored.nbytes == n * (4 * 2 + 1 * 4)  # four columns in float16, one kept in float32
    assert stored.nbytes_fp32 == n * 5 * 4
    # Any batch reads back the same rows as the whole.
    np.testing.assert_array_equal(_compat.to_numpy(stored.batch(1000, 2000)), back[1000:2000])


def check_streaming_equals_in_memory(backend: Backend, path, target: str, batch_rows: int) -> None:
    """The same table streamed in batches and held whole: same statistics, same model, same metrics."""
    from accel.memory import MemorySettings
    from accel.runner import run_arm
    from accel.workflows import WorkflowSettings
    from accel.workflows.table import TableWorkflow, plan_table, probe_encodings

    settings = WorkflowSettings(seed=3)
    planned = plan_table(str(path), target, None, [], settings, family="native")  # as `accel run` plans it
    probe_encodings(planned, settings.seed)
    params = {"n_estimators": 30, "max_depth": 5}
    whole = run_arm(backend, TableWorkflow(settings, planned, "xgboost", params), memory=MemorySettings())
    streamed = run_arm(backend, TableWorkflow(settings, planned, "xgboost", params), memory=MemorySettings(batch_rows=batch_rows))
    assert whole.memory["batches"]["mode"] == "in-memory"
    assert streamed.memory["batches"]["mode"] == "streaming" and streamed.memory["batches"]["batches"] > 2
    assert (whole.executor, streamed.executor) == ("in_memory", "streamed")
    assert streamed.stage_peak_host_mb and set(streamed.stage_peak_host_mb) <= set(whole.stage_peak_host_mb), (
        streamed.stage_peak_host_mb
    )
    assert streamed.host_mb_at_start > 0
    for key, value in whole.metrics.items():
        assert abs(streamed.metrics[key] - value) < 1e-9, (key, value, streamed.metrics[key])


def check_external_memory_matrix_equals_in_memory(backend: Backend, path, target: str, batch_rows: int) -> None:
    """A streamed run whose plan puts XGBoost's matrix in external memory (ExtMemQuantileDMatrix)
    trains the same model as one holding the matrix in memory; both read their later passes
    from the chunk cache, whose folder is gone afterwards."""
    from accel.batching import BatchPlan
    from accel.cache import cache_dir
    from accel.memory import MemorySettings
    from accel.runner import run_arm
    from accel.workflows import WorkflowSettings
    from accel.workflows.table import TableWorkflow, plan_table, probe_encodings

    settings = WorkflowSettings(seed=3)
    planned = plan_table(str(path), target, None, [], settings, family="native")
    probe_encodings(planned, settings.seed)
    params = {"n_estimators": 30, "max_depth": 5}
    rows = len(planned.plan.row_positions)
    results = {}
    for kind in ("in-memory", "external"):
        plan = BatchPlan(10**9, "test", 1000.0, rows, batch_rows, "streaming", "auto")
        plan.training_matrix = kind
        flow = TableWorkflow(settings, planned, "xgboost", params)
        results[kind] = run_arm(backend, flow, memory=MemorySettings(), prepared_arm=({}, plan))
        assert results[kind].status == "ok", results[kind].reason
        assert results[kind].memory["batches"]["training_matrix"] == kind
        assert results[kind].memory["chunk_cache"]["complete"] is True
    for key, value in results["in-memory"].metrics.items():
        assert abs(results["external"].metrics[key] - value) < 1e-9, (key, value, results["external"].metrics[key])
    stream = cache_dir() / "stream"
    assert not stream.exists() or list(stream.iterdir()) == []


def hostile_table(n: int = 3000, seed: int = 5, missing_target_head: int = 700) -> pd.DataFrame:
    """A table whose first ``missing_target_head`` rows have no target, with an integer column
    holding missing values, text with delimiters, quotes and pandas' missing-value strings."""
    rng = np.random.default_rng(seed)
    calls = rng.poisson(2.0, n).astype(object)
    calls[rng.random(n) < 0.1] = None  # integers with gaps: read as float64 on both arms
    plan = rng.choice(["basic", "plus", "pro, annual", 'say "pro"'], n).astype(object)
    plan[rng.random(n) < 0.05] = None
    spend = rng.gamma(2.0, 30.0, n).round(2)
    logit = -1.0 + 0.6 * np.nan_to_num(calls.astype(float)) - 0.01 * spend
    churned = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no").astype(object)
    churned[:missing_target_head] = None
    churned[rng.random(n) < 0.05] = None
    return pd.DataFrame({"calls": calls, "plan": plan, "monthly_spend": spend, "churned": churned})


def check_csv_chunks_equal_whole_read(backend: Backend, path, rows: int, dtypes: dict[str, str]) -> None:
    """The arm's chunked CSV reader gives every row of the file once, in order, with the values
    and missing values of pandas reading the file whole with the same column types."""
    from accel.data.readers import iter_chunks, resolve_source

    source = resolve_source(path)
    columns = list(source.columns)
    starts, frames = [], []
    for start, frame in iter_chunks(backend.xdf, source, columns, rows, dtypes):
        starts.append(start)
        frames.append(to_pandas(frame))
    whole = pd.read_csv(path, dtype=dtypes)
    assert len(frames) > 2, "the file is read in several chunks"
    assert starts == list(np.cumsum([0] + [len(f) for f in frames[:-1]]))
    got = pd.concat(frames, ignore_index=True)
    assert len(got) == len(whole)
    for name in columns:
        a, b = got[name], whole[name]
        assert a.isna().tolist() == b.isna().tolist(), name
        if dtypes[name] == "str":
            assert a[a.notna()].astype(str).tolist() == b[b.notna()].astype(str).tolist(), name
        else:
            np.testing.assert_array_equal(a.to_numpy(dtype="float64"), b.to_numpy(dtype="float64"), err_msg=name)


def check_probe_sees_only_rows_with_target(backend: Backend, path, target: str, monkeypatch, probe_rows: int) -> None:
    """The batch-size probe of a streamed XGBoost run fits and builds XGBoost's matrix on plan
    rows only (each with a target), even when the file's first chunk holds none of them: the
    labels it passes have no missing or -1 class code and are the targets of those rows (the
    labels that reach :func:`accel.workflows.streaming_costs.measure_costs`, which builds the
    probe's matrix on either arm)."""
    import accel.batching
    import accel.workflows.streaming_costs as streaming_costs
    from accel.data.autofeatures import TableFeaturizer
    from accel.errors import AccelError
    from accel.workflows import WorkflowSettings
    from accel.workflows.table import TableWorkflow, plan_table, probe_encodings

    settings = WorkflowSettings(seed=3)
    planned = plan_table(str(path), target, None, [], settings, family="native")
    probe_encodings(planned, settings.seed)
    plan = planned.plan
    monkeypatch.setattr(accel.batching, "PROBE_ROWS", probe_rows)
    seen: dict[str, list] = {"fit": [], "matrix": []}
    real_fit, real_costs = TableFeaturizer.partial_fit, streaming_costs.measure_costs

    def partial_fit(self, frame, y, folds):
        seen["fit"].append(_compat.to_numpy(y))
        return real_fit(self, frame, y, folds)

    def costs(backend, model, tplan, matrix, label, *args):
        seen["matrix"].append(_compat.to_numpy(label))
        return real_costs(backend, model, tplan, matrix, label, *args)

    monkeypatch.setattr(TableFeaturizer, "partial_fit", partial_fit)
    monkeypatch.setattr(streaming_costs, "measure_costs", costs)
    flow = TableWorkflow(settings, planned, "xgboost", {"n_estimators": 5})
    try:
        flow.plan_batches(backend, 1, "test", None)  # one byte: always streamed
    except AccelError:
        pass  # no batch fits one byte: the probe has run by then
    assert len(seen["fit"]) == 1 and len(seen["matrix"]) == 1
    # The plan rows that the probe's chunk (of ``probe_rows`` file rows) holds, past the chunks without any.
    positions = plan.row_positions
    first = int(positions[0]) // probe_rows * probe_rows
    expected_rows = positions[(positions >= first) & (positions < first + probe_rows)]
    truth = pd.read_csv(path)[target].iloc[expected_rows]
    assert truth.notna().all()
    expected = truth.map({c: i for i, c in enumerate(plan.classes)}).to_numpy(dtype="float64")
    for labels in (seen["fit"][0], seen["matrix"][0]):
        labels = labels.astype("float64")
        assert not np.isnan(labels).any() and (labels >= 0).all()
        np.testing.assert_array_equal(labels, expected)


def check_external_memory_record_says_where_pages_are(backend: Backend, path, target: str, batch_rows: int) -> None:
    """A streamed run with XGBoost's matrix in external memory records where its pages live,
    and that is where they are while boosting: page files in the run's cache folder on disk, or
    none there when they are in host memory."""
    from accel.batching import BatchPlan
    from accel.cache import cache_dir
    from accel.memory import MemorySettings
    from accel.workflows import WorkflowSettings
    from accel.workflows.table import TableWorkflow, plan_table, probe_encodings

    settings = WorkflowSettings(seed=3)
    planned = plan_table(str(path), target, None, [], settings, family="native")
    probe_encodings(planned, settings.seed)
    rows = len(planned.plan.row_positions)
    plan = BatchPlan(10**9, "test", 1000.0, rows, batch_rows, "streaming", "auto")
    plan.training_matrix = "external"
    flow = TableWorkflow(settings, planned, "xgboost", {"n_estimators": 10, "max_depth": 4})
    pages: list[str] = []
    fit = flow.model.fit

    def fit_and_look(backend_, dtrain):
        pages.extend(str(p) for p in (cache_dir() / "stream").rglob("*.page"))
        return fit(backend_, dtrain)

    flow.model.fit = fit_and_look
    result = run_arm(backend, flow, memory=MemorySettings(), prepared_arm=({}, plan))
    assert result.status == "ok", result.reason
    batches = result.memory["batches"]
    assert batches["training_matrix"] == "external"
    where = batches["external_memory"]
    assert where["pages"] == ("host memory" if backend.is_gpu else "disk")
    assert where["on_host"] is backend.is_gpu
    assert batches["batches"] > 2
    if where["pages"] == "disk":
        assert pages, "page files are written while the matrix is built"
    else:
        assert pages == [], pages


#: Column types of :func:`hostile_table` (and :func:`long_rows_table`'s ``notes``) for chunked reads.
CHUNK_DTYPES = {"calls": "float64", "plan": "str", "monthly_spend": "float64", "churned": "str", "notes": "str"}


def long_rows_table(n: int = 8000, seed: int = 2) -> pd.DataFrame:
    """:func:`hostile_table` with a text column whose every 50th value is 30 KB long: rows far
    longer than the read-ahead of a cuDF byte range, a few MB in all."""
    frame = hostile_table(n, seed=seed)
    notes = np.array([f"n{i}" for i in range(n)], dtype=object)
    notes[::50] = ["x" * 30_000 + str(i) for i in range(0, n, 50)]
    return frame.assign(notes=notes)


def check_numbers_with_words(backend: Backend) -> None:
    """Columns of numbers with a few words in them (``unknown``, ``?``, ``-``): planned numeric,
    each word read as missing and each number as itself on the arm, spaces around it or not."""
    from accel.data.autofeatures import build_table_features
    from accel.data.schema import make_plan

    frame = tables.customers_with_words(700)
    plan = make_plan(frame, "churned", seed=5)
    by = {c.name: c for c in plan.columns}
    for name in ("monthly_spend", "age"):
        assert by[name].kind == "numeric" and by[name].numbers_in_text, by[name]
        assert "not numbers" in by[name].reason and "read as missing" in by[name].reason
    assert plan.csv_dtypes()["monthly_spend"] == "str"  # read as text: a float read would refuse the words
    arm_frame = frame if backend.xdf.__name__ == "pandas" else backend.xdf.from_pandas(frame)
    arm_frame = arm_frame.iloc[plan.row_positions].reset_index(drop=True)
    prepared, _ = build_table_features(backend.xdf, arm_frame, plan, "native", seed=5)
    rows = frame.iloc[plan.row_positions].reset_index(drop=True)
    for name in ("monthly_spend", "age"):
        expected = [np.nan if v is None or v in ("unknown", "?", "n.a.", "-", "1e400") else float(v) for v in rows[name]]
        got = np.concatenate([to_pandas(prepared.X_train)[name], to_pandas(prepared.X_test)[name]])
        order = np.concatenate([plan.train_pos, plan.test_pos])
        np.testing.assert_allclose(got, np.asarray(expected, dtype=np.float32)[order], rtol=1e-6)

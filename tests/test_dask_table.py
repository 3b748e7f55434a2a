"""A user's table on a local Dask CPU cluster: the single-process rows and features, its metric, the record.

The cluster tests run real worker processes on loopback (``slow``); the merge of the target
encoders' partial statistics and the refusals are checked without a cluster (default tier).
"""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pandas as pd
import pytest

from accel.cli.main import main
from accel.data.autofeatures import TableFeaturizer, target_codes
from accel.scaleout.cluster import ClusterPlan, ClusterSession
from accel.scaleout.cluster_run import DASK_PARITY_TOLERANCE
from accel.timing import EXTRA_STAGES, STAGES
from accel.workflows.base import WorkflowSettings
from accel.workflows.partitions import Rows, fit_partition
from accel.workflows.table_dask import (
    CSV_BLOCK_BYTES,
    CSV_MIN_BLOCK_BYTES,
    csv_blocksize,
    encoder_fit,
    merge_fits,
    worker_plan,
)
from accel_fixtures.tables import write_wide_table
from tests.conftest import read_json, records_in, run_accel
from tests.dask_table_bodies import (
    check_table_features_match_single_process,
    check_table_run_agrees_with_single_process,
    plan,
    write_tables,
)
from tests.test_cli import assert_one_line_error


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return write_tables(tmp_path_factory.mktemp("orders"))


@pytest.fixture(scope="module")
def session():
    with ClusterSession(ClusterPlan("local", workers=2, threads_per_worker=1, worker_kind="cpu"), say=lambda _: None) as s:
        yield s


# --------------------------------------------------------------------------- without a cluster


def test_partition_statistics_merged_give_the_one_pass_fit(tables):
    """Training rows cut into partitions, fitted apart and merged: the encoders of one pass, exactly
    (a class target: sums of 0/1 indicators; a regression target is fitted in one pass instead)."""
    settings = WorkflowSettings(seed=3)
    planned = plan(tables["parquet"], "returned", settings)
    p = planned.plan
    frame = pd.read_csv(tables["csv"], usecols=p.read_columns, dtype=p.csv_dtypes()).iloc[p.row_positions]
    frame = frame.reset_index(drop=True)
    one = TableFeaturizer(pd, p, "native", 3)
    cast = one.cast(frame)
    train = cast.iloc[p.train_pos].reset_index(drop=True)
    one.partial_fit(train, target_codes(pd, train[p.target], p), one.folds)
    one.finalize()

    merged = TableFeaturizer(pd, p, "native", 3)
    bounds = [0, 500, 501, 1700, len(frame)]  # unequal partitions, one of a single row
    fits = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        lo, hi = np.searchsorted(p.train_pos, [a, b])
        rows = Rows.at(p.train_pos[lo:hi] - a, b - a)
        fits.append(fit_partition(frame.iloc[a:b], encoder_fit, worker_plan(p), rows, merged.folds[lo:hi].astype(np.int8)))
    merge_fits(merged, fits)
    assert set(merged.encoders) == {"shop"}
    for name, encoder in one.encoders.items():
        theirs = merged.encoders[name]
        pd.testing.assert_frame_equal(theirs.per_fold, encoder.per_fold, check_exact=True)
        pd.testing.assert_frame_equal(theirs.totals, encoder.totals, check_exact=True)
        assert theirs.prior == encoder.prior and theirs.variance == encoder.variance
    pd.testing.assert_frame_equal(merged.transform(train, merged.folds), one.transform(train, one.folds), check_exact=True)


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 1000])
def test_a_partitions_rows_travel_as_bits_and_come_back_the_same(size):
    rng = np.random.default_rng(size)
    for positions in (np.arange(size), np.sort(rng.choice(size, size // 2, replace=False)), np.array([], dtype=int)):
        rows = Rows.at(positions, size)
        assert rows.bits.nbytes == -(-size // 8)
        np.testing.assert_array_equal(rows.positions(), positions)


def test_the_workers_plan_holds_no_row_positions_of_the_table(tables):
    p = plan(tables["parquet"], "returned", WorkflowSettings(seed=3)).plan
    shipped = worker_plan(p)
    assert len(shipped.row_positions) == len(shipped.train_pos) == len(shipped.test_pos) == 0
    assert shipped.columns == p.columns and shipped.target == p.target and len(p.train_pos) > 0


def test_csv_blocks_keep_every_worker_busy_within_bounds():
    assert csv_blocksize(10 << 20, "cpu", 4) == math.ceil((10 << 20) / 4)
    assert csv_blocksize(100, "cpu", 4) == CSV_MIN_BLOCK_BYTES
    assert csv_blocksize(100 << 30, "cpu", 4) == CSV_BLOCK_BYTES["cpu"]
    assert csv_blocksize(100 << 30, "gpu", 2) == CSV_BLOCK_BYTES["gpu"]


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--model", "random_forest"], ["--model random_forest", "cannot train on a Dask cluster", "--model xgboost"]),
        (["--model", "logistic_regression"], ["--model logistic_regression", "cannot train on a Dask cluster"]),
        (["--batch-rows", "100000"], ["--batch-rows", "not to a Dask run"]),
        (["--precision", "fp16"], ["--precision", "not to a Dask run", "cuDF", "no float16 column"]),
        (["--memory-budget", "1GB"], ["--memory-budget", "not to a Dask run"]),
        (["--scale", "2"], ["--scale", "does not apply to your own table"]),
    ],
)
def test_table_options_a_cluster_cannot_honour_are_refused_up_front(capsys, tmp_path, tables, argv, needles):
    argv = ["run", "--data", str(tables["csv"]), "--target", "returned", "--cluster", "local", "--out", str(tmp_path), *argv]
    rc = main(argv)
    captured = capsys.readouterr()
    assert_one_line_error(subprocess.CompletedProcess(argv, rc, captured.out, captured.err), *needles)
    assert records_in(tmp_path) == []


# --------------------------------------------------------------------------- on a cluster


@pytest.mark.slow
@pytest.mark.parametrize(
    ("source", "target", "rows"),
    [
        ("parquet", "returned", None),
        ("csv", "returned", 3000),
        ("parquet", "basket", 3500),
        ("csv", "basket", None),
        ("parquet", "channel", None),
        ("csv-gaps", "returned", None),
        ("csv-gaps", "basket", None),
        # where cuDF and pandas part ways: their GPU twins are in test_dask_table_gpu.py
        ("csv-none", "returned", None),
        ("parquet-mixed", "basket", None),
        ("parquet-durations", "returned", None),
        ("parquet-decimal256", "basket", None),
        ("csv-words", "returned", None),
    ],
)
def test_table_features_on_partitions_equal_the_single_process_features(session, tables, source, target, rows):
    check_table_features_match_single_process(session, "cpu", tables[source], target, rows=rows)


@pytest.mark.slow
def test_a_gzip_csv_is_read_whole_by_one_partition_with_the_same_features(session, tables):
    table = check_table_features_match_single_process(session, "cpu", tables["csv.gz"], "returned", min_partitions=1)
    assert table.partitions == 1


@pytest.mark.slow
@pytest.mark.parametrize(("source", "target"), [("parquet", "returned"), ("csv", "basket"), ("csv", "channel")])
def test_table_run_on_the_cluster_agrees_with_single_process(session, tables, source, target):
    check_table_run_agrees_with_single_process(session, "cpu", tables[source], target)


@pytest.mark.slow
def test_cli_table_run_on_local_cluster_writes_the_cluster_record(tmp_path, tables):
    """``accel run --data --target --cluster local``: the flights cluster record's shape, the table
    described as a single-process run describes it, and the AUC of ``--device cpu`` on the same file.

    A model of moderate size (as the flights cluster tests use): on 800 test rows, 300 rounds of
    depth 8 magnify the trees' small differences (XGBoost merges the workers' quantile sketches)
    into AUC differences of about 0.01 either way (with one worker they came out equal).
    """
    params = tmp_path / "params.yaml"
    params.write_text("xgboost:\n  n_estimators: 60\n  max_depth: 5\n")
    common = [str(params), "--data", str(tables["parquet"]), "--target", "returned", "--probe", "off", "--seed", "3"]
    proc = run_accel("run", *common, "--cluster", "local", "--workers", "2", "--out", str(tmp_path / "dask"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "target 'returned': binary" in proc.stderr  # the plan, shown as for a run in this process
    [path] = records_in(tmp_path / "dask")
    r = read_json(path)
    single_proc = run_accel("run", *common, "--device", "cpu", "--out", str(tmp_path / "single"), timeout=300)
    assert single_proc.returncode == 0, single_proc.stderr
    [single_path] = records_in(tmp_path / "single")
    single = read_json(single_path)

    assert r["mode"] == "dask" and r["workflow"] == "table" and r["task"] == "binary"
    assert r["config"]["data"] == str(tables["parquet"]) and r["config"]["cluster"]["kind"] == "local"
    assert r["data"]["partitions"] >= 2
    timed = ("planning_seconds", "encoding_probe_seconds")
    assert {k: v for k, v in r["data"].items() if k not in ("partitions", *timed)} == {
        k: v for k, v in single["data"].items() if k not in timed
    }
    assert r["data"]["source"]["kind"] == "parquet" and r["data"]["source"]["files"] == 4
    assert r["features"]["cpu"]["encodings"] == single["features"]["cpu"]["encodings"]
    cpu, gpu = r["arms"]["cpu"], r["arms"]["gpu"]
    assert cpu["status"] == "ok" and cpu["placement"] == "dask" and cpu["device_used"] == "cpu"
    assert set(cpu["stages"]) == {*STAGES, *EXTRA_STAGES} and cpu["train_retried"] is False
    assert cpu["rows"] == single["arms"]["cpu"]["rows"] and cpu["features"] == single["arms"]["cpu"]["features"]
    assert gpu["status"] == "skipped" and gpu["reason"]
    assert all(math.isnan(v) for v in r["speedup"].values())
    assert cpu["cluster"]["workers"] == 2 and all(w["memory"]["peak_rss_mb"] > 50 for w in cpu["cluster"]["worker_details"])
    # The progress shows the workers' memory (the highest worker's, as the record), not this process's.
    import re

    shown = re.search(r"\[cpu\] features .*peak host ([\d.,]+) MB", proc.stderr)
    assert shown, proc.stderr
    assert float(shown.group(1).replace(",", "")) == pytest.approx(cpu["stage_peak_host_mb"]["features"], abs=15)
    assert cpu["executor"] == "dask" and cpu["client_peak_host_mb"] > 0
    assert abs(cpu["metrics"]["auc"] - single["arms"]["cpu"]["metrics"]["auc"]) <= DASK_PARITY_TOLERANCE


@pytest.mark.slow
def test_a_table_three_times_a_workers_memory_limit_finishes_with_the_single_process_auc(tmp_path):
    """Two workers of 620 MB each and a table of ~1.9 GB in memory: Dask spills the persisted
    partitions to disk (each worker would hold 1.5 x its limit), the run finishes, and its AUC is
    the single process's. (With Arrow's default mimalloc pool the workers kept the freed pages,
    stayed paused above 80% of their limit, and the run hung: accel starts workers with the
    system allocator.)"""
    limit = 620 * 10**6
    folder, nbytes = write_wide_table(1_500_000, tmp_path / "wide", width=400)
    assert nbytes >= 3 * limit, nbytes
    params = tmp_path / "params.yaml"
    params.write_text("xgboost:\n  n_estimators: 20\n  max_depth: 4\n")
    common = [str(params), "--data", str(folder), "--target", "y", "--probe", "off", "--json"]
    proc = run_accel(
        "run", *common, "--cluster", "local", "--workers", "2", "--worker-memory", "620MB", "--out", str(tmp_path / "d"),
        timeout=500,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    single_proc = run_accel("run", *common, "--device", "cpu", "--out", str(tmp_path / "s"), timeout=300)
    assert single_proc.returncode == 0, single_proc.stderr
    dask_arm, single = json.loads(proc.stdout)["arms"]["cpu"], json.loads(single_proc.stdout)["arms"]["cpu"]
    assert dask_arm["status"] == "ok" and dask_arm["rows"] == single["rows"]
    workers = dask_arm["cluster"]["worker_details"]
    assert [w["memory_limit_bytes"] for w in workers] == [limit, limit]
    assert {w["arrow_memory_pool"] for w in workers} == {"system"}
    # What the heartbeats saw stayed under the limit (Dask pauses a worker at 80% and restarts it at 95%).
    assert all(m["dask_reported_peak_host_mb"] * 2**20 < limit for m in dask_arm["workers_memory"].values())
    assert abs(dask_arm["metrics"]["auc"] - single["metrics"]["auc"]) <= DASK_PARITY_TOLERANCE


@pytest.mark.slow
def test_a_workflow_file_with_data_and_a_cluster_section_runs_on_the_cluster(tmp_path, tables):
    """``accel run w.yaml`` whose file names the table (``data:``, ``target:``) and the cluster
    (``cluster:``): the same run as the flags give, recorded with the file's settings."""
    import yaml

    out = tmp_path / "runs"
    workflow = {
        "data": str(tables["csv"]),
        "target": "basket",
        "probe": "off",
        "seed": 3,
        "xgboost": {"n_estimators": 30, "max_depth": 4},
        "cluster": {"kind": "local", "workers": 2, "threads_per_worker": 1},
        "out": str(out),
    }
    cfg = tmp_path / "w.yaml"
    cfg.write_text(yaml.safe_dump(workflow))
    proc = run_accel("run", str(cfg), "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    [path] = records_in(out)
    r = read_json(path)
    assert json.loads(proc.stdout)["run_id"] == r["run_id"]  # --json prints the record it wrote (strict JSON)
    assert r["mode"] == "dask" and r["workflow"] == "table" and r["task"] == "regression"
    assert r["config"]["cluster"]["kind"] == "local" and r["config"]["cluster"]["workers"] == 2
    assert r["config"]["data"] == str(tables["csv"]) and r["config"]["xgboost"]["n_estimators"] == 30
    cpu = r["arms"]["cpu"]
    assert cpu["status"] == "ok" and cpu["executor"] == "dask" and cpu["cluster"]["workers"] == 2
    assert cpu["metrics"]["rmse"] > 0 and r["parity"]["metric"] == "rmse"


@pytest.mark.slow
def test_hpo_on_a_users_table_runs_its_trials_on_the_cluster(tmp_path, tables):
    """``accel hpo --data --target --cluster local``: the table planned once, trials on the two
    worker processes, the tuned model and the baseline scored on the same hold-out."""
    proc = run_accel(
        "hpo", "--data", str(tables["parquet"]), "--target", "returned", "--trials", "4", "--top", "1",
        "--cluster", "local", "--workers", "2", "--study", "orders", "--out", str(tmp_path), "--json", timeout=400,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["kind"] == "hpo" and record["workflow"] == "table" and record["task"] == "binary"
    assert record["search"]["parallel"] == {"cluster": "local", "scheduler": None, "workers": 2}
    assert record["trials"]["total"] == 4 and record["trials"]["complete"] >= 1
    assert record["config"]["data"] == str(tables["parquet"])
    assert record["final"]["evaluated_on"] == record["baseline"]["evaluated_on"] == "hold-out"
    assert 0.5 < record["final"]["metric"] <= 1 and record["arms"]["cpu"]["status"] == "ok"


@pytest.mark.slow
def test_scale_on_a_users_table_runs_each_count_beside_the_single_process_baseline(tmp_path, tables):
    """``accel scale --data --target``: the table planned once, 1 and 2 CPU workers, the
    single-process run as reference, RMSE (a regression target) at every count."""
    proc = run_accel(
        "scale", "--data", str(tables["parquet"]), "--target", "basket", "--probe", "off", "--cluster", "local",
        "--workers", "1,2", "--out", str(tmp_path), timeout=400,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [path] = records_in(tmp_path)
    assert path.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    r = read_json(path)
    assert r["benchmark"] == "scaling" and r["workflow"] == "table" and r["metric_name"] == "rmse"
    assert r["config"]["data"] == str(tables["parquet"]) and r["data"]["source"]["kind"] == "parquet"
    by = {(row["kind"], row["workers"], row["stage"]): row for row in r["rows"]}
    assert {(k, n) for k, n, _ in by} == {("single-process", 1), ("cpu", 1), ("cpu", 2)}
    single, one, two = (by[(k, n, "total")] for k, n in (("single-process", 1), ("cpu", 1), ("cpu", 2)))
    assert all(row["status"] == "ok" and row["seconds"] > 0 for row in (single, one, two))
    assert two["efficiency"] == pytest.approx(two["speedup_vs_1"] / 2)
    # The same rows and features at every count; XGBoost's merged sketches move RMSE a little.
    assert max(abs(row["metric"] - single["metric"]) for row in (one, two)) <= 0.02 * single["metric"]
    assert "RMSE" in proc.stdout and "GPU arm skipped at every worker count" in proc.stdout

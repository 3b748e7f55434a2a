"""``accel run --data FILE --target COLUMN``: reading, schema, features, models, bad input."""

from __future__ import annotations

import io
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from accel.cli.main import main
from tests import bodies, tables
from tests.conftest import read_json, records_in, run_accel
from tests.cudf_contract import LIBCUDF_DEFAULT_NA

FAST = ["--device", "cpu"]


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("accel: error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def customers_csv(tmp_path):
    path = tmp_path / "customers.csv"
    tables.customers().to_csv(path, index=False)
    return path


def only_record(folder) -> dict:
    [path] = records_in(folder)
    return read_json(path)


# --------------------------------------------------------------------------- it works


def test_customers_end_to_end(tmp_path, customers_csv, capsys):
    code, out, err = run_cli(
        capsys, "run", "--data", str(customers_csv), "--target", "churned", "--out", str(tmp_path / "r"), *FAST
    )
    assert code == 0, err
    r = only_record(tmp_path / "r")
    assert r["workflow"] == "table" and r["task"] == "binary"
    schema = r["data"]["schema"]
    assert "inferred" in schema["task_reason"] and "text target" in schema["task_reason"]
    cols = schema["columns"]
    assert cols["customer_id"]["kind"] == "dropped" and "ID-like" in cols["customer_id"]["reason"]
    assert cols["notes"]["kind"] == "dropped"
    assert cols["plan"]["kind"] == "categorical" and cols["city"]["kind"] == "categorical"
    assert cols["autopay"]["kind"] == "boolean"
    assert cols["signup_date"]["kind"] == "datetime" and cols["signup_date"]["date_format"] == "%Y-%m-%d"
    assert cols["age"]["kind"] == "numeric" and cols["monthly_spend"]["kind"] == "numeric"
    assert cols["support_calls"]["kind"] == "categorical" and cols["support_calls"]["reason"] == "low-cardinality integer"
    enc = r["features"]["cpu"]["encodings"]
    assert enc["plan"] == "native categorical" and enc["city"].startswith("out-of-fold target encoding")
    assert r["arms"]["cpu"]["metrics"]["auc"] > 0.7
    # The schema is on screen, one line per kind.
    assert "target 'churned': binary" in err and "categorical" in err and "dropped" in err


@pytest.mark.parametrize(
    "model,needle",
    [("random_forest", "sklearn.ensemble"), ("logistic_regression", "sklearn.linear_model"), ("knn", "sklearn.neighbors")],
)
def test_classification_models(tmp_path, customers_csv, capsys, model, needle):
    code, _, err = run_cli(
        capsys, "run", "--data", str(customers_csv), "--target", "churned", "--model", model, "--out", str(tmp_path), *FAST
    )
    assert code == 0, err
    r = only_record(tmp_path)
    assert needle in r["arms"]["cpu"]["threads"]["estimator"]
    assert r["arms"]["cpu"]["metrics"]["auc"] > 0.6
    enc = r["features"]["cpu"]["encodings"]
    if model in ("logistic_regression", "knn"):
        assert enc["plan"] == "one-hot" and r["features"]["cpu"]["scaled"]
    else:
        assert enc["plan"] == "ordinal codes"
    assert "age" in r["features"]["cpu"]["imputed"]


@pytest.mark.parametrize("model", ["xgboost", "random_forest", "linear_regression", "lasso", "knn"])
def test_regression_models(tmp_path, capsys, model):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    path = tmp_path / "houses.parquet"
    tables.house_prices().to_parquet(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run_cli(
            capsys, "run", "--data", str(path), "--target", "price", "--model", model, "--out", str(tmp_path / "r"), *FAST
        )
    assert code == 0, err
    # The linear models' one-hot columns leave out a reference level: lasso converges.
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)], [str(w.message) for w in caught]
    r = only_record(tmp_path / "r")
    assert r["task"] == "regression" and "numeric target" in r["data"]["schema"]["task_reason"]
    metrics = r["arms"]["cpu"]["metrics"]
    assert set(metrics) == {"rmse", "mae", "r2"} and metrics["r2"] > 0.5
    assert r["parity"]["metric"] == "rmse"


def test_multiclass_and_parquet_folder(tmp_path, capsys):
    folder = tmp_path / "parts"
    folder.mkdir()
    df = tables.iris_like()
    for i in range(3):
        df.iloc[i * 150 : (i + 1) * 150].to_parquet(folder / f"part-{i}.parquet")
    code, _, err = run_cli(capsys, "run", "--data", str(folder), "--target", "species", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    r = only_record(tmp_path / "r")
    assert r["task"] == "multiclass" and r["data"]["source"]["files"] == 3
    assert r["data"]["schema"]["rows_used"] == len(df)
    m = r["arms"]["cpu"]["metrics"]
    assert m["auc"] > 0.9 and m["accuracy"] > 0.8 and m["log_loss"] > 0


def test_integer_target_with_few_values_is_classification(tmp_path, capsys):
    df = tables.iris_like()
    df["species"] = df["species"].map({"setosa": 0, "versicolor": 1, "virginica": 2})
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, _, err = run_cli(capsys, "run", "--data", str(path), "--target", "species", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    r = only_record(tmp_path / "r")
    assert r["task"] == "multiclass" and "integer target with 3 distinct values" in r["data"]["schema"]["task_reason"]


def test_zero_one_integer_target(tmp_path, capsys):
    df = tables.house_prices(400)
    df["expensive"] = (df["price"] > df["price"].median()).astype(int)
    path = tmp_path / "t.csv"
    df.drop(columns=["price"]).to_csv(path, index=False)
    code, _, err = run_cli(capsys, "run", "--data", str(path), "--target", "expensive", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    r = only_record(tmp_path / "r")
    assert r["task"] == "binary" and r["data"]["schema"]["classes"] == ["0.0", "1.0"]
    assert 0.4 < r["arms"]["cpu"]["metrics"]["positive_rate"] < 0.6 and r["arms"]["cpu"]["metrics"]["auc"] > 0.8


def test_task_override(tmp_path, capsys):
    df = tables.iris_like()
    df["species"] = df["species"].map({"setosa": 0, "versicolor": 1, "virginica": 2})
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, _, err = run_cli(
        capsys, "run", "--data", str(path), "--target", "species", "--task", "regression", "--out", str(tmp_path / "r"), *FAST
    )
    assert code == 0, err
    r = only_record(tmp_path / "r")
    assert r["task"] == "regression" and r["data"]["schema"]["task_reason"] == "given with --task"


def test_semicolon_file_is_detected(tmp_path, capsys):
    path = tmp_path / "semi.csv"
    tables.customers(300).to_csv(path, index=False, sep=";")
    code, _, err = run_cli(capsys, "run", "--data", str(path), "--target", "churned", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    r = only_record(tmp_path / "r")
    assert r["data"]["source"]["delimiter"] == ";"
    assert any("detected delimiter ';'" in n for n in r["data"]["schema"]["notices"])


def test_non_utf8_file_uses_a_fallback_encoding(tmp_path, capsys):
    df = tables.house_prices(200)
    df["neighbourhood"] = df["neighbourhood"].map(
        {"north": "Nord", "south": "Süd", "east": "Ost", "west": "West", "centre": "Zentrum"}
    )
    path = tmp_path / "latin.csv"
    df.to_csv(path, index=False, encoding="cp1252")
    code, _, err = run_cli(capsys, "run", "--data", str(path), "--target", "price", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    r = only_record(tmp_path / "r")
    assert r["data"]["source"]["encoding"] == "cp1252"
    assert any("decoded as cp1252" in n for n in r["data"]["schema"]["notices"])
    assert r["data"]["schema"]["columns"]["neighbourhood"]["categories"] == 5


def test_leak_identical_to_target_is_dropped(tmp_path, capsys):
    df = tables.customers(400)
    df["churn_flag"] = df["churned"]
    df["churn_score"] = np.where(df["churned"] == "yes", 0.9, 0.1) + np.random.default_rng(0).uniform(0, 0.05, len(df))
    path = tmp_path / "leaky.csv"
    df.to_csv(path, index=False)
    code, _, err = run_cli(capsys, "run", "--data", str(path), "--target", "churned", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    cols = only_record(tmp_path / "r")["data"]["schema"]["columns"]
    assert cols["churn_flag"]["kind"] == "dropped" and cols["churn_flag"]["reason"].startswith("leak")
    assert cols["churn_score"]["kind"] == "dropped" and "perfect predictor" in cols["churn_score"]["reason"]
    assert "notice: column 'churn_flag' dropped" in err


def test_leak_in_regression(tmp_path, capsys):
    df = tables.house_prices(300)
    df["price_k"] = df["price"] / 1000.0
    path = tmp_path / "h.csv"
    df.to_csv(path, index=False)
    code, _, err = run_cli(capsys, "run", "--data", str(path), "--target", "price", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    cols = only_record(tmp_path / "r")["data"]["schema"]["columns"]
    assert cols["price_k"]["kind"] == "dropped" and "leak" in cols["price_k"]["reason"]


def test_mixed_types_and_unparseable_dates_are_categorical_and_reported(tmp_path, capsys):
    df = tables.house_prices(300)
    rng = np.random.default_rng(3)
    df["lot"] = np.where(rng.random(len(df)) < 0.5, rng.integers(1, 9, len(df)).astype(str), "unknown")
    df["sold_on"] = np.where(rng.random(len(df)) < 0.7, "2021-02-03", "2021-13-45")
    path = tmp_path / "m.csv"
    df.to_csv(path, index=False)
    code, _, err = run_cli(capsys, "run", "--data", str(path), "--target", "price", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    cols = only_record(tmp_path / "r")["data"]["schema"]["columns"]
    assert cols["lot"]["kind"] == "categorical" and "mixed types" in cols["lot"]["reason"]
    assert cols["sold_on"]["kind"] == "categorical" and "unparseable dates" in cols["sold_on"]["reason"]


def test_drop_and_rows_and_test_size(tmp_path, customers_csv, capsys):
    code, _, err = run_cli(
        capsys,
        "run",
        "--data",
        str(customers_csv),
        "--target",
        "churned",
        "--drop",
        "city,plan",
        "--rows",
        "300",
        "--test-size",
        "0.3",
        "--out",
        str(tmp_path / "r"),
        *FAST,
    )
    assert code == 0, err
    schema = only_record(tmp_path / "r")["data"]["schema"]
    assert schema["columns"]["city"]["reason"] == "named in --drop"
    assert schema["rows_used"] == 300 and schema["rows_test"] == 90


def test_workflow_yaml_with_data(tmp_path, customers_csv, capsys):
    cfg = tmp_path / "mine.yaml"
    cfg.write_text(
        f"data: {customers_csv}\ntarget: churned\nmodel: random_forest\nrandom_forest:\n  n_estimators: 20\ndevice: cpu\nout: {tmp_path / 'r'}\n"
    )
    code, _, err = run_cli(capsys, "run", str(cfg))
    assert code == 0, err
    r = only_record(tmp_path / "r")
    assert r["model"]["name"] == "random_forest" and r["model"]["params"] == {"n_estimators": 20, "max_depth": 16}


@pytest.mark.slow
def test_five_thousand_columns(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n, k = 200, 5000
    data = rng.normal(size=(n, k)).astype(np.float32)
    df = pd.DataFrame(data, columns=[f"x{i}" for i in range(k)])
    df["y"] = (data[:, 0] + data[:, 1] > 0).astype(int)
    path = tmp_path / "wide.parquet"
    df.to_parquet(path)
    cfg = tmp_path / "wide.yaml"
    cfg.write_text(f"data: {path}\ntarget: y\nxgboost:\n  n_estimators: 20\n")
    code, _, err = run_cli(capsys, "run", str(cfg), "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    r = only_record(tmp_path / "r")
    assert len(r["arms"]["cpu"]["features"]) == k
    assert r["task"] == "binary" and r["arms"]["cpu"]["metrics"]["auc"] > 0.7  # a 0/1 integer target


# --------------------------------------------------------------------------- bad input


def bad(tmp_path, capsys, data, *extra, target="y"):
    code, _, err = run_cli(capsys, "run", "--data", str(data), "--target", target, "--out", str(tmp_path / "r"), *FAST, *extra)
    assert records_in(tmp_path / "r") == [], "no partial record"
    return code, err


def test_missing_file(tmp_path, capsys):
    assert_error(*bad(tmp_path, capsys, tmp_path / "nope.csv"), "does not exist")


def test_folder_without_data_files(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("hi")
    assert_error(*bad(tmp_path, capsys, tmp_path / "empty"), "holds no Parquet files")


def test_empty_file(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("")
    assert_error(*bad(tmp_path, capsys, tmp_path / "e.csv"), "is empty")


def test_header_only(tmp_path, capsys):
    (tmp_path / "h.csv").write_text("a,b,y\n")
    assert_error(*bad(tmp_path, capsys, tmp_path / "h.csv"), "no data rows")


def test_binary_file_named_csv(tmp_path, capsys):
    (tmp_path / "b.csv").write_bytes(bytes(range(256)) * 10)
    assert_error(*bad(tmp_path, capsys, tmp_path / "b.csv"), "looks binary")


def test_parquet_file_named_csv(tmp_path, capsys):
    tables.iris_like().to_parquet(tmp_path / "p.csv")
    assert_error(*bad(tmp_path, capsys, tmp_path / "p.csv"), "is a Parquet file")


def test_broken_parquet(tmp_path, capsys):
    (tmp_path / "x.parquet").write_bytes(b"PAR1 this is not really parquet")
    assert_error(*bad(tmp_path, capsys, tmp_path / "x.parquet"), "not a readable Parquet file")


def test_target_missing_suggests_names(tmp_path, customers_csv, capsys):
    assert_error(*bad(tmp_path, capsys, customers_csv, target="churn"), "--target 'churn' is not a column", "'churned'")


def test_target_all_missing(tmp_path, capsys):
    df = tables.house_prices(100)
    df["y"] = np.nan
    df.to_csv(tmp_path / "t.csv", index=False)
    assert_error(*bad(tmp_path, capsys, tmp_path / "t.csv"), "has no values")


def test_single_class_target(tmp_path, capsys):
    df = tables.house_prices(100)
    df["y"] = "same"
    df.to_csv(tmp_path / "t.csv", index=False)
    assert_error(*bad(tmp_path, capsys, tmp_path / "t.csv"), "single class")


def test_regression_target_not_numeric(tmp_path, capsys):
    df = tables.iris_like(100)
    df.to_csv(tmp_path / "t.csv", index=False)
    assert_error(*bad(tmp_path, capsys, tmp_path / "t.csv", "--task", "regression", target="species"), "needs a numeric target")


def test_too_few_rows(tmp_path, capsys):
    tables.house_prices(12).to_csv(tmp_path / "t.csv", index=False)
    assert_error(*bad(tmp_path, capsys, tmp_path / "t.csv", target="price"), "at least 20")


def test_no_usable_feature_left(tmp_path, capsys):
    df = pd.DataFrame({"id": np.arange(100), "const": 1, "y": np.arange(100) % 2})
    df.to_csv(tmp_path / "t.csv", index=False)
    assert_error(*bad(tmp_path, capsys, tmp_path / "t.csv"), "no usable feature left")


def test_duplicate_column_name(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("a,b,a,y\n" + "\n".join(f"{i},{i},{i},{i % 2}" for i in range(50)))
    assert_error(*bad(tmp_path, capsys, tmp_path / "d.csv"), "duplicate column name 'a'")


def test_unknown_drop_column(tmp_path, customers_csv, capsys):
    assert_error(*bad(tmp_path, capsys, customers_csv, "--drop", "nope", target="churned"), "--drop 'nope'")


def test_logistic_regression_cannot_regress(tmp_path, capsys):
    tables.house_prices(100).to_csv(tmp_path / "t.csv", index=False)
    assert_error(
        *bad(tmp_path, capsys, tmp_path / "t.csv", "--model", "logistic_regression", target="price"),
        "use --model linear_regression",
    )


def test_data_without_target(tmp_path, customers_csv, capsys):
    code, _, err = run_cli(capsys, "run", "--data", str(customers_csv), "--out", str(tmp_path))
    assert_error(code, err, "--data needs --target")


def test_bad_input_through_the_real_command(tmp_path):
    proc = run_accel("run", "--data", str(tmp_path / "missing.csv"), "--target", "y", "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("accel: error: --data:")


def _many_valued_table(path, n=6000, seed=3):
    rng = np.random.default_rng(seed)
    shop = rng.integers(0, 200, n)  # 200 values: a probe candidate (33-65,536)
    effect = rng.normal(0, 1, 200)
    x = rng.normal(size=n)
    y = (effect[shop] + x + rng.normal(0, 0.5, n) > 0).astype(int)
    pd.DataFrame({"shop": [f"s{v}" for v in shop], "x": x, "y": y}).to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_encoding_probe_is_cached_per_table_and_can_be_forced_or_turned_off(tmp_path):
    data = _many_valued_table(tmp_path / "shops.csv")
    env = {"ACCEL_CACHE_DIR": str(tmp_path / "cache")}

    def run(*flags):
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        proc = run_accel("run", "--data", str(data), "--target", "y", "--device", "cpu", "--out", str(out), *flags, env=env)
        assert proc.returncode == 0, proc.stderr
        return read_json(records_in(out)[0])["data"], proc.stdout + proc.stderr

    first, _ = run()
    probe = first["schema"]["encoding_probe"]
    assert probe["candidates"] == ["shop"] and probe["chosen"] in ("native", "target_encoding") and "cached" not in probe
    assert probe["rows"] >= 500 and first["encoding_probe_seconds"] > 0
    second, out = run()
    cached = second["schema"]["encoding_probe"]
    assert cached["cached"] and cached["chosen"] == probe["chosen"] and cached["metric"] == probe["metric"]
    assert "decided by an earlier run of this table" in out
    forced, _ = run("--probe", "force")
    # force measures again, on every planning training row (auto keeps within 10% of training's cost)
    assert "cached" not in forced["schema"]["encoding_probe"] and forced["schema"]["encoding_probe"]["rows"] >= probe["rows"]
    off, _ = run("--probe", "off")
    assert off["schema"]["encoding_probe"] == {"chosen": "target_encoding", "skipped": "--probe off", "candidates": ["shop"]}
    # A changed file is a new table: its decision is measured, not read back.
    _many_valued_table(data, n=6100)
    changed, _ = run()
    assert "cached" not in changed["schema"]["encoding_probe"]


@pytest.mark.slow  # a whole run in a process of its own
def test_encoding_probe_stays_within_its_share_of_training(tmp_path):
    """With few training rounds the probe's boosting would outweigh training's: it is not run."""
    data = _many_valued_table(tmp_path / "shops.csv", n=3000)
    wf = tmp_path / "wf.yaml"
    wf.write_text(f"data: {data}\ntarget: y\nxgboost:\n  n_estimators: 20\n")
    out = tmp_path / "out"
    proc = run_accel("run", str(wf), "--device", "cpu", "--out", str(out), env={"ACCEL_CACHE_DIR": str(tmp_path / "c")})
    assert proc.returncode == 0, proc.stderr
    probe = read_json(records_in(out)[0])["data"]["schema"]["encoding_probe"]
    assert probe["chosen"] == "target_encoding" and "would cost more than 10% of training" in probe["skipped"]


@pytest.mark.slow  # a whole run in a process of its own
def test_planning_and_the_encoding_probe_are_parts_of_the_wall_time(tmp_path):
    data = _many_valued_table(tmp_path / "shops.csv", n=4000)
    out = tmp_path / "out"
    proc = run_accel("run", "--data", str(data), "--target", "y", "--device", "cpu", "--out", str(out),
                     env={"ACCEL_CACHE_DIR": str(tmp_path / "c")})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    wall = read_json(records_in(out)[0])["wall"]
    planning, parts = wall["planning"], wall["parts"]
    assert set(planning) == {"total", "read_on_host", "schema_inference"}
    assert planning["read_on_host"] + planning["schema_inference"] <= planning["total"] + 1e-6
    assert parts["planning"] == planning["total"] and parts["encoding_probe"] > 0 and "encoding probe" in proc.stdout


# --------------------------------------------------------------------------- chunked reads, probe, external memory


def fake_cudf() -> tuple[types.ModuleType, list]:
    """A stand-in for cudf's ``read_csv`` with libcudf 26.10's byte-range rules (reader_impl.cu,
    csv_gpu.cu): compressed input refuses byte ranges; a range past offset 0 starts after the
    first line break at or after its offset; it keeps the rows that start at most ``size``
    bytes past the offset; and it reads at most ``size`` + padding bytes (csv.hpp's
    ``get_byte_range_padding``: 1 KB + 64 B per column named or typed), cutting a longer row."""
    module = types.ModuleType("fakecudf")
    calls: list = []

    def read_csv(path, sep=",", byte_range=None, header="infer", names=None, usecols=None, dtype=None, na_values=None):
        calls.append(byte_range)
        if byte_range is not None and str(path).endswith(".gz"):
            raise RuntimeError("Reading compressed data using `byte range` is unsupported")
        data = Path(path).read_bytes()
        offset, size = byte_range or (0, 0)
        start = 0 if offset == 0 else (data.find(b"\n", offset) + 1 or len(data))
        if size == 0:
            kept = data[start:]
        else:
            limit = min(offset + size + 1024 + 64 * max(len(dtype or {}), len(names or [])), len(data))
            pieces, pos = [], start
            while pos < limit and pos - offset <= size:
                nl = data.find(b"\n", pos, limit)
                end = limit if nl < 0 else nl + 1
                pieces.append(data[pos:end])
                pos = end
            kept = b"".join(pieces)
        if not kept.strip():
            return pd.DataFrame({c: pd.Series(dtype="float64") for c in usecols})
        nulls = [*LIBCUDF_DEFAULT_NA, *(na_values or [])]  # libcudf's list, and those given (keep_default_na)
        return pd.read_csv(
            io.BytesIO(kept), sep=sep, header=0 if header == 0 else None, names=names, usecols=usecols, dtype=dtype,
            keep_default_na=False, na_values=nulls,
        )  # fmt: skip

    class DataFrame:
        @staticmethod
        def from_arrow(table):
            return table.to_pandas()

    module.read_csv, module.DataFrame = read_csv, DataFrame
    return module, calls


def test_gzip_csv_chunks_equal_whole_read(tmp_path):
    from accel.backend import cpu_backend

    path = tmp_path / "t.csv.gz"
    bodies.hostile_table(5000).to_csv(path, index=False)
    bodies.check_csv_chunks_equal_whole_read(cpu_backend(), path, 700, bodies.CHUNK_DTYPES)


def test_arrow_csv_chunks_equal_pandas_chunks(tmp_path):
    # The reader cuDF uses for compressed CSV: the same chunks as pandas' chunked parser, row for
    # row (missing targets, integers with gaps, quoted delimiters), through accel's Arrow-to-frame path.
    from accel import _compat

    path = tmp_path / "t.csv.gz"
    table = bodies.hostile_table(5000)
    table.to_csv(path, index=False)
    columns = ["plan", "calls", "churned"]
    expected = list(pd.read_csv(path, usecols=columns, dtype=bodies.CHUNK_DTYPES, chunksize=700))
    got = [
        _compat.from_arrow(pd, t)
        for t in _compat.arrow_csv_chunks(path, list(table.columns), columns, 700, bodies.CHUNK_DTYPES, ",", "gzip")
    ]
    assert [len(f) for f in got] == [len(f) for f in expected] == [700] * 7 + [100]
    for a, b in zip(got, expected):
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
    assert got[0]["churned"].isna().all() and got[0]["calls"].isna().any()


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz", "no-final-line-break.csv"])
def test_cudf_chunk_reads_give_every_row_once(tmp_path, name):
    # cuDF's side of iter_csv_chunks against libcudf's byte-range rules: ranges that end at a
    # line break (no row cut at a range's end, none read twice), no byte range for gzip; a last
    # row with no line break after it is read once, in the last range.
    from accel import _compat

    path = tmp_path / name
    table = bodies.long_rows_table()
    table.to_csv(path, index=False)
    if name.startswith("no-final"):
        path.write_bytes(path.read_bytes().rstrip(b"\n"))
    fake, calls = fake_cudf()
    dtypes = bodies.CHUNK_DTYPES
    columns = list(table.columns)
    chunks = list(_compat.iter_csv_chunks(fake, path, columns, columns, 2000, dtypes, ","))
    got = pd.concat(chunks, ignore_index=True)
    whole = pd.read_csv(path, dtype=dtypes)
    pd.testing.assert_frame_equal(got[whole.columns], whole, check_dtype=False)
    if name.endswith(".gz"):
        assert calls == [] and [len(c) for c in chunks] == [2000] * 4
    else:
        assert len(calls) > 2 and all(r[1] > 0 for r in calls[:-1]) and calls[-1][1] == 0


def test_probe_sees_only_rows_with_target(tmp_path, monkeypatch):
    from accel.backend import cpu_backend

    path = tmp_path / "t.csv.gz"
    bodies.hostile_table(3000, missing_target_head=700).to_csv(path, index=False)
    bodies.check_probe_sees_only_rows_with_target(cpu_backend(), path, "churned", monkeypatch, probe_rows=500)


def test_external_memory_record_says_pages_are_on_disk(tmp_path, monkeypatch):
    from accel.backend import cpu_backend

    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "c.csv"
    tables.customers(8000, seed=4).to_csv(path, index=False)
    bodies.check_external_memory_record_says_where_pages_are(cpu_backend(), path, "churned", batch_rows=2100)


def test_long_rows_csv_chunks_equal_whole_read(tmp_path):
    from accel.backend import cpu_backend

    path = tmp_path / "t.csv"
    bodies.long_rows_table().to_csv(path, index=False)
    bodies.check_csv_chunks_equal_whole_read(cpu_backend(), path, 2000, bodies.CHUNK_DTYPES)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("s3://bucket/flights.parquet", "'s3://bucket/flights.parquet' is a URL: accel reads local files and folders"),
        ("https://alice:s3cret@host/a.csv", "'https://alice:***@host/a.csv' is a URL: accel reads local files and folders"),
        ("gs://b/part-*.parquet", "'gs://b/part-*.parquet' is a URL"),
        ("nope.csv", "does not exist"),
    ],
)
def test_data_that_is_no_local_path_is_refused_in_one_line_naming_why(tmp_path, capsys, given, said):
    code, out, err = run_cli(capsys, "run", "--data", given, "--target", "y", "--out", str(tmp_path / "r"))
    assert code == 2 and out == ""
    assert err.startswith("accel: error: --data: ") and said in err and err.count("\n") == 1
    assert "s3cret" not in err and not (tmp_path / "r").exists()


def test_a_column_of_numbers_with_words_beyond_float32_is_refused_as_a_numeric_one(tmp_path, capsys):
    """Its numbers are checked as a numeric column's are: one beyond float32's range is refused
    before anything runs; one beyond float64's (``1e400``) is missing, as an infinity is."""
    rng = np.random.default_rng(0)
    x = pd.Series(rng.normal(size=400).round(3).astype(str), dtype=object)
    x[[5, 9, 11]] = ["unknown", "1e39", "1e400"]
    path = tmp_path / "t.csv"
    pd.DataFrame({"x": x, "z": rng.normal(size=400), "y": rng.integers(0, 2, 400)}).to_csv(path, index=False)
    code, out, err = run_cli(capsys, "run", "--data", str(path), "--target", "y", "--out", str(tmp_path / "r"))
    assert code == 2 and out == "" and not (tmp_path / "r").exists()
    assert err == (
        "accel: error: column 'x' has 1 value(s) beyond float32's range (largest 1e+39); the feature matrices are "
        "float32: rescale the column or --drop it\n"
    )

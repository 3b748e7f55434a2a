"""Date text in a user's table: layouts detected and parsed, month/day order resolved from the
data (or reported ambiguous), ``--date-format``, the notice for date-like text that does not
parse; and ``--task classification`` refused for a continuous target. Mostly through the real
command line, on small generated tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accel.backend import cpu_backend
from accel.data.schema import make_plan
from tests import date_bodies, null_bodies
from tests.conftest import read_json, records_in
from tests.test_table_cpu import assert_error, run_cli

FAST = ["--device", "cpu"]


def only_record(folder) -> dict:
    [path] = records_in(folder)
    return read_json(path)


def monthly_table(series: int = 4, months: int = 120, seed: int = 0) -> pd.DataFrame:
    """fpp3 ``us_employment`` in miniature: Month written "1939 Jan", a series ID, a trend and a
    seasonal pattern per series."""
    rng = np.random.default_rng(seed)
    month = pd.period_range("1939-01", periods=months, freq="M")
    rows = []
    for k in range(series):
        level, slope, season = rng.uniform(100, 1000), rng.uniform(0.5, 3), rng.uniform(5, 40)
        t = np.arange(months)
        y = level + slope * t + season * np.sin(2 * np.pi * month.month.to_numpy() / 12) + rng.normal(0, 2, months)
        rows.append(pd.DataFrame({"Month": month.strftime("%Y %b"), "Series_ID": f"CEU{k:08d}", "Employed": y}))
    return pd.concat(rows, ignore_index=True)


# --------------------------------------------------------------------------- every layout


@pytest.mark.parametrize("name,how,expected,holds", date_bodies.LAYOUTS, ids=[x[0] for x in date_bodies.LAYOUTS])
def test_layout_is_detected_and_parsed(name, how, expected, holds):
    assert date_bodies.check_layout(cpu_backend(), how, expected, holds) == "pandas"


def test_fixed_width_rewrite_for_cudf_parses_like_pandas():
    """The text rewrite the GPU arm uses before cuDF's parser, checked here on pandas' string API."""
    date_bodies.check_fixed_width_rewrite(cpu_backend())


def test_day_of_year_dates_parse_to_their_day():
    assert null_bodies.check_day_of_year_dates(cpu_backend()) == "pandas"


def test_formats_cudf_cannot_parse_are_named():
    # libcudf reads %j but builds the date from year, month and day: January 1 for every value.
    from accel import _compat

    assert _compat.cudf_date_gap("%Y%j") == "cuDF's datetime parser reads %j but ignores it (the day of the year)"
    assert _compat.cudf_date_gap("%a %d %b %Y") == "cuDF's datetime parser has no %a"
    assert _compat.cudf_date_gap("%d/%m/%Y %H:%M") is None


def test_month_and_day_order_is_resolved_from_the_data_or_reported():
    day_first = pd.DataFrame({"d": ["15/03/2021", "01/04/2021", "02/05/2021"] * 10, "y": np.arange(30.0)})
    [col] = [c for c in make_plan(day_first, "y").columns if c.name == "d"]
    assert col.date_format == "%d/%m/%Y" and "day first: resolved from the data ('15/03/2021'" in col.date_note

    us = pd.DataFrame({"d": ["03/15/2021", "04/01/2021", "05/02/2021"] * 10, "y": np.arange(30.0)})
    [col] = [c for c in make_plan(us, "y").columns if c.name == "d"]
    assert col.date_format == "%m/%d/%Y" and "month first (US): resolved from the data" in col.date_note

    never = pd.DataFrame({"d": ["03/01/2021", "04/02/2021", "05/12/2021"] * 10, "y": np.arange(30.0)})
    plan = make_plan(never, "y")
    [col] = [c for c in plan.columns if c.name == "d"]
    assert col.date_format == "%m/%d/%Y" and "ambiguous" in col.date_note
    [notice] = [n for n in plan.notices if n.startswith("column 'd'")]
    assert "ambiguous" in notice and "--date-format COLUMN=%d/%m/%Y" in notice

    dotted = pd.DataFrame({"d": ["03.01.2021", "04.02.2021", "05.12.2021"] * 10, "y": np.arange(30.0)})
    [col] = [c for c in make_plan(dotted, "y").columns if c.name == "d"]
    assert col.date_format == "%d.%m.%Y" and "ambiguous" in col.date_note, "dotted dates default to day first"


def test_monthly_series_written_as_full_dates_get_year_and_month_only(tmp_path):
    months = pd.date_range("2000-01-01", periods=36, freq="MS")
    frame = pd.DataFrame({"iso": months.strftime("%Y-%m-%d"), "typed": months, "y": np.arange(36.0) % 12})
    plan = make_plan(frame, "y")
    cols = {c.name: c for c in plan.columns}
    assert cols["iso"].date_format == "%Y-%m-%d" and cols["iso"].date_parts == ["year", "month"]
    assert "monthly: every sampled value is day 1 of a month, across 36 months" in cols["iso"].date_note
    assert cols["typed"].reason == "typed" and cols["typed"].date_parts == ["year", "month"]
    six = pd.DataFrame({"iso": np.repeat(months[:6].strftime("%Y-%m-%d"), 4), "y": np.arange(24.0)})
    few = make_plan(six, "y")  # six months are not yet a monthly series
    assert few.columns[0].date_parts == ["year", "month", "day", "day_of_week", "day_of_year"]
    daily = pd.DataFrame({"d": pd.date_range("2000-01-01", periods=40).strftime("%Y-%m-%d"), "y": np.arange(40.0)})
    assert make_plan(daily, "y").columns[0].date_parts == ["year", "month", "day", "day_of_week", "day_of_year"]


def test_versions_and_plain_text_are_not_dates():
    frame = pd.DataFrame({"v": ["1.2.3", "1.10.2", "2.0.1"] * 10, "w": ["apple", "pear", "fig"] * 10, "y": np.arange(30.0)})
    plan = make_plan(frame, "y")
    assert {c.name: c.kind for c in plan.columns} == {"v": "categorical", "w": "categorical"}
    assert not [n for n in plan.notices if "dates" in n]


# --------------------------------------------------------------------------- through the command line


def test_monthly_table_end_to_end(tmp_path, capsys):
    path = tmp_path / "employment.csv"
    monthly_table().to_csv(path, index=False)
    code, _, err = run_cli(capsys, "run", "--data", str(path), "--target", "Employed", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    r = only_record(tmp_path / "r")
    month = r["data"]["schema"]["columns"]["Month"]
    assert month["kind"] == "datetime" and month["date_format"] == "%Y %b" and month["date_source"] == "detected"
    assert month["date_parts"] == ["year", "month"] and month["date_gpu"] == "cuDF (month names as numbers)"
    assert r["features"]["cpu"]["encodings"]["Month"] == "date parts" and r["features"]["cpu"]["dates"]["Month"] == "pandas"
    assert "notice: column 'Month': dates as %Y %b (detected; 100% of 480 sampled values parsed)" in err
    # A category per month (the old reading) cannot predict the held-out months; date parts can.
    assert r["arms"]["cpu"]["metrics"]["rmse"] < 0.25 * monthly_table()["Employed"].std()


def test_us_dates_with_minutes_are_dates_not_an_id(tmp_path, capsys):
    rng = np.random.default_rng(0)
    when = pd.Timestamp("2021-01-01") + pd.to_timedelta(np.sort(rng.choice(500_000, 300, replace=False)), unit="min")
    frame = pd.DataFrame({"when": when.strftime("%m/%d/%Y %H:%M"), "y": when.hour + rng.normal(0, 0.1, 300)})
    assert frame["when"].nunique() == len(frame), "every value distinct: ID-like before"
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    code, _, err = run_cli(capsys, "run", "--data", str(path), "--target", "y", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    col = only_record(tmp_path / "r")["data"]["schema"]["columns"]["when"]
    assert col["kind"] == "datetime" and col["date_format"] == "%m/%d/%Y %H:%M"
    assert col["date_parts"] == ["year", "month", "day", "day_of_week", "day_of_year", "hour", "minute"]


def odd_dates_table(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    when = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D")
    return pd.DataFrame({"stamp": when.strftime("%Y_%m_%d"), "day": when.strftime("%Y%m%d").astype(int), "y": when.month * 2.0})


def test_date_format_override_on_the_command_line_and_in_yaml(tmp_path, capsys):
    path = tmp_path / "odd.csv"
    odd_dates_table().to_csv(path, index=False)
    code, _, err = run_cli(
        capsys, "run", "--data", str(path), "--target", "y", "--date-format", "stamp=%Y_%m_%d",
        "--date-format", "day=%Y%m%d", "--out", str(tmp_path / "r"), *FAST,
    )  # fmt: skip
    assert code == 0, err
    cols = only_record(tmp_path / "r")["data"]["schema"]["columns"]
    assert cols["stamp"]["kind"] == "datetime" and cols["stamp"]["date_source"] == "--date-format"
    assert cols["day"]["kind"] == "datetime" and cols["day"]["date_format"] == "%Y%m%d", "numbers parsed as dates too"
    assert "notice: column 'stamp': dates as %Y_%m_%d (--date-format; 100% of 200 sampled values parsed)" in err

    cfg = tmp_path / "odd.yaml"
    cfg.write_text(f"data: {path}\ntarget: y\ndate_format:\n  stamp: '%Y_%m_%d'\ndevice: cpu\nout: {tmp_path / 'y'}\n")
    code, _, err = run_cli(capsys, "run", str(cfg))
    assert code == 0, err
    assert only_record(tmp_path / "y")["data"]["schema"]["columns"]["stamp"]["date_source"] == "--date-format"


def test_date_format_mistakes_are_one_line_errors(tmp_path, capsys):
    path = tmp_path / "odd.csv"
    odd_dates_table().to_csv(path, index=False)
    base = ["run", "--data", str(path), "--target", "y", "--out", str(tmp_path / "r"), *FAST]
    code, _, err = run_cli(capsys, *base, "--date-format", "stmp=%Y_%m_%d")
    assert_error(code, err, "--date-format stmp=%Y_%m_%d", "not a column", "'stamp'")
    code, _, err = run_cli(capsys, *base, "--date-format", "stamp=%d/%m/%Y")
    assert_error(code, err, "--date-format stamp=%d/%m/%Y parses none of the 200 sampled values", "'2")
    code, _, err = run_cli(capsys, *base, "--date-format", "stamp")
    assert_error(code, err, "COLUMN=FORMAT")
    code, _, err = run_cli(capsys, *base, "--date-format", "y=%Y")
    assert_error(code, err, "names the target")
    assert records_in(tmp_path / "r") == [], "nothing written"


@pytest.mark.parametrize(
    "given,rows,needles",
    [
        ("a=%Y", 300, ["--date-format a=%Y: column 'a' holds numbers that are not whole", "only for a column of dates"]),
        ("blank=%Y", 300, ["--date-format blank=%Y: column 'blank' has no values to parse", "only for a column of dates"]),
        ("one=%Y", 300, ["--date-format one=%Y parses none of the 300 sampled values of 'one'", "give the format"]),
        ("b=%Y", 300, ["--date-format b=%Y parses none of the 300 sampled values of 'b'", "give the format"]),
        ("c=%Y", 300, ["--date-format c=%Y: 'c' is not a column of the table; columns: a, b, blank, one, y"]),
        ("a=%Y", 0, ["the table has a header but no data rows"]),
    ],
    ids=["fractions", "all-missing", "one-value", "integers", "not-a-column", "no-rows"],
)
def test_date_format_on_a_column_without_dates_is_a_one_line_error(tmp_path, capsys, given, rows, needles):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=rows), "b": rng.integers(0, 9, rows), "blank": np.nan, "one": "x"})
    frame["y"] = rng.normal(size=rows)
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    base = ["run", "--data", str(path), "--target", "y", "--out", str(tmp_path / "r"), *FAST]
    code, _, err = run_cli(capsys, *base, "--date-format", given)
    assert_error(code, err, *needles)
    assert records_in(tmp_path / "r") == []


def test_date_like_text_that_does_not_parse_gets_a_notice(tmp_path, capsys):
    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame(
        {
            "sold_on": np.where(rng.random(n) < 0.7, "2021-02-03", "2021-13-45"),
            "mixed": np.where(rng.random(n) < 0.5, "03/15/2021", "2021-03-15"),
            "x": rng.normal(0, 1, n),
        }
    )
    frame["y"] = frame["x"] * 3
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    code, _, err = run_cli(capsys, "run", "--data", str(path), "--target", "y", "--out", str(tmp_path / "r"), *FAST)
    assert code == 0, err
    r = only_record(tmp_path / "r")
    cols = r["data"]["schema"]["columns"]
    assert cols["sold_on"]["kind"] == "categorical" and "unparseable dates" in cols["sold_on"]["reason"]
    for name in ("sold_on", "mixed"):
        [notice] = [n for n in r["data"]["schema"]["notices"] if n.startswith(f"column {name!r} looks like dates")]
        assert f"--date-format {name}=FORMAT" in notice
        assert f"notice: {notice}" in err


# --------------------------------------------------------------------------- classification of a continuous target


def test_classification_of_a_continuous_target_is_refused_before_training(tmp_path, capsys):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(0, 1, 3000)})
    frame["y"] = frame["x"] * 10 + rng.normal(0, 1, 3000)
    path = tmp_path / "c.csv"
    frame.to_csv(path, index=False)
    code, _, err = run_cli(
        capsys, "run", "--data", str(path), "--target", "y", "--task", "classification", "--out", str(tmp_path / "r"), *FAST
    )
    assert_error(code, err, "--task classification", "3,000 distinct non-integer values", "--task regression")
    assert records_in(tmp_path / "r") == []


def test_classification_of_many_integers_is_refused_but_few_classes_pass():
    frame = pd.DataFrame({"x": np.random.default_rng(0).normal(0, 1, 1000), "y": np.arange(1000) % 500})
    from accel.errors import AccelError

    with pytest.raises(AccelError, match="500 distinct integer values"):
        make_plan(frame, "y", task="classification")
    frame["y"] = np.arange(1000) % 7
    assert make_plan(frame, "y", task="classification").task == "multiclass"

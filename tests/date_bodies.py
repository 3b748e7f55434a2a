"""Date text on either arm: the bodies of test_dates_cpu.py and test_dates_gpu.py.

Each layout is planned once on the host (pandas, as ``accel run`` plans), then parsed on the
arm's library with the plan's format, and compared with the dates the text was written from.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from accel.backend import Backend


def _unpadded_us(ts: pd.Series) -> pd.Series:
    return ts.dt.month.astype(str) + "/" + ts.dt.day.astype(str) + "/" + ts.dt.year.astype(str)


def _unpadded_us_minutes(ts: pd.Series) -> pd.Series:
    return _unpadded_us(ts) + " " + ts.dt.hour.astype(str) + ":" + ts.dt.strftime("%M")


#: (name, how the text is written: a strftime format or a function, the format accel must detect,
#: what the text holds: "month" | "day" | "minute" | "second")
LAYOUTS = [
    ("ISO date", "%Y-%m-%d", "%Y-%m-%d", "day"),
    ("year and month name (1939 Jan)", "%Y %b", "%Y %b", "month"),
    ("month name and year (Jan 1939)", "%b %Y", "%b %Y", "month"),
    ("full month name (January 2021)", "%B %Y", "%B %Y", "month"),
    ("day month name year (15 Mar 2021)", "%d %b %Y", "%d %b %Y", "day"),
    ("month name day, year (Mar 15, 2021)", "%b %d, %Y", "%b %d, %Y", "day"),
    ("US (03/15/2021)", "%m/%d/%Y", "%m/%d/%Y", "day"),
    ("US without zeros (3/5/2021)", _unpadded_us, "%m/%d/%Y", "day"),
    ("day first (15/03/2021)", "%d/%m/%Y", "%d/%m/%Y", "day"),
    ("dotted (15.03.2021)", "%d.%m.%Y", "%d.%m.%Y", "day"),
    ("US, two-digit year (03/15/21)", "%m/%d/%y", "%m/%d/%y", "day"),
    ("day first, dashes (15-03-2021)", "%d-%m-%Y", "%d-%m-%Y", "day"),
    ("US with minutes (03/15/2021 14:30)", "%m/%d/%Y %H:%M", "%m/%d/%Y %H:%M", "minute"),
    ("US without zeros, with minutes (3/5/2021 4:30)", _unpadded_us_minutes, "%m/%d/%Y %H:%M", "minute"),
    ("US with seconds (03/15/2021 14:30:05)", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S", "second"),
    ("day first with minutes (15/03/2021 14:30)", "%d/%m/%Y %H:%M", "%d/%m/%Y %H:%M", "minute"),
    ("ISO with T (2021-03-15T14:30:05)", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S", "second"),
    ("12-hour clock (03/15/2021 02:30 PM)", "%m/%d/%Y %I:%M %p", "%m/%d/%Y %I:%M %p", "minute"),
]


def moments(n: int, holds: str, seed: int = 0) -> pd.Series:
    """``n`` random moments in 2019-2022, truncated to what a layout holds."""
    rng = np.random.default_rng(seed)
    ts = pd.Series(pd.Timestamp("2019-01-01") + pd.to_timedelta(rng.integers(0, 4 * 365 * 86400, n), unit="s"))
    if holds == "month":
        return ts.dt.to_period("M").dt.to_timestamp()
    return ts.dt.floor({"day": "D", "minute": "min", "second": "s"}[holds])


def write(ts: pd.Series, how) -> pd.Series:
    return how(ts) if callable(how) else ts.dt.strftime(how)


def layout_frame(how, holds: str, n: int = 300, junk: int = 3, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    """A small table with the date text, a few missing and unparseable values, and a target that
    follows the month; and the true moments (NaT where the text is missing or junk)."""
    ts = moments(n, holds, seed)
    text = write(ts, how).astype(object)
    truth = ts.copy()
    bad = np.arange(junk)
    text.iloc[bad[: junk // 2 + 1]] = None
    text.iloc[bad[junk // 2 + 1 :]] = "n/a"
    truth.iloc[bad] = pd.NaT
    rng = np.random.default_rng(seed + 1)
    y = 10 * ts.dt.month + rng.normal(0, 1, n)
    return pd.DataFrame({"when": text, "noise": rng.normal(0, 1, n), "y": y}), truth


def check_layout(backend: Backend, how, expected: str, holds: str) -> str:
    """Planned with ``expected`` as its format, parsed on ``backend`` to the true moments; returns
    where the arm parsed it."""
    from accel.data.autofeatures import cast_datetime
    from accel.data.schema import make_plan

    frame, truth = layout_frame(how, holds)
    plan = make_plan(frame, "y", seed=1)
    [col] = [c for c in plan.columns if c.name == "when"]
    assert col.kind == "datetime", (col.kind, col.reason, plan.notices)
    assert col.date_format == expected, (col.date_format, col.date_note)
    assert any(n.startswith("column 'when': dates as " + expected) for n in plan.notices), plan.notices
    text = frame["when"]
    s = text if backend.xdf.__name__ == "pandas" else backend.xdf.from_pandas(text.astype("str").where(text.notna()))
    parsed, where = cast_datetime(backend.xdf, s, col)
    got = pd.Series(parsed.to_pandas() if hasattr(parsed, "to_pandas") else parsed)
    pd.testing.assert_series_equal(
        got.astype("datetime64[ns]").reset_index(drop=True),
        truth.astype("datetime64[ns]").reset_index(drop=True),
        check_names=False,
    )
    return where


#: Text and formats for the fixed-width rewrite cuDF's parser needs (values of several lengths,
#: month names in any case, 12-hour clocks, fractions of a second, junk).
REWRITES = [
    (["3/5/2021", "12/15/2021", None, "13/45/2021", "x", "03/05/2021"], "%m/%d/%Y"),
    (["1939 Jan", "2019  Sep", "2000 DEC", "2000 December", None], "%Y %b"),
    (["January 2021", "may 1999", "Sep 2001"], "%B %Y"),
    (["Mar 5, 2021", "Dec 25, 1999", "mar 15, 2021"], "%b %d, %Y"),
    (["5 Mar 2021", "25 Dec 1999"], "%d %b %Y"),
    (["3/5/2021 2:30 pm", "12/15/2021 11:05 AM", "12/15/2021 13:05 AM"], "%m/%d/%Y %I:%M %p"),
    (["2021-03-15 14:30:00.5", "2021-03-15 04:30:00.123456"], "%Y-%m-%d %H:%M:%S.%f"),
    (["15.3.2021", "1.12.2021", "31.2.2021"], "%d.%m.%Y"),
]


def check_fixed_width_rewrite(backend: Backend) -> None:
    """cuDF's parse path (fixed-width text, month numbers) gives what pandas gives from the text."""
    from accel import _compat

    for values, fmt in REWRITES:
        text = pd.Series(values, dtype=object)
        want = pd.to_datetime(text, format=fmt, errors="coerce").astype("datetime64[ns]")
        s = text if backend.xdf.__name__ == "pandas" else backend.xdf.Series(values)
        rewritten, new_fmt = _compat.cudf_date_text(s, fmt)
        rewritten = pd.Series(_compat.to_pandas(rewritten)).astype(object)
        lengths = {len(v) for v in rewritten.dropna()}
        assert len(lengths) <= 1, (fmt, rewritten.tolist())
        assert "%b" not in new_fmt and "%B" not in new_fmt
        got = pd.to_datetime(rewritten.where(rewritten.notna(), None), format=new_fmt, errors="coerce").astype("datetime64[ns]")
        pd.testing.assert_series_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_names=False)
        parsed, where = _compat.parse_datetime_where(backend.xdf, s, fmt)
        parsed = pd.Series(_compat.to_pandas(parsed)).astype("datetime64[ns]")
        pd.testing.assert_series_equal(parsed.reset_index(drop=True), want.reset_index(drop=True), check_names=False)
        if backend.xdf.__name__ != "pandas":
            assert where.startswith("cudf"), where

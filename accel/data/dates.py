"""Dates written as text: which layout a column uses, decided once on the host from a sample.

A text column is a date candidate when at least half of its sampled values *look* like dates
(:func:`looks_like_date`: ISO, numbers with ``/`` ``-`` ``.`` separators, month names, with or
without a time). Each candidate layout (an explicit strptime format, :data:`DATE_LAYOUTS` ×
:data:`TIME_LAYOUTS`) is then tried on the sample with pandas, and the one that parses the most
non-null values wins if it parses at least :data:`MIN_PARSED` of them. The whole column is later
parsed with that exact format on both arms (pandas on the CPU arm, cuDF's parser on the GPU arm
where it can read the format: see :func:`accel._compat.parse_datetime_where`).

Times with a UTC offset (``2021-03-15T10:00:00+01:00``, ``...-05:00``, ``...Z``, mixed in one
column) are read as UTC, each value by its own offset (:func:`accel._compat.pandas_datetime`),
on both arms.

Month-first and day-first numeric dates (``03/04/2021``) are told apart from the data: a first
field above 12 means day-first, a second field above 12 means month-first. A column where
neither ever happens is ambiguous; it is read month-first (day-first for dotted dates, the
European convention), and the notice says so and names the ``--date-format`` that reads it the
other way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from accel._compat import pandas_datetime

#: A layout must parse at least this share of the sampled non-null values.
MIN_PARSED = 0.95
#: A text column is a date candidate when at least this share of its sample looks like dates.
DATE_LIKE_SHARE = 0.5
#: Values sampled (the first non-null ones) to choose the layout.
SAMPLE = 2000
#: Values tried first with every candidate, to skip the hopeless ones cheaply.
PROBE = 20

#: Date layouts tried, in order of preference when two parse equally well.
DATE_LAYOUTS = (
    # ISO-like, year first
    "%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d", "%Y%m%d", "%Y-%m",
    # numbers, month-first (US) and day-first; the data resolves which (see module docstring)
    "%m/%d/%Y", "%d/%m/%Y", "%m-%d-%Y", "%d-%m-%Y", "%d.%m.%Y", "%m.%d.%Y",
    "%m/%d/%y", "%d/%m/%y", "%m-%d-%y", "%d-%m-%y",
    # month names (English, as pandas and Python's strptime read them)
    "%Y %b", "%Y %B", "%b %Y", "%B %Y", "%Y-%b", "%b-%Y", "%b-%y",
    "%d %b %Y", "%d %B %Y", "%d-%b-%Y", "%d-%b-%y", "%b %d, %Y", "%B %d, %Y", "%b %d %Y", "%B %d %Y",
)  # fmt: skip
#: Time layouts tried after each date layout that has a day.
TIME_LAYOUTS = (
    "", " %H:%M", " %H:%M:%S", "T%H:%M", "T%H:%M:%S", " %H:%M:%S.%f", "T%H:%M:%S.%f", "T%H:%M:%SZ",
    " %I:%M %p", " %I:%M:%S %p",
    # with a UTC offset (+01:00, -0500, Z): read as UTC, each value by its own offset
    "T%H:%M%z", "T%H:%M:%S%z", "T%H:%M:%S.%f%z", " %H:%M%z", " %H:%M:%S%z", " %H:%M:%S.%f%z",
)  # fmt: skip

#: Date parts per layout: the features a datetime column becomes (see :func:`date_parts`).
ALL_PARTS = ("year", "month", "day", "day_of_week", "day_of_year", "hour")

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_TIME = r"(?:(?:[ T]|\s+)\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s*[ap]m)?(?:z|\s?[+-]\d{2}:?\d{2})?)?"
_DATE_LIKE = re.compile(
    r"^\s*(?:"
    r"\d{4}[-/.]?\d{1,2}[-/.]?\d{1,2}"  # 2021-03-15, 2021/3/15, 20210315
    r"|\d{4}-\d{2}"  # 2021-03
    r"|\d{1,2}[-/]\d{1,2}[-/](?:\d{4}|\d{2})"  # 03/15/2021, 15-03-21
    r"|\d{1,2}\.\d{1,2}\.\d{4}"  # 15.03.2021 (dotted with a four-digit year only: 1.2.21 is a version)
    rf"|\d{{4}}[ -]{_MONTH}"  # 1939 Jan
    rf"|{_MONTH}[ -]\d{{2,4}}"  # Jan 1939, Jan-21
    rf"|\d{{1,2}}[ -]{_MONTH}[ -]\d{{2,4}}"  # 15 Mar 2021, 15-Mar-21
    rf"|{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}"  # Mar 15, 2021
    rf"){_TIME}\s*$",
    re.IGNORECASE,
)
_PAIRS = {"%m": "%d", "%d": "%m"}
#: Every layout tried, in order of preference: each date layout, with each time layout after those that have a day.
CANDIDATES = tuple(date + t for date in DATE_LAYOUTS for t in (TIME_LAYOUTS if "%d" in date else ("",)))


@dataclass
class DateLayout:
    """The layout chosen for a column: its strptime format, what share of the sample it parsed,
    and a note (how month-first/day-first was resolved, or that it could not be)."""

    format: str
    parsed: float
    sampled: int
    note: str = ""


def _sample(values: pd.Series) -> pd.Series:
    return values.dropna().astype(str).head(SAMPLE).reset_index(drop=True)


def date_like_share(values: pd.Series) -> float:
    """Share of the sampled non-null values that look like dates (any layout, any time)."""
    sample = _sample(values)
    return 0.0 if sample.empty else float(sample.str.match(_DATE_LIKE).mean())


def parsed_share(sample: pd.Series, fmt: str) -> float:
    """Share of ``sample`` (non-null text) that ``fmt`` parses exactly; 0 for a format pandas refuses."""
    if sample.empty:
        return 0.0
    try:
        parsed = pandas_datetime(sample, fmt)
    except (ValueError, TypeError):
        return 0.0
    return float(parsed.notna().mean())


def detect_layout(values: pd.Series, minimum: float = MIN_PARSED) -> DateLayout | None:
    """The layout that parses the most sampled values (at least ``minimum`` of them), or None."""
    sample = _sample(values)  # none: every share is 0 and there is no layout
    probe = sample.drop_duplicates().head(PROBE)
    scores = {fmt: parsed_share(sample, fmt) for fmt in CANDIDATES if parsed_share(probe, fmt) >= DATE_LIKE_SHARE}
    best = max(scores.values(), default=0.0)
    if best < minimum or best == 0:
        return None
    fmt = next(f for f in scores if scores[f] == best)  # the first of the best, in preference order
    layout = DateLayout(fmt, best, len(sample))
    other = re.sub(r"%[md]", lambda m: _PAIRS[m.group(0)], fmt)  # month and day exchanged: %m/%d/%Y, %d/%m/%Y
    if other == fmt or other not in CANDIDATES:  # not a numeric date with both
        return layout
    other_share = scores.get(other, parsed_share(sample, other))
    month_first = fmt.index("%m") < fmt.index("%d")
    ambiguous = other_share >= best
    if ambiguous and "%m.%d" in fmt:
        # Never resolved by the data: month-first, but day-first for dotted dates.
        fmt, other = other, fmt
        layout.format, month_first = fmt, False
    order = "month first (US)" if month_first else "day first"
    if ambiguous:
        give = f"give --date-format COLUMN={other} if that is wrong"
        layout.note = f"ambiguous: no sampled value has a day above 12, read {order}; {give}"
    else:
        # A value only fmt parses (there is one: it parsed more), and the field above 12 it has.
        example = sample[pandas_datetime(sample, fmt).notna() & pandas_datetime(sample, other).isna()].iloc[0]
        layout.note = f"{order}: resolved from the data ({example!r} has a {'second' if month_first else 'first'} field above 12)"
    return layout


#: A column whose sampled values span at least this many months, all on one day of the month at
#: midnight, is a monthly (or quarterly) series: its day-level parts are left out.
MONTHLY_MIN_MONTHS = 12
_DAY_PARTS = ("day", "day_of_week", "day_of_year", "hour", "minute")
#: The parts a format gives besides the year: (its codes, any of which gives them; the parts).
_PARTS_OF_CODES = (
    (("%m", "%b", "%B"), ("month",)),
    (("%d", "%j"), ("day", "day_of_week", "day_of_year")),
    (("%H", "%I"), ("hour",)),
    (("%M",), ("minute",)),
)


def date_parts(fmt: str | None, values: pd.Series | None = None) -> tuple[list[str], str]:
    """The parts a datetime column becomes, and why parts were left out ("" when none were).

    From what its format holds: a monthly layout (``%Y %b``) has no day, weekday or hour to give,
    so it becomes year and month only. Typed datetime columns (no format) start from every part.
    Then from the sampled ``values`` (parsed): dates that span many months but all fall on the
    same day of the month at midnight (``2019-09-01``, ``2019-10-01``, ...) are a monthly series
    written as dates, so day, weekday, day of year and time are left out as well: the weekday of
    the first of each month is noise to a model, and the day of the year repeats the month.
    """
    if fmt is None:
        parts = list(ALL_PARTS)
    else:
        parts = ["year", *(p for codes, named in _PARTS_OF_CODES if any(c in fmt for c in codes) for p in named)]
    if values is None or "day" not in parts:
        return parts, ""
    v = pd.Series(values).dropna()  # none: no months, so not monthly
    midnight = bool((v.dt.hour == 0).all() and (v.dt.minute == 0).all() and (v.dt.second == 0).all())
    months = int((v.dt.year * 12 + v.dt.month).nunique())
    if midnight and v.dt.day.nunique() == 1 and months >= MONTHLY_MIN_MONTHS:
        day = int(v.dt.day.iloc[0])
        why = f"monthly: every sampled value is day {day} of a month, across {months:,} months, so no day, weekday or time parts"
        return [p for p in parts if p not in _DAY_PARTS], why
    return parts, ""


def parse_override(text: str) -> tuple[str, str]:
    """``COL=FMT`` from ``--date-format`` as ``(column, format)``; ValueError when malformed."""
    column, sep, fmt = text.partition("=")
    if not sep or not column.strip() or not fmt:
        raise ValueError(f"--date-format takes COLUMN=FORMAT (e.g. Month=%Y %b), got {text!r}")
    return column.strip(), fmt

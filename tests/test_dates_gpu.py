"""The date-parsing bodies of test_dates_cpu.py on the GPU arm (cuDF's parser, after the
fixed-width rewrite where the text needs it), compared with the true dates and with pandas.

Skipped, with the probe's reason, where no GPU is usable.
"""

from __future__ import annotations

import pytest

from accel.backend import gpu_backend
from tests import date_bodies, null_bodies
from tests.conftest import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.fixture(scope="module")
def backend():
    return gpu_backend()


@pytest.mark.parametrize("name,how,expected,holds", date_bodies.LAYOUTS, ids=[x[0] for x in date_bodies.LAYOUTS])
def test_layout_is_parsed_by_cudf(backend, name, how, expected, holds):
    where = date_bodies.check_layout(backend, how, expected, holds)
    assert where.startswith("cudf"), f"every detected layout is parsed on the GPU, not the host: {where}"


def test_fixed_width_rewrite_on_cudf_parses_like_pandas(backend):
    date_bodies.check_fixed_width_rewrite(backend)


def test_a_format_cudf_cannot_read_is_parsed_on_the_host_and_said_so(backend):
    import pandas as pd

    from accel import _compat

    s = backend.xdf.Series(["Mon 15 Mar 2021", "Tue 16 Mar 2021", None])
    parsed, where = _compat.parse_datetime_where(backend.xdf, s, "%a %d %b %Y")
    assert where == "host (pandas): cuDF's datetime parser has no %a"
    got = parsed.to_pandas().astype("datetime64[ns]").tolist()
    assert got[:2] == [pd.Timestamp("2021-03-15"), pd.Timestamp("2021-03-16")] and pd.isna(got[2])


def test_day_of_year_dates_are_parsed_on_the_host(backend):
    # cuDF's parser would return January 1 for every %j value, without an error.
    assert null_bodies.check_day_of_year_dates(backend).startswith("host (pandas)")

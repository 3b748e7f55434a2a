"""Fails only when pandas is cudf.pandas's proxy: the kind of one-arm failure accel compare reports."""

import sys

import pandas as pd

print(pd.Series([1, 2, 3]).sum())
if "cudf" in sys.modules:
    raise RuntimeError("this script refuses cudf.pandas")

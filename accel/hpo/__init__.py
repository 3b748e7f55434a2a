"""``accel hpo`` and ``accel experiments``: the search and the record of what was tried.

- :mod:`~accel.hpo.space` — the search spaces: the registry's ranges, a workflow file's
  overrides, Optuna's suggestions.
- :mod:`~accel.hpo.study` — storage and study: secrets kept out, resume (interrupted trials
  marked), a changed search refused, one process per study.
- :mod:`~accel.hpo.search` — the search: baseline, subset-first trials, top-k on all rows, the
  retrained best, in process or on Dask workers.
- :mod:`~accel.hpo.experiments` — every run record and study side by side, with Pareto fronts.

May import the flat core (the runners included), :mod:`accel.data` and :mod:`accel.workflows`; no
other slice (``scaleout``, ``bench``, ``report``) and not ``cli``. A search on Dask workers is
given its cluster by the caller (``SearchRequest.connect``: :func:`accel.scaleout.cluster.cluster_client`);
the experiments table reads ``accel compare`` records through :mod:`accel.record`.
"""

"""What the tests and the benchmarks both use, in one home that neither of them is.

The tests (``tests/``) and the benchmark scripts (``benchmarks/``) never import each other: a
thing both need lives here, installed with the project (``pip install -e .``) and importable
from the repository's root without it (the GPU check puts the root on ``PYTHONPATH``).

- :mod:`accel_fixtures.hostile_inputs`: the table of hostile inputs, run by
  ``tests/test_hostile.py`` (its GPU driver ``tests/test_hostile_gpu.py``) and by
  ``benchmarks/hostile_cases.py``, which judges each case the same way.
- :mod:`accel_fixtures.result_shapes`: the shapes of the results the benchmark scripts write, as
  the docs' results pages read them.
- :mod:`accel_fixtures.servers`: servers on loopback that are not a Dask scheduler.
- :mod:`accel_fixtures.tables`: generated tables a benchmark measures and a test checks.

Nothing in ``accel`` imports this package.
"""

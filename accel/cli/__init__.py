"""The command line: ``accel`` and its subcommands, argparse only; the work is done elsewhere.

- :mod:`~accel.cli.main` — the parser, ``run``, ``info``, ``report``, ``compare``, and
  :func:`~accel.cli.main.main` (the console script), which turns user errors into one line.
- :mod:`~accel.cli.options` — the argument types and option groups the commands share.
- :mod:`~accel.cli.bench` — ``accel bench`` (models, groupby, join, crossover).
- :mod:`~accel.cli.hpo` — ``accel hpo`` and ``accel experiments``.

The top of the layers: may import anything in accel; nothing in accel imports it except
:mod:`accel.cli.options`, which imports only the flat core. Kept empty so that importing
``accel.cli.options`` loads no command.
"""

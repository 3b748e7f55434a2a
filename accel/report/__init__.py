"""What the user sees of results: the console and the report page.

- :mod:`~accel.report.console` — the run's progress and tables on the terminal (rich).
- :mod:`~accel.report.html` — ``accel report DIR``: one self-contained HTML page and a Markdown
  summary from result files, laid out by the Jinja2 templates in ``templates/``.

May import the flat core and :mod:`accel.hpo.experiments` (the experiments section); nothing
that runs work.
"""

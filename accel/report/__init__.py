"""What the user sees of results: the console and the report page.

- :mod:`~accel.report.console` — the run's progress and tables on the terminal (rich).
- :mod:`~accel.report.html` — ``accel report DIR``: one self-contained HTML page and a Markdown
  summary from result files, laid out by the Jinja2 templates in ``templates/``; built from
  :mod:`~accel.report.overview` (the summary row of each record, the facts said once),
  :mod:`~accel.report.sections` (a section per record kind), :mod:`~accel.report.charts`
  (SVG charts whose text is text) and :mod:`~accel.report.layout` (blocks and number formats).

May import the flat core only; nothing that runs work.
"""

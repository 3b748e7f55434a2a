"""Sphinx configuration of accel's documentation.

Build: ``pip install -e ".[docs]" && sphinx-build -W --keep-going -b html docs docs/_build/html``.
Three pages are generated while the docs build, from the code and the files they describe:
the command-line reference (sphinx-argparse, from :func:`accel.cli.main.build_parser`), the run
record's schema (``_ext/record_schema.py``: a tiny run on the CPU arm, its record walked) and the
measured results (``_ext/results.py``: tables from ``benchmarks/results/*.json``).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))

import accel  # noqa: E402

project = "accel"
author = "accel contributors"
copyright = "accel contributors, Apache-2.0"
release = version = accel.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
    "sphinxarg.ext",
    "record_schema",
    "results",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints", "jupyter_execute"]
root_doc = "index"
# "--data" in the help texts stays two hyphens (docutils would make it an en dash).
smartquotes = False
templates_path = ["_templates"]

# The notebook is executed by the tests (tests/test_notebook.py) and stored with its outputs:
# the docs show those outputs and never run it again.
nb_execution_mode = "off"
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "signature"
# numpydoc: the signature's types are the code's; no autosummary table of every method.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"accel {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path = ["_static"]
html_css_files = ["accel.css"]

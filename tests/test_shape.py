"""The shape gate (.ci/shape.py): what it counts, and its ceilings file."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _gate():
    spec = importlib.util.spec_from_file_location("shape_gate", ROOT / ".ci" / "shape.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE = '''"""Module docstring,
on two lines."""
from typing import Any

# a comment


def f(a: Any, b: "dict[str, Any]", *rest: Any, c: int = 1, **kw: Any) -> Any:  # type: ignore[misc]
    """Docstring."""
    x = [
        1,
    ]
    return x
'''


def test_gate_counts_any_params_ignores_and_code_lines():
    figures = _gate().measure_source(SOURCE)
    # a, *rest, **kw are annotated Any; b's dict[str, Any] is not a bare Any; the return is no parameter.
    assert figures["any_params"] == 3
    assert figures["type_ignores"] == 1
    # from-import, def, x = [, 1,, ], return: docstrings, the comment and blank lines are not code.
    assert figures["code_lines"] == 6
    assert figures["functions_100"] == 0 and figures["functions_60"] == 0


def test_gate_counts_long_functions():
    body = "\n".join(f"    x{i} = {i}" for i in range(70))
    figures = _gate().measure_source(f"def g():\n{body}\n")
    assert (figures["functions_100"], figures["functions_60"]) == (0, 1)
    body = "\n".join(f"    x{i} = {i}" for i in range(99))
    figures = _gate().measure_source(f"def g():\n{body}\n")
    assert (figures["functions_100"], figures["functions_60"]) == (1, 1)


def test_gate_reports_the_most_complex_function_or_method():
    branches = "\n".join(f"        if a == {i}:\n            return {i}" for i in range(7))
    source = f"def f(a):\n    return a\n\n\nclass C:\n    def g(self, a):\n{branches}\n        return a\n"
    assert _gate().measure_source(source)["max_complexity"] == 8  # seven ifs and the method itself
    assert _gate().measure_source("x = 1\n")["max_complexity"] == 0


def test_ceilings_name_every_figure():
    gate = _gate()
    ceilings = json.loads((ROOT / ".ci" / "shape.json").read_text())
    assert sorted(ceilings) == sorted(gate.ORDER)
    assert all(isinstance(v, int) and v >= 0 for v in ceilings.values())

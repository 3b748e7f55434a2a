"""The shape gate: the package's shape measured against ceilings that may only fall.

Measures ``accel/``: mypy errors (``mypy accel --ignore-missing-imports`` with the pinned
mypy of the ``test`` extra and pyproject's ``[tool.mypy]``), parameters annotated ``Any``,
``type: ignore`` comments, functions of 100 lines or more and of 60 or more, the highest
cyclomatic complexity of a function or method (radon's, as ``radon cc`` reports it), and code
lines (not docstrings, comments or blank lines). Each figure is printed beside its ceiling from
``.ci/shape.json``; the gate fails (exit 1) when any figure is above its ceiling.

Usage::

    python .ci/shape.py             # measure and check (mypy takes about a minute)
    python .ci/shape.py --no-mypy   # the ast figures only, in a second
    python .ci/shape.py --lower     # check, then lower the ceilings to the figures met

Standard library, mypy and radon (both pinned in the ``test`` extra).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CEILINGS = Path(__file__).resolve().parent / "shape.json"
ORDER = ("mypy_errors", "any_params", "type_ignores", "functions_100", "functions_60", "max_complexity", "code_lines")
LABELS = {
    "mypy_errors": "mypy errors",
    "any_params": "parameters annotated Any",
    "type_ignores": "type: ignore comments",
    "functions_100": "functions >= 100 lines",
    "functions_60": "functions >= 60 lines",
    "max_complexity": "highest complexity",
    "code_lines": "code lines",
}
IGNORE = re.compile(r"type:\s*ignore")
NOT_CODE = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)


def _docstring_lines(tree: ast.Module) -> set[int]:
    """Lines of the module's, classes' and functions' docstrings."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def _code_lines(source: str, tree: ast.Module) -> int:
    """Lines holding a token other than a comment or layout, less the docstrings."""
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in NOT_CODE:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - _docstring_lines(tree))


def _any_params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters of one function annotated exactly ``Any``."""
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return sum(1 for a in every if a is not None and a.annotation is not None and ast.unparse(a.annotation) == "Any")


def measure_source(source: str) -> dict[str, int]:
    """The ast figures of one module's source.

    Parameters
    ----------
    source : str
        Python source text.

    Returns
    -------
    dict[str, int]
        ``any_params``, ``type_ignores``, ``functions_100``, ``functions_60``,
        ``max_complexity``, ``code_lines``.
    """
    from radon.visitors import ComplexityVisitor, Function

    tree = ast.parse(source)
    figures = {"any_params": 0, "type_ignores": len(IGNORE.findall(source)), "functions_100": 0, "functions_60": 0}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            figures["functions_100"] += length >= 100
            figures["functions_60"] += length >= 60
            figures["any_params"] += _any_params(node)
    blocks = ComplexityVisitor.from_ast(tree).blocks
    figures["max_complexity"] = max((b.complexity for b in blocks if isinstance(b, Function)), default=0)
    figures["code_lines"] = _code_lines(source, tree)
    return figures


def measure_tree(package: Path) -> dict[str, int]:
    """The ast figures of every module under ``package``: summed, the highest complexity the highest."""
    total = dict.fromkeys(ORDER[1:], 0)
    for path in sorted(package.rglob("*.py")):
        for key, value in measure_source(path.read_text(encoding="utf-8")).items():
            total[key] = max(total[key], value) if key == "max_complexity" else total[key] + value
    return total


def mypy_errors(package: Path) -> int:
    """The error count of ``mypy <package> --ignore-missing-imports``, its cache in the environment."""
    cache = Path(sys.prefix) / ".mypy_cache"
    cmd = [sys.executable, "-m", "mypy", str(package), "--ignore-missing-imports", "--cache-dir", str(cache)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    found = re.match(r"Found (\d+) errors? in", summary)
    if found:
        return int(found.group(1))
    if done.returncode == 0 and summary.startswith("Success"):
        return 0
    raise SystemExit(f"shape: error: mypy did not report a count (exit {done.returncode}): {summary or done.stderr.strip()}")


def main(argv: list[str] | None = None) -> int:
    """Measure, print each figure beside its ceiling, and fail on any above."""
    parser = argparse.ArgumentParser(description="accel's shape gate: figures against ceilings that may only fall.")
    parser.add_argument("--no-mypy", action="store_true", help="skip mypy (the ast figures only)")
    parser.add_argument("--lower", action="store_true", help="lower the ceilings in .ci/shape.json to the figures met")
    args = parser.parse_args(argv)
    ceilings: dict[str, int] = json.loads(CEILINGS.read_text(encoding="utf-8"))
    figures = measure_tree(ROOT / "accel")
    if not args.no_mypy:
        figures["mypy_errors"] = mypy_errors(ROOT / "accel")
    over = []
    for key in ORDER:
        if key not in figures:
            continue
        mark = "ok"
        if figures[key] > ceilings[key]:
            mark = "ABOVE"
            over.append(key)
        elif figures[key] < ceilings[key]:
            mark = "ok (below: lower the ceiling)"
        print(f"{LABELS[key]:<26} {figures[key]:>6}  ceiling {ceilings[key]:>6}  {mark}")
    if over:
        print(f"shape: {len(over)} figure(s) above the ceiling: {', '.join(LABELS[k] for k in over)}")
        return 1
    if args.lower:
        lowered = {key: min(ceilings[key], figures.get(key, ceilings[key])) for key in ORDER}
        CEILINGS.write_text(json.dumps(lowered, indent=2) + "\n", encoding="utf-8")
        print(f"shape: ceilings lowered in {CEILINGS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

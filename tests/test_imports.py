"""The package's layout holds: no import cycle, and each room imports only the rooms it may.

Imports are read from the source (every ``import`` statement, those inside functions too), so
a cycle hidden in a function body fails here as well. Importing ``accel.a.b`` also runs
``accel/a/__init__.py``, so it counts as an import of ``accel.a`` too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "accel"
#: The runners of the flat core: they put the data, the workflows and the models together.
RUNNERS = {"accel.run", "accel.streaming"}
#: Which rooms each room may import (besides itself). The rooms' ``__init__`` docstrings say the same.
MAY_IMPORT = {
    "core": {"core"},
    "data": {"core", "workflows"},
    "workflows": {"core", "data"},
    "runners": {"core", "data", "workflows"},
    "report": {"core"},
    "bench": {"core", "data"},
    "scaleout": {"core", "data", "workflows", "runners", "report", "cli.options"},
    "hpo": {"core", "data", "workflows", "runners", "scaleout", "bench"},
    "cli.options": {"core", "data", "scaleout"},
    "cli": {"core", "data", "workflows", "runners", "report", "bench", "scaleout", "hpo", "cli.options", "api"},
    # The Python API (accel.run, accel.info): what the command line does, for notebooks and scripts.
    "api": {"core", "data", "workflows", "runners", "report", "bench", "scaleout", "hpo", "cli.options"},
}


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def import_graph(parents: bool = True) -> dict[str, set[str]]:
    """Module -> the modules it imports; with ``parents``, also the packages above each one
    (their ``__init__`` runs first), except the importer's own packages (already running)."""
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
                # accel.a.b runs accel/a/__init__.py first: an import of every package above it.
                target = target.rpartition(".")[0]
                while parents and target and target != "accel":
                    if not name.startswith(target + "."):
                        graph[name].add(target)
                    target = target.rpartition(".")[0]
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def room(module: str) -> str:
    if module in RUNNERS:
        return "runners"
    if module == "accel.cli.options":
        return "cli.options"
    if module == "accel.api":
        return "api"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else "core"


def test_the_reader_sees_imports_inside_functions_and_packages():
    graph = import_graph()
    assert "accel.registry" in graph["accel.backend"]  # only inside ModelClasses' methods
    assert {"accel.cli", "accel.cli.main"} <= graph["accel.__main__"]
    assert "accel.cli" not in import_graph(parents=False)["accel.__main__"]


def test_no_import_cycle_in_the_package():
    assert cycles(import_graph()) == []


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_each_room_imports_only_what_it_may():
    wrong = sorted(
        f"{m} -> {d}"
        for m, deps in import_graph(parents=False).items()
        for d in deps
        if room(d) != room(m) and room(d) not in MAY_IMPORT[room(m)] and m != "accel.__main__"
    )
    assert wrong == []


def test_every_workflow_has_the_interface_the_runners_use():
    from accel.workflows import WORKFLOWS
    from accel.workflows.base import Workflow, WorkflowSettings
    from accel.workflows.table import TableWorkflow

    for cls in [*WORKFLOWS.values(), TableWorkflow]:
        for method in ("describe_data", "plan_batches", "load", "features"):
            assert callable(getattr(cls, method, None)), (cls.__name__, method)
    flights = WORKFLOWS["flights"](WorkflowSettings(rows=1000))
    assert isinstance(flights, Workflow)  # every attribute and method of the protocol is there
    assert flights.model_name == "xgboost" and flights.plan is None and flights.feature_reports == {}

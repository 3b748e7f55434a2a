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
#: The runner of the flat core, its streamed executor, the fitted pipeline and scoring: they put the
#: data, the workflows and the models together (the Dask executors, ``accel.scaleout.cluster_run.OnDask``
#: and ``accel.scaleout.scoring.ScoreOnDask``, live with the cluster).
RUNNERS = {"accel.runner", "accel.streaming", "accel.pipeline", "accel.scoring"}
#: Which rooms each room may import (besides itself). The rooms' ``__init__`` docstrings say the same.
MAY_IMPORT = {
    "core": {"core"},
    "data": {"core"},
    "workflows": {"core", "data"},
    "runners": {"core", "data", "workflows"},
    "report": {"core"},
    "bench": {"core", "data"},
    "scaleout": {"core", "data", "workflows", "runners"},
    "hpo": {"core", "data", "workflows", "runners"},
    "cli": {"core", "data", "workflows", "runners", "report", "bench", "scaleout", "hpo", "api"},
    # The Python API (accel.run, accel.info): what the command line does, for notebooks and scripts.
    "api": {"core", "data", "workflows", "runners", "report", "bench", "scaleout", "hpo"},
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
        if name == "accel":
            # The package's own __getattr__ imports accel.api on first use of accel.run and the
            # like (PEP 562): the top of the tree, never imported by anything below it.
            continue
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


#: Modules that decide what differs between the arms: the backend and the cuDF/pandas differences.
DEVICE_MODULES = {"accel.backend", "accel._compat"}
#: The device tests that remain elsewhere, each the module's own decision: the RMM pool's record
#: and the device budget (from the pool's own statistics) in memory, and the probe's device or
#: host bytes in batching; where a cluster run's arms go (its workers' kind and ``--device``: the
#: cluster's counterpart of ``resolve_arms``) in scaleout.arms; a cluster's description (GPUs per
#: worker) in scaleout.cluster; partitions per worker in workflows.partitions; in hpo, which arm the
#: search ran on decides the record's arms and labels; compare's ``--device`` against the
#: script's own accelerators (a script's GPU arm is not accel's backend).
ARM_TESTS_ALLOWED = {
    "accel.memory": 2,
    "accel.batching": 2,
    "accel.scaleout.arms": 4,
    "accel.scaleout.cluster": 2,
    "accel.workflows.partitions": 1,
    "accel.hpo.search": 2,
    "accel.bench.compare": 2,
}


#: Names that hold the device of work about to run (not the arm a record's entry belongs to).
DEVICE_NAMES = {"kind", "worker_kind", "device", "xgb_device"}
#: What such a name is compared with: either side of the choice counts.
DEVICE_WORDS = {"gpu", "cpu", "cuda"}


def _asks_the_device(test: ast.AST) -> bool:
    for n in ast.walk(test):
        if isinstance(n, ast.Attribute) and n.attr == "is_gpu":
            return True
        if isinstance(n, ast.Compare) and any(
            isinstance(c, ast.Constant) and c.value in DEVICE_WORDS for c in [n.left, *n.comparators]
        ):
            sides = [n.left, *n.comparators]
            named = {x.id for x in sides if isinstance(x, ast.Name)} | {x.attr for x in sides if isinstance(x, ast.Attribute)}
            if named & DEVICE_NAMES:
                return True
    return False


def arm_tests(tree: ast.AST) -> int:
    """``if``/conditional expressions whose test asks which device work runs on (``backend.is_gpu``,
    ``kind == "gpu"``); reading a record's ``arms["gpu"]`` entry is not such a test."""
    return sum(1 for node in ast.walk(tree) if isinstance(node, (ast.If, ast.IfExp)) and _asks_the_device(node.test))


def test_the_device_is_decided_in_the_backend():
    """What differs between the arms is a Backend method or a _compat function; elsewhere the
    arm is asked for only where listed (the count may fall, never rise)."""
    found = {}
    for name, path in modules().items():
        if name in DEVICE_MODULES:
            continue
        n = arm_tests(ast.parse(path.read_text(), str(path)))
        if n:
            found[name] = n
    over = {m: n for m, n in found.items() if n > ARM_TESTS_ALLOWED.get(m, 0)}
    assert over == {}, f"arm tests outside the backend: {over} (make it a Backend method or a _compat function)"
    assert arm_tests(ast.parse('if backend.is_gpu:\n    pass\nx = 1 if kind == "gpu" else 2\n')) == 2
    assert arm_tests(ast.parse('if kind == "cpu":\n    pass\nif opts.device != "cuda":\n    pass\n')) == 2
    assert arm_tests(ast.parse('if arm == "gpu":\n    pass\n')) == 0  # a record's entry, not work


def test_every_paired_run_record_is_built_by_one_builder():
    """A run in one process and a run on Dask are both recorded by :func:`accel.runner.run_record`;
    the speedups and the parity of two arms are computed by :func:`accel.pairing.pair` and nowhere else."""
    import re

    pairing = re.compile(r"(?<!def )\b(speedups|parity)\(")
    computing = {name for name, path in modules().items() if pairing.search(path.read_text())}
    assert computing == {"accel.pairing"}
    building = {name for name, path in modules().items() if re.search(r"\brun_record\(", path.read_text())}
    assert building == {"accel.runner", "accel.scaleout.cluster_run"}


def test_every_arm_is_run_by_the_one_runner():
    """An arm's stages are timed and its result built in one place, :func:`accel.runner.execute_arm`,
    whichever executor runs them (in memory, streamed, on Dask); each executor has the protocol's
    members. (hpo times a candidate's training with the same StageTimer; that is not an arm.)"""
    import re

    from accel.result import Executor
    from accel.runner import InMemory
    from accel.scaleout.cluster_run import OnDask
    from accel.scaleout.scoring import ScoreOnDask
    from accel.scoring import ScoreInMemory, ScoreStreamed
    from accel.streaming import Streamed

    def calling(pattern: str) -> set[str]:
        return {name for name, path in modules().items() if re.search(pattern, path.read_text())}

    assert calling(r"(?<!def )\barm_result\(") == {"accel.runner"}
    assert calling(r"\bStageTimer\(") == {"accel.runner", "accel.hpo.search"}
    members = {m for m in vars(Executor) if not m.startswith("_")} | set(Executor.__annotations__)
    assert members == {"name", "stages", "trackers", "monitored", "execute", "after"}
    executors = [InMemory, Streamed, OnDask, ScoreInMemory, ScoreStreamed, ScoreOnDask]
    assert sorted({e.name for e in executors}) == ["dask", "in_memory", "streamed"]
    for executor in executors:
        assert issubclass(executor, Executor) and "execute" in vars(executor), executor
        assert all(callable(getattr(executor, m)) for m in members - {"name", "stages"}), executor


# --------------------------------------------------------------------------- tests and benchmarks

BENCHMARKS = ROOT / "benchmarks"
#: The GPU check's planner (``gpu_check.sh plan``): a tool beside the benchmarks, not one of them;
#: tests/test_gpu_plan.py checks its packing of wheels into calls as a unit.
PLANNER = "gpu_plan"


def _imports_and_paths(path: Path) -> tuple[set[str], list[str]]:
    """The top-level names ``path`` imports (inside functions too), and the source of each call
    that puts a folder on ``sys.path`` or loads a module from a file."""
    text = path.read_text()
    names: set[str] = set()
    calls: list[str] = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("insert", "append", "spec_from_file_location")  # the source is read only then
        ):
            called = ast.get_source_segment(text, node.func) or ""
            if called in ("sys.path.insert", "sys.path.append") or called.endswith("spec_from_file_location"):
                calls.append(ast.get_source_segment(text, node) or "")
    return names, calls


def test_tests_and_benchmarks_never_import_each_other():
    """What both use lives in accel_fixtures; the tests run a benchmark as a program, never import it."""
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")} - {PLANNER}
    for path in (ROOT / "tests").rglob("*.py"):
        names, calls = _imports_and_paths(path)
        assert not names & (scripts | {"benchmarks"}), f"{path.name} imports a benchmark: {sorted(names & scripts)}"
        assert not [c for c in calls if "benchmarks" in c and PLANNER not in c], f"{path.name} loads from benchmarks/: {calls}"
    for path in BENCHMARKS.rglob("*.py"):
        names, calls = _imports_and_paths(path)
        assert "tests" not in names, f"benchmarks/{path.name} imports the tests"
        assert not [c for c in calls if "tests" in c or "parents[1]" in c], (
            f"benchmarks/{path.name} puts the tests in reach: {calls}"
        )
    for path in PACKAGE.rglob("*.py"):
        assert "accel_fixtures" not in _imports_and_paths(path)[0], f"{path} imports accel_fixtures"


def test_the_import_reader_sees_paths_and_imports(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import sys\ndef f():\n    from tests import x\n    sys.path.insert(0, 'benchmarks')\n")
    names, calls = _imports_and_paths(probe)
    assert "tests" in names and calls == ["sys.path.insert(0, 'benchmarks')"]

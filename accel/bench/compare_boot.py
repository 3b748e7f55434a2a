"""Runs a user's script or notebook inside one arm of ``accel compare`` (a fresh process).

    python -m accel.bench.compare_boot [--accelerators cudf.pandas,cuml.accel] [--profile-json FILE]
                                 (--notebook NB.ipynb | SCRIPT) [-- ARGS...]

With accelerators, they are installed before the user's code imports pandas or scikit-learn,
as ``python -m cudf.pandas`` / ``python -m cuml.accel`` would (their documented programmatic
form: ``cudf.pandas.install()``, ``cuml.accel.install()``). With ``--profile-json`` the run is
wrapped in the accelerators' own function profilers (``cudf.pandas.Profiler``,
``cuml.accel.profile``) and their per-function GPU/CPU calls and times are written as JSON: a
profiled run is slower (cudf.pandas traces every call), so ``accel compare`` never times it.

The CPU arm of a script does not come through here: it is plain ``python SCRIPT ARGS``. A
notebook needs a runner on both arms (nbclient, headless); its cells' text outputs are printed
to stdout so that both arms' outputs can be compared like a script's.
"""

from __future__ import annotations

import argparse
import importlib
import json
import runpy
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ACCELERATORS = ("cudf.pandas", "cuml.accel")


def _cudf_pandas_stats(profiler: Any) -> dict[str, Any]:
    out = {}
    for name, calls in profiler.per_function_stats.items():
        gpu, cpu = list(calls.get("gpu", [])), list(calls.get("cpu", []))
        out[str(name)] = {"gpu_calls": len(gpu), "gpu_time": sum(gpu), "cpu_calls": len(cpu), "cpu_time": sum(cpu)}
    return out


def _cuml_accel_stats(results: Any) -> dict[str, Any]:
    counts = ("gpu_calls", "gpu_time", "cpu_calls", "cpu_time")  # cuml.accel's MethodStats, by the same names
    return {
        str(name): {**{k: getattr(s, k) for k in counts}, "fallback_reasons": sorted(s.fallback_reasons)}
        for name, s in results.method_calls.items()
    }


@contextmanager
def accelerated(accelerators: list[str], profile_json: str | None) -> Iterator[None]:
    """The accelerators installed; with ``profile_json``, their own function profilers entered, and
    each one's per-function GPU/CPU calls and times written there (JSON) when the block ends."""
    for name in accelerators:  # accel compare checked the names
        importlib.import_module(name).install()  # cudf.pandas.install(), cuml.accel.install()
    with ExitStack() as stack:
        profiles: dict[str, Any] = {}
        for name in (a for a in ACCELERATORS if profile_json and a in accelerators):
            module = importlib.import_module(name)  # cudf.pandas.Profiler(), cuml.accel.profile(quiet=True)
            profiles[name] = stack.enter_context(module.Profiler() if name == "cudf.pandas" else module.profile(quiet=True))
        try:
            yield
        finally:
            stack.close()
            if profile_json:
                stats = {"cudf.pandas": _cudf_pandas_stats, "cuml.accel": _cuml_accel_stats}
                Path(profile_json).write_text(json.dumps({name: stats[name](p) for name, p in profiles.items()}))


#: The notebook's first and last cells, where it runs accelerated or profiled: the block of :func:`accelerated`.
_NOTEBOOK_START = """\
import accel.bench.compare_boot as _accel_boot
_accel_run = _accel_boot.accelerated({acc!r}, {out!r})
_accel_run.__enter__()
"""
_NOTEBOOK_END = "_accel_run.__exit__(None, None, None)\n"


def run_notebook(path: str, accelerators: list[str], profile_json: str | None) -> int:
    """Execute the notebook headless in a fresh kernel; print its text outputs, cell by cell."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    added = 1 if accelerators or profile_json else 0
    if added:
        start = nbformat.v4.new_code_cell(_NOTEBOOK_START.format(acc=accelerators, out=profile_json))
        nb.cells = [start, *nb.cells, nbformat.v4.new_code_cell(_NOTEBOOK_END)]
    client = nbclient.NotebookClient(nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(Path.cwd())}})
    failed = None
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        failed = exc
    for cell in nb.cells[added : len(nb.cells) - added]:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                (sys.stdout if output.get("name") == "stdout" else sys.stderr).write(output.get("text", ""))
            elif output.get("output_type") in ("execute_result", "display_data"):
                text = (output.get("data") or {}).get("text/plain")
                if text:
                    sys.stdout.write(text + "\n")
    if failed is not None:
        sys.stderr.write(str(failed).strip().splitlines()[-1] + "\n")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accel.bench.compare_boot", description=__doc__.splitlines()[0])
    parser.add_argument("--accelerators", default="", help="comma-separated: " + ", ".join(ACCELERATORS))
    parser.add_argument("--profile-json", help="write the accelerators' function profiles here (JSON)")
    parser.add_argument("--notebook", help="execute this notebook instead of a script")
    parser.add_argument("script", nargs="?")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    accelerators = [a for a in ns.accelerators.split(",") if a]
    if ns.notebook:  # the kernel is another process: the accelerators are installed in its first cell
        return run_notebook(ns.notebook, accelerators, ns.profile_json)
    with accelerated(accelerators, ns.profile_json):
        sys.argv = [ns.script, *(ns.args[1:] if ns.args[:1] == ["--"] else ns.args)]
        sys.path.insert(0, str(Path(ns.script).resolve().parent))
        runpy.run_path(ns.script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())

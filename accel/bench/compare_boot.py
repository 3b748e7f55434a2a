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
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ACCELERATORS = ("cudf.pandas", "cuml.accel")


def install(accelerators: list[str]) -> None:
    for name in accelerators:
        if name not in ACCELERATORS:  # accel compare validates the names first
            raise SystemExit(f"unknown accelerator {name!r}")
        importlib.import_module(name).install()  # cudf.pandas.install(), cuml.accel.install()


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


def start_profiles(accelerators: list[str], stack: ExitStack) -> dict[str, Any]:
    """Enter the accelerators' own function profilers on ``stack``; each one's profiler by its name."""
    profiles: dict[str, Any] = {}
    if "cudf.pandas" in accelerators:
        from cudf.pandas import Profiler

        profiles["cudf.pandas"] = stack.enter_context(Profiler())
    if "cuml.accel" in accelerators:
        import cuml.accel

        profiles["cuml.accel"] = stack.enter_context(cuml.accel.profile(quiet=True))
    return profiles


def write_profiles(profiles: dict[str, Any], path: str) -> None:
    """Write each profiler's per-function GPU/CPU calls and times to ``path`` (JSON); after its stack is closed."""
    stats = {"cudf.pandas": _cudf_pandas_stats, "cuml.accel": _cuml_accel_stats}
    Path(path).write_text(json.dumps({name: stats[name](p) for name, p in profiles.items()}))


def run_script(script: str, args: list[str]) -> None:
    sys.argv = [script, *args]
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")


NOTEBOOK_SETUP = {
    "cudf.pandas": "import cudf.pandas\ncudf.pandas.install()\n",
    "cuml.accel": "import cuml.accel\ncuml.accel.install()\n",
}
#: The profiled notebook's first and last cells: the profilers entered, then closed and written.
_NOTEBOOK_PROFILE_START = """\
import contextlib as _accel_ctx, accel.bench.compare_boot as _accel_boot
_accel_stack = _accel_ctx.ExitStack()
_accel_profiles = _accel_boot.start_profiles({acc!r}, _accel_stack)
"""
_NOTEBOOK_PROFILE_END = "_accel_stack.close()\n_accel_boot.write_profiles(_accel_profiles, {out!r})\n"


def run_notebook(path: str, accelerators: list[str], profile_json: str | None) -> int:
    """Execute the notebook headless in a fresh kernel; print its text outputs, cell by cell."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    setup = "".join(NOTEBOOK_SETUP[a] for a in accelerators)
    first, last = [], []
    if setup:
        first.append(nbformat.v4.new_code_cell(setup))
    if profile_json:
        first.append(nbformat.v4.new_code_cell(_NOTEBOOK_PROFILE_START.format(acc=accelerators)))
        last.append(nbformat.v4.new_code_cell(_NOTEBOOK_PROFILE_END.format(out=profile_json)))
    added = len(first)
    nb.cells = first + nb.cells + last
    client = nbclient.NotebookClient(nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(Path.cwd())}})
    failed = None
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        failed = exc
    for cell in nb.cells[added : len(nb.cells) - len(last)]:
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
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    if ns.notebook:
        install([])  # the kernel is another process: the accelerators are installed in its first cell
        return run_notebook(ns.notebook, accelerators, ns.profile_json)
    install(accelerators)
    if not ns.profile_json:
        run_script(ns.script, args)
        return 0
    with ExitStack() as stack:
        profiles = start_profiles(accelerators, stack)
        try:
            run_script(ns.script, args)
        finally:
            stack.close()
            write_profiles(profiles, ns.profile_json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""accel as a library: ``accel.run(...)`` in a notebook or a script does what ``accel run`` does.

The command line is a thin layer over the same functions: one configuration (validated as the
flags are), one paired run, one record written under ``out``. What comes back is a
:class:`RunResult`: the record as a dict, and its stages, metrics and memory as pandas
DataFrames; in Jupyter it shows the stage table and a speedup chart.

>>> import accel
>>> result = accel.run("flights", rows=20_000, device="cpu")  # doctest: +SKIP
>>> result.stages  # doctest: +SKIP
          gpu_seconds  cpu_seconds  speedup
stage
load              NaN        0.061      NaN
...
"""

from __future__ import annotations

import html
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Keyword arguments of :func:`run` and the workflow-file setting (and flag) each one sets.
_SETTINGS = (
    "data", "target", "task", "model", "drop", "delimiter", "date_format", "probe", "device", "precision",
    "batch_rows", "memory_budget", "rmm_pool", "rows", "test_size", "seed", "out",
)  # fmt: skip


@dataclass(frozen=True)
class RunResult:
    """One paired run: the record accel wrote, and views of it as tables.

    Attributes
    ----------
    record : dict
        The run record, as written (``accel report`` and ``accel experiments`` read the file).
    path : pathlib.Path
        Where the record was written.
    """

    record: dict[str, Any]
    path: Path

    @property
    def stages(self) -> Any:
        """Seconds per stage on each arm and the speedup (CPU seconds / GPU seconds); NaN where an arm did not run."""
        import pandas as pd

        arms, speedup = self.record["arms"], self.record.get("speedup") or {}
        names = list(dict.fromkeys([*(arms["cpu"].get("stages") or {}), *(arms["gpu"].get("stages") or {})]))
        rows = []
        for stage in [*names, "total"]:
            row = {"stage": stage}
            for arm in ("gpu", "cpu"):
                a = arms[arm]
                value = a.get("total_seconds") if stage == "total" else (a.get("stages") or {}).get(stage)
                row[f"{arm}_seconds"] = math.nan if value is None else float(value)
            value = speedup.get(stage)
            row["speedup"] = math.nan if value is None else float(value)
            rows.append(row)
        return pd.DataFrame(rows).set_index("stage")

    @property
    def metrics(self) -> Any:
        """The hold-out metrics of each arm (one row per metric)."""
        import pandas as pd

        arms = self.record["arms"]
        names = list(dict.fromkeys([*(arms["cpu"].get("metrics") or {}), *(arms["gpu"].get("metrics") or {})]))
        return pd.DataFrame(
            {arm: [_float((arms[arm].get("metrics") or {}).get(m)) for m in names] for arm in ("gpu", "cpu")},
            index=pd.Index(names, name="metric"),
        )

    @property
    def memory(self) -> Any:
        """Each arm's status and peak host and device memory (MB)."""
        import pandas as pd

        arms = self.record["arms"]
        return pd.DataFrame(
            {
                "status": [arms[a].get("status") for a in ("gpu", "cpu")],
                "peak_host_mb": [_float(arms[a].get("peak_host_mb")) for a in ("gpu", "cpu")],
                "peak_device_mb": [_float(arms[a].get("peak_device_mb")) for a in ("gpu", "cpu")],
            },
            index=pd.Index(["gpu", "cpu"], name="arm"),
        )

    @property
    def parity(self) -> dict[str, Any]:
        """Whether the arms reached the same quality: metric, both values, tolerance, ``ok``."""
        return dict(self.record.get("parity") or {})

    @property
    def speedup(self) -> float:
        """The whole run's speedup (NaN unless both arms ran)."""
        return _float((self.record.get("speedup") or {}).get("total"))

    def __repr__(self) -> str:
        arms = self.record["arms"]
        shown = ", ".join(f"{a} {arms[a].get('status')}" for a in ("gpu", "cpu"))
        return f"RunResult({self.record.get('workflow')!r}, {shown}, speedup {self.speedup:.3g}, record {str(self.path)!r})"

    def _repr_html_(self) -> str:
        """The stage table and a bar per stage's speedup, for Jupyter."""
        stages = self.stages
        arms = self.record["arms"]
        from accel.report.console import gpu_status_line

        said = [
            gpu_status_line(a) if arm == "gpu" else f"{arm.upper()} arm {a.get('status')}: {a.get('reason')}"
            for arm, a in arms.items()
            if a.get("status") != "ok" and a.get("reason")
        ]  # the terminal's words: "GPU arm skipped: no CUDA driver ..."
        notes = [
            f"<p><b>{html.escape(head)}</b>: {html.escape(rest)}</p>" for head, _, rest in (line.partition(": ") for line in said)
        ]
        finite = [v for v in stages["speedup"] if math.isfinite(v)]
        top = max(finite, default=1.0) or 1.0
        bars = "".join(
            f"<tr><td>{html.escape(str(stage))}</td><td><div style='background:#76b900;height:0.9em;"
            f"width:{max(2.0, 200 * value / top):.0f}px'></div></td><td>{value:.3g}×</td></tr>"
            for stage, value in stages["speedup"].items()
            if math.isfinite(value)
        )
        chart = f"<table><caption>speedup per stage</caption>{bars}</table>" if bars else "<p>speedup: n/a (one arm ran)</p>"
        title = f"<h4>accel run: {html.escape(str(self.record.get('workflow')))}</h4>"
        where = f"<p>record: <code>{html.escape(str(self.path))}</code></p>"
        return title + stages.to_html(float_format=lambda v: f"{v:.4g}", na_rep="n/a") + chart + "".join(notes) + where


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def run(
    workflow: str | os.PathLike[str] | None = None,
    *,
    cluster: str | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    **settings: Any,
) -> RunResult:
    """Run a workflow on the accelerated arm and the CPU baseline, write its record, return it.

    Parameters
    ----------
    workflow : str or path, optional
        ``"flights"`` (the embedded default), or a workflow YAML file. Leave it out with
        ``data=``: your own table.
    cluster, scheduler, workers
        Run on Dask, as ``--cluster local|local-cuda`` / ``--scheduler ADDR`` / ``--workers N`` do.
    progress : bool
        Show the stages as they run (on stderr), as the command line does.
    **settings
        What the command line's flags set, by the workflow file's names: ``data``, ``target``,
        ``task``, ``model``, ``drop`` (a list), ``delimiter``, ``date_format`` (column -> format),
        ``probe``, ``device`` (``"auto"``, ``"cpu"``, ``"gpu"``), ``precision``, ``batch_rows``,
        ``memory_budget``, ``rmm_pool``, ``rows``, ``test_size``, ``seed``, ``out`` (default
        ``$ACCEL_OUT_DIR``, else ``runs``).

    Returns
    -------
    RunResult

    Raises
    ------
    accel.errors.AccelError
        For every bad input, with the one-line message the command line prints (nothing is
        written then).
    """
    from accel.cli.options import workflow_source
    from accel.config import build_config
    from accel.errors import AccelError

    unknown = sorted(set(settings) - set(_SETTINGS))
    if unknown:
        raise AccelError(f"accel.run() has no setting {', '.join(map(repr, unknown))}; it takes: {', '.join(_SETTINGS)}")
    values = {k: (str(v) if isinstance(v, os.PathLike) else v) for k, v in settings.items()}
    file_values, source = workflow_source(None if workflow is None else str(workflow), values.get("data") is not None, "run")
    overrides: dict[str, Any] = dict(values)
    if cluster is not None or scheduler is not None:
        overrides["cluster"] = {"kind": "scheduler", "address": scheduler} if scheduler else {"kind": cluster, "workers": workers}
    config = build_config(file_values, overrides, "accel.run()" if source == "command line" else source)
    listener = None
    if progress:
        from accel.report.console import ProgressDisplay

        # Plain lines where Dask workers write to the same terminal, as accel run prints them.
        listener = ProgressDisplay(live=False if config.cluster is not None else None)
    try:
        record, path = run_config(config, listener)
    finally:
        if listener is not None:
            listener.close()
    return RunResult(record, Path(path))


def run_config(
    config: Any, listener: Any = None, on_plan: Any = None, process_start: float | None = None
) -> tuple[dict[str, Any], Path]:
    """The run a validated :class:`~accel.config.RunConfig` asks for, in this process or on the
    Dask cluster its ``cluster`` section names; ``accel run`` and :func:`run` both come here.

    Parameters
    ----------
    config : RunConfig
    listener : accel.result.Listener, optional
        Told of each arm and stage as they start and end (the command line's progress display).
    on_plan : callable, optional
        ``on_plan(workflow)`` once the run is planned, before its arms run (on a cluster: once
        a user's table is planned, before the cluster starts).
    process_start : float, optional
        When the process's interpreter started (``time.time()``), where the run is the whole
        process (the command line): the wall breakdown's start-up counts from it.

    Returns
    -------
    (dict, pathlib.Path)
        The record and where it was written.
    """
    if config.cluster is not None:
        from accel.scaleout.runner import cluster_run

        return cluster_run(config, listener, on_plan=on_plan)
    from accel.runner import paired_run

    return paired_run(config, listener, on_plan=on_plan, process_start=process_start)


#: Keyword arguments of :func:`tune` that set the ``hpo:`` section of a workflow file.
_SEARCH_SETTINGS = ("trials", "subset", "trial_rounds", "validation", "timeout", "top", "storage", "study")


@dataclass(frozen=True)
class TuneResult:
    """One hyperparameter search: the record accel wrote, and views of it as tables.

    Attributes
    ----------
    record : dict
        The search record (``accel report`` and ``accel experiments`` read the file).
    path : pathlib.Path
        Where the record was written.
    """

    record: dict[str, Any]
    path: Path

    @property
    def metric(self) -> str:
        """The metric the search optimised (``auc``, ``rmse``, ...)."""
        return str(self.record["study"]["metric"])

    @property
    def candidates(self) -> Any:
        """The default model, the best subset trial, the top-k on all fitting rows and the
        retrained best on the hold-out: metric, seconds, peak memory, where each was scored."""
        import pandas as pd

        r = self.record
        rows = []

        def add(label: str, entry: dict[str, Any] | None) -> None:
            if entry:
                rows.append(
                    {
                        "candidate": label,
                        self.metric: _float(entry.get("metric")),
                        "seconds": _float(entry.get("seconds")),
                        "peak_host_mb": _float(entry.get("peak_host_mb")),
                        "peak_device_mb": _float(entry.get("peak_device_mb")),
                        "evaluated_on": entry.get("evaluated_on"),
                    }
                )

        add("default", r.get("baseline"))
        add("best subset trial", r.get("best_trial"))
        for entry in r.get("top_k") or []:
            add(f"top-k: trial {entry.get('trial')}", entry)
        if (r.get("final") or {}).get("status") != "failed":
            add("retrained best", r.get("final"))
        return pd.DataFrame(rows).set_index("candidate") if rows else pd.DataFrame()

    @property
    def best_params(self) -> dict[str, Any]:
        """The retrained best model's settings (empty when no trial completed)."""
        return dict((self.record.get("final") or {}).get("params") or {})

    @property
    def arms(self) -> Any:
        """The final model trained on each arm: status and seconds (the speedup is CPU / GPU)."""
        import pandas as pd

        arms = self.record.get("arms") or {}
        return pd.DataFrame(
            {
                "status": [(arms.get(a) or {}).get("status") for a in ("gpu", "cpu")],
                "seconds": [_float((arms.get(a) or {}).get("seconds")) for a in ("gpu", "cpu")],
            },
            index=pd.Index(["gpu", "cpu"], name="arm"),
        )

    def __repr__(self) -> str:
        final = self.record.get("final") or {}
        value = final.get("metric")
        shown = f"{self.metric} {value:.4g}" if isinstance(value, (int, float)) else str(final.get("reason"))
        return f"TuneResult({self.record['study']['name']!r}, {shown}, record {str(self.path)!r})"

    def _repr_html_(self) -> str:
        title = f"<h4>accel hpo: {html.escape(str(self.record['study']['name']))}</h4>"
        table = self.candidates.to_html(float_format=lambda v: f"{v:.4g}", na_rep="—")
        where = f"<p>record: <code>{html.escape(str(self.path))}</code></p>"
        return title + table + where


def tune(
    workflow: str | os.PathLike[str] | None = None,
    *,
    resume: bool = False,
    cluster: str | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    **settings: Any,
) -> TuneResult:
    """Search a model's hyperparameters with Optuna, as ``accel hpo`` does; write its record, return it.

    (``accel.hpo`` is the subpackage that holds the search, hence the name.)

    Parameters
    ----------
    workflow : str or path, optional
        ``"flights"``, or a workflow YAML file (its ``hpo:`` section is the search); leave it
        out with ``data=`` (your own table) or ``resume=True`` (the study's own workflow).
    resume : bool
        Continue the study named by ``study`` in ``storage`` (``--resume``).
    cluster, scheduler, workers
        Run the trials in parallel on Dask, as ``--cluster``, ``--scheduler``, ``--workers`` do.
    **settings
        The search's settings (``trials``, ``subset``, ``trial_rounds``, ``validation``,
        ``timeout``, ``top``, ``storage``, ``study``) and those of :func:`run` (``data``,
        ``target``, ``model``, ``device``, ``rows``, ``seed``, ``out``, ...).

    Returns
    -------
    TuneResult

    Raises
    ------
    accel.errors.AccelError
        For every bad input, with the one-line message the command line prints.
    """
    from accel.cli.options import workflow_source
    from accel.errors import AccelError
    from accel.hpo.search import SearchRequest, run_search, search_config

    known = (*_SETTINGS, *_SEARCH_SETTINGS)
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise AccelError(f"accel.tune() has no setting {', '.join(map(repr, unknown))}; it takes: {', '.join(known)}")
    if workers is not None and cluster != "local":
        raise AccelError("workers= applies to cluster='local'")
    values = {k: (str(v) if isinstance(v, os.PathLike) else v) for k, v in settings.items()}
    search = {k: values.pop(k) for k in _SEARCH_SETTINGS if k in values}
    named = workflow is not None
    file_values, source = workflow_source(str(workflow) if named else None, values.get("data") is not None or resume, "hpo")
    config, given = search_config(file_values, values, search, "accel.tune()" if source == "command line" else source, named)
    request = SearchRequest(resume=resume, given=given, cluster=cluster, scheduler=scheduler, workers=workers)
    record, path = run_search(config, request)
    return TuneResult(record, Path(path))


@dataclass(frozen=True)
class CompareResult:
    """Your script on the CPU and with cudf.pandas / cuml.accel: the record, and views of it.

    Attributes
    ----------
    record : dict
        The compare record.
    path : pathlib.Path
        Where the record was written.
    """

    record: dict[str, Any]
    path: Path

    @property
    def arms(self) -> Any:
        """Each arm's status, cold wall seconds, warm median (with ``repeat``) and peak memory."""
        import pandas as pd

        arms = self.record["arms"]
        return pd.DataFrame(
            {
                "status": [arms[a].get("status") for a in ("gpu", "cpu")],
                "cold_seconds": [_float(arms[a].get("cold_seconds")) for a in ("gpu", "cpu")],
                "warm_median_seconds": [_float((arms[a].get("warm") or {}).get("median")) for a in ("gpu", "cpu")],
                "peak_host_mb": [_float(arms[a].get("peak_host_mb")) for a in ("gpu", "cpu")],
                "peak_device_mb": [_float(arms[a].get("peak_device_mb")) for a in ("gpu", "cpu")],
            },
            index=pd.Index(["gpu", "cpu"], name="arm"),
        )

    @property
    def speedup(self) -> float:
        """CPU / GPU cold wall seconds (NaN unless the GPU arm ran)."""
        return _float((self.record.get("speedup") or {}).get("wall_cold"))

    @property
    def agree(self) -> bool | None:
        """Whether both arms printed and wrote the same numbers (None when the GPU arm did not run)."""
        return (self.record.get("parity") or {}).get("agree")

    def __repr__(self) -> str:
        arms = self.record["arms"]
        shown = ", ".join(f"{a} {arms[a].get('status')}" for a in ("gpu", "cpu"))
        return f"CompareResult({self.record['program']['path']!r}, {shown}, speedup {self.speedup:.3g}, agree {self.agree})"

    def _repr_html_(self) -> str:
        title = f"<h4>accel compare: {html.escape(str(self.record['program']['path']))}</h4>"
        table = self.arms.to_html(float_format=lambda v: f"{v:.4g}", na_rep="—")
        notes = "".join(
            f"<p><b>{a.upper()} arm {html.escape(str(arm.get('status')))}</b>: {html.escape(str(arm.get('reason')))}</p>"
            for a, arm in self.record["arms"].items()
            if arm.get("status") != "ok" and arm.get("reason")
        )
        return title + table + notes + f"<p>outputs agree: {self.agree}</p>"


def compare(
    program: str | os.PathLike[str],
    *args: str,
    repeat: int = 0,
    accelerators: str | None = None,
    device: str = "auto",
    rtol: float = 1e-5,
    atol: float = 1e-8,
    timeout: float = 3600.0,
    profile: bool = True,
    ignore_lines: str | None = None,
    out: str | os.PathLike[str] | None = None,
) -> CompareResult:
    """Run your unchanged script (or notebook) on the CPU and with cudf.pandas / cuml.accel, as
    ``accel compare PROGRAM -- ARGS`` does; write its record, return it.

    Parameters
    ----------
    program : str or path
        A Python script (``.py``) or a notebook (``.ipynb``).
    *args : str
        Arguments for the script.
    repeat, accelerators, device, rtol, atol, timeout, profile, ignore_lines, out
        As the command's ``--repeat``, ``--accelerators``, ``--device``, ``--rtol``, ``--atol``,
        ``--timeout``, ``--no-profile`` (``profile=False``), ``--ignore-lines``, ``--out``
        (default ``$ACCEL_OUT_DIR``, else ``runs``).

    Returns
    -------
    CompareResult
    """
    from accel.bench.compare import Options
    from accel.bench.compare import compare as run_compare
    from accel.record import output_root

    opts = Options(
        program=Path(program), args=[str(a) for a in args], out=output_root() if out is None else Path(out), repeat=repeat, accelerators=accelerators,
        device=device, rtol=rtol, atol=atol, timeout=timeout, profile=profile, ignore=ignore_lines,
    )  # fmt: skip
    record, path = run_compare(opts)
    return CompareResult(record, Path(path))


def info() -> dict[str, Any]:
    """What ``accel info --json`` prints: devices, memory, library versions, which arms can run."""
    from accel.environment import collect_environment

    return collect_environment()

"""What the report says first: one summary row per record, and the facts said once for all.

Each record found is an :class:`Entry`: its kind (read from the record, :func:`accel.record.kind_of`),
a label that names it everywhere on the page (the file name of a user's table, the workflow's
name otherwise, made unique with the time it started), and the cells of its summary row: the
data, the rows, the devices, the headline speedup, the metric of each arm and the parity. The
machine, the code and the reasons an arm did not run are gathered from every record and said
once (:func:`measured_on`), not under each run.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

#: The arms of a paired record, the accelerated one first, and how the page names them.
ARMS = ("gpu", "cpu")
ARM_NAMES = {"gpu": "GPU arm", "cpu": "CPU arm"}
#: Metric keys as the page writes them.
METRIC_NAMES = {"auc": "AUC", "rmse": "RMSE", "mae": "MAE", "r2": "R²", "accuracy": "accuracy", "log_loss": "log loss"}
#: What a record of each kind is called, one and several.
NOUNS = {
    "run": ("run", "runs"), "run on Dask": ("run on Dask", "runs on Dask"), "hpo": ("search", "searches"),
    "compare": ("script compared", "scripts compared"), "scaling": ("scaling study", "scaling studies"),
    "experiments": ("experiments snapshot", "experiments snapshots"),
}  # fmt: skip
#: The benchmarks the report has a section for, by the ``benchmark`` of a bench record.
BENCHMARKS = ("db_groupby", "db_join", "models", "crossover", "groupby_overhead", "flights_overhead")


def metric_name(key: str) -> str:
    return METRIC_NAMES.get(key, key)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def ok(arm: Any) -> bool:
    return isinstance(arm, dict) and arm.get("status") == "ok"


def started(content: dict[str, Any]) -> datetime | None:
    for key in ("started_at", "created_at"):
        try:
            return datetime.fromisoformat(str(content[key]))
        except (KeyError, ValueError):
            continue
    return None


@dataclass
class Entry:
    """One record on the page: where it is, what it is, and its summary row."""

    path: Path
    content: dict[str, Any]
    kind: str
    label: str = ""
    data: str = ""
    rows: str = ""
    devices: str = ""
    speedup: float = math.nan
    speedup_note: str = ""
    #: ``metric key -> {arm: value or the arm's status}`` (the headline metric of each arm).
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    parity: str = ""

    @property
    def benchmark(self) -> str:
        return str(self.content.get("benchmark") or "")

    @property
    def noun(self) -> tuple[str, str]:
        """What one record of this kind is called, and several."""
        if self.kind == "bench":
            name = self.benchmark.replace("_", " ")
            return f"{name} benchmark", f"{name} benchmarks"
        return NOUNS.get(self.kind_text, (self.kind_text, self.kind_text))

    @property
    def kind_text(self) -> str:
        if self.kind == "bench":
            return f"bench {self.benchmark.replace('_', ' ')}"
        if self.kind == "run" and on_dask(self.content):
            return "run on Dask"
        return self.kind

    @property
    def started(self) -> datetime | None:
        return started(self.content)


def _name(path: Any) -> str:
    return Path(str(path)).name


def data_name(content: dict[str, Any], kind: str) -> str:
    """The data a record ran on, as the page names it: a user's table by its file name, else the workflow."""
    config = content.get("config") if isinstance(content.get("config"), dict) else {}
    if kind in ("run", "hpo", "scaling"):
        return _name(config["data"]) if config.get("data") else str(content.get("workflow") or config.get("workflow") or "?")
    if kind == "compare":
        program = content.get("program") or {}
        args = " ".join(str(a) for a in program.get("args") or [])
        return f"{_name(program.get('path', '?'))} {args}".strip()
    bench = content.get("benchmark")
    data = content.get("data")
    if bench == "db_groupby" and isinstance(data, dict):
        return _name(data.get("x", "?"))
    if bench == "db_join" and isinstance(data, dict):
        return _name(Path(str(data.get("x", "?"))).parent) or "join tables"
    if bench == "models" and isinstance(data, dict):
        return f"synthetic {data.get('features', '?')} features"
    if bench == "crossover":
        return "synthetic, " + ", ".join(str(op.get("operation")) for op in content.get("operations") or [])
    if bench == "flights_overhead":
        return "flights"
    if bench == "groupby_overhead":
        return "db-benchmark groupby"
    return str(bench or kind)


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else ""


def rows_of(content: dict[str, Any], kind: str) -> str:
    """The rows a record used (training + hold-out), where it says."""
    if kind == "run":
        for arm in ARMS:
            rows = (content["arms"].get(arm) or {}).get("rows") or {}
            if ok(content["arms"].get(arm)) and isinstance(rows.get("train"), int):
                return _count(rows["train"] + int(rows.get("test") or 0))
        schema = (content.get("data") or {}).get("schema") or {}
        return _count(schema.get("rows_used") or (content.get("data") or {}).get("rows_requested"))
    if kind == "hpo":
        rows = (content.get("search") or {}).get("rows") or {}
        return _count(rows["train"] + int(rows.get("test") or 0)) if isinstance(rows.get("train"), int) else ""
    if kind == "scaling":
        for run in content.get("runs") or []:
            rows = (run.get("arm") or {}).get("rows") or {}
            if isinstance(rows.get("train"), int):
                return _count(rows["train"] + int(rows.get("test") or 0))
        return _count((content.get("data") or {}).get("rows_requested"))
    bench, data = content.get("benchmark"), content.get("data")
    if bench == "models" and isinstance(data, dict):
        return _count(data.get("rows"))
    if bench in ("db_groupby", "db_join"):
        rows_in = ((content.get("arms") or {}).get("cpu") or {}).get("rows_in") or {}
        return _count(rows_in.get("x"))
    if bench == "crossover":
        sizes = [s for s in content.get("sizes") or [] if isinstance(s, int)]
        return f"{min(sizes):,} – {max(sizes):,}" if sizes else ""
    if bench == "groupby_overhead":
        return _count(content.get("rows"))
    return ""


def _gpu_name(arm: dict[str, Any]) -> str:
    return str(arm.get("device_name") or "GPU")


def on_dask(content: dict[str, Any]) -> bool:
    """A run record of ``accel run --cluster / --scheduler``."""
    return content.get("mode") == "dask" or isinstance(content.get("cluster"), dict)


def cluster_of(content: dict[str, Any], arm: str) -> dict[str, Any] | None:
    """The Dask cluster an arm of a run ran on (the arm's ``cluster``; a record that ran one arm
    on Dask kept it at the top), or None for an arm that ran in the process."""
    part = (content.get("arms") or {}).get(arm) or {}
    if isinstance(part.get("cluster"), dict):
        return part["cluster"]
    top = content.get("cluster")
    return top if isinstance(top, dict) and top.get("worker_kind") == arm else None


def cluster_text(c: dict[str, Any]) -> str:
    n = c.get("workers")
    return f"Dask {c.get('kind')}: {n} {str(c.get('worker_kind', '?')).upper()} worker{'s' * (n != 1)} × {c.get('threads_per_worker')} threads"


def row_arm(row: dict[str, Any]) -> str:
    """The arm whose workers ran a scaling row: its ``kind``; an old record's rows name the
    cluster instead (``local-cuda``: GPU workers, ``local``: CPU workers)."""
    kind = str(row.get("kind"))
    return kind if kind in ARMS else "gpu" if kind == "local-cuda" else "cpu"


def devices_of(content: dict[str, Any], kind: str) -> str:
    """Where a record's work ran: the arms that ran, and a Dask cluster's workers."""
    if kind == "scaling":
        rows = content.get("rows") or []
        arms = [k for k in dict.fromkeys(str(r.get("kind")) for r in rows) if k != "single-process"]
        counts = content.get("worker_counts") or sorted(
            {r.get("workers") for r in rows if r.get("kind") != "single-process"} - {None}
        )
        cluster = content.get("cluster_kind") or ""
        which = " and ".join(a.upper() for a in ARMS if a in arms)  # an old record's rows name the cluster instead
        return (f"Dask {cluster}: {', '.join(map(str, counts))} {which} workers".replace("Dask : ", "Dask: ").replace("  ", " ")
                + ("; one process" if any(r.get("kind") == "single-process" for r in rows) else ""))  # fmt: skip
    if kind == "bench":
        gpu = content.get("gpu") or {}
        return "CPU" + (f" + {gpu.get('device_name') or 'GPU'}" if ok(gpu) else "")
    arms = content.get("arms") or {}
    parts = []
    if kind == "run" and on_dask(content):
        for a in ARMS:
            if ok(arms.get(a)):
                c = cluster_of(content, a)
                parts.append(cluster_text(c) if c else f"{a.upper()} in this process")
        return " + ".join(parts) or "none ran"
    if ok(arms.get("gpu")):
        parts.append(_gpu_name(arms["gpu"]) if kind == "run" else "GPU")
    if ok(arms.get("cpu")):
        threads = (arms["cpu"].get("threads") or {}).get("cores_available") if kind == "run" else None
        parts.append(f"CPU ({threads} cores)" if threads else "CPU")
    if kind == "hpo":
        search = (content.get("search") or {}).get("arm")
        return f"search on {str(search).upper()}; final model on " + (" and ".join(parts) or "none")
    return " + ".join(parts) or "none ran"


def _geomean(values: list[Any]) -> float:
    good = [float(v) for v in values if is_number(v) and v > 0]
    return math.exp(sum(map(math.log, good)) / len(good)) if good else math.nan


def headline(content: dict[str, Any], kind: str) -> tuple[float, str]:
    """The one speedup a record is summed up by, and what it is."""
    speedup = content.get("speedup") if isinstance(content.get("speedup"), dict) else {}
    if kind == "run":
        return _float(speedup.get("total")), "total, CPU s / GPU s"
    if kind == "hpo":
        return _float(speedup.get("final_model")), "final model"
    if kind == "compare":
        return _float(speedup.get("wall_cold")), "cold wall"
    if kind == "scaling":
        totals = [r for r in content.get("rows") or [] if r.get("stage") == "total" and r.get("kind") != "single-process"]
        gpu = [r for r in totals if is_number(r.get("gpu_vs_cpu"))]
        if gpu:  # both arms ran: the GPU workers against as many CPU workers
            top = max(gpu, key=lambda r: r.get("workers") or 0)
            return float(top["gpu_vs_cpu"]), f"total, {top.get('workers')} GPU workers vs as many CPU workers"
        top = max(totals, key=lambda r: (r.get("workers") or 0, r.get("kind") == "gpu"), default=None)
        if top is None:
            return math.nan, ""
        ref = content.get("speedup_reference") or {}
        ref = ref.get(str(top.get("kind"))) or ref.get("workers") or 1
        return _float(top.get("speedup_vs_1")), f"total, {top.get('workers')} workers vs {ref}"
    bench = content.get("benchmark")
    if bench in ("db_groupby", "db_join"):
        qs = content.get("questions") or []
        return _geomean([q.get("speedup") for q in qs]), f"geometric mean of {len(qs)} questions" if len(
            qs
        ) > 1 else "the question"
    if bench == "models":
        ms = content.get("models") or []
        return _geomean([m.get("fit_speedup") for m in ms]), "fit" + (
            f", geometric mean of {len(ms)} models" if len(ms) > 1 else ""
        )
    if bench == "crossover":
        ops = content.get("operations") or []
        last = [op["points"][-1].get("speedup") for op in ops if op.get("points")]
        return _geomean(last), "at the largest size"
    return math.nan, ""


def _float(value: Any) -> float:
    return float(value) if is_number(value) else math.nan


def metrics_of(content: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """The headline metric of each arm: ``{metric: {arm: value or status}}``."""
    arms = content.get("arms") if isinstance(content.get("arms"), dict) else {}
    if kind == "run":
        metric = (content.get("parity") or {}).get("metric")
        if not metric:
            return {}
        return {metric: {a: (arms[a].get("metrics") or {}).get(metric) if ok(arms.get(a)) else (arms.get(a) or {}).get("status")
                         for a in ARMS if a in arms}}  # fmt: skip
    if kind == "hpo":
        metric = (content.get("study") or {}).get("metric")
        if not metric:
            return {}
        return {
            metric: {
                a: arms[a].get("metric") if ok(arms.get(a)) else (arms.get(a) or {}).get("status") for a in ARMS if a in arms
            }
        }
    if kind == "scaling":  # each arm's metric at its most workers
        metric = content.get("metric_name")
        totals = [r for r in content.get("rows") or [] if r.get("kind") != "single-process" and is_number(r.get("metric"))]
        if not metric or not totals:
            return {}
        by_arm: dict[str, dict[str, Any]] = {}
        for r in totals:
            arm = row_arm(r)
            if (r.get("workers") or 0) >= (by_arm.get(arm, {}).get("workers") or 0):
                by_arm[arm] = r
        return {str(metric): {a: by_arm[a]["metric"] for a in ARMS if a in by_arm}}
    return {}


def parity_of(content: dict[str, Any], kind: str) -> str:
    """Whether the arms agree: ``agree``, ``differ``, ``n/a`` (one arm did not run), or empty where
    the record compares nothing."""
    parity = content.get("parity") if isinstance(content.get("parity"), dict) else {}
    if kind == "run":
        return {True: "agree", False: "differ"}.get(parity.get("ok"), "n/a")
    if kind == "compare":
        out = parity.get("stdout") or {}
        counted = f" ({out.get('numbers_agree')}/{out.get('numbers_compared')} numbers)" if out else ""
        return {True: "agree", False: "differ"}.get(parity.get("agree"), "n/a") + counted
    if kind == "bench" and content.get("benchmark") in ("db_groupby", "db_join"):
        checked = [q.get("agree") for q in content.get("questions") or [] if q.get("agree") is not None]
        if not checked:
            return "n/a"
        return f"{sum(bool(a) for a in checked)}/{len(checked)} agree"
    return ""


def entry(path: Path, content: dict[str, Any], kind: str) -> Entry:
    """A record's summary row; a record whose content is not the shape of its kind raises here."""
    if kind in ("run", "hpo", "compare") and not isinstance(content.get("arms"), dict):
        raise TypeError("arms is not a mapping of arms")
    e = Entry(path, content, kind)
    e.data = data_name(content, kind)
    if e.data in ("?", ""):  # a record that names no data: its file
        e.data = path.name
    if kind == "experiments":
        return e
    e.rows = rows_of(content, kind)
    e.devices = devices_of(content, kind)
    e.speedup, e.speedup_note = headline(content, kind)
    e.metrics = metrics_of(content, kind)
    e.parity = parity_of(content, kind)
    return e


def label_all(entries: list[Entry]) -> None:
    """Give every entry a label that is unique on the page: its data, and where two share it,
    the time each started (and a number if that is shared too)."""
    names = Counter((e.kind, e.data) for e in entries)
    for e in entries:
        e.label = e.data
        if names[(e.kind, e.data)] > 1:
            when = e.started
            e.label = f"{e.data} ({when:%m-%d %H:%M:%S})" if when else e.data
    seen: Counter[tuple[str, str]] = Counter()
    taken = Counter((e.kind, e.label) for e in entries)
    for e in entries:
        if taken[(e.kind, e.label)] > 1:
            seen[(e.kind, e.label)] += 1
            e.label = f"{e.label} #{seen[(e.kind, e.label)]}"


# --------------------------------------------------------------------------- said once


def _machine(env: dict[str, Any]) -> str:
    cores = env.get("cores") or {}
    gpus = ", ".join(f"{g.get('name')} ({g.get('memory_gb')} GB)" for g in env.get("gpus") or [] if isinstance(g, dict))
    ram = env.get("ram_gb")
    return (
        f"{env.get('cpu_model') or 'CPU'}, {cores.get('available', '?')} cores available "
        f"({cores.get('physical', '?')} physical / {cores.get('logical', '?')} logical)"
        + (f", {ram} GB RAM" if ram else "")
        + f"; {gpus or 'no GPU'}"
    )


def _sha(content: dict[str, Any]) -> str:
    env = content.get("environment") or {}
    sha = str(env.get("git_sha") or content.get("git_sha") or "")[:10]
    dirty = (env.get("git") or {}).get("dirty")
    return (sha + (" (uncommitted changes)" if dirty else "")) if sha else ""


def _reasons(e: Entry) -> list[tuple[str, str, str]]:
    """``(arm, status, reason)`` of each arm of ``e`` that did not run to the end."""
    content = e.content
    if e.kind == "bench":
        gpu = content.get("gpu") or {}
        return [("gpu", str(gpu.get("status")), str(gpu.get("reason")))] if gpu and not ok(gpu) and gpu.get("reason") else []
    if e.kind == "scaling":
        skipped = content.get("skipped_arms") if isinstance(content.get("skipped_arms"), dict) else {}
        return [(str(a), "skipped", str(why)) for a, why in skipped.items()] + [
            (str(r.get("kind") if r.get("kind") in ARMS else (r.get("cluster") or {}).get("worker_kind") or "cpu"),
             str(r["arm"].get("status")), str(r["arm"].get("reason")))
            for r in content.get("runs") or []
            if isinstance(r.get("arm"), dict) and not ok(r["arm"]) and r["arm"].get("reason")
        ]  # fmt: skip
    arms = content.get("arms") if isinstance(content.get("arms"), dict) else {}
    return [(a, str(arm.get("status")), str(arm.get("reason"))) for a, arm in arms.items()
            if isinstance(arm, dict) and not ok(arm) and arm.get("reason")]  # fmt: skip


def _records(n: int) -> str:
    return f"{n} record{'s' * (n != 1)}"


def _which(entries: list[Entry], named: int = 4) -> str:
    """The records a line applies to: by label when they are at most ``named``, else counted by kind."""
    if len(entries) <= named:
        return ", ".join(e.label for e in entries)
    kinds = Counter(e.noun for e in entries)
    return ", ".join(f"{n} {noun[n != 1]}" for noun, n in kinds.most_common())


def measured_on(entries: list[Entry]) -> list[str]:
    """The paragraphs said once for the whole page: the machine(s), the code, how loaded the
    machine was, and each reason an arm did not run with the records it applies to."""
    machines: dict[str, list[Entry]] = {}
    shas: Counter[str] = Counter()
    loads: list[float] = []
    for e in entries:
        env = e.content.get("environment")
        if isinstance(env, dict) and env:
            machines.setdefault(_machine(env), []).append(e)
            load = env.get("load_average")
            if isinstance(load, list) and load and is_number(load[0]):
                loads.append(float(load[0]))
        if _sha(e.content) and e.kind != "experiments":
            shas[_sha(e.content)] += 1
    out = []
    recorded = [e for e in entries if e.kind != "experiments"]  # a snapshot measures nothing itself
    if len(machines) == 1:
        [(machine, those)] = machines.items()
        out.append(f"Machine: {machine} ({'every record' if len(those) >= len(recorded) else _records(len(those))}).")
    for machine, those in machines.items() if len(machines) > 1 else ():
        out.append(f"Machine: {machine}: {_which(those)}.")
    if shas:
        out.append("Code: " + "; ".join(f"git {sha} ({_records(n)})" for sha, n in shas.most_common()) + ".")
    if loads:
        span = f"{min(loads):.2f}" if min(loads) == max(loads) else f"{min(loads):.2f} to {max(loads):.2f}"
        out.append(f"1-minute load average when each benchmark ended: {span}.")
    reasons: dict[tuple[str, str, str], list[Entry]] = {}
    for e in entries:
        for arm, status, reason in _reasons(e):
            key = (arm, status, reason)
            if e not in reasons.setdefault(key, []):
                reasons[key].append(e)
    for (arm, status, reason), those in sorted(reasons.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        out.append(f"{ARM_NAMES.get(arm, arm)} {status} in {_which(those, named=0)}: {reason}")
    return out


def arms_that_ran(entries: list[Entry]) -> list[str]:
    """The arms with a metric in any summary row: the columns the summary gives each metric."""
    return [a for a in ARMS if any(is_number(v.get(a)) for e in entries for v in e.metrics.values())] or ["cpu"]


def summary_table(entries: list[Entry]) -> tuple[list[str], list[list[Any]]]:
    """The summary's header and rows: one row per record (experiments snapshots left out), a
    column per metric and arm, so that AUC and RMSE never share a column."""
    shown = [e for e in entries if e.kind != "experiments"]
    metrics = list(dict.fromkeys(m for e in shown for m in e.metrics))
    arms = arms_that_ran(shown)
    header = ["started", "kind", "data", "rows", "devices", "speedup", "speedup of"]
    header += [
        f"{metric_name(m)} {ARM_NAMES[a]}" if len(arms) > 1 else f"{metric_name(m)} ({ARM_NAMES[a]})"
        for m in metrics
        for a in arms
    ]
    header.append("parity")
    rows = []
    for e in shown:
        when = e.started
        row: list[Any] = [f"{when:%Y-%m-%d %H:%M}" if when else "", e.kind_text, e.label, e.rows, e.devices]
        row += [e.speedup, e.speedup_note if e.speedup_note else ""]
        for m in metrics:
            for a in arms:
                value = (e.metrics.get(m) or {}).get(a, "") if m in e.metrics else ""
                row.append(value if value is not None else "")
        row.append(e.parity)
        rows.append(row)
    return header, rows

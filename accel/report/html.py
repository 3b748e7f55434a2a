"""``accel report DIR``: one self-contained HTML page and a Markdown summary from result files.

It reads every ``*.json`` under DIR and recognises:

- run records of ``accel run`` (``workflow`` + ``arms``): seconds per stage and arm, speedups, parity;
- search records of ``accel hpo`` (``"kind": "hpo"``): trials, the default against the tuned model;
- ``accel bench`` results (``benchmark``: ``db_groupby``, ``db_join``, ``models``, ``crossover``)
  and the overhead benchmarks of ``benchmarks/`` (``groupby_overhead``, ``flights_overhead``);
- scaling results (``"benchmark": "scaling"``, rows of workers / kind / stage / seconds /
  speedup_vs_1 / efficiency / metric) and experiment (HPO) results (``"benchmark":
  "experiments"``, rows of name / metric / seconds / peak_mb / pareto), written by other parts of
  accel.

A section appears only when files of its kind exist. Plots are PNGs drawn with matplotlib
(Agg, no display needed) and embedded as base64, so the page is one file that opens anywhere.
Numbers are shown with 4 significant digits; NaN (an arm that did not run) shows as ``n/a``.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2

from accel.errors import AccelError
from accel.record import loads as record_loads

KINDS = (
    "compare",
    "run",
    "hpo",
    "db_groupby",
    "db_join",
    "groupby_overhead",
    "flights_overhead",
    "models",
    "crossover",
    "scaling",
    "experiments",
)

log = logging.getLogger(__name__)


@functools.cache
def templates() -> jinja2.Environment:
    """The page and summary templates (package data in ``accel/report/templates``): HTML autoescaped,
    Markdown not, and an unknown name in a template is an error rather than an empty string."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("accel.report", "templates"),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "htm", "html.j2"), disabled_extensions=("md", "md.j2"), default=True
        ),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@dataclass
class Collected:
    """The result files found, by kind, each as ``(path, content)``, oldest first."""

    by_kind: dict[str, list[tuple[Path, dict]]] = field(default_factory=lambda: {k: [] for k in KINDS})
    ignored: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.by_kind.values())


def kind_of(content: Any) -> str | None:
    if not isinstance(content, dict):
        return None
    if content.get("kind") in ("compare", "hpo") and "arms" in content:
        return content["kind"]
    if "workflow" in content and "arms" in content:
        return "run"
    bench = content.get("benchmark")
    return bench if bench in KINDS else None


def collect(folder: Path) -> Collected:
    """Every recognised JSON file under ``folder`` (recursively)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise AccelError(f"report folder {str(folder)!r} does not exist")
    found = Collected()
    from accel.files import regular_files

    files, others = regular_files(folder, "*.json")  # a FIFO or a link to a device is never opened
    found.ignored += [(p, why) for p, why in others if not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    for path in files:
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        try:
            content = record_loads(path.read_text())  # nulls listed in the record read back as NaN
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            found.ignored.append((path, f"not readable JSON ({type(exc).__name__})"))
            continue
        except ValueError as exc:  # record.loads: nested too deeply
            found.ignored.append((path, str(exc)))
            continue
        kind = kind_of(content)
        if kind is None:
            found.ignored.append((path, "not a run record or benchmark result"))
            continue
        found.by_kind[kind].append((path, content))
    return found


# --------------------------------------------------------------------------- formatting


def num(value: Any, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; ``n/a`` for NaN, ``—`` for missing."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "inf"
        return f"{value:.{digits}g}"
    return str(value)


def checksum_text(values: Sequence[float]) -> str:
    """Checksums with 10 significant digits: they are there to be compared."""
    return "; ".join(num(v, 10) for v in values) or "—"


def _ok(arm: dict | None) -> bool:
    return bool(arm) and arm.get("status") == "ok"


class Section:
    """One part of the page: its blocks (paragraphs, tables, figures) in order, laid out as HTML
    and as Markdown by the templates in ``accel/report/templates``."""

    def __init__(self, anchor: str, title: str):
        self.anchor, self.title = anchor, title
        self.blocks: list[dict[str, Any]] = []

    def para(self, text: str) -> None:
        self.blocks.append({"kind": "para", "text": text})

    def table(self, caption: str, header: Sequence[str], rows: Iterable[Sequence[Any]], table_id: str) -> None:
        rows = [[num(c) if not isinstance(c, str) else c for c in r] for r in rows]
        self.blocks.append({"kind": "table", "id": table_id, "caption": caption, "header": list(header), "rows": rows})

    def figure(self, fig: Any, alt: str) -> None:
        self.blocks.append({"kind": "figure", "alt": alt, "png": png(fig)})

    def plot(
        self,
        fig: Any,
        ax: Any,
        alt: str,
        *,
        log: str = "",
        xlabel: str = "",
        ylabel: str = "",
        title: str = "",
        title_size: int | None = None,
        legend_size: int | None = None,
    ) -> None:
        """Finish ``ax`` (log scales on the axes named in ``log``, labels, title, legend) and add ``fig``."""
        for axis in log:
            getattr(ax, f"set_{axis}scale")("log")
        if xlabel:
            ax.set_xlabel(xlabel)
        if ylabel:
            ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title, **({"fontsize": title_size} if title_size else {}))
        ax.legend(**({"fontsize": legend_size} if legend_size else {}))
        self.figure(fig, alt)


def _each(section: Section, items: list[tuple[Path, dict]]) -> Iterable[tuple[int, Path, dict]]:
    """Each file of a section with its index, after the paragraphs on where it was measured."""
    for i, (path, content) in enumerate(items):
        _meta(section, path, content)
        yield i, path, content


def png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    # Titles and labels hold names from the records (workflows, run ids, tables): a '$' in them
    # is text, not the start of a formula (mathtext would fail on an odd number of them).
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt


def _tolerant(builder: Any) -> Any:
    """A section builder that sets aside the files whose content is not the shape it reads.

    The builder runs on all the files of its kind; if it fails, each file is tried alone and
    those that fail are listed as not used (``section.rejected``), as ``accel experiments``
    lists what it skipped; the section is built from the others.
    """

    @functools.wraps(builder)
    def build(*args: Any) -> Section:
        *lead, items = args
        try:
            return builder(*lead, items)
        except Exception:  # noqa: BLE001 - any shape error in any file: find which
            log.debug("%s failed on its %d files together; trying them one by one", builder.__name__, len(items), exc_info=True)
        good, rejected = [], []
        for item in items:
            try:
                builder(*lead, [item])
                good.append(item)
            except Exception as exc:  # noqa: BLE001
                detail = (str(exc).strip().splitlines() or [""])[0][:80]
                rejected.append((item[0], f"not the shape of its kind ({type(exc).__name__}: {detail})".replace(": )", ")")))
                log.debug("%s: %s not used", builder.__name__, item[0], exc_info=True)
        _plt().close("all")
        section = builder(*lead, good)
        section.rejected = rejected
        section.empty = not good
        return section

    return build


def _env_line(content: dict) -> str:
    env = content.get("environment") or {}
    cores = env.get("cores") or {}
    gpus = ", ".join(f"{g.get('name')} ({g.get('memory_gb')} GB)" for g in env.get("gpus") or []) or "no GPU"
    sha = (env.get("git_sha") or content.get("git_sha") or "")[:10] or "unknown"
    load = env.get("load_average")
    busy = f"; load average {load[0]} / {load[1]} / {load[2]} (1/5/15 min) when it ended" if load else ""
    return (
        f"Machine: {env.get('cpu_model', 'unknown CPU')}, {cores.get('available', '?')} cores available "
        f"({cores.get('physical', '?')} physical / {cores.get('logical', '?')} logical); {gpus}; git {sha}{busy}."
    )


def _meta(section: Section, path: Path, content: dict) -> None:
    section.para(f"{path.name} — {_env_line(content)}")
    fair = content.get("fairness")
    if isinstance(fair, dict) and fair.get("line"):
        section.para(fair["line"])
    gpu = content.get("gpu")
    if isinstance(gpu, dict) and gpu.get("status") != "ok" and gpu.get("reason"):
        section.para(f"GPU arm {gpu.get('status')}: {gpu['reason']}")


# --------------------------------------------------------------------------- sections


def _runs(items: list[tuple[Path, dict]]) -> Section:
    s = Section("runs", "Workflow runs: seconds and speedup per stage")
    plt = _plt()
    for i, (path, rec) in enumerate(items):
        arms = rec.get("arms", {})
        gpu, cpu = arms.get("gpu", {}), arms.get("cpu", {})
        stages = list((cpu.get("stages") or gpu.get("stages") or {}).keys())
        speed = rec.get("speedup", {})
        rows = []
        for stage in [*stages, "total"]:
            g = gpu.get("total_seconds") if stage == "total" else (gpu.get("stages") or {}).get(stage)
            c = cpu.get("total_seconds") if stage == "total" else (cpu.get("stages") or {}).get(stage)
            rows.append(
                [
                    stage,
                    g if _ok(gpu) else gpu.get("status", "—"),
                    c if _ok(cpu) else cpu.get("status", "—"),
                    speed.get(stage, math.nan),
                ]
            )
        s.table(
            f"{rec.get('workflow')} run {rec.get('run_id', path.stem)}",
            ["stage", "GPU arm (s)", "CPU arm (s)", "speedup"],
            rows,
            f"run-{i}",
        )
        parity = rec.get("parity") or {}
        s.para(
            f"Parity: {parity.get('metric')} GPU {num(parity.get('gpu'))}, CPU {num(parity.get('cpu'))}, "
            f"tolerance {num(parity.get('tolerance'))}, agree: {num(parity.get('ok')) if parity.get('ok') is not None else 'not checked'}."
        )
        for arm_name, arm in (("GPU", gpu), ("CPU", cpu)):
            if not _ok(arm) and arm.get("reason"):
                s.para(f"{arm_name} arm {arm.get('status')}: {arm['reason']}")
        s.para(_env_line(rec))
    for path, rec in items[-4:]:
        arms = rec.get("arms", {})
        stages = list((arms.get("cpu", {}).get("stages") or {}).keys())
        if not stages:
            continue
        fig, ax = plt.subplots(figsize=(7, 3))
        width = 0.4
        for arm_name, offset in (("gpu", -width / 2), ("cpu", width / 2)):
            arm = arms.get(arm_name, {})
            if _ok(arm):
                ax.bar(
                    [j + offset for j in range(len(stages))],
                    [arm["stages"].get(st, 0) for st in stages],
                    width,
                    label=f"{arm_name.upper()} arm",
                )
        ax.set_xticks(range(len(stages)), stages)
        title = f"{rec.get('workflow')} — {rec.get('run_id', path.stem)}"
        s.plot(fig, ax, f"seconds per stage of run {rec.get('run_id')}", ylabel="seconds", title=title)
    return s


def _hpo(items: list[tuple[Path, dict]]) -> Section:
    """``accel hpo`` records: the search, the default against the tuned model, the final model per arm."""
    s = Section("hpo", "Hyperparameter searches: the default model against the tuned one")
    rows = []
    for path, rec in items:
        study, trials = rec.get("study") or {}, rec.get("trials") or {}
        metric = study.get("metric") or (rec.get("improvement") or {}).get("metric")
        baseline = ((rec.get("baseline") or {}).get("metrics") or {}).get(metric)
        final = ((rec.get("final") or {}).get("metrics") or {}).get(metric)
        arms = rec.get("arms") or {}
        gpu, cpu = arms.get("gpu") or {}, arms.get("cpu") or {}
        rows.append(
            [
                study.get("name", path.stem),
                f"{rec.get('workflow')} / {rec.get('model')}",
                f"{trials.get('complete', 0)} of {trials.get('total', 0)} ({trials.get('pruned', 0)} pruned, {trials.get('failed', 0)} failed)",
                metric,
                baseline if baseline is not None else math.nan,
                final if final is not None else math.nan,
                gpu.get("seconds") if _ok(gpu) else gpu.get("status", "—"),
                cpu.get("seconds") if _ok(cpu) else cpu.get("status", "—"),
                (rec.get("speedup") or {}).get("final_model", math.nan),
            ]
        )
    s.table(
        "Each search: trials, the metric of the default and of the tuned model (hold-out), and the tuned model's training per arm",
        ["study", "workflow / model", "trials", "metric", "default", "tuned", "GPU arm (s)", "CPU arm (s)", "speedup"],
        rows,
        "hpo-searches",
    )
    return s


def _compare(items: list[tuple[Path, dict]]) -> Section:
    s = Section("compare", "Your scripts: CPU vs cudf.pandas / cuml.accel (accel compare)")
    for i, (path, rec) in enumerate(items):
        arms = rec.get("arms") or {}
        rows = []
        for name in ("cpu", "gpu"):
            arm = arms.get(name) or {}
            warm = arm.get("warm") or {}
            rows.append(
                [
                    name.upper(),
                    arm.get("status", "—") if _ok(arm) else f"{arm.get('status', '—')}: {arm.get('reason') or ''}",
                    arm.get("cold_seconds", math.nan),
                    warm.get("median", math.nan),
                    arm.get("peak_host_mb", math.nan),
                    arm.get("peak_device_mb") if arm.get("peak_device_mb") is not None else "—",
                ]
            )
        program = rec.get("program") or {}
        s.table(
            f"{Path(str(program.get('path', '?'))).name} {' '.join(program.get('args') or [])} — {path.name}",
            ["arm", "status", "cold (s)", "warm median (s)", "peak RSS (MB)", "peak device (MB)"],
            rows,
            f"compare-{i}",
        )
        speed = (rec.get("speedup") or {}).get("wall_cold", math.nan)
        parity = rec.get("parity") or {}
        out = parity.get("stdout") or {}
        agree = parity.get("agree")
        s.para(
            f"Speedup (CPU / GPU, cold wall): {num(speed)}. Parity: "
            + ("not compared" if agree is None else ("agree" if agree else "differ"))
            + (
                f" ({out.get('numbers_agree')}/{out.get('numbers_compared')} printed numbers within rtol {num(parity.get('rtol'))})"
                if out
                else ""
            )
            + "."
        )
        falls = rec.get("fallbacks") or []
        if falls:
            s.table(
                "Where the GPU arm's time went (CPU fallbacks first)",
                ["accelerator", "function", "GPU calls", "GPU s", "CPU calls", "CPU s"],
                [
                    [f["accelerator"], f["function"], f["gpu_calls"], f["gpu_seconds"], f["cpu_calls"], f["cpu_seconds"]]
                    for f in falls
                ],
                f"compare-fallbacks-{i}",
            )
    return s


def _db(kind: str, items: list[tuple[Path, dict]]) -> Section:
    name = kind.removeprefix("db_")
    s = Section(f"db-{name}", f"db-benchmark {name}: seconds per question, answers checked across arms")
    plt = _plt()
    for i, path, res in _each(s, items):
        header = ["q", "question", "CPU run1", "CPU run2", "CPU median", "GPU run1", "GPU run2", "GPU median", "speedup",
                  "rows", "CPU checksum", "GPU checksum", "answers"]  # fmt: skip
        rows = []
        for q in res.get("questions", []):
            c, g = q.get("cpu", {}), q.get("gpu", {})
            agree = {True: "agree", False: "DISAGREE", None: "not compared"}[q.get("agree")]
            rows.append([
                q["question"], q.get("title", ""),
                c.get("run1") if _ok(c) else c.get("status", "—"), c.get("run2") if _ok(c) else "—", c.get("median") if _ok(c) else "—",
                g.get("run1") if _ok(g) else g.get("status", "—"), g.get("run2") if _ok(g) else "—", g.get("median") if _ok(g) else "—",
                q.get("speedup", math.nan), c.get("rows", g.get("rows")),
                checksum_text(c.get("checksum", [])), checksum_text(g.get("checksum", [])),
                agree,
            ])  # fmt: skip
        s.table(f"{path.name}: {name} questions", header, rows, f"db-{name}-{i}")
        engines = res.get("engines") or {}
        if engines:
            eh = ["q", "pandas arm run2"] + [f"{e} run2" for e in engines] + [f"{e} answers" for e in engines]
            erows = []
            for q in res.get("questions", []):
                row: list[Any] = [q["question"], q["cpu"].get("run2") if _ok(q.get("cpu")) else "—"]
                agrees = []
                for eng in engines.values():
                    a = (eng.get("questions") or {}).get(q["question"], {})
                    row.append(a.get("run2") if _ok(a) else (a.get("status") or eng.get("status", "—")))
                    agrees.append({True: "agree", False: "DISAGREE", None: "—"}[a.get("agree")])
                erows.append(row + agrees)
            s.table(
                f"{path.name}: the same questions on other CPU engines (context, all cores)",
                eh,
                erows,
                f"db-{name}-{i}-engines",
            )
            s.para(
                "Engine threads: "
                + ", ".join(
                    f"{e} {eng.get('threads', '?')} ({eng.get('version', '?')})" for e, eng in engines.items() if _ok(eng)
                )
                + "; pandas runs groupby on one thread."
            )
        questions = res.get("questions", [])
        if questions:
            fig, ax = plt.subplots(figsize=(8, 3.2))
            series = [("pandas (CPU arm)", [q["cpu"].get("run2") if _ok(q.get("cpu")) else None for q in questions])]
            if any(_ok(q.get("gpu")) for q in questions):
                series.append(("cuDF (GPU arm)", [q["gpu"].get("run2") if _ok(q.get("gpu")) else None for q in questions]))
            for e, eng in engines.items():
                series.append((e, [((eng.get("questions") or {}).get(q["question"]) or {}).get("run2") for q in questions]))
            width = 0.8 / len(series)
            for k, (label, values) in enumerate(series):
                xs = [j + (k - (len(series) - 1) / 2) * width for j in range(len(questions))]
                ax.bar(xs, [v if v is not None else 0 for v in values], width, label=label)
            ax.set_xticks(range(len(questions)), [q["question"] for q in questions])
            s.plot(fig, ax, f"{name} question times", log="y", ylabel="seconds (run 2, log)",
                   title=f"db-benchmark {name}, {path.stem}", title_size=9, legend_size=8)  # fmt: skip
    return s


def _overhead(items: list[tuple[Path, dict]]) -> Section:
    s = Section("overhead", "Overhead against the benchmark's own pandas solution")
    for i, path, res in _each(s, items):
        if res.get("dispatch_overhead_seconds") is not None:
            per_call = num(res["dispatch_overhead_seconds"] * 1e6)
            s.para(f"accel's timed call adds {per_call} µs to each run (measured on a no-op).")
        rows = [
            [q["question"], q.get("title", ""), q.get("accel_median"), q.get("plain_median"), q.get("ratio"), q.get("ratio_min"),
             num(q.get("checksums_equal")), q.get("max_rel_diff")]
            for q in res.get("questions", [])
        ]  # fmt: skip
        s.table(
            f"{path.name}: accel pandas arm vs plain pandas ({num(res.get('rows'))} rows, K={num(res.get('k'))}; target ratio <= {num(res.get('target'))})",
            ["q", "question", "accel median (s)", "plain median (s)", "ratio", "min ratio", "checksums equal", "max rel diff"],
            rows,
            f"overhead-{i}",
        )
    return s


def _flights_overhead(items: list[tuple[Path, dict]]) -> Section:
    s = Section("flights-overhead", "Flights workflow: accel CPU arm vs a hand-written script")
    rows = []
    for path, res in items:
        med, auc = res.get("median_seconds") or {}, res.get("auc") or {}
        rows.append(
            [
                path.name,
                med.get("accel"),
                med.get("handwritten"),
                res.get("ratio"),
                auc.get("accel"),
                auc.get("handwritten"),
            ]
        )
    s.table(
        "median seconds and AUC",
        ["file", "accel (s)", "hand-written (s)", "ratio", "AUC accel", "AUC hand-written"],
        rows,
        "flights-overhead",
    )
    return s


def _models(items: list[tuple[Path, dict]]) -> Section:
    s = Section("models", "Models: scikit-learn / XGBoost CPU vs cuML / XGBoost CUDA")
    plt = _plt()
    for i, path, res in _each(s, items):
        data = res.get("data", {})
        rows = []
        for r in res.get("models", []):
            c, g = r["cpu"], r["gpu"]
            rows.append([
                r["model"], r["metric"],
                c["fit"]["median"] if _ok(c) else c["status"], g["fit"]["median"] if _ok(g) else g["status"], r.get("fit_speedup", math.nan),
                c["predict"]["median"] if _ok(c) else c["status"], g["predict"]["median"] if _ok(g) else g["status"], r.get("predict_speedup", math.nan),
                c.get("quality") if _ok(c) else "—", g.get("quality") if _ok(g) else "—",
            ])  # fmt: skip
        s.table(
            f"{path.name}: {num(data.get('rows'))} rows x {num(data.get('features'))} features, median seconds",
            [
                "model",
                "metric",
                "CPU fit",
                "GPU fit",
                "fit speedup",
                "CPU predict",
                "GPU predict",
                "predict speedup",
                "CPU quality",
                "GPU quality",
            ],  # fmt: skip
            rows,
            f"models-{i}",
        )
        models = res.get("models", [])
        if models:
            fig, ax = plt.subplots(figsize=(8, 3.2))
            for k, arm in enumerate(("cpu", "gpu")):
                vals = [m[arm]["fit"]["median"] if _ok(m[arm]) else 0 for m in models]
                if any(vals):
                    ax.bar([j + (k - 0.5) * 0.4 for j in range(len(models))], vals, 0.4, label=f"{arm.upper()} arm")
            ax.set_xticks(range(len(models)), [m["model"].replace("_", "\n") for m in models], fontsize=7)
            s.plot(fig, ax, "fit seconds per model", log="y", ylabel="fit seconds (median, log)",
                   title=f"models, {path.stem}", title_size=9)  # fmt: skip
    return s


def _crossover(items: list[tuple[Path, dict]]) -> Section:
    s = Section("crossover", "Crossover: from how many rows the GPU arm wins")
    plt = _plt()
    for i, path, res in _each(s, items):
        ops = res.get("operations", [])
        for j, op in enumerate(ops):
            rows = [
                [p["rows"], p["cpu"].get("median") if _ok(p["cpu"]) else p["cpu"]["status"],
                 p["gpu"].get("median") if _ok(p["gpu"]) else p["gpu"]["status"], p.get("speedup", math.nan)]
                for p in op["points"]
            ]  # fmt: skip
            s.table(
                f"{path.name}: {op['operation']} ({op.get('description', '')}), median seconds",
                ["rows", "CPU", "GPU", "speedup"],
                rows,
                f"crossover-{i}-{j}",
            )
            if op.get("gpu_status") != "ok":
                s.para(f"{op['operation']}: crossover not measured, GPU arm {op.get('gpu_status')}: {op.get('gpu_reason')}")
            elif op.get("crossover_rows") is None:
                s.para(f"{op['operation']}: the GPU arm did not win at any size measured.")
            else:
                s.para(f"{op['operation']}: the GPU arm wins from {num(op['crossover_rows'])} rows on.")
        if ops:
            fig, ax = plt.subplots(figsize=(7, 3.5))
            for op in ops:
                for arm, style in (("cpu", "-o"), ("gpu", "--s")):
                    pts = [(p["rows"], p[arm]["median"]) for p in op["points"] if _ok(p[arm])]
                    if pts:
                        ax.plot(*zip(*pts), style, label=f"{op['operation']} {arm.upper()}")
            s.plot(fig, ax, "crossover curves", log="xy", xlabel="rows", ylabel="median seconds", legend_size=7)
    return s


def _scaling(items: list[tuple[Path, dict]]) -> Section:
    s = Section("scaling", "Scaling: speedup and efficiency by number of workers")
    plt = _plt()
    for i, path, res in _each(s, items):
        rows = res.get("rows", [])
        s.table(
            f"{path.name}: scaling",
            ["workers", "kind", "stage", "seconds", "speedup vs 1", "efficiency", "metric"],
            [
                [
                    r.get("workers"),
                    r.get("kind"),
                    r.get("stage"),
                    r.get("seconds"),
                    r.get("speedup_vs_1"),
                    r.get("efficiency"),
                    r.get("metric"),
                ]
                for r in rows
            ],
            f"scaling-{i}",
        )
        if rows:
            fig, ax = plt.subplots(figsize=(6, 3.5))
            groups: dict[tuple, list] = {}
            for r in rows:
                groups.setdefault((r.get("kind"), r.get("stage")), []).append((r.get("workers"), r.get("speedup_vs_1")))
            top = 1
            for (kind, stage), pts in groups.items():
                pts = sorted(p for p in pts if p[0] is not None and p[1] is not None)
                if pts:
                    ax.plot(*zip(*pts), "-o", label=f"{kind} {stage}")
                    top = max(top, max(p[0] for p in pts))
            ax.plot([1, top], [1, top], ":", color="grey", label="ideal")
            s.plot(fig, ax, "scaling curve", xlabel="workers", ylabel="speedup vs 1 worker", legend_size=7)
    return s


@_tolerant
def _experiments(items: list[tuple[Path, dict]]) -> Section:
    """Per experiments result: the rows, and one Pareto front per comparable group.

    A front is only meaningful between rows scored alike (the same table, split and metric on
    the same rows: the ``group`` of :mod:`accel.hpo.experiments`), so each group's front is named
    and drawn on its own, and groups with different metrics (AUC, RMSE) get their own axes.
    """
    s = Section("experiments", "Experiments: accuracy against time, and the Pareto front of each comparable group")
    plt = _plt()
    for i, path, res in _each(s, items):
        rows = res.get("rows", [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise TypeError("rows is not a list of rows")
        rows = sorted(rows, key=lambda r: (r.get("seconds") is None, r.get("seconds") or 0))
        s.table(
            f"{path.name}: experiments",
            ["name", "metric", "seconds", "peak MB", "pareto", "group"],
            [
                [
                    r.get("name"),
                    r.get("metric"),
                    r.get("seconds"),
                    r.get("peak_mb"),
                    "yes" if r.get("pareto") else "no",
                    str(r.get("group") or "all rows"),
                ]
                for r in rows
            ],  # fmt: skip
            f"experiments-{i}",
        )
        groups: dict[str, list[dict]] = {}
        for r in rows:
            groups.setdefault(str(r.get("group") or "all rows"), []).append(r)
        for group, members in sorted(groups.items()):
            front = [str(r.get("name")) for r in members if r.get("pareto")]
            s.para(f"Pareto front of {group}: {', '.join(front) if front else 'none (no row with both a metric and a time)'}.")
        pts = [r for r in rows if isinstance(r.get("seconds"), (int, float)) and isinstance(r.get("metric"), (int, float))]
        if not pts:
            continue
        metrics = sorted({str(r.get("metric_name") or "metric") for r in pts})
        fig, axes = plt.subplots(1, len(metrics), figsize=(6 * len(metrics), 3.5), squeeze=False)
        for ax, metric in zip(axes[0], metrics):
            for k, (group, members) in enumerate(sorted(groups.items())):
                mine = [r for r in members if r in pts and str(r.get("metric_name") or "metric") == metric]
                if not mine:
                    continue
                color = f"C{k % 10}"
                ax.scatter([r["seconds"] for r in mine], [r["metric"] for r in mine], color=color, alpha=0.5, s=20)
                front = sorted((r for r in mine if r.get("pareto")), key=lambda r: r["seconds"])
                if front:
                    ax.plot([r["seconds"] for r in front], [r["metric"] for r in front], "-o", color=color, label=group[:60])
            ax.set_xscale("log")
            ax.set_xlabel("seconds")
            ax.set_ylabel(metric)
            ax.set_title(f"{metric}: each group's Pareto front", fontsize=9)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=6)
        s.figure(fig, f"accuracy against time, one Pareto front per group ({len(groups)} groups)")
    return s


# Every section builder sets aside the files of its kind whose content is not the shape it reads.
_compare, _runs, _hpo, _db, _overhead, _flights_overhead, _models, _crossover, _scaling = map(
    _tolerant, (_compare, _runs, _hpo, _db, _overhead, _flights_overhead, _models, _crossover, _scaling)
)


def render(found: Collected, folder: Path) -> tuple[str, str]:
    """The HTML page and the Markdown summary for what was found."""
    sections: list[Section] = []
    by = found.by_kind
    if by["compare"]:
        sections.append(_compare(by["compare"]))
    if by["run"]:
        sections.append(_runs(by["run"]))
    if by["hpo"]:
        sections.append(_hpo(by["hpo"]))
    for kind in ("db_groupby", "db_join"):
        if by[kind]:
            sections.append(_db(kind, by[kind]))
    if by["groupby_overhead"]:
        sections.append(_overhead(by["groupby_overhead"]))
    if by["flights_overhead"]:
        sections.append(_flights_overhead(by["flights_overhead"]))
    if by["models"]:
        sections.append(_models(by["models"]))
    if by["crossover"]:
        sections.append(_crossover(by["crossover"]))
    if by["scaling"]:
        sections.append(_scaling(by["scaling"]))
    if by["experiments"]:
        sections.append(_experiments(by["experiments"]))

    for section in sections:
        found.ignored += getattr(section, "rejected", [])
    sections = [s for s in sections if not getattr(s, "empty", False)]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    context = {
        "intro": (
            f"{found.count} result files from {folder} (generated {now}). Every number here was measured; "
            "an arm that did not run shows its status and reason, and its speedup as n/a."
        ),
        "sections": sections,
        "ignored": [(p.name, why) for p, why in found.ignored],
    }
    env = templates()
    page = env.get_template("report.html.j2").render(context)
    md = env.get_template("report.md.j2").render(context)
    return page, md.rstrip() + "\n"


def build_report(folder: Path, out: Path | None = None, overwrite: bool = False) -> tuple[Path, str]:
    """Write the HTML page and return its path and the Markdown summary.

    ``out`` given: that file, refused if it exists unless ``overwrite``. Not given:
    ``DIR/report.html``, or the next free ``report-NNN.html`` (accel chose the name).
    """
    from accel.files import NUMBER, exists_policy, refuse_existing, write_new

    exists = NUMBER if out is None else exists_policy(overwrite)
    out = Path(out) if out is not None else Path(folder) / "report.html"
    if out.suffix.lower() not in (".html", ".htm"):
        raise AccelError(f"the report is HTML: name it .html, not {out.name!r}")
    if exists != NUMBER:
        refuse_existing(out, "the report", exists)  # before reading anything
    found = collect(folder)
    if not found.count:
        raise AccelError(f"no run records or benchmark results in {str(folder)!r} (looked for *.json)")
    page, markdown = render(found, Path(folder))
    out = write_new(out, page.encode("utf-8"), "the report", "choose another --out", exists=exists)
    return out, markdown

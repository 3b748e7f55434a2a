"""Your own table, whole process: ``accel run --data`` (CPU arm) against a hand-written script.

Generated tables of 1e5, 1e6 (and, with ``--rows``, 3e6) rows × 20 columns: ten numeric with
5% missing, ten strings of 5–500 values, a binary target. Each size is written once as CSV
(untimed, in a process of its own). Then, alternately, each process is timed from start to exit, with its peak RSS
(GNU time's ``%M`` where ``/usr/bin/time`` exists, else ``wait4``'s ``ru_maxrss``):

- ``accel run --data FILE --target y --device cpu`` (XGBoost 300 rounds, depth 8, the defaults);
- a hand-written pandas + XGBoost script: ``read_csv``, strings ``astype("category")``, the same
  split (accel's own rows, passed in), ``XGBClassifier(n_estimators=300, max_depth=8,
  learning_rate=0.1, tree_method="hist", enable_categorical=True)`` on every core.

Both get ``OMP_WAIT_POLICY=PASSIVE`` (what accel sets for itself), so the ratio is accel's work.

Prints per size: wall ratio accel / hand-written (target <= 1.3), both AUCs (accel no worse than
the script's - 0.005), accel's own breakdown of its wall (record ``wall``), and the second run of
the same table, whose encoding probe comes from the cache. With ``--budget-run 3e6:400MB`` it also
runs ``--memory-budget 400MB --batch-rows auto`` at that size and prints the peak RSS against
the interpreter floor (Python + the libraries loaded) + 1.2 × budget, or the line with which
accel refused the budget before any work (several runs: ``3e6:400MB,3e6:800MB``).

    python benchmarks/bench_own_table_speed.py --rows 1e5,1e6 --repeats 2
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np
from common import Case, Config, child_env, main, run_process, times

HANDWRITTEN = r"""
import json, os, sys, time
import numpy as np, pandas as pd, xgboost as xgb
from sklearn.metrics import roc_auc_score
path, split_file = sys.argv[1], sys.argv[2]
df = pd.read_csv(path, engine="pyarrow")
for c in df.columns:
    if not pd.api.types.is_numeric_dtype(df[c]):
        df[c] = df[c].astype("category")
split = np.load(split_file)
train, test = split["train"], split["test"]
X, y = df.drop(columns=["y"]), df["y"].to_numpy()
model = xgb.XGBClassifier(n_estimators=300, max_depth=8, learning_rate=0.1, tree_method="hist",
                          enable_categorical=True, n_jobs=os.cpu_count(), random_state=42)
model.fit(X.iloc[train], y[train])
auc = roc_auc_score(y[test], model.predict_proba(X.iloc[test])[:, 1])
print(json.dumps({"auc": float(auc)}))
"""


def generate_apart(n: int, path: Path, env: dict[str, str]) -> None:
    """The own table (:func:`accel_fixtures.tables.write_own_table`) written by a process of its
    own, so that this one stays small (its children's peaks are not inflated by a table it once held)."""
    run_process([sys.executable, "-m", "accel_fixtures.tables", str(n), str(path)], env=env).check()


def arguments(parser):
    parser.add_argument(
        "--budget-run", help="SIZE:BUDGET[,SIZE:BUDGET...], e.g. 3e6:400MB: a streamed run's peak RSS against the budget"
    )
    parser.add_argument(
        "--no-reference", action="store_true", help="no in-memory run beside each --budget-run (its AUC and boosting seconds)"
    )
    parser.add_argument("--tables", type=Path, help="folder to keep generated tables in (default: a temporary one)")  # fmt: skip


def cases(bench):
    tables = bench.args.tables or bench.scratch
    tables.mkdir(parents=True, exist_ok=True)
    # Both processes get the OpenMP wait policy accel sets for itself, so that the ratio measures
    # accel's work and not spinning threads (benchmarks/bench_omp_wait_policy.py measures that).
    env = child_env(ACCEL_CACHE_DIR=str(bench.scratch / "cache"), OMP_WAIT_POLICY="PASSIVE")
    for n in bench.args.rows:
        path = tables / f"table-{n}.csv"
        if not path.exists():
            print(f"== {n:,} rows: generating (untimed)", flush=True)
            generate_apart(n, path, env)
        # accel first in the first round: the hand-written script needs accel's split.
        yield Case(f"{n:,} rows", (n, path, env, bench.scratch / f"split-{n}.npz"), ("accel", "handwritten"))
    specs = [s.strip() for s in (bench.args.budget_run or "").split(",") if s.strip()]
    budgets = [_budget_run(spec, bench.scratch, env, tables, reference=not bench.args.no_reference) for spec in specs]
    bench.record.update(budget_run=budgets[0] if budgets else None, budget_runs=budgets)


def measure(bench, case, impl):
    """One process from start to exit, with its peak RSS."""
    n, path, env, split = case.value
    if impl == "handwritten":
        done = run_process([sys.executable, "-c", HANDWRITTEN, str(path), str(split)], env=env, cwd=bench.scratch).check()
        return {"seconds": done.seconds, "peak_rss_mb": done.peak_bytes / 1e6, "auc": done.last_json()["auc"]}
    out = bench.fresh("runs")
    cmd = [sys.executable, "-m", "accel", "run", "--data", str(path), "--target", "y", "--device", "cpu", "--out", str(out)]
    done = run_process(cmd, env=env, cwd=bench.scratch).check()
    record = json.loads(next(out.glob("*.json")).read_text())
    if not split.exists():
        np.savez(split, **_split_from_accel(path, record))
    arm = record["arms"]["cpu"]
    return {"seconds": done.seconds, "peak_rss_mb": done.peak_bytes / 1e6, "auc": arm["metrics"]["auc"], "stages": arm["stages"],
            "wall": record["wall"], "probe": record["data"]["schema"].get("encoding_probe")}  # fmt: skip


def size(rows: list[dict], n: int) -> dict:
    """The runs of one table size: the ratio of the medians and both AUCs."""
    runs = [r for r in rows if r["case"] == f"{n:,} rows"]
    ratio = statistics.median(times(runs, "accel")) / statistics.median(times(runs, "handwritten"))
    aucs = {impl: [r["auc"] for r in runs if r["impl"] == impl] for impl in ("accel", "handwritten")}
    return {"rows": n, "runs": runs, "ratio": ratio, "auc": aucs}


def summary(result):
    lines = []
    for s in result["sizes"]:
        a, h = (statistics.median(times(s["runs"], impl)) for impl in ("accel", "handwritten"))
        auc_a, auc_h = s["auc"]["accel"][0], s["auc"]["handwritten"][0]
        first = next(r for r in s["runs"] if r["impl"] == "accel")
        w, probe = first["wall"], first["wall"]["parts"].get("encoding_probe")
        later = [r["wall"]["parts"].get("encoding_probe") for r in s["runs"] if r["impl"] == "accel"][1:]
        lines += [
            f"  {s['rows']:,} rows: accel {a:.2f} s, hand-written {h:.2f} s, ratio {s['ratio']:.3f} (target <= 1.3); "
            f"AUC accel {auc_a:.4f} vs {auc_h:.4f} (diff {auc_a - auc_h:+.4f}, target >= -0.005)",
            f"  accel's wall (first run): start-up {w['parts']['start_up']:.2f}, planning {w['parts']['planning']:.2f} "
            f"(read {w['planning'].get('read_on_host', 0):.2f}, schema {w['planning'].get('schema_inference', 0):.2f}), "
            f"encoding probe {probe or 0:.2f}, batch plan {w['parts']['batch_plan']:.2f}, stages "
            + ", ".join(f"{k} {v:.2f}" for k, v in first["stages"].items()),
            f"  encoding probe seconds: first run {probe or 0:.2f}, later runs {', '.join(f'{x or 0:.4f}' for x in later)} (cached)",
        ]  # fmt: skip
    return "\n".join(lines)


def _budget_table(size_text: str, tables: Path, env: dict[str, str]) -> tuple[Path, str, int | None]:
    """The table of a ``--budget-run``: a generated one (``3e6``: target ``y``) or the flights
    table replicated (``flights_x3``: bench_memory.replicated_flights, target ``delayed``)."""
    if size_text.startswith("flights_x"):
        copies = int(size_text[len("flights_x") :])
        path = tables / f"{size_text}.parquet"
        if not path.exists():
            print(f"== {size_text}: replicating flights (untimed)", flush=True)
            code = "import sys; from pathlib import Path; from bench_memory import replicated_flights; replicated_flights(Path(sys.argv[1]), int(sys.argv[2]))"
            run_process([sys.executable, "-c", code, str(path), str(copies)], env=env).check()
        return path, "delayed", None
    n = int(float(size_text))
    path = tables / f"table-{n}.csv"
    if not path.exists():
        print(f"== {n:,} rows: generating (untimed)", flush=True)
        generate_apart(n, path, env)
    return path, "y", n


def _budget_run(spec: str, tmp: Path, env: dict[str, str], tables: Path, reference: bool = True) -> dict:
    """``--budget-run SIZE:BUDGET``: a streamed run's peak RSS against the floor + 1.2 x budget,
    or the refusal accel printed before any work (the line and how long it took); beside it the
    same table in memory (no budget; skipped with ``--no-reference``): its AUC and boosting seconds."""
    from accel.memory import parse_size

    size_text, budget_text = spec.split(":")
    path, target, n = _budget_table(size_text, tables, env)
    floor_cmd = [sys.executable, "-c", "import accel.cli.main, pandas, pyarrow, xgboost, sklearn, psutil; "
                 "from accel.runner import paired_run"]  # fmt: skip
    floor = run_process(floor_cmd, env=env, cwd=tmp).peak_bytes
    budget_bytes = parse_size(budget_text, "--budget-run")
    out = tmp / f"budget-runs-{size_text}-{budget_text}"
    cmd = [sys.executable, "-m", "accel", "run", "--data", str(path), "--target", target, "--device", "cpu",
           "--memory-budget", budget_text, "--batch-rows", "auto", "--out", str(out)]  # fmt: skip
    done = run_process(cmd, env=env, cwd=tmp)
    seconds, rss, se = done.seconds, done.peak_bytes, done.stderr
    ok = bool(list(out.glob("*.json")))
    limit = floor + 1.2 * budget_bytes
    refusal = None if ok else (se.strip().splitlines() or [""])[-1]
    print(f"== budget run {size_text}, --memory-budget {budget_text}: peak RSS {rss / 1e6:,.0f} MB, floor "
          f"{floor / 1e6:,.0f} MB + 1.2 x budget = {limit / 1e6:,.0f} MB -> {rss / limit:.2f} of the limit "
          f"({'ok' if rss <= limit else 'OVER'}); {seconds:.1f} s; {'record written' if ok else 'refused: ' + refusal}")  # fmt: skip
    budget = {"rows": n, "table": size_text, "budget": budget_text, "peak_rss_mb": rss / 1e6, "floor_mb": floor / 1e6,
              "limit_mb": limit / 1e6, "share_of_limit": rss / limit, "seconds": seconds, "ok": ok, "refusal": refusal}  # fmt: skip
    if ok:
        record = json.loads(next(out.glob("*.json")).read_text())
        arm = record["arms"]["cpu"]
        budget["batches"] = (arm.get("memory") or {}).get("batches")
        budget["chunk_cache"] = (arm.get("memory") or {}).get("chunk_cache")
        budget.update(
            auc=arm["metrics"].get("auc"), stages=arm["stages"], arm_peak_host_mb=arm["peak_host_mb"],
            arm_host_mb_at_start=arm["host_mb_at_start"], stage_peak_host_mb=arm["stage_peak_host_mb"],
            wall=record["wall"],
        )  # fmt: skip
        print(f"  {budget['batches']['batches']} batches of {budget['batches']['rows_per_batch']:,} rows, "
              f"training matrix {budget['batches'].get('training_matrix')}; AUC {budget['auc']:.4f}; stages "
              + ", ".join(f"{k} {v:.1f}" for k, v in arm["stages"].items())
              + "; peak host per stage (MiB) " + ", ".join(f"{k} {v:,.0f}" for k, v in arm["stage_peak_host_mb"].items()))  # fmt: skip
        if reference:
            budget["in_memory"] = _in_memory_reference(path, target, size_text, tmp, env, budget)
    return budget


def _in_memory_reference(path: Path, target: str, size_text: str, tmp: Path, env: dict[str, str], streamed: dict) -> dict:
    """The same table in memory (no budget): its AUC and boosting seconds beside the streamed run's."""
    out = tmp / f"in-memory-{size_text}"
    cmd = [sys.executable, "-m", "accel", "run", "--data", str(path), "--target", target, "--device", "cpu", "--out", str(out)]
    done = run_process(cmd, env=env, cwd=tmp)
    seconds, rss, se = done.seconds, done.peak_bytes, done.stderr
    if not list(out.glob("*.json")):
        raise SystemExit(f"in-memory reference failed:\n{se[-2000:]}")
    arm = json.loads(next(out.glob("*.json")).read_text())["arms"]["cpu"]
    auc, train = arm["metrics"]["auc"], arm["stages"]["train"]
    ratio = streamed["stages"]["train"] / train
    print(f"  in memory: AUC {auc:.4f} (streamed - in memory {streamed['auc'] - auc:+.4f}, target within 0.005); "
          f"boosting {train:.1f} s, streamed / in memory {ratio:.2f} (target <= 2); peak RSS {rss / 1e6:,.0f} MB; "
          f"{seconds:.1f} s", flush=True)  # fmt: skip
    return {"auc": auc, "auc_diff": streamed["auc"] - auc, "stages": arm["stages"], "boosting_ratio": ratio,
            "peak_rss_mb": rss / 1e6, "seconds": seconds}  # fmt: skip


def _split_from_accel(path: Path, record: dict) -> dict[str, np.ndarray]:
    """accel's own train/test rows for this file (its plan, rebuilt from the record's config)."""
    from accel.workflows import WorkflowSettings
    from accel.workflows.table import plan_table

    cfg = record["config"]
    settings = WorkflowSettings(rows=cfg.get("rows"), test_size=cfg["test_size"], seed=cfg["seed"])
    plan = plan_table(str(path), "y", None, [], settings).plan
    return {"train": plan.row_positions[plan.train_pos], "test": plan.row_positions[plan.test_pos]}


CONFIG = Config(
    "own-table-speed", __doc__, measure, cases, arguments,
    lambda bench, rows: {"repeats": bench.args.repeats, "sizes": [size(rows, n) for n in bench.args.rows]},
    summary, lambda row: f"  peak RSS {row['peak_rss_mb']:,.0f} MB", repeats=2, rows="1e5,1e6", many_rows=True,
)  # fmt: skip

if __name__ == "__main__":
    main(CONFIG)

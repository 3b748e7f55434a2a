"""Your own table, whole process: ``accel run --data`` (CPU arm) against a hand-written script.

Generated tables of 1e5, 1e6 (and, with ``--sizes``, 3e6) rows × 20 columns: ten numeric with
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

    python benchmarks/bench_own_table_speed.py --sizes 1e5,1e6 --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CARDS = [5, 12, 40, 100, 200, 300, 500, 500, 50, 8]

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


def generate(n: int, path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    cols = {}
    for i in range(10):
        x = rng.normal(size=n)
        x[rng.random(n) < 0.05] = np.nan
        cols[f"num{i}"] = x
    codes = {}
    for i, k in enumerate(CARDS):
        codes[i] = rng.integers(0, k, n)
        cols[f"cat{i}"] = np.array([f"v{j}" for j in range(k)])[codes[i]]
    logit = np.nan_to_num(cols["num0"]) + np.nan_to_num(cols["num1"]) - np.nan_to_num(cols["num2"])
    for i, k in enumerate(CARDS[:5]):
        logit = logit + rng.normal(0, 0.5, k)[codes[i]]
    cols["y"] = (logit + rng.normal(size=n) > 0).astype(int)
    pd.DataFrame(cols).to_csv(path, index=False)


TIME = Path("/usr/bin/time")
_MAXRSS = "accel-bench-maxrss-kb "


def peak_rss(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, str, str]:
    """Wall seconds, peak RSS bytes, stdout, stderr.

    The peak is GNU time's ``%M`` where ``/usr/bin/time`` exists: the command is started by that
    small program, so its peak is its own. (``wait4`` on a child of this process is the fallback;
    a child forked from a large parent can report the parent's size as its peak.)
    """
    timed = TIME.exists()
    full = [str(TIME), "-f", _MAXRSS + "%M", *cmd] if timed else cmd
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, env=env, cwd=cwd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    peak = usage.ru_maxrss * 1024
    if timed:
        lines = stderr.splitlines()
        found = [ln for ln in lines if ln.startswith(_MAXRSS)]
        if found:
            peak = int(found[-1][len(_MAXRSS) :]) * 1024
            # GNU time also reports a non-zero exit or a signal on stderr: not the command's own output.
            own = [
                ln
                for ln in lines
                if not ln.startswith((_MAXRSS, "Command exited with non-zero status", "Command terminated by signal"))
            ]
            stderr = "\n".join(own)
    return seconds, peak, stdout, stderr


def generate_apart(n: int, path: Path, env: dict[str, str]) -> None:
    """:func:`generate` in a process of its own, so that this one stays small (its children's
    peaks are not inflated by a table it once held)."""
    subprocess.run([sys.executable, __file__, "--generate", str(n), str(path)], env=env, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e5,1e6", help="rows per table, comma-separated (default 1e5,1e6)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--budget-run", help="SIZE:BUDGET[,SIZE:BUDGET...], e.g. 3e6:400MB: a streamed run's peak RSS against the budget"
    )
    parser.add_argument(
        "--no-reference", action="store_true", help="no in-memory run beside each --budget-run (its AUC and boosting seconds)"
    )
    parser.add_argument("--tables", type=Path, help="folder to keep generated tables in (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--generate", nargs=2, metavar=("ROWS", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate:
        generate(int(float(args.generate[0])), Path(args.generate[1]))
        return 0
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    results = []
    with tempfile.TemporaryDirectory(prefix="accel-own-table-") as tmp:
        tmp = Path(tmp)
        tables = args.tables or tmp
        tables.mkdir(parents=True, exist_ok=True)
        # Both processes get the OpenMP wait policy accel sets for itself, so that the ratio measures
        # accel's work and not spinning threads (benchmarks/bench_omp_wait_policy.py measures that).
        env = {**os.environ, "ACCEL_CACHE_DIR": str(tmp / "cache"), "OMP_WAIT_POLICY": "PASSIVE"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        for n in sizes:
            path = tables / f"table-{n}.csv"
            if not path.exists():
                print(f"== {n:,} rows: generating (untimed)", flush=True)
                generate_apart(n, path, env)
            rows = []
            accel_aucs, hand_aucs, walls = [], [], []
            for i in range(args.repeats):
                out = tmp / f"runs-{n}-{i}"
                accel_cmd = [sys.executable, "-m", "accel", "run", "--data", str(path), "--target", "y", "--device", "cpu",
                             "--out", str(out)]  # fmt: skip
                order = ["accel", "hand"] if i % 2 == 0 else ["hand", "accel"]
                if i == 0:
                    order = ["accel", "hand"]  # the hand-written script needs accel's split
                for what in order:
                    if what == "accel":
                        seconds, rss, so, se = peak_rss(accel_cmd, env, tmp)
                        if not list(out.glob("*.json")):
                            raise SystemExit(f"accel failed:\n{se[-2000:]}")
                        record = json.loads(next(out.glob("*.json")).read_text())
                        arm = record["arms"]["cpu"]
                        accel_aucs.append(arm["metrics"]["auc"])
                        walls.append(record["wall"])
                        rows.append({"impl": "accel", "repeat": i, "seconds": seconds, "peak_rss_mb": rss / 1e6,
                                     "stages": arm["stages"], "wall": record["wall"],
                                     "probe": record["data"]["schema"].get("encoding_probe")})  # fmt: skip
                        split = tmp / f"split-{n}.npz"
                        if not split.exists():
                            positions = _split_from_accel(path, record)
                            np.savez(split, **positions)
                    else:
                        seconds, rss, so, se = peak_rss(
                            [sys.executable, "-c", HANDWRITTEN, str(path), str(tmp / f"split-{n}.npz")], env, tmp
                        )
                        if not so.strip():
                            raise SystemExit(f"hand-written script failed:\n{se[-2000:]}")
                        hand_aucs.append(json.loads(so.strip().splitlines()[-1])["auc"])
                        rows.append({"impl": "handwritten", "repeat": i, "seconds": seconds, "peak_rss_mb": rss / 1e6})
                    print(
                        f"  repeat {i}: {what:<6} {rows[-1]['seconds']:7.2f} s  peak RSS {rows[-1]['peak_rss_mb']:,.0f} MB",
                        flush=True,
                    )
            a = [r["seconds"] for r in rows if r["impl"] == "accel"]
            h = [r["seconds"] for r in rows if r["impl"] == "handwritten"]
            ratio = statistics.median(a) / statistics.median(h)
            first_probe = rows[0]["wall"]["planning"].get("encoding_probe")
            later = [r["wall"]["planning"].get("encoding_probe") for r in rows if r["impl"] == "accel"][1:]
            print(f"  {n:,} rows: accel {statistics.median(a):.2f} s, hand-written {statistics.median(h):.2f} s, "
                  f"ratio {ratio:.3f} (target <= 1.3); AUC accel {accel_aucs[0]:.4f} vs {hand_aucs[0]:.4f} "
                  f"(diff {accel_aucs[0] - hand_aucs[0]:+.4f}, target >= -0.005)")  # fmt: skip
            w = walls[0]
            print(f"  accel's wall (first run): start-up {w['parts']['start_up']:.2f}, planning {w['parts']['planning']:.2f} "
                  f"(read {w['planning'].get('read_on_host', 0):.2f}, schema {w['planning'].get('schema_inference', 0):.2f}, "
                  f"probe {first_probe or 0:.2f}), batch plan {w['parts']['batch_plan']:.2f}, stages "
                  + ", ".join(f"{k} {v:.2f}" for k, v in rows[0]["stages"].items()))  # fmt: skip
            print(f"  encoding probe seconds: first run {first_probe or 0:.2f}, later runs {later} (cached)")
            results.append({"rows": n, "runs": rows, "ratio": ratio, "auc": {"accel": accel_aucs, "handwritten": hand_aucs}})

        budgets = []
        for spec in [s for s in (args.budget_run or "").split(",") if s.strip()]:
            budgets.append(_budget_run(spec.strip(), tmp, env, tables, reference=not args.no_reference))

    from accel.environment import collect_environment
    from accel.timing import write_result

    now = datetime.now(timezone.utc)
    record = {"benchmark": "own_table_speed", "device": "cpu", "started_at": now.isoformat(), "repeats": args.repeats,
              "sizes": results, "budget_run": budgets[0] if budgets else None, "budget_runs": budgets,
              "environment": collect_environment()}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"results: {write_result(args.out, record, 'own-table-speed', 'cpu')}")
    return 0


def _budget_table(size_text: str, tables: Path, env: dict[str, str]) -> tuple[Path, str, int | None]:
    """The table of a ``--budget-run``: a generated one (``3e6``: target ``y``) or the flights
    table replicated (``flights_x3``: bench_memory.replicated_flights, target ``delayed``)."""
    if size_text.startswith("flights_x"):
        copies = int(size_text[len("flights_x") :])
        path = tables / f"{size_text}.parquet"
        if not path.exists():
            print(f"== {size_text}: replicating flights (untimed)", flush=True)
            code = ("import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
                    "from bench_memory import replicated_flights; replicated_flights(Path(sys.argv[2]), int(sys.argv[3]))")  # fmt: skip
            subprocess.run([sys.executable, "-c", code, str(ROOT / "benchmarks"), str(path), str(copies)], env=env, check=True)
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
    _, floor, _, _ = peak_rss(floor_cmd, env, tmp)
    budget_bytes = parse_size(budget_text, "--budget-run")
    out = tmp / f"budget-runs-{size_text}-{budget_text}"
    cmd = [sys.executable, "-m", "accel", "run", "--data", str(path), "--target", target, "--device", "cpu",
           "--memory-budget", budget_text, "--batch-rows", "auto", "--out", str(out)]  # fmt: skip
    seconds, rss, so, se = peak_rss(cmd, env, tmp)
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
    seconds, rss, _, se = peak_rss(cmd, env, tmp)
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
    plan = plan_table(str(path), "y", None, [], settings, probe="off").plan
    return {"train": plan.row_positions[plan.train_pos], "test": plan.row_positions[plan.test_pos]}


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark test bodies shared by the CPU and GPU suites (as tests/bodies.py does for features).

Each takes a :class:`~accel.backend.Backend`: ``test_bench_cpu.py`` calls it with the CPU arm,
``test_bench_gpu.py`` with the GPU arm. The references are computed independently of accel:
db-benchmark's own pandas solution (benchmarks/dbbench_pandas_solution.py) for the groupby
questions, plain NumPy for the join questions.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

from accel.backend import Backend
from accel.bench import db as dbbench
from accel.data import datagen
from tests.conftest import ROOT

#: db-benchmark's own pandas solution, run as a program (the tests never import a benchmark).
PANDAS_SOLUTION = ROOT / "benchmarks" / "dbbench_pandas_solution.py"


def make_groupby_file(folder: Path, n: int = 6000, k: int = 10, nas: int = 5, fmt: str = "parquet") -> Path:
    path = Path(folder) / f"{datagen.groupby_name(n, k, nas)}.{fmt}"
    if not path.exists():
        datagen.write_table(datagen.groupby_table(n, k, nas=nas), path)
    return path


def make_join_dir(folder: Path, n: int = 5000, fmt: str = "parquet") -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = datagen.join_names(n)
    for role, table in datagen.join_tables(n).items():
        datagen.write_table(table, folder / f"{names[role]}.{fmt}")
    return folder


def run_groupby(backend: Backend, path: Path) -> dict[str, dict]:
    suite = dbbench.SUITES["groupby"]
    paths = dbbench.locate_groupby(path)
    result = dbbench.run_arm(backend, suite, paths, list(suite.questions.values()), repeats=1, warmup=0)
    return result["questions"]


def check_groupby_equals_benchmark_solution(backend: Backend, path: Path) -> dict[str, dict]:
    """Every groupby question on ``backend`` gives the rows and checksums of db-benchmark's pandas code."""
    answers = run_groupby(backend, path)
    solved = subprocess.run([sys.executable, str(PANDAS_SOLUTION), str(path)], capture_output=True, text=True, timeout=300)
    assert solved.returncode == 0, solved.stderr
    reference = json.loads(solved.stdout.strip().splitlines()[-1])
    for name in dbbench.GROUPBY_QUESTIONS:
        got, ref = answers[name], reference[name]
        assert got["status"] == "ok", (name, got.get("reason"))
        assert got["rows"] == ref["rows"], name
        assert got["cols"] == ref["cols"], name
        assert len(got["checksum"]) == len(ref["checksum"]), name
        for a, b in zip(got["checksum"], ref["checksum"]):
            assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (name, a, b)
        assert got["run1"] >= 0 and got["run2"] >= 0
    return answers


def _join_reference(folder: Path) -> dict[str, tuple[int, list[float]]]:
    """Rows and checksums of the five join questions, computed with NumPy (no merge)."""
    import pandas as pd

    paths = dbbench.locate_join(folder)
    t = {role: pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p) for role, p in paths.items()}
    x = t["x"]

    def inner(key: str, right_key: np.ndarray, right_v2: np.ndarray) -> tuple[int, list[float]]:
        # The right tables' keys are unique, so an inner join keeps the left rows whose key is found.
        lookup = dict(zip(right_key.tolist(), right_v2.tolist()))
        left = x[key].to_numpy()
        hit = np.array([k in lookup for k in left.tolist()])
        v2 = np.array([lookup[k] for k in left[hit].tolist()])
        return int(hit.sum()), [float(x["v1"].to_numpy()[hit].sum()), float(v2.sum())]

    medium, small, big = t["medium"], t["small"], t["big"]
    q2 = inner("id2", medium["id2"].to_numpy(), medium["v2"].to_numpy())
    return {
        "q1": inner("id1", small["id1"].to_numpy(), small["v2"].to_numpy()),
        "q2": q2,
        "q3": (len(x), [float(x["v1"].sum()), q2[1][1]]),  # left join: every left row, v2 of the matches
        "q4": inner("id5", medium["id5"].to_numpy(), medium["v2"].to_numpy()),
        "q5": inner("id3", big["id3"].to_numpy(), big["v2"].to_numpy()),
    }


def check_join_answers(backend: Backend, folder: Path) -> dict[str, dict]:
    suite = dbbench.SUITES["join"]
    result = dbbench.run_arm(backend, suite, dbbench.locate_join(folder), list(suite.questions.values()), 1, 0)
    reference = _join_reference(folder)
    for name, (rows, checksum) in reference.items():
        got = result["questions"][name]
        assert got["status"] == "ok", (name, got.get("reason"))
        assert got["rows"] == rows, name
        for a, b in zip(got["checksum"], checksum):
            assert math.isclose(a, b, rel_tol=1e-9), (name, a, b)
    return result["questions"]


def check_model_pairs(backend: Backend, keys: list[str], rows: int = 800, features: int = 8) -> list[dict]:
    """Each model fits and predicts on ``backend`` with sane quality (generated, learnable data)."""
    from accel.bench.models import PAIRS, make_data, run_pair

    out = []
    for key in keys:
        pair = PAIRS[key]
        data = make_data("regression" if pair.task == "regression" else "classification", rows, features, seed=3)
        r = run_pair(pair, backend, data, seed=3, repeats=1, warmup=0)
        assert r["status"] == "ok", (key, r.get("reason"))
        q = r["quality"]
        if pair.metric == "accuracy":
            assert q > 0.6, (key, q)
        elif pair.metric == "r2":
            assert q > 0.9, (key, q)
        elif pair.metric == "explained_variance":
            assert 0.5 < q <= 1.0 + 1e-6, (key, q)
        else:
            assert q > 0, (key, q)
        assert r["fit"]["repeats"] == 1 and r["fit"]["cold"] > 0
        out.append(r)
    return out

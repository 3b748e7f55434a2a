"""The db-benchmark questions (h2oai/db-benchmark), written once against the dataframe API.

Each question is the expression of the benchmark's pandas solution (``pandas/groupby-pandas.py``,
``pandas/join-pandas.py``): the same group keys, aggregations and options (``as_index=False,
sort=False, observed=True, dropna=False``: NA keys form their own group), run on cuDF on the GPU
arm and on pandas on the CPU arm, on data loaded with the benchmark's dtypes (ids ``id1``–``id3``
categorical, integers NA-aware ``Int32``, ``v3`` float64; for join ``id4``–``id6`` categorical).

The answer check is the benchmark's: the sum of each answer column it names (``chk``), and the
answer's rows and columns. Answers of the two arms agree when their rows are equal and every
checksum is within a relative 1e-3.

One question differs in how it computes, not in what: groupby q9 ("regression v1 v2 by id2
id4", r² = squared Pearson correlation of v1 and v2 per group, NA pairs left out). The pandas
solution runs a Python function per group (``groupby.apply(lambda x: x.corr()...)``), which
cuDF can only run group by group; here r² comes from per-group sums of v1, v2, v1², v2² and
v1·v2, one vectorised aggregation on both arms. v1 and v2 are small integers, so those sums are
exact in float64 and the answer equals the per-group correlation.
"""

from __future__ import annotations

import functools
import gc
import math
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accel import _compat
from accel.backend import Backend
from accel.errors import AccelError, first_line
from accel.timing import Timing, measure

if TYPE_CHECKING:
    import pyarrow as pa

    from accel.backend import Arms

#: Checksums of the two arms agree within this relative difference.
CHECKSUM_RTOL = 1e-3


#: A question asked of the arm's tables (by role: ``x``, and the join's ``small``, ``medium``, ``big``).
Answer = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Question:
    """One benchmark question.

    Attributes
    ----------
    name : str
        ``q1`` .. ``q10`` (groupby) or ``q1`` .. ``q5`` (join).
    title : str
        The benchmark's own name of the question.
    answer : callable
        ``answer(tables) -> frame``: the question, on the arm's tables (its dataframes).
    checksum : tuple
        The answer columns whose sums are the checksum, in the benchmark's order; a pair
        names a column under a two-level header (``("v3", "median")``).
    """

    name: str
    title: str
    answer: Answer
    checksum: tuple[str | tuple[str, str], ...]


def _numbered(*questions: tuple[str, Answer, tuple[str | tuple[str, str], ...]]) -> dict[str, Question]:
    """The questions ``(title, answer, checksum)`` named ``q1``, ``q2``, ... in their order."""
    return {f"q{i}": Question(f"q{i}", *q) for i, q in enumerate(questions, start=1)}


def _by(frame: Any, keys: str | list[str]) -> Any:
    # The benchmark's options on every groupby question.
    return frame.groupby(keys, as_index=False, sort=False, observed=True, dropna=False)


def _agg(keys: str | list[str], spec: dict[str, Any]) -> Answer:
    """The question ``spec`` aggregated by ``keys`` on table x."""
    return lambda t: _by(t["x"], keys).agg(spec)


def _q7(t: Mapping[str, Any]) -> Any:
    ans = _by(t["x"], "id3").agg({"v1": "max", "v2": "min"})
    return ans.assign(range_v1_v2=ans["v1"] - ans["v2"])[["id3", "range_v1_v2"]]


def _q8(t: Mapping[str, Any]) -> Any:
    x = t["x"]
    ans = _by(x[~x["v3"].isna()][["id6", "v3"]].sort_values("v3", ascending=False), "id6").head(2)
    return ans.reset_index(drop=True)


def _q9(t: Mapping[str, Any]) -> Any:
    keys = ["id2", "id4"]
    x = t["x"][keys + ["v1", "v2"]].dropna(subset=["v1", "v2"])  # pairwise-complete, as DataFrame.corr
    a = x["v1"].astype("float64")
    b = x["v2"].astype("float64")
    x = x.assign(v1=a, v2=b, v11=a * a, v22=b * b, v12=a * b)
    s = _by(x, keys).agg(
        n=("v1", "count"), s1=("v1", "sum"), s2=("v2", "sum"), s11=("v11", "sum"), s22=("v22", "sum"), s12=("v12", "sum")
    )
    cov = s["n"] * s["s12"] - s["s1"] * s["s2"]
    var1 = s["n"] * s["s11"] - s["s1"] * s["s1"]
    var2 = s["n"] * s["s22"] - s["s2"] * s["s2"]
    # A constant group (or a single row) has no correlation: 0/0 is NaN on both arms, as in pandas.
    return s.assign(r2=(cov * cov) / (var1 * var2))[keys + ["r2"]]


GROUPBY_QUESTIONS = _numbered(
    ("sum v1 by id1", _agg("id1", {"v1": "sum"}), ("v1",)),
    ("sum v1 by id1:id2", _agg(["id1", "id2"], {"v1": "sum"}), ("v1",)),
    ("sum v1 mean v3 by id3", _agg("id3", {"v1": "sum", "v3": "mean"}), ("v1", "v3")),
    ("mean v1:v3 by id4", _agg("id4", {"v1": "mean", "v2": "mean", "v3": "mean"}), ("v1", "v2", "v3")),
    ("sum v1:v3 by id6", _agg("id6", {"v1": "sum", "v2": "sum", "v3": "sum"}), ("v1", "v2", "v3")),
    ("median v3 sd v3 by id4 id5", _agg(["id4", "id5"], {"v3": ["median", "std"]}), (("v3", "median"), ("v3", "std"))),
    ("max v1 - min v2 by id3", _q7, ("range_v1_v2",)),
    ("largest two v3 by id6", _q8, ("v3",)),
    ("regression v1 v2 by id2 id4", _q9, ("r2",)),
    ("sum v3 count by id1:id6", _agg(["id1", "id2", "id3", "id4", "id5", "id6"], {"v3": "sum", "v1": "size"}), ("v3", "v1")),
)

JOIN_QUESTIONS = _numbered(
    ("small inner on int", lambda t: t["x"].merge(t["small"], on="id1"), ("v1", "v2")),
    ("medium inner on int", lambda t: t["x"].merge(t["medium"], on="id2"), ("v1", "v2")),
    ("medium outer on int", lambda t: t["x"].merge(t["medium"], how="left", on="id2"), ("v1", "v2")),
    ("medium inner on factor", lambda t: t["x"].merge(t["medium"], on="id5"), ("v1", "v2")),
    ("big inner on int", lambda t: t["x"].merge(t["big"], on="id3"), ("v1", "v2")),
)

# Column kinds per table, as the benchmark's pandas solution casts them after loading.
_C, _I, _F = "category", "int", "float"
GROUPBY_SCHEMA = {
    "x": {"id1": _C, "id2": _C, "id3": _C, "id4": _I, "id5": _I, "id6": _I, "v1": _I, "v2": _I, "v3": _F},
}
JOIN_SCHEMA = {
    "x": {"id1": _I, "id2": _I, "id3": _I, "id4": _C, "id5": _C, "id6": _C, "v1": _F},
    "small": {"id1": _I, "id4": _C, "v2": _F},
    "medium": {"id1": _I, "id2": _I, "id4": _C, "id5": _C, "v2": _F},
    "big": {"id1": _I, "id2": _I, "id3": _I, "id4": _C, "id5": _C, "id6": _C, "v2": _F},
}


@dataclass(frozen=True)
class Suite:
    name: str  # "groupby" | "join"
    questions: dict[str, Question]
    schema: dict[str, dict[str, str]]
    benchmark: str  # the result's name of it: db_<name>


SUITES = {
    "groupby": Suite("groupby", GROUPBY_QUESTIONS, GROUPBY_SCHEMA, "db_groupby"),
    "join": Suite("join", JOIN_QUESTIONS, JOIN_SCHEMA, "db_join"),
}


def pick_names(what: str, names: str | Sequence[str], known: Collection[str], spell: Callable[[str], str]) -> list[str]:
    """The names of a comma-separated list (or a list) as ``spell`` reads each; refused, naming
    the ``known`` ones, when one is not known or there is none."""
    listed = names.split(",") if isinstance(names, str) else names
    wanted = [spell(n.strip()) for n in listed if n.strip()]
    unknown = [n for n in wanted if n not in known]
    if unknown or not wanted:
        raise AccelError(f"unknown {what} {', '.join(map(repr, unknown)) or 'list (empty)'}; known: {', '.join(known)}")
    return wanted


def select_questions(suite: Suite, names: str | Sequence[str] | None) -> list[Question]:
    """The questions named (``"q1,q3"``, a list, or None/``"all"`` for every one), in order."""
    known = suite.questions
    wanted = known if names in (None, "all") else pick_names(f"{suite.name} question", names, known, str.lower)
    return [known[n] for n in known if n in wanted]


# --------------------------------------------------------------------------- data files


def locate_groupby(path: Path) -> dict[str, Path]:
    """The groupby table: the data file ``path``, a CSV or Parquet file."""
    if not path.is_file():
        raise AccelError(f"data file {str(path)!r} does not exist (make one with 'accel data groupby N K OUT')")
    if path.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise AccelError(f"data file {str(path)!r} must be .csv or .parquet")
    return {"x": path}


def _size_token(path: Path) -> float:
    # J1_1e7_1e4_0_0 -> 1e4; the right tables are told apart by their size, as join_to_tbls does.
    parts = path.stem.split("_")
    try:
        return float(parts[2])
    except (IndexError, ValueError):
        return math.inf


def locate_join(folder: Path) -> dict[str, Path]:
    """The four join tables in ``folder``: ``J1_<N>_NA_<nas>_<sort>`` and its three right tables."""
    if not folder.is_dir():
        raise AccelError(f"join data folder {str(folder)!r} does not exist (make one with 'accel data join N DIR')")
    files = sorted(p for p in folder.iterdir() if p.name.startswith("J1_") and p.suffix.lower() in (".csv", ".parquet"))
    lefts = [p for p in files if re.match(r"J1_[^_]+_NA_", p.name)]
    if len(lefts) != 1:
        found = ", ".join(p.name for p in lefts) or "none"
        raise AccelError(f"{str(folder)!r} must hold exactly one left table J1_<N>_NA_<nas>_<sort> (found {found})")
    x = lefts[0]
    prefix, suffix = x.stem.split("_NA_")[0], x.stem.split("_NA_")[1]
    rights = sorted(
        (p for p in files if p != x and p.stem.startswith(prefix + "_") and p.stem.endswith("_" + suffix)),
        key=_size_token,
    )
    if len(rights) != 3:
        raise AccelError(
            f"{str(folder)!r} must hold the three right tables of {x.name} (small, medium, big); found {len(rights)}"
        )
    return {"x": x, "small": rights[0], "medium": rights[1], "big": rights[2]}


def check_columns(suite: Suite, paths: Mapping[str, Path]) -> None:
    """Refuse, up front, a data file without the benchmark's columns (read from its CSV header or
    Parquet schema only), naming the missing ones."""
    import pyarrow.parquet as pq

    for role, path in paths.items():
        try:
            if path.suffix.lower() in (".parquet", ".pq"):
                have = set(pq.read_schema(path).names)
            else:
                with path.open("r", newline="") as f:
                    header = f.readline().strip()
                have = {c.strip().strip('"') for c in header.split(",")} if header else set()
        except OSError as exc:
            raise AccelError(f"cannot read {str(path)!r} ({exc.strerror or type(exc).__name__})") from None
        except Exception as exc:  # noqa: BLE001 - a corrupt Parquet footer, say
            raise AccelError(f"cannot read {str(path)!r} as a data file ({type(exc).__name__})") from None
        missing = [c for c in suite.schema[role] if c not in have]
        if missing:
            need = ", ".join(suite.schema[role])
            raise AccelError(f"{str(path)!r} lacks the {suite.name} benchmark's columns {', '.join(missing)} (it needs {need})")


def load_tables(backend: Backend, suite: Suite, sources: Mapping[str, Path | pa.Table]) -> dict[str, Any]:
    """Each table into the arm's dataframe, its columns cast as the benchmark's pandas solution
    casts them after loading: a data file (a path) read, a generated pyarrow table
    (:mod:`accel.data.datagen`) converted; a table the suite does not use left out."""
    xdf = backend.xdf
    dtypes = {"category": "category", "int": _compat.nullable_int32(xdf), "float": "float64"}
    tables = {}
    for role, source in ((r, s) for r, s in sources.items() if r in suite.schema):
        columns = list(suite.schema[role])
        if isinstance(source, (str, Path)):
            frame = _compat.read_table(xdf, source, columns=columns)
        else:
            frame = _compat.from_arrow(xdf, source.select(columns))
        for column in columns:
            frame[column] = frame[column].astype(dtypes[suite.schema[role][column]])
        tables[role] = frame
    return tables


# --------------------------------------------------------------------------- running


def answer_column(frame: Any, path: str | tuple[str, str]) -> Any:
    """One checksum column of an answer (a pair addresses a two-level header, as ``ans["v3"]["median"]``)."""
    return frame[path[0]][path[1]] if isinstance(path, tuple) else frame[path]


def run_question(backend: Backend, question: Question, tables: Mapping[str, Any], repeats: int, warmup: int) -> dict:
    """Time one question on one arm (cold run, warm-up, repeats) and check its answer.

    ``run1`` is the cold run and ``run2`` the first timed repeat, the benchmark's two runs.
    """
    timing, ans = measure(lambda: question.answer(tables), backend, repeats=repeats, warmup=warmup)
    rows, cols = (int(v) for v in ans.shape)
    checksum = [_compat.column_sum(answer_column(ans, c)) for c in question.checksum]
    del ans
    return {**timed(timing), "rows": rows, "cols": cols, "checksum": checksum}


def attempt(measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``measure()``, or ``failed`` with the first line of why it raised: one question, model or
    size failing (out of device memory, say) does not end the others. Memory is collected after."""
    try:
        return measure()
    except (AccelError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - recorded; the others still run
        return {"status": "failed", "reason": first_line(exc)}
    finally:
        gc.collect()


def both_arms(
    arms: Arms,
    gpu_skip: str | None,
    measure: Callable[[str, Backend], dict[str, Any]],
    told: Callable[[str, dict[str, Any]], None] = lambda _arm, _result: None,
) -> dict[str, dict]:
    """One thing measured on each arm, the GPU arm first: ``measure(arm, backend)`` :func:`attempt`-ed
    (a failure is that arm's ``failed``) and ``told(arm, result)``; the GPU arm ``skipped`` with
    ``gpu_skip`` where it cannot run (None: it can, where there is a GPU arm)."""
    out: dict[str, dict] = {"gpu": {"status": "skipped", "reason": gpu_skip}}  # replaced where the GPU arm runs
    for arm, backend in (("gpu", arms.gpu if gpu_skip is None else None), ("cpu", arms.cpu)):
        if backend is not None:
            out[arm] = attempt(functools.partial(measure, arm, backend))
            told(arm, out[arm])
    return out


def timed(timing: Timing) -> dict[str, Any]:
    """An answer's times as the benchmark records them: ``run1`` the cold run, ``run2`` the first timed one."""
    return {"status": "ok", "run1": timing.cold, "run2": timing.times[0], "median": timing.median, "timing": timing.as_dict()}


def run_arm(
    backend: Backend,
    suite: Suite,
    paths: Mapping[str, Path],
    questions: Sequence[Question],
    repeats: int,
    warmup: int,
    say: Callable[[str], None] = lambda _message: None,
    on_answer: Callable[[str, dict], None] = lambda _question, _answer: None,
) -> dict[str, Any]:
    """Load the data and run every question on one arm; a question that raises is ``failed``.

    ``on_answer(question, answer)`` is called as each answer is ready, so that a caller can
    keep it before the next question starts (a time limit then loses only the question it cut).
    """
    start = time.perf_counter()
    try:
        tables = load_tables(backend, suite, paths)
        backend.synchronize()
    except (AccelError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. the data does not fit in device memory: the other arm still runs
        say(f"[{backend.name}] loading failed: {first_line(exc)}")
        return {"status": "failed", "reason": f"loading the data: {first_line(exc)}", "backend": backend.name}
    load_seconds = time.perf_counter() - start
    rows_in = {role: int(len(frame)) for role, frame in tables.items()}
    say(f"[{backend.name}] loaded {', '.join(f'{r} {n:,} rows' for r, n in rows_in.items())} in {load_seconds:.2f} s")
    answers: dict[str, dict] = {}
    for q in questions:
        a = answers[q.name] = attempt(functools.partial(run_question, backend, q, tables, repeats, warmup))
        ok = a["status"] == "ok"
        say(
            f"[{backend.name}] {q.name:<4}{q.title:<28} "
            + (f"run1 {a['run1']:8.3f} s  run2 {a['run2']:8.3f} s  {a['rows']:,} rows" if ok else f"FAILED: {a['reason']}")
        )
        on_answer(q.name, a)
    del tables
    gc.collect()
    return {
        "status": "ok",
        "backend": backend.name,
        "device_name": backend.device.name if backend.device else None,
        "load_seconds": load_seconds,
        "rows_in": rows_in,
        "questions": answers,
    }


def compare_answers(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, rtol: float = CHECKSUM_RTOL) -> dict:
    """Whether two answers agree: rows equal and each checksum within ``rtol`` (None when one is missing)."""
    if not a or not b or a.get("status") != "ok" or b.get("status") != "ok":
        return {"agree": None, "rows_equal": None, "max_rel_diff": None}
    diffs = [
        0.0 if (math.isnan(x) and math.isnan(y)) or x == y else abs(x - y) / max(abs(x), abs(y))
        for x, y in zip(a["checksum"], b["checksum"])
    ]
    rows_equal = a["rows"] == b["rows"]
    ok_sums = len(a["checksum"]) == len(b["checksum"]) and all(d <= rtol for d in diffs)
    return {"agree": bool(rows_equal and ok_sums), "rows_equal": rows_equal, "max_rel_diff": max(diffs, default=0.0)}


def combine(questions: Sequence[Question], arms: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per question: both arms' measurements, whether they agree, and the speedup."""
    from accel.timing import speedup

    rows = []
    for q in questions:
        per_arm = {
            arm: arms[arm]["questions"][q.name]
            if arms[arm].get("status") == "ok"
            else {"status": arms[arm].get("status", "skipped"), "reason": arms[arm].get("reason")}
            for arm in ("gpu", "cpu")
        }
        rows.append(
            {
                "question": q.name,
                "title": q.title,
                "checksum_columns": ["_".join(c) if isinstance(c, tuple) else c for c in q.checksum],
                "gpu": per_arm["gpu"],
                "cpu": per_arm["cpu"],
                **compare_answers(per_arm["gpu"], per_arm["cpu"]),
                "speedup": speedup(per_arm["cpu"].get("median"), per_arm["gpu"].get("median")),  # NaN unless both ran
            }
        )
    return rows

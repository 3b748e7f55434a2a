"""The benchmark harness: cold run apart, warm-up untimed, repeats timed with the device synchronised."""

from __future__ import annotations

import math
import sys

import pytest

from accel.backend import cpu_backend
from accel.timing import Timing, bench_environment, fairness, measure, speedup, write_result
from tests.conftest import read_json


class RecordingBackend:
    """Stands in for a Backend where only the order of synchronise calls and work matters."""

    name = "cpu"

    def __init__(self):
        self.events: list[str] = []

    def synchronize(self) -> None:
        self.events.append("sync")


def test_cold_warmup_and_repeats_are_kept_apart():
    backend = RecordingBackend()
    calls = []

    def work():
        calls.append(len(calls))
        backend.events.append("work")
        return len(calls)

    timing, last = measure(work, backend, repeats=3, warmup=2)
    assert len(calls) == 1 + 2 + 3 and last == 6
    assert len(timing.times) == 3 and timing.warmup == 2 and timing.cold > 0
    # Every timed call (the cold one and the repeats) has the device synchronised before and after.
    timed = [i for i, e in enumerate(backend.events) if e == "work"]
    for k in (0, 3, 4, 5):
        i = timed[k]
        assert backend.events[i - 1] == "sync" and backend.events[i + 1] == "sync", backend.events


def test_repeats_must_be_positive():
    with pytest.raises(ValueError, match="repeats"):
        measure(lambda: None, RecordingBackend(), repeats=0)


def test_statistics_of_the_repeats():
    t = Timing(cold=5.0, times=[1.0, 3.0, 2.0, 2.0], warmup=1)
    assert t.median == 2.0 and t.min == 1.0 and t.max == 3.0
    mean = 2.0
    sd = math.sqrt(((1 - mean) ** 2 + (3 - mean) ** 2) / 3)
    assert t.cv == pytest.approx(sd / mean)
    assert t.cold_ratio == pytest.approx(2.5)
    d = t.as_dict()
    assert d["cold"] == 5.0 and d["times"] == [1.0, 3.0, 2.0, 2.0] and d["repeats"] == 4
    assert Timing(cold=1.0, times=[2.0]).cv == 0.0


def test_speedup_is_nan_unless_both_arms_ran():
    assert speedup(10.0, 2.0) == 5.0
    assert math.isnan(speedup(10.0, None)) and math.isnan(speedup(None, 1.0)) and math.isnan(speedup(1.0, 0.0))


def test_results_are_never_overwritten(tmp_path):
    a = write_result(tmp_path, {"x": 1, "s": math.nan}, "demo", "cpu")
    b = write_result(tmp_path, {"x": 2}, "demo", "cpu")
    assert a != b and a.name.endswith("-demo-cpu-001.json") and b.name.endswith("-demo-cpu-002.json")
    assert read_json(a)["x"] == 1 and math.isnan(read_json(a)["s"]), "strict JSON, NaN listed and read back"


def test_a_benchmark_result_carries_its_kind(tmp_path):
    """A script's result, written without a head of its own, gets one: its kind is read, not inferred."""
    from accel.record import SCHEMA_VERSION, kind_of

    result = {"benchmark": "groupby_overhead", "device": "cpu", "rows": [{"seconds": 1.0}]}
    path = write_result(tmp_path, result, "groupby-overhead", "cpu")
    written = read_json(path)
    assert list(written)[:3] == ["schema_version", "kind", "run_id"]
    assert written["schema_version"] == SCHEMA_VERSION and written["kind"] == "bench" and written["run_id"] == path.stem
    assert written == result, "what the caller holds is what the file holds"
    assert kind_of(written) == "bench"
    assert kind_of({**written, "kind": None}) is None, "a record of this version is never guessed at"
    # accel bench's results start with their head already: it is kept as it is.
    head = {"schema_version": SCHEMA_VERSION, "kind": "bench", "run_id": None, "benchmark": "models"}
    assert list(read_json(write_result(tmp_path, dict(head), "models", "cpu"))) == list(head)


@pytest.mark.slow  # the benchmark script run as a program
def test_hostile_cases_results_carry_the_same_head(tmp_path):
    """benchmarks/hostile_cases.py writes its results itself (it may run an older accel): with the
    head record_head("bench") gives, its file name as run_id, after the files already there. The
    script runs as a program (the tests never import a benchmark), on one quick case."""
    import subprocess
    from datetime import datetime, timezone

    from accel.record import kind_of, record_head
    from tests.conftest import ROOT

    (tmp_path / f"{datetime.now(timezone.utc):%Y-%m-%d}-hostile-cases-cpu-001.json").write_text("{}")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hostile_cases.py"), "--only", "yaml-50mb-list",
                           "--results", str(tmp_path)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [second] = [p for p in tmp_path.glob("*.json") if p.read_text() != "{}"]
    assert second.name.endswith("-002.json"), second.name
    written = read_json(second)
    assert list(written)[:4] == ["schema_version", "kind", "run_id", "benchmark"] and written["run_id"] == second.stem
    assert {k: written[k] for k in ("schema_version", "kind")} == {k: v for k, v in record_head("bench").items() if k != "run_id"}
    assert kind_of(written) == "bench" and kind_of({**written, "kind": None}) is None
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [], "no temporary file left"


def test_shipped_results_without_kind_are_still_read():
    """Results written before results carried a kind are never rewritten: their kind is inferred."""
    from accel.record import kind_of, load_record
    from tests.conftest import ROOT

    results = {p: load_record(p) for p in sorted((ROOT / "benchmarks" / "results").glob("*.json"))}  # some hold bare NaN
    old = {p: r for p, r in results.items() if "kind" not in r}
    assert old, "the results folder holds results written before results carried a kind"
    for path, record in old.items():
        assert kind_of(record) in ("bench", "run", "scaling"), path.name


def test_environment_and_fairness_are_recorded():
    env = bench_environment()
    assert env["cpu_model"] and env["cores"]["available"] >= 1 and "versions" in env
    assert isinstance(env["blas_threads"], list)
    assert env["load_average"] is None or len(env["load_average"]) == 3
    cpu = cpu_backend()
    f = fairness(cpu, "all 2", {"n_jobs": -1})
    assert f["cores_available"] == cpu.n_threads
    assert f["line"].startswith("CPU baseline: all 2 of ") and "n_jobs=-1" in f["line"]


def test_a_stage_that_raises_pops_its_memory_counters():
    """RMM's statistics are a stack of counters, one per stage: a stage that raises pops its own,
    so the next stage reads its peak and not the failed one's. (A recording stand-in for the
    backend's two counter calls: the counters themselves are RMM's, tested on a GPU.)"""
    from accel.timing import StageTimer

    class Counters:
        name = "gpu"

        def __init__(self):
            self.depth = 0

        def rmm_scope_begin(self):
            self.depth += 1
            return True

        def rmm_scope_end(self):
            self.depth -= 1
            return 1024 * self.depth + 7

        def synchronize(self):
            pass

    backend = Counters()
    timer = StageTimer(backend)
    with pytest.raises(RuntimeError), timer.stage("load"):
        raise RuntimeError("out of memory")
    assert backend.depth == 0 and "load" not in timer.seconds
    with timer.stage("features"):
        pass
    assert backend.depth == 0 and timer.rmm_peak_bytes["features"] == 7

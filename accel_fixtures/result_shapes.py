"""The shapes of the results the scripts in ``benchmarks/`` write, for the pages that read them.

:mod:`accel.record` types what ``accel report`` lays out (runs, searches, the ``accel bench``
suites, the two overhead benchmarks); each other benchmark script's result is typed here, as
:mod:`accel.record` types a record: every field a reader reads, with a default where an older
file lacks it, any other field kept as it is. :data:`SHAPES` maps a result's ``benchmark`` to
its class; :func:`typed` reads a record as it. The docs' results pages (``docs/_ext/results.py``)
read every result through it.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, model_validator

from accel.record import (
    BenchRecord,
    FlightsOverheadBench,
    GroupbyOverheadBench,
    Num,
    Part,
    Record,
    Trials,
)


class FlightsOverhead(FlightsOverheadBench):
    """``bench_flights_overhead.py``: accel's CPU arm against a hand-written script."""

    mode: str | None = None
    repeats: int | None = None
    ratio_paired_median: Num = None
    ratio_fastest: Num = None


class CompareOverhead(BenchRecord):
    """``bench_compare_overhead.py``: ``accel compare``'s CPU arm against plain ``python SCRIPT``."""

    script: str | None = None
    script_args: list[Any] = []
    repeats: int | None = None
    ratio: Num = None
    ratio_paired_median: Num = None


class GroupbyOverhead(GroupbyOverheadBench):
    """``bench_groupby_overhead.py``: accel's pandas arm against db-benchmark's pandas solution."""

    repeats: int | None = None


class DaskCluster(Part):
    workers: int | None = None
    threads_per_worker: int | None = None
    memory_limit: Num = None


class HeartbeatMemory(Part):
    dask_reported_peak_host_mb: Num = None


class ImplRow(Part):
    impl: str | None = None
    stages: dict[str, Num] = {}
    workers_memory: dict[str, HeartbeatMemory] = {}


class TableSchema(Part):
    rows_in_file: int | None = None


class DaskData(Part):
    table_schema: TableSchema = Field(TableSchema(), alias="schema")
    scale: Num = None


class DaskOverhead(BenchRecord):
    """``bench_dask_overhead.py``: a workflow on Dask workers against one process."""

    workflow: str | None = None
    cluster: DaskCluster = DaskCluster()
    median_seconds: dict[str, Num] = {}
    auc: dict[str, Num] = {}
    rows: list[ImplRow] = []
    data: DaskData = DaskData()
    text_width: int | None = None
    single_process_threads: int | None = None
    ratio: Num = None
    ratio_with_startup: Num = None
    cluster_startup_seconds: Num = None
    worker_memory: str | None = None
    table_memory_bytes: Num = None
    workers_joined_during_run: list[str] = []

    def impl(self, name: str) -> ImplRow:
        """The last row of one implementation (``single-process``, ``dask``): its last repeat."""
        return next((r for r in reversed(self.rows) if r.impl == name), ImplRow())


class HpoRun(Part):
    label: str | None = None
    trials: int | None = None
    subset: Num = None
    trial_rounds: Num = None
    trial_counts: Trials = Trials()
    wall_seconds: Num = None
    phases_seconds: dict[str, Num] = {}
    default_auc: Num = None
    tuned_auc: Num = None


class HpoFlights(BenchRecord):
    """``bench_hpo_flights.py``: searches of the flights model, one per setting."""

    runs: list[HpoRun] = []
    arm: str | None = None
    omp_wait_policy: str | None = None


class Chunked(Part):
    rows: int | None = None
    batches: int | None = None
    peak_above_start_mb: Num = None


class BatchCount(Part):
    rows_total: int | None = None
    batches: int | None = None


class StreamedRun(Part):
    batches: BatchCount = BatchCount()
    ratio_to_budget: Num = None
    auc: Num = None


class Throughput(Part):
    rows: int | None = None
    ratio_chunked_to_whole: list[Num] = []
    predictions_equal: bool | None = None


class Fp16(Part):
    ratio: Num = None
    auc_fp16: Num = None
    auc_fp32: Num = None


class Memory(BenchRecord):
    """``bench_memory.py``: chunked and streamed runs against a memory budget, float16 storage."""

    device: str | None = None
    budget_bytes: Num = None
    chunked_10x: Chunked | None = None
    streamed_run_10x: StreamedRun | None = None
    throughput: Throughput | None = None
    fp16_flights: Fp16 | None = None

    @model_validator(mode="before")
    @classmethod
    def _first_layout(cls, raw: Any) -> Any:
        """The first files named the whole streamed run ``chunked_10x`` (its ``batches`` a plan, not a count)."""
        chunked = raw.get("chunked_10x") if isinstance(raw, dict) else None
        if isinstance(chunked, dict) and isinstance(chunked.get("batches"), dict) and "streamed_run_10x" not in raw:
            return {**{k: v for k, v in raw.items() if k != "chunked_10x"}, "streamed_run_10x": chunked}
        return raw


class ProbeChoice(Part):
    chosen: str | None = None


class ByoRow(Part):
    table: str | None = None
    rows_used: int | None = None
    task: str | None = None
    metric: str | None = None
    accel: Num = None
    handwritten: Num = None
    accel_seconds_cpu_arm: Num = None
    accel_stages: dict[str, Num] = {}
    encoding_probe: ProbeChoice | None = None


class ByoTables(BenchRecord):
    """``bench_byo_tables.py``: ``accel run --data`` on real tables against a hand-written script."""

    rows: list[ByoRow] = []


class Split(Part):
    rounds_chosen: int | None = None


class DefaultRow(Part):
    table: str | None = None
    task: str | None = None
    metric: str | None = None
    accel_mean: Num = None
    defaults_mean: Num = None
    difference: Num = None
    ok: bool | None = None
    splits: list[Split] = []


class DefaultModel(BenchRecord):
    """``bench_default_model.py``: accel's default model against XGBoost's own defaults."""

    rows: list[DefaultRow] = []
    label: str | None = None
    seeds: list[Any] | None = None


class Layout(Part):
    layout: str | None = None
    kind: str | None = None
    date_format: str | None = None
    parsed_right: Num = None


class Rmse(Part):
    rmse: Num = None


class DateCase(Part):
    format: str | None = None
    accel: Rmse = Rmse()
    handwritten: Rmse = Rmse()
    rmse_ratio: Num = None


class UsEmployment(Part):
    cases: dict[str, DateCase] = {}
    rows: int | None = None
    series: int | None = None
    months: int | None = None


class Dates(BenchRecord):
    """``bench_dates.py``: dates written as text, each layout parsed or not."""

    label: str | None = None
    layouts: list[Layout] = []
    us_employment: UsEmployment = UsEmployment()


class ImplRun(Part):
    impl: str | None = None
    seconds: Num = None
    peak_rss_mb: Num = None


class SpeedSize(Part):
    rows: int | None = None
    runs: list[ImplRun] = []
    ratio: Num = None
    auc: dict[str, list[Num]] = {}

    def of(self, impl: str) -> list[ImplRun]:
        return [r for r in self.runs if r.impl == impl]


class InMemory(Part):
    auc_diff: Num = None
    boosting_ratio: Num = None


class BudgetRun(Part):
    table: str | None = None
    rows: int | None = None
    budget: str | None = None
    refusal: str | None = None
    peak_rss_mb: Num = None
    limit_mb: Num = None
    batches: dict[str, Any] = {}
    auc: Num = None
    in_memory: InMemory = InMemory()
    seconds: Num = None


class OwnTableSpeed(BenchRecord):
    """``bench_own_table_speed.py``: a user's table, whole process against a hand-written script."""

    sizes: list[SpeedSize] = []
    budget_runs: list[BudgetRun] = []


class Phase(Part):
    peak: Num = None
    rss_before: Num = None
    seconds: Num = None


class Process(Part):
    floor: Num = None
    phases: dict[str, Phase] = {}

    def grown(self, phase: str) -> float:
        """The phase's peak above the RSS at its start (NaN where either was not measured)."""
        p = self.phases.get(phase) or Phase()
        return math.nan if p.peak is None or p.rss_before is None else p.peak - p.rss_before


class Sweep(Process):
    page_rows: int | None = None
    label: str | None = None
    failed: str | None = None
    boosting_to_in_memory: Num = None


class BytesSize(Part):
    rows: int | None = None
    train_rows: int | None = None
    accel: Process = Process()
    external: Process = Process()
    in_memory: Process = Field(Process(), alias="in-memory")
    page_sweep: list[Sweep] = []
    knob_sweep: list[Sweep] = []


class Fit(Part):
    bytes_per_row: Num = None
    fixed_mib: Num = None


class PerRow(Part):
    accel: dict[str, Fit] = {}
    external: dict[str, Fit] = {}
    in_memory: dict[str, Fit] = Field({}, alias="in-memory")
    pages: Fit = Fit()
    boosting_ratio_streamed_to_in_memory: list[Num] = []


class StreamedBytes(BenchRecord):
    """``bench_streamed_bytes.py``: bytes per training row of each phase, accel streamed and XGBoost alone."""

    sizes: list[BytesSize] = []
    per_row: PerRow = PerRow()
    rounds: int | None = None
    batch_rows: int | None = None


class OmpCondition(Part):
    median_seconds: dict[str, Num] = {}
    ratio_over_default: dict[str, Num] = {}


class Workload(Part):
    rows: int | None = None
    columns: int | None = None
    rounds: int | None = None
    nthread: int | None = None


class OmpWaitPolicy(BenchRecord):
    """``bench_omp_wait_policy.py``: XGBoost with OpenMP's idle threads waiting one way or another."""

    #: Per condition (``quiet``, ``busy``): the arms' median seconds (the file calls it ``summary``).
    conditions: dict[str, OmpCondition] = Field({}, alias="summary")
    arms: dict[str, Any] = {}
    workload: Workload = Workload()
    repeats: int | None = None


class CodeUnderTest(Part):
    git_sha: str | None = None


class HostileCases(BenchRecord):
    """``hostile_cases.py``: each hostile case's verdict against the code of one commit."""

    label: str | None = None
    counts: dict[str, int] = {}
    code_under_test: CodeUnderTest | None = None
    cases: list[Any] = []

    @property
    def commit(self) -> str:
        """The commit whose ``accel`` the cases ran against, else the tree's."""
        return str((self.code_under_test or CodeUnderTest()).git_sha or self.git_sha or "")[:7]


#: Each benchmark written here, by its ``benchmark``, and its class.
SHAPES: dict[str, type[BenchRecord]] = {
    "flights_overhead": FlightsOverhead, "compare_overhead": CompareOverhead, "groupby_overhead": GroupbyOverhead,
    "dask_overhead": DaskOverhead, "hpo_flights": HpoFlights, "memory": Memory, "byo_tables": ByoTables,
    "default_model": DefaultModel, "dates": Dates, "own_table_speed": OwnTableSpeed, "streamed_bytes": StreamedBytes,
    "omp_wait_policy": OmpWaitPolicy, "hostile_cases": HostileCases,
}  # fmt: skip


def typed(record: Record) -> Record:
    """``record`` (read by :func:`accel.record.read_record`) as its benchmark's class here, where it has one."""
    shape = SHAPES.get(getattr(record, "benchmark", ""))
    return shape.model_validate(record.model_dump(exclude_unset=True, by_alias=True)) if shape else record

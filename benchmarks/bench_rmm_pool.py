"""RMM pool against no pool on the GPU arm: a feature-engineering pass with many allocations.

Each measurement runs in a fresh process (a pool is set once per process): the flights tables
are loaded, the features stage (joins, group statistics, categoricals: hundreds of device
allocations) runs once untimed, then once timed with the device synchronised; the two modes
alternate. Prints the median seconds per mode and the ratio no-pool / pool; GPU only (on a
machine without a usable GPU it says why and writes nothing).

    python benchmarks/bench_rmm_pool.py --repeats 5
"""

from __future__ import annotations

from common import Case, Config, Skipped, in_fresh_process, main, medians


def features_pass(mode: str) -> dict:
    """In a fresh process: the pool set to ``mode``, one warm-up pass, then one timed pass."""
    from accel.backend import gpu_backend
    from accel.memory import setup_rmm_pool
    from accel.timing import timed_call
    from accel.workflows import FlightsWorkflow, WorkflowSettings

    backend = gpu_backend()
    info = setup_rmm_pool(backend, mode)
    workflow = FlightsWorkflow(WorkflowSettings())
    tables = workflow.load(backend)
    workflow.features(backend, tables)  # warm-up: kernels loaded, pool grown
    seconds, _ = timed_call(lambda: workflow.features(backend, tables), backend)
    return {"seconds": seconds, "rmm": info, "rmm_stats": backend.rmm_statistics()}


def cases(bench):
    from accel.backend import probe_gpu

    probe = probe_gpu()
    if not probe.usable:
        raise Skipped(f"no usable GPU ({probe.reason})")
    yield Case(arms=("off", "auto"))


def tidy(bench, rows):
    median = medians(rows)
    return {"rows": rows, "median_seconds": median, "ratio_off_to_pool": median["off"] / median["auto"]}


CONFIG = Config(
    "rmm-pool", __doc__, lambda bench, case, mode: in_fresh_process(features_pass, mode), cases, tidy=tidy,
    summary=lambda result: f"no pool / pool = {result['ratio_off_to_pool']:.2f}×", repeats=5, gpu=lambda args: True,
)  # fmt: skip

if __name__ == "__main__":
    main(CONFIG)

"""Scoring on a Dask cluster (``accel predict --cluster`` / ``--scheduler``): the pipeline mapped over partitions.

The pipeline is loaded once on the client, on the backend of the workers' kind, and sent to
every worker (:meth:`distributed.Client.scatter`); each partition of the table is featurised and
scored by the very code of a single-process scoring (:meth:`accel.pipeline.Pipeline.features`,
``matrix``, ``predict_matrix``), so a cluster scores what one process scores. The predictions
come back to the client in partition order and are written once, from the arm the record says.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from accel import scratch
from accel._compat import Frame
from accel.backend import Backend
from accel.config import ClusterConfig
from accel.pipeline import Pipeline, load_folder
from accel.result import ArmResult, Executed, Listener, skipped
from accel.runner import execute_arm
from accel.scaleout.arms import ArmPlace, plan_arms
from accel.scaleout.cluster import OnWorkers
from accel.scaleout.cluster_run import describe_cluster
from accel.scoring import PredictSettings, ScoreJob, known_metrics, predictions_frame, read_types, scoring_executed
from accel.timing import StageTimer
from accel.workflows.partitions import partition_offsets


def features_partition(part: Frame, pipeline: Pipeline) -> tuple[Any, Any]:
    """A partition's feature frame, and its target codes where known (:meth:`~accel.pipeline.Pipeline.target_codes`)."""
    return pipeline.features(part), pipeline.target_codes(part)


def predict_partition(featured: tuple[Any, Any], pipeline: Pipeline, first_row: int, contributions: bool) -> tuple[Any, Any]:
    """A partition's output rows (:func:`accel.scoring.predictions_frame`), and the target codes
    and model output of its rows whose target is known (None without a target column)."""
    X, found = featured
    matrix = pipeline.matrix(X)
    output = pipeline.predict_matrix(matrix)
    values = None
    if contributions:
        values = pipeline.model.contributions(pipeline.backend, pipeline.fitted, matrix.batch(0, matrix.n_rows))
    known = None if found is None else (found[0], np.asarray(output, dtype=np.float64)[found[1]])
    return predictions_frame(pipeline, output, first_row, values), known


class ScoreOnDask(OnWorkers[ScoreJob]):
    """Scoring on a cluster's workers: ``load`` reads the partitions, ``features`` featurises them,
    ``predict`` stores, scores and brings the output rows back."""

    name = "dask"
    stages = ("load", "features", "predict")

    def execute(self, backend: Backend, job: ScoreJob, timer: StageTimer, listener: Listener | None) -> Executed:
        import dask
        import pandas as pd
        from distributed import wait

        from accel.workflows.table_dask import read_table

        client, info = self.session.client, self.session.info
        self.sampler.on_sample = listener.memory if listener else None
        with self.sampler:
            with timer.stage("load"):
                pipeline = load_folder(job.folder, backend)
                columns = job.columns(pipeline)
                table = read_table(
                    job.source, columns, read_types(pipeline, columns), backend.xdf, info.worker_kind, info.total_threads
                )
                parts = client.persist(table.to_delayed())
                wait(parts)
                offsets = partition_offsets(client, parts)
            with timer.stage("features"):
                shipped = client.scatter(pipeline, broadcast=True, hash=False)
                featured = client.persist([dask.delayed(features_partition)(p, shipped) for p in parts])
                wait(featured)
                del parts
            with timer.stage("predict"):
                scored = [
                    dask.delayed(predict_partition)(f, shipped, start, job.contributions) for f, start in zip(featured, offsets)
                ]
                results = client.compute(scored, sync=True)
            workers_memory = self.sampler.peaks()
        frames = [frame for frame, _ in results]
        output = pd.concat(frames, ignore_index=True) if frames else predictions_frame(pipeline, np.empty(0), 0)
        dtype = np.int32 if job.task != "regression" else np.float64
        known = [(codes.astype(dtype), out) for codes, out in (k for _, k in results if k is not None)]
        job.outputs[backend.name] = output
        executed = scoring_executed(pipeline, known_metrics(job.task, known), len(output), {"partitions": len(featured)})
        return self.ran_on_workers(executed, workers_memory)


def predict_on_cluster(
    settings: PredictSettings, cluster: ClusterConfig, listener: Listener | None = None
) -> tuple[dict[str, Any], Path, Path]:
    """``accel predict`` on a Dask cluster (``cluster``: the run's ``cluster`` section): both
    arms where a cluster run puts them (:func:`accel.scaleout.arms.plan_arms`), the CPU arm only
    with ``--baseline`` or where the accelerated one did not run."""
    from accel.scoring import conclude, prepare, score_arm

    ready = prepare(settings)
    job = ready.job
    clusters: dict[str, Any] = {}

    def score_place(place: ArmPlace) -> ArmResult:
        if place.skip is not None:
            return skipped(place.skip)
        if place.placement == "process":
            return score_arm(place.arm_backend(), settings, job, listener)
        with ExitStack() as own:
            session = place.open_session(own)
            result = execute_arm(place.arm_backend(), job, ScoreOnDask(session), listener)
            clusters[place.kind] = describe_cluster(session.info, result.as_dict(), 0.0)
            return result

    try:
        with ExitStack() as stack:
            places = plan_arms(cluster, settings.device, stack)
            gpu = score_place(places["gpu"])
            if gpu.status == "ok" and not settings.baseline:
                cpu = skipped("not requested (add --baseline to time the CPU arm beside it)")
            else:
                cpu = score_place(places["cpu"])
        return conclude(settings, ready, gpu, cpu, clusters=clusters, mode="dask")
    finally:
        scratch.release(job.scratch)

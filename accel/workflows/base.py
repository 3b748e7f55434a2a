"""What every workflow shares: its settings, the shape of its prepared data, and its interface.

A workflow is what :func:`accel.runner.run_arm` runs on each arm: :class:`Workflow` says what it
must have and gives the optional parts their defaults. Its :class:`Model` is
what the executors time (a :class:`StopsEarly` model also searches its rounds before training);
its cluster side is a :class:`~accel.workflows.partitions.DaskForm`. The types at these seams are the arm's
(:class:`~accel.backend.Backend`, :class:`~accel.precision.StoredMatrix`) or pandas-or-cuDF
(``Frame``, ``Column``, ``Array`` of :mod:`accel._compat`); only what a model keeps of its own
(its device input, its fitted form) and a workflow's raw data stay ``Any``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from accel._compat import Array, Column
from accel.registry import DEFAULT_MODEL

if TYPE_CHECKING:
    import numpy as np

    from accel.backend import Backend
    from accel.batching import BatchPlan
    from accel.config import RunConfig
    from accel.data.prepared import Prepared
    from accel.data.schema import PlannedTable, TablePlan
    from accel.early_stopping import EarlyStopping
    from accel.precision import StoredMatrix


@dataclass(frozen=True)
class WorkflowSettings:
    """Settings a workflow's data steps read (the model has its own)."""

    rows: int | None = None
    test_size: float = 0.2
    seed: int = 42
    #: Copies of the data (with jitter, :func:`accel.data.flights.replicate_with_jitter`) for scaling runs.
    scale: int = 1
    #: Hold-out rows the fitted pipeline's SHAP importances are computed on (0: none, the model's
    #: own importances only): TreeSHAP costs rows x trees x leaves x depth.
    explain_rows: int = 200

    @classmethod
    def of(cls, config: RunConfig) -> WorkflowSettings:
        """The settings a run configuration (:class:`accel.config.RunConfig`) gives its workflow."""
        return cls(config.rows, config.test_size, config.seed, config.scale, config.explain_rows)


class Model(Protocol):
    """A model on either arm (:class:`accel.models.XGBoostModel`, :class:`accel.models.EstimatorModel`,
    or another registry entry's adapter): the four steps the runner times, what it reports, and how
    its fitted form is kept. An adapter class makes one with
    ``build(spec, estimator, task, params, seed, n_classes)`` (:func:`accel.models.build_model`).

    What a model takes on the device (``to_device``'s answer, ``fit``'s ``model_input``) and its
    fitted form (a booster, an estimator) are the model's own: the runner only hands them back.
    """

    name: str
    task: str
    seed: int
    #: The saved model's file name in a pipeline folder.
    file_name: str

    def to_device(self, backend: Backend, X: StoredMatrix, y: Column, batch_rows: int) -> Any: ...

    def fit(self, backend: Backend, model_input: Any, on_round: Callable[[int, int], None] | None = None) -> Any: ...

    def predict(self, backend: Backend, fitted: Any, X: StoredMatrix, batch_rows: int) -> Array: ...

    def device_used(self, backend: Backend, fitted: Any) -> str: ...

    def threads(self, backend: Backend, fitted: Any) -> dict[str, Any]: ...

    def describe(self) -> dict[str, Any]: ...

    def settings(self) -> dict[str, Any]: ...

    def save(self, fitted: Any, path: Path) -> None: ...

    def load(self, backend: Backend, path: Path) -> Any: ...

    def importances(
        self, backend: Backend, fitted: Any, names: list[str], sample: Array | None
    ) -> dict[str, dict[str, float]]: ...

    def contributions(self, backend: Backend, fitted: Any, matrix: Array) -> np.ndarray: ...


@runtime_checkable
class StopsEarly(Protocol):
    """A model that searches its boosting rounds with early stopping before it trains
    (:class:`accel.models.XGBoostModel`): the rounds found are shared by the arms of a run."""

    early_stopping: EarlyStopping | None

    def search_rounds(self, backend: Backend, X: StoredMatrix, y: Column, batch_rows: int) -> bool: ...


class Workflow:
    """What a runner needs of a workflow (:class:`~accel.workflows.flights.FlightsWorkflow`,
    :class:`~accel.workflows.table.TableWorkflow`): its data steps per arm, its task and its model.
    The optional parts have their defaults here: the default model, no feature reports, no
    notices, no table plan."""

    name: str
    task: str
    settings: WorkflowSettings
    model: Model
    #: The ``--model`` it trains (a key of :data:`accel.registry.MODELS`).
    model_name: str = DEFAULT_MODEL
    #: A user's table's plan and its planning (its source, the plan, the seconds they took); None for a named workflow.
    plan: TablePlan | None = None
    planned: PlannedTable | None = None

    def __init__(self) -> None:
        #: What the features did per arm (encodings, imputation), for the run record.
        self.feature_reports: dict[str, Any] = {}
        #: Lines the user should read before the run (a clamped ``--rows``, a dropped column).
        self.notices: list[str] = []

    def describe_data(self) -> dict[str, Any]:
        raise NotImplementedError

    def plan_batches(self, backend: Backend, budget: int, budget_source: str, batch_rows: int | None) -> BatchPlan:
        raise NotImplementedError

    def load(self, backend: Backend) -> Any:
        raise NotImplementedError

    def features(self, backend: Backend, raw: Any) -> Prepared:
        raise NotImplementedError

"""Every model accel trains, declared once.

Two kinds of entry, in the spirit of cuML's benchmark ``AlgorithmPair``:

- :class:`Estimator` — one class pair: the CPU class (scikit-learn, or XGBoost on the host) and
  its GPU twin (cuML, or XGBoost with ``device="cuda"``), the parameters both arms share, the
  ones only one arm takes, how each library spells a setting they name differently, how to read
  back the device it really ran on, and — for ``accel bench models`` — the quality measure.
- :class:`ModelSpec` — one ``--model`` choice: its estimators per task, its settings (a pydantic
  schema whose defaults and bounds are validated where the workflow file and the flags are
  read), its built-in search space for ``accel hpo``, what it can do (:class:`Capabilities`: the
  feature family it gets, whether it streams batches, trains on Dask, stops early, prunes), its
  adapter (the class in :mod:`accel.models` that trains it), the parity tolerance, and the
  parameters the experiments table shows.

Everything else is a view of these two tables: the ``--model`` choices and the workflow file's
model sections (:mod:`accel.config`), the search spaces (:mod:`accel.hpo.space`), the feature plan
(:mod:`accel.data.autofeatures`), the parity rule (:mod:`accel.metrics`), the pairs of ``accel bench
models`` (:mod:`accel.bench.models`) and the model classes each arm imports
(:class:`accel.backend.ModelClasses`). The executors, hpo and the features ask an entry's
:class:`Capabilities`, never its name: adding a model is one entry here (or one :func:`register`
call before accel reads its configuration) plus its adapter when neither of
:mod:`accel.models`' two fits it, and its tests.

This module imports nothing heavy (no scikit-learn, cuML or XGBoost): classes are named as
``"module:Class"`` and imported on first use, on the arm that needs them.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from accel.errors import AccelError

# --------------------------------------------------------------------------- settings schemas

#: Bounds the libraries accept (or that fit in memory), checked when the config is read so a
#: run never starts with a value the library refuses only after the data is loaded.
MAX_ESTIMATORS = 100_000
MAX_BIN = 65_536
MAX_NEIGHBORS = 10_000
MAX_ITER = 1_000_000
#: Model settings are finite numbers: no inf or NaN (YAML's .inf / .nan).
STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


class _Settings(BaseModel):
    """A model's settings: finite numbers, no unknown names (:data:`STRICT`)."""

    model_config = STRICT


class XGBoostSettings(_Settings):
    """The boosting parameters both arms share.

    Subsampling is off by default so that both arms see the same rows; a search
    (:mod:`accel.hpo.search`) may turn it on, and then each arm draws its own rows from the seed.
    """

    model_config = ConfigDict(frozen=True)

    n_estimators: int = Field(300, ge=1, le=MAX_ESTIMATORS)
    max_depth: int = Field(8, ge=0, le=32)
    learning_rate: float = Field(0.1, gt=0, le=1)
    max_bin: int = Field(256, ge=2, le=MAX_BIN)
    min_child_weight: float = Field(1.0, ge=0)
    reg_lambda: float = Field(1.0, ge=0)
    reg_alpha: float = Field(0.0, ge=0)
    subsample: float = Field(1.0, gt=0, le=1)  # below 1 each arm draws its own rows
    colsample_bytree: float = Field(1.0, gt=0, le=1)


class RandomForestSettings(_Settings):
    """cuML's forest has depth 16 by default, scikit-learn's unlimited: both get 16."""

    n_estimators: int = Field(100, ge=1, le=MAX_ESTIMATORS)
    max_depth: int = Field(16, ge=1, le=64)
    # A share of the features in (0, 1], or sqrt/log2; None: the estimator's own ("sqrt" for
    # classes, 1.0 for regression).
    max_features: Annotated[float, Field(gt=0, le=1)] | Literal["sqrt", "log2"] | None = None


class LogisticRegressionSettings(_Settings):
    C: float = Field(1.0, gt=0)
    l1_ratio: float = Field(0.0, ge=0, le=1)  # 0: L2 penalty, 1: L1, between: elastic net
    max_iter: int = Field(1000, ge=1, le=MAX_ITER)


class LinearRegressionSettings(_Settings):
    """Ordinary least squares; with ``alpha`` set, an elastic net (``alpha``, ``l1_ratio``)."""

    alpha: float | None = Field(None, gt=0)
    l1_ratio: float = Field(0.5, ge=0, le=1)  # read only with alpha set


class LassoSettings(_Settings):
    """Least squares with an L1 penalty (coordinate descent in both libraries)."""

    alpha: float = Field(1.0, gt=0)
    max_iter: int = Field(1000, ge=1, le=MAX_ITER)


class KNNSettings(_Settings):
    n_neighbors: int = Field(5, ge=1, le=MAX_NEIGHBORS)
    weights: Literal["uniform", "distance"] = "uniform"


# --------------------------------------------------------------------------- search spaces


@dataclass(frozen=True)
class Dist:
    """One parameter's search distribution, or a fixed value (``kind="fixed"``)."""

    kind: str  # "int" | "float" | "categorical" | "fixed"
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple = ()
    value: Any = None

    def describe(self) -> dict[str, Any]:
        if self.kind == "fixed":
            return {"fixed": self.value}
        if self.kind == "categorical":
            return {"choices": list(self.choices)}
        step = {"step": self.step} if self.step is not None else {}
        return {"type": self.kind, "low": self.low, "high": self.high, "log": self.log, **step}


# --------------------------------------------------------------------------- device read-back


def xgboost_device_used(booster: Any) -> str:
    """The device a booster really trained on (``"cpu"`` or ``"cuda:0"``), from its own config.

    With ``device="cuda"`` and no usable GPU, XGBoost only warns and trains on the CPU.
    """
    return str(_generic_param(booster)["device"])


def xgboost_threads_used(booster: Any) -> int:
    return int(_generic_param(booster)["nthread"])


def _generic_param(booster: Any) -> dict[str, Any]:
    return json.loads(booster.save_config())["learner"]["generic_param"]


# --------------------------------------------------------------------------- parameter spelling


def _logistic_penalty(params: dict[str, Any], gpu: bool) -> dict[str, Any]:
    """One ``l1_ratio`` (0: ridge, 1: lasso, between: elastic net) in each library's terms.

    scikit-learn >= 1.8 reads the penalty from ``l1_ratio`` alone but needs the ``saga`` solver
    for any L1 part; cuML names the penalty and reads ``l1_ratio`` for elastic net only.
    """
    out = dict(params)
    l1_ratio = float(out.pop("l1_ratio", 0.0) or 0.0)
    if gpu:
        out["penalty"] = "l2" if l1_ratio == 0 else "l1" if l1_ratio == 1 else "elasticnet"
        if out["penalty"] == "elasticnet":
            out["l1_ratio"] = l1_ratio
    elif l1_ratio > 0:
        out["l1_ratio"] = l1_ratio
        out["solver"] = "saga"
    return out


# --------------------------------------------------------------------------- entries

#: What a saved forest holds besides its own class: its trees.
_FOREST_TYPES = (
    "sklearn.tree._classes.DecisionTreeClassifier", "sklearn.tree._classes.DecisionTreeRegressor", "sklearn.tree._tree.Tree",
)  # fmt: skip
#: What a saved neighbour search holds: its index over the training rows and its distance.
_KNN_TYPES = (
    "sklearn.neighbors._kd_tree.KDTree", "sklearn.neighbors._ball_tree.BallTree",
    "sklearn.metrics._dist_metrics.EuclideanDistance64",
)  # fmt: skip
#: Defaults the forests' classes name differently and that mean the same.
_FOREST_DEFAULTS = {"max_samples": "None (scikit-learn) and 1.0 (cuML) both draw n rows per tree"}
#: The neighbour searches' metric defaults.
_KNN_DEFAULTS = {"metric": "minkowski with p=2 (scikit-learn) is euclidean (cuML)"}

#: Placeholders in per-arm parameters, filled in from the arm: its cores, XGBoost's device.
N_THREADS, XGB_DEVICE = "N_THREADS", "XGB_DEVICE"


@dataclass(frozen=True)
class Estimator:
    """One class pair: the CPU arm's class and the GPU arm's twin.

    Attributes
    ----------
    key : str
        The class pair (``random_forest_classifier``): which classes, for the backends and the
        run record's ``model.estimator``. Users name a pair by :attr:`name`.
    cpu, gpu : str
        ``"module:Class"`` of each arm's class, imported on first use.
    task : str
        ``classification``, ``regression``, ``clustering`` or ``decomposition``.
    shared : Mapping
        Parameters both arms take, over the model's settings (a setting left ``None`` takes
        the value here).
    cpu_only, gpu_only : Mapping
        Parameters of one arm only; :data:`N_THREADS` and :data:`XGB_DEVICE` are filled in
        from the arm.
    seeded : bool
        Takes ``random_state`` (the run's seed on both arms).
    spell : callable or None
        ``(params, gpu) -> params``: a setting the two libraries name differently.
    metric : str or None
        ``accel bench models``: the quality measure (``accuracy``, ``r2``, ``inertia``,
        ``explained_variance``); None keeps the pair out of that benchmark.
    bench : Mapping
        ``accel bench models``: parameters over the model's defaults (fewer rounds, a tolerance).
    predict : str
        The method timed as "predict" (``predict`` or ``transform``).
    max_predict_rows : int or None
        Predict on at most this many rows in ``accel bench models`` (k-nearest neighbours
        costs rows x training rows).
    same_in_effect : Mapping
        Parameters both classes take whose defaults differ, that neither arm sets, each with
        why the two defaults do the same thing here. Any other default that differs is set on
        both arms (``shared``), so the arms solve the same problem; ``tests/test_registry.py``
        compares the two classes' signatures wherever cuML is installed.
    """

    key: str
    cpu: str
    gpu: str
    task: str
    shared: Mapping[str, Any] = field(default_factory=dict)
    cpu_only: Mapping[str, Any] = field(default_factory=dict)
    gpu_only: Mapping[str, Any] = field(default_factory=dict)
    seeded: bool = False
    spell: Callable[[dict[str, Any], bool], dict[str, Any]] | None = None
    metric: str | None = None
    bench: Mapping[str, Any] = field(default_factory=dict)
    predict: str = "predict"
    max_predict_rows: int | None = None
    same_in_effect: Mapping[str, str] = field(default_factory=dict)
    #: The ``--model`` this estimator serves (set by the registry), whose settings' defaults it takes.
    model: str | None = None
    #: Types its saved scikit-learn form holds that skops does not trust by default (a forest's
    #: trees): the only ones a pipeline's saved model may hold besides the class itself.
    saved_types: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The one key of its registry entry: the ``--model`` it serves (``random_forest``), or its
        own key for a pair that serves none (``kmeans``); ``accel bench models`` takes and lists it."""
        return self.model or self.key

    @property
    def needs_cuml(self) -> bool:
        return self.gpu.startswith("cuml")

    def device_used(self, fitted: Any, gpu_device: str) -> str:
        """The device ``fitted`` really ran on: a scikit-learn-API XGBoost estimator's, read from its
        booster's own config; a cuML estimator runs on the GPU and nothing else, a scikit-learn one on the CPU."""
        if hasattr(fitted, "get_booster"):
            return xgboost_device_used(fitted.get_booster())
        return gpu_device if type(fitted).__module__.startswith("cuml") else "cpu"

    def params(self, settings: Mapping[str, Any], *, gpu: bool, n_threads: int, xgb_device: str, seed: int) -> dict[str, Any]:
        """The keyword arguments of one arm's class for the given model settings."""
        out = {**self.shared, **{k: v for k, v in settings.items() if v is not None}}
        for k, v in (self.gpu_only if gpu else self.cpu_only).items():
            out[k] = {N_THREADS: n_threads, XGB_DEVICE: xgb_device}.get(v, v) if isinstance(v, str) else v
        if self.seeded:
            out["random_state"] = seed
        return self.spell(out, gpu) if self.spell else out

    def bench_params(self, *, gpu: bool, n_threads: int, xgb_device: str, seed: int) -> dict[str, Any]:
        """What ``accel bench models`` fits: the model's default settings with :attr:`bench` over them."""
        defaults = MODELS[self.model].settings().model_dump() if self.model else {}
        return self.params({**defaults, **self.bench}, gpu=gpu, n_threads=n_threads, xgb_device=xgb_device, seed=seed)


#: The feature families (:mod:`accel.data.autofeatures`): ``native`` keeps categories as
#: categories and missing values as missing (a model that takes both, unscaled); ``trees`` codes
#: categories and fills missing values; ``linear`` and ``distance`` (a model of distances between
#: rows: k-nearest neighbours) also one-hot and standardise.
FAMILIES = ("native", "trees", "linear", "distance")

#: Families by the names they had before they were named for what they mean (a saved pipeline's).
OLD_FAMILIES = {"xgboost": "native", "random_forest": "trees", "knn": "distance"}

#: What each capability lets a model do, as a refusal says it.
_ABILITIES = {
    "streams": "train batch by batch on a table streamed from disk",
    "dask": "train on a Dask cluster (--cluster/--scheduler)",
    "stops_early": "stop early on a validation part of its training rows",
    "prunes": "report its validation metric each round for pruning",
}


@dataclass(frozen=True)
class Capabilities:
    """What a model can do: the executors, hpo and the features ask these, never the model's name.

    Attributes
    ----------
    family : str
        The feature family it gets (one of :data:`FAMILIES`). ``native``: it takes categorical
        columns as categories and missing values as they are, so a run's plan probes which
        many-valued columns to keep as categories
        (:func:`accel.data.autofeatures.probe_native_categories`).
    streams : bool
        Trains batch by batch on a table that does not fit the memory budget (a streamed run);
        otherwise such a run of it is refused.
    dask : str or None
        The trainer a run on a Dask cluster uses (``"xgboost.dask"``); None: a cluster run of it
        is refused.
    stops_early : bool
        Finds its rounds on a validation part of the training rows (a run's early stopping,
        hpo's trials watching their validation rows): its adapter has ``early_stopping``,
        ``search_rounds``, ``fit_validated`` and ``rounds_used``.
    prunes : bool
        Reports its validation metric each round, so hpo prunes a trial while it trains: its
        adapter's ``pruning_callbacks(trial, task)`` gives the callbacks.
    """

    family: str
    streams: bool = False
    dask: str | None = None
    stops_early: bool = False
    prunes: bool = False

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, not {self.family!r}")
        if (self.streams or self.dask) and self.family != "native":
            # A streamed or Dask run builds the native family's features: no fitted imputation or scaling.
            raise ValueError("a model that streams or trains on Dask takes the native family's features")


def able(ability: str) -> list[str]:
    """The ``--model`` names whose capabilities include ``ability`` (a :class:`Capabilities` field)."""
    return [name for name, spec in MODELS.items() if getattr(spec.caps, ability)]


def refusal(model: str, ability: str, instead: str) -> AccelError:
    """The one-line error of a run that needs ``ability`` of a ``model`` without it: what it cannot
    do, ``instead`` (what to change), and the models that can."""
    others = able(ability)
    can = f", or use --model {' / '.join(others)}, which can" if others else ""
    return AccelError(f"--model {model} cannot {_ABILITIES[ability]}: {instead}{can}")


@dataclass(frozen=True)
class ModelSpec:
    """One ``--model`` choice.

    Attributes
    ----------
    name : str
        The ``--model`` value and the workflow file's section for its settings.
    caps : Capabilities
        What it can do, and the feature family it gets.
    settings : type
        The pydantic schema of its settings (defaults and bounds).
    classifier, regressor : Estimator or None
        The estimator per task; None: the model cannot do that task.
    search_space : Mapping
        The built-in ranges of ``accel hpo`` (overridable in the workflow file).
    labels : tuple
        ``(setting, short name)`` pairs the experiments table shows.
    parity_scale : float
        The parity tolerance's multiple (cuML's forest bins features where scikit-learn's does not).
    penalized : tuple or None
        ``(setting, estimator)``: with that setting given, that estimator instead
        (a linear regression with ``alpha`` is an elastic net).
    adapter : str or type
        The class that trains it on either arm (``"module:Class"``, imported on first use, or the
        class): :class:`accel.models.EstimatorModel` (one estimator fits one matrix) unless given;
        its ``build(spec, estimator, task, params, seed, n_classes)`` makes the model of a run.
    holds : str
        What its saved model keeps of the training data besides what it learnt (the run record
        and the docs say it); empty for none.
    """

    name: str
    _: KW_ONLY
    caps: Capabilities
    settings: type[BaseModel]
    classifier: Estimator | None = None
    regressor: Estimator | None = None
    search_space: Mapping[str, Dist]
    labels: tuple[tuple[str, str], ...]
    parity_scale: float = 1.0
    penalized: tuple[str, Estimator] | None = None
    adapter: str | type = "accel.models:EstimatorModel"
    #: What its saved model keeps of the training data besides what it learnt ("" for none).
    holds: str = ""

    def __post_init__(self) -> None:
        # Each estimator knows the model whose settings' defaults it takes (the penalized
        # variant has settings of its own and takes none).
        for name in ("classifier", "regressor"):
            est = getattr(self, name)
            if est is not None and est.model is None:
                object.__setattr__(self, name, replace(est, model=self.name))

    @property
    def needs_cuml(self) -> bool:
        """Its GPU arm trains with cuML (which allocates from the RMM pool)."""
        return any(e is not None and e.needs_cuml for e in (self.classifier, self.regressor))

    def known_parameters(self) -> list[str]:
        """Parameters a search space may name: the built-in ones and the settings."""
        return sorted(set(self.search_space) | set(self.settings.model_fields))

    def estimator(self, classification: bool, settings: Mapping[str, Any] | None = None) -> Estimator | None:
        """The estimator for the task; the penalized variant when its setting is given."""
        if self.penalized and (settings or {}).get(self.penalized[0]) is not None:
            return self.penalized[1]
        return self.classifier if classification else self.regressor

    def given(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The settings the chosen estimator takes, without the unset ones.

        A model with a penalized variant takes none of its settings while the penalty is unset
        (plain least squares has no penalty to mix).
        """
        if self.penalized is not None and settings.get(self.penalized[0]) is None:
            return {}
        return {k: v for k, v in settings.items() if v is not None}


def _twins(
    key: str, cpu: str, gpu: str, classifier: Mapping[str, Any], regressor: Mapping[str, Any], **both: Any
) -> dict[str, Any]:
    """A model's ``classifier`` and ``regressor`` (as :class:`ModelSpec` takes them), whose classes are
    named ``<cpu|gpu>Classifier`` and ``<cpu|gpu>Regressor`` (keys ``<key>_classifier`` and
    ``<key>_regressor``): ``both`` is what the two entries share, ``classifier`` and ``regressor`` what
    only one of them has."""
    return {
        role: Estimator(f"{key}_{role}", f"{cpu}{role.title()}", f"{gpu}{role.title()}", task, **both, **own)
        for role, task, own in (("classifier", "classification", classifier), ("regressor", "regression", regressor))
    }


#: The ``--model`` a run trains unless told otherwise, and the one the named workflows train.
DEFAULT_MODEL = "xgboost"


_SPECS = (
    ModelSpec(
        DEFAULT_MODEL,
        caps=Capabilities("native", streams=True, dask="xgboost.dask", stops_early=True, prunes=True),
        settings=XGBoostSettings,
        # accel bench models boosts 100 rounds (the model's default is 300).
        **_twins(
            "xgboost", "xgboost:XGB", "xgboost:XGB", {"metric": "accuracy", "bench": {"n_estimators": 100}}, {},
            shared={"tree_method": "hist"}, seeded=True,
            cpu_only={"n_jobs": N_THREADS, "device": "cpu"}, gpu_only={"device": XGB_DEVICE},
        ),
        # n_estimators is the most rounds a trial may use: XGBoost stops early on the
        # validation part, so the rounds that count are found, not guessed.
        search_space={
            "learning_rate": Dist("float", 0.01, 0.3, log=True),
            "max_depth": Dist("int", 3, 12),
            "min_child_weight": Dist("float", 0.5, 64.0, log=True),
            "subsample": Dist("float", 0.5, 1.0),
            "colsample_bytree": Dist("float", 0.4, 1.0),
            "reg_lambda": Dist("float", 1e-3, 100.0, log=True),
            "reg_alpha": Dist("float", 1e-3, 10.0, log=True),
            "n_estimators": Dist("int", 100, 1000, log=True),
        },
        labels=(("n_estimators", "rounds"), ("max_depth", "depth"), ("learning_rate", "lr")),
        adapter="accel.models:XGBoostModel",
    ),
    ModelSpec(
        "random_forest",
        caps=Capabilities("trees"),
        settings=RandomForestSettings,
        **_twins(
            "random_forest", "sklearn.ensemble:RandomForest", "cuml.ensemble:RandomForest",
            {"shared": {"max_features": "sqrt"}, "metric": "accuracy"}, {"shared": {"max_features": 1.0}},
            cpu_only={"n_jobs": N_THREADS}, seeded=True, same_in_effect=_FOREST_DEFAULTS, saved_types=_FOREST_TYPES,
        ),
        search_space={
            "n_estimators": Dist("int", 50, 500, log=True),
            "max_depth": Dist("int", 4, 32),
            "max_features": Dist("categorical", choices=("sqrt", "log2", 0.25, 0.5, 0.75, 1.0)),
        },
        labels=(("n_estimators", "trees"), ("max_depth", "depth"), ("max_features", "features")),
        # cuML's forest bins features (128 bins) where scikit-learn's does not.
        parity_scale=4.0,
    ),
    ModelSpec(
        "logistic_regression",
        caps=Capabilities("linear"),
        settings=LogisticRegressionSettings,
        classifier=Estimator(
            "logistic_regression", "sklearn.linear_model:LogisticRegression",
            "cuml.linear_model:LogisticRegression", "classification",
            spell=_logistic_penalty, metric="accuracy", bench={"tol": 1e-4},
            same_in_effect={
                "solver": "lbfgs (scikit-learn) and cuML's qn are both L-BFGS for an L2 penalty; an L1 part "
                "takes saga / OWL-QN (the spelling function)",
                "l1_ratio": "0.0 (scikit-learn) and None (cuML): an L2 penalty; the spelling function passes it where it is not",
            },
        ),
        # l1_ratio: 0 is an L2 penalty, 1 an L1 penalty, between an elastic net.
        search_space={"C": Dist("float", 1e-3, 100.0, log=True), "l1_ratio": Dist("categorical", choices=(0.0, 0.5, 1.0))},
        labels=(("C", "C"), ("l1_ratio", "l1_ratio")),
    ),
    ModelSpec(
        "linear_regression",
        caps=Capabilities("linear"),
        settings=LinearRegressionSettings,
        regressor=Estimator(
            "linear_regression", "sklearn.linear_model:LinearRegression", "cuml.linear_model:LinearRegression",
            "regression",
        ),
        # Tuning a linear regression means choosing its penalty: an elastic net (alpha, l1_ratio).
        search_space={"alpha": Dist("float", 1e-4, 10.0, log=True), "l1_ratio": Dist("float", 0.0, 1.0)},
        labels=(("alpha", "alpha"), ("l1_ratio", "l1_ratio")),
        penalized=(
            "alpha",
            Estimator(
                "elastic_net", "sklearn.linear_model:ElasticNet", "cuml.linear_model:ElasticNet", "regression",
                # scikit-learn's tolerance (cuML's default is 1e-3): both arms solve to the same one.
                shared={"max_iter": 1000, "tol": 1e-4},
            ),
        ),
    ),
    ModelSpec(
        "lasso",
        caps=Capabilities("linear"),
        settings=LassoSettings,
        # scikit-learn's tolerance (cuML's default is 1e-3): both arms solve to the same one.
        regressor=Estimator(
            "lasso", "sklearn.linear_model:Lasso", "cuml.linear_model:Lasso", "regression",
            shared={"tol": 1e-4}, metric="r2",
        ),
        search_space={"alpha": Dist("float", 1e-4, 10.0, log=True)},
        labels=(("alpha", "alpha"),),
    ),
    ModelSpec(
        "knn",
        caps=Capabilities("distance"),
        settings=KNNSettings,
        **_twins(
            "knn", "sklearn.neighbors:KNeighbors", "cuml.neighbors:KNeighbors", {"metric": "accuracy", "max_predict_rows": 10_000},
            {}, cpu_only={"n_jobs": N_THREADS}, same_in_effect=_KNN_DEFAULTS, saved_types=_KNN_TYPES,
        ),
        search_space={"n_neighbors": Dist("int", 1, 64, log=True), "weights": Dist("categorical", choices=("uniform", "distance"))},
        labels=(("n_neighbors", "k"), ("weights", "weights")),
        holds="the training rows' features and targets (k-nearest neighbours predicts from them)",
    ),
)  # fmt: skip

#: Pairs only ``accel bench models`` fits (no ``--model`` of their own).
_BENCH_ONLY = (
    Estimator(
        "kmeans", "sklearn.cluster:KMeans", "cuml.cluster:KMeans", "clustering",
        # init: cuML's default is k-means|| (scalable k-means++); "k-means++" is the classic
        # seeding scikit-learn uses, which cuML runs as k-means|| with no oversampling.
        shared={"n_clusters": 8, "max_iter": 300, "tol": 1e-4, "n_init": 1, "init": "k-means++"}, seeded=True,
        metric="inertia",
    ),
    Estimator("ridge", "sklearn.linear_model:Ridge", "cuml.linear_model:Ridge", "regression",
              shared={"alpha": 1.0}, metric="r2"),
    Estimator(
        "pca", "sklearn.decomposition:PCA", "cuml.decomposition:PCA", "decomposition",
        shared={"n_components": 8}, metric="explained_variance", predict="transform",
        same_in_effect={
            "iterated_power": "read only by the iterative solvers (randomized, jacobi); both arms pick an exact "
            "solver for the benchmark's tall matrices (scikit-learn's auto: covariance_eigh; cuML: full)",
            "tol": "read only by the iterative solvers, as iterated_power",
        },
    ),
)  # fmt: skip

#: ``--model`` choices, in the order the help lists them (filled by :func:`register`).
MODELS: dict[str, ModelSpec] = {}
#: Every class pair by key (filled by :func:`register`); the bench pairs are the ones with a
#: :attr:`Estimator.metric`.
ESTIMATORS: dict[str, Estimator] = {}
#: The pairs ``accel bench models`` fits, by :attr:`Estimator.name` (one per registry entry: the
#: entry's ``--model`` name), in the order the registry declares them.
BENCH_PAIRS: dict[str, Estimator] = {}


def _add_estimator(est: Estimator) -> None:
    ESTIMATORS[est.key] = est
    if est.metric:
        BENCH_PAIRS[est.name] = est


def model_libraries() -> tuple[str, ...]:
    """Import names of the libraries the models' CPU classes come from (``xgboost``, ``sklearn``), in
    the registry's order: the libraries whose versions a run record lists."""
    return tuple(dict.fromkeys(e.cpu.partition(":")[0].split(".")[0] for e in ESTIMATORS.values()))


def register(spec: ModelSpec) -> None:
    """Add ``spec`` to the tables: a ``--model`` choice, its estimators' class pairs, its bench pair.

    accel's own entries are registered here, at import; another model is registered the same way
    before accel reads a configuration (the ``--model`` choices and the workflow file's sections are
    made from :data:`MODELS` when :mod:`accel.config` is imported). Nothing else names a model:
    the runs ask :attr:`ModelSpec.caps`.
    """
    if "accel.config" in sys.modules:  # its --model choices and sections are made: the model would be unknown there
        raise RuntimeError(
            f"register {spec.name!r} before accel reads a configuration (before importing accel.config or accel.api)"
        )
    _add_model(spec)


def _add_model(spec: ModelSpec) -> None:
    if spec.name in MODELS:
        raise ValueError(f"a model named {spec.name!r} is registered already")
    MODELS[spec.name] = spec
    for est in (spec.classifier, spec.regressor, spec.penalized[1] if spec.penalized else None):
        if est is not None:
            _add_estimator(est)


for _spec in _SPECS:
    _add_model(_spec)
for _est in _BENCH_ONLY:
    _add_estimator(_est)


def check_search_space(model: str, params: Mapping[str, Any]) -> None:
    """Raise a one-line :class:`AccelError` for a parameter ``model`` does not have, or a value its settings refuse.

    Every value a search could try is checked against the model's settings schema
    (:attr:`ModelSpec.settings`) before any study exists: the bounds of a range, each choice,
    a fixed value; and a step must be positive and fit in its range. Raised (not
    ``ValueError``) from the config validator on purpose: pydantic lets it through as it is,
    so the message stays one line naming the parameter.
    """
    spec = MODELS[model]
    known = spec.known_parameters()
    for name, value in params.items():
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise AccelError(f"hpo.search_space.{model}: unknown parameter {name!r}{hint}; {model} has: {', '.join(known)}")
        where = f"hpo.search_space.{model}.{name}"
        step = getattr(value, "step", None)  # a SearchRange's: finite, with low <= high (accel.config)
        if step is not None and step <= 0:
            raise AccelError(f"{where}: step must be a positive number, got {step:g}")
        if step is not None and step > value.high - value.low > 0:
            raise AccelError(f"{where}: step {step:g} is wider than the range {value.low:g}..{value.high:g}")
        if name not in spec.settings.model_fields:
            continue  # a search-only parameter (none today): no schema to check it against
        choices = value if isinstance(value, list) else getattr(value, "choices", None)
        if choices is not None:
            tried = [("choice", c) for c in choices]
        else:  # a SearchRange (accel.config): its bounds; else a fixed value
            tried = [("low", value.low), ("high", value.high)] if hasattr(value, "low") else [("value", value)]
        for label, candidate in tried:
            try:
                spec.settings.model_validate({name: candidate})
            except ValidationError as exc:
                error = exc.errors()[0]
                shown = repr(candidate) if len(repr(candidate)) <= 40 else repr(candidate)[:37] + "..."
                raise AccelError(f"{where}: {label} {shown} is not a valid {name} ({error['msg'].lower()})") from None

"""Search spaces: the registry's built-in ranges, a workflow file's overrides, Optuna's suggestions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accel.registry import MODELS, Dist

# --------------------------------------------------------------------------- search spaces

#: Built-in search spaces, per model (declared in :mod:`accel.registry`).
SEARCH_SPACES: dict[str, Mapping[str, Dist]] = {name: spec.search_space for name, spec in MODELS.items()}


def _override(model: str, name: str, default: Dist | None, value: Any) -> Dist:
    """A :class:`Dist` from a workflow file's override of one parameter."""
    if value is None or isinstance(value, (int, float, str, bool)):
        return Dist("fixed", value=value)
    # A list of choices, or a SearchRange (accel.config): choices, or low/high(/log/step).
    if (choices := value if isinstance(value, list) else value.choices) is not None:
        return Dist("categorical", choices=tuple(choices))
    # A range over a parameter without a built-in one: whole numbers when the model's setting takes them.
    kind, setting = default.kind if default is not None else None, MODELS[model].settings.model_fields.get(name)
    is_int = kind == "int" if kind in ("int", "float") else setting is not None and setting.annotation is int
    low, high = (int(value.low), int(value.high)) if is_int else (float(value.low), float(value.high))
    step = None if value.step is None else (int(value.step) if is_int else float(value.step))
    return Dist("int" if is_int else "float", low, high, bool(value.log), step)


def resolve_space(model: str, overrides: dict[str, Any] | None) -> dict[str, Dist]:
    """The built-in space of ``model`` with a workflow file's overrides applied."""
    space = dict(SEARCH_SPACES[model])
    for name, value in (overrides or {}).items():
        space[name] = _override(model, name, space.get(name), value)
    return space


def suggest(trial: Any, space: dict[str, Dist]) -> dict[str, Any]:
    """Parameter values for one trial (fixed values as they are)."""
    out: dict[str, Any] = {}
    for name, d in space.items():
        if d.kind == "fixed":
            out[name] = d.value
        elif d.kind == "categorical":
            out[name] = trial.suggest_categorical(name, list(d.choices))
        else:
            # A range has both ends: the registry's ranges and the config's SearchRange (refused without them).
            assert d.low is not None and d.high is not None, d.describe()
            if d.kind == "int":
                step = 1 if d.log or d.step is None else int(d.step)
                out[name] = trial.suggest_int(name, int(d.low), int(d.high), log=d.log, step=step)
            else:
                out[name] = trial.suggest_float(name, float(d.low), float(d.high), log=d.log, step=None if d.log else d.step)
    return out

"""The run record's fields, read from real records that the docs build makes.

``.. accel-record-schema::`` runs two tiny paired runs on the CPU arm through the library
(:func:`accel.run`: the flights workflow on 2,000 rows, and a generated 600-row CSV through
``data=``), reads the records they wrote, and lists every field to two levels (``arms.<arm>.*``
for both arms at once; a third where ``record_fields.yaml`` describes fields there) with its JSON type, which record has it, and its description from
``guide/record_fields.yaml``. So the list is what the code writes today: a field the code
stops writing disappears from the page, and

- a top-level field or a field of an arm that has no description,
- a description of a field that no record has any more

are warnings (the docs build runs with ``-W``, so it fails on them).

``.. accel-record-example::`` shows the flights record itself.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

FIELDS_FILE = Path(__file__).resolve().parents[1] / "guide" / "record_fields.yaml"
ARM = "arms.<arm>"

_records: dict[str, dict[str, Any]] | None = None


def _table_csv(path: Path) -> None:
    """A small churn-like table: a categorical, a number, dates as text, a count; a yes/no target."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 600
    calls = rng.poisson(1.5, n)
    frame = pd.DataFrame(
        {
            "plan": rng.choice(["basic", "plus", "pro"], n),
            "monthly_spend": rng.gamma(2.0, 30.0, n).round(2),
            "signup_date": (pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n), unit="D")).strftime("%Y-%m-%d"),
            "support_calls": calls,
            "churned": np.where(rng.random(n) < 1 / (1 + np.exp(-(calls - 1.5))), "yes", "no"),
        }
    )
    frame.to_csv(path, index=False)


def make_records() -> dict[str, dict[str, Any]]:
    """``{"flights": record, "table": record}`` as the files hold them (strict JSON, ``nulls``)."""
    global _records
    if _records is None:
        import accel

        with tempfile.TemporaryDirectory(prefix="accel-docs-") as tmp:
            folder = Path(tmp)
            csv = folder / "customers.csv"
            _table_csv(csv)
            flights = accel.run("flights", rows=2000, device="cpu", seed=42, out=folder / "runs", progress=False)
            table = accel.run(data=csv, target="churned", device="cpu", seed=42, out=folder / "runs", progress=False)
            _records = {
                "flights": json.loads(flights.path.read_text()),
                "table": json.loads(table.path.read_text()),
            }
    return _records


def _type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def walk(record: dict[str, Any], collapse: set[str], described: Collection[str] = ()) -> dict[str, tuple[set[str], list[str]]]:
    """``path -> (types, keys)``: fields to two levels, both arms under ``arms.<arm>``, and a
    third where ``described`` names fields there (``model.early_stopping.rounds``)."""
    out: dict[str, tuple[set[str], list[str]]] = {}

    def add(path: str, value: Any) -> None:
        types, keys = out.setdefault(path, (set(), []))
        types.add(_type(value))
        if isinstance(value, dict):
            keys.extend(k for k in value if k not in keys)

    def visit(path: str, value: Any, depth: int) -> None:
        add(path, value)
        deeper = depth < 2 or any(d.startswith(path + ".") for d in described)
        if isinstance(value, dict) and deeper and path not in collapse:
            for key, child in value.items():
                visit(f"{path}.{key}", child, depth + 1)

    for key, value in record.items():
        if key == "arms" and isinstance(value, dict):
            add("arms", value)
            for arm in value.values():
                add(ARM, arm)
                for field, child in (arm or {}).items():
                    add(f"{ARM}.{field}", child)
            continue
        visit(key, value, 1)
    return out


def _markdown_code(text: str) -> str:
    """The descriptions' Markdown code spans (`x`) as reST literals (``x``)."""
    return re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)


def _type_text(types: set[str]) -> str:
    order = ["object", "array", "string", "number", "integer", "boolean", "null"]
    if {"number", "integer"} <= types:
        types = types - {"integer"}
    return " or ".join(t for t in order if t in types)


class RecordSchemaDirective(SphinxDirective):
    """The table of fields (see the module docstring)."""

    def run(self) -> list[nodes.Node]:
        from results import table  # the same table helper as the results page

        self.env.note_dependency(str(FIELDS_FILE))
        spec = yaml.safe_load(FIELDS_FILE.read_text())
        described: dict[str, str] = spec.get("fields") or {}
        collapse = set(spec.get("collapse") or [])
        records = make_records()
        found: dict[str, dict[str, tuple[set[str], list[str]]]] = {
            name: walk(rec, collapse, described) for name, rec in records.items()
        }
        paths = list(dict.fromkeys(p for fields in found.values() for p in fields))
        location = self.get_location()
        for path in paths:
            required = "." not in path or (path.startswith(ARM + ".") and path.count(".") == 2)
            if required and path not in described and path not in ("arms", ARM):
                logger.warning("run record field %r has no description in %s", path, FIELDS_FILE.name, location=location)
        for path in described:
            if path not in paths:
                logger.warning(
                    "%s describes %r, which no run record written by this build has", FIELDS_FILE.name, path, location=location
                )
        rows = []
        for path in paths:
            if path == ARM:
                continue
            types: set[str] = set()
            keys: list[str] = []
            where = []
            for name, fields in found.items():
                if path in fields:
                    types |= fields[path][0]
                    keys.extend(k for k in fields[path][1] if k not in keys)
                    where.append(name)
            shown_keys = ", ".join(keys[:12]) + (", …" if len(keys) > 12 else "")
            if path == "arms":
                shown_keys = "gpu, cpu"
            inline, problems = self.state.inline_text(_markdown_code(described.get(path, "")), self.lineno)
            where_text = "both" if len(where) == len(found) else " and ".join(where)
            rows.append([[nodes.literal(text=path)], _type_text(types), where_text, shown_keys, [*inline, *problems]])
        return [table(["field", "type", "in", "keys", "what it holds"], rows)]


class RecordExampleDirective(SphinxDirective):
    """A run record, as the file holds it (the flights run on 2,000 rows, CPU arm only)."""

    def run(self) -> list[nodes.Node]:
        text = json.dumps(make_records()["flights"], indent=2)
        block = nodes.literal_block(text, text, language="json")
        return [
            nodes.raw(
                "",
                "<details><summary>A run record (flights, 2,000 rows, CPU arm, made while these pages were built)</summary>",
                format="html",
            ),
            block,
            nodes.raw("", "</details>", format="html"),
        ]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("accel-record-schema", RecordSchemaDirective)
    app.add_directive("accel-record-example", RecordExampleDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

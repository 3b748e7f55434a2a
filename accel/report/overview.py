"""What the report says first: one summary row per record, and the facts said once for all.

Each record found is an :class:`Entry`: the typed record (:func:`accel.record.read_record`), a
label that names it everywhere on the page (the file name of a user's table, the workflow's name
otherwise, made unique with the time it started), and its summary row, which the record itself
gives (:meth:`accel.record.Record.summary`): the data, the rows, the devices, the headline
speedup, the metric of each arm and the parity. The machine, the code and the reasons an arm did
not run are gathered from every record and said once (:func:`measured_on`), not under each run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from accel.record import ARMS, Record, Summary, number

#: How the page names the arms of a paired record.
ARM_NAMES = {"gpu": "GPU arm", "cpu": "CPU arm"}
#: Metric keys as the page writes them.
METRIC_NAMES = {"auc": "AUC", "rmse": "RMSE", "mae": "MAE", "r2": "R²", "accuracy": "accuracy", "log_loss": "log loss"}


def metric_name(key: str) -> str:
    return METRIC_NAMES.get(key, key)


T = TypeVar("T")
K = TypeVar("K")


def grouped(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    """``items`` by ``key(item)``, in the order each key first comes, each group in ``items``' order."""
    groups: dict[K, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


@dataclass
class Entry:
    """One record on the page: where it is, the record, its summary row and its label."""

    path: Path
    record: Record
    summary: Summary
    label: str = ""


def label_all(entries: list[Entry]) -> None:
    """Give every entry a label that is unique on the page: its data, and where two share it,
    the time each started (and a number if that is shared too)."""
    names = Counter((e.record.kind, e.summary.data) for e in entries)
    for e in entries:
        data, when = e.summary.data, e.record.started
        e.label = f"{data} ({when:%m-%d %H:%M:%S})" if names[(e.record.kind, data)] > 1 and when else data
    seen: Counter[tuple[str, str]] = Counter()
    taken = Counter((e.record.kind, e.label) for e in entries)
    for e in entries:
        if taken[(e.record.kind, e.label)] > 1:
            seen[(e.record.kind, e.label)] += 1
            e.label = f"{e.label} #{seen[(e.record.kind, e.label)]}"


# --------------------------------------------------------------------------- said once


def _records(n: int) -> str:
    return f"{n} record{'s' * (n != 1)}"


def _which(entries: list[Entry], named: int = 4) -> str:
    """The records a line applies to: by label when they are at most ``named``, else counted by kind."""
    if len(entries) <= named:
        return ", ".join(e.label for e in entries)
    kinds = Counter(e.record.noun for e in entries)
    return ", ".join(f"{n} {noun[n != 1]}" for noun, n in kinds.most_common())


def _machines(entries: list[Entry]) -> list[str]:
    """The machine each record was measured on, said once (and which records, when several)."""
    machines: dict[str, list[Entry]] = {}
    for e in entries:
        if e.record.environment is not None and e.record.environment.model_dump(exclude_unset=True):
            machines.setdefault(e.record.environment.machine(), []).append(e)
    if len(machines) == 1:
        [(machine, those)] = machines.items()
        measured = sum(e.record.measures for e in entries)  # a snapshot measures nothing itself
        return [f"Machine: {machine} ({'every record' if len(those) >= measured else _records(len(those))})."]
    return [f"Machine: {machine}: {_which(those)}." for machine, those in machines.items()]


def measured_on(entries: list[Entry]) -> list[str]:
    """The paragraphs said once for the whole page: the machine(s), the code, how loaded the
    machine was, and each reason an arm did not run with the records it applies to."""
    out = _machines(entries)
    shas = Counter(e.record.code for e in entries if e.record.code and e.record.measures)
    if shas:
        out.append("Code: " + "; ".join(f"git {sha} ({_records(n)})" for sha, n in shas.most_common()) + ".")
    loads = [load for e in entries if e.record.environment and (load := e.record.environment.load) is not None]
    if loads:
        low, high = min(loads), max(loads)
        span = f"{low:.2f}" if low == high else f"{low:.2f} to {high:.2f}"
        out.append(f"1-minute load average when each benchmark ended: {span}.")
    reasons = grouped([(key, e) for e in entries for key in dict.fromkeys(e.record.reasons())], lambda pair: pair[0])
    for (arm, status, reason), those in sorted(reasons.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        out.append(f"{ARM_NAMES.get(arm, arm)} {status} in {_which([e for _, e in those], named=0)}: {reason}")
    return out


def summary_table(entries: list[Entry]) -> tuple[list[str], list[list[Any]]]:
    """The summary's header and rows: one row per record that measured something, a column per
    metric and arm, so that AUC and RMSE never share a column."""
    shown = [e for e in entries if e.record.measures]
    metrics = list(dict.fromkeys(m for e in shown for m in e.summary.metrics))
    # the arms with a metric in any summary row
    arms = [a for a in ARMS if any(number(v.get(a)) for e in shown for v in e.summary.metrics.values())] or ["cpu"]
    header = ["started", "kind", "data", "rows", "devices", "speedup", "speedup of"]
    header += [
        f"{metric_name(m)} {ARM_NAMES[a]}" if len(arms) > 1 else f"{metric_name(m)} ({ARM_NAMES[a]})"
        for m in metrics
        for a in arms
    ]
    header.append("parity")
    rows = [
        [f"{when:%Y-%m-%d %H:%M}" if (when := e.record.started) else "", e.record.kind_text, e.label, (s := e.summary).rows,
         s.devices, s.speedup, s.speedup_of, *["" if (v := (s.metrics.get(m) or {}).get(a)) is None else v for m in metrics for a in arms],
         s.parity]
        for e in shown
    ]  # fmt: skip
    return header, rows

"""The progress display: labelled lines, boosting rounds with the time left, the record's words."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from rich.console import Console

from accel.record import RunRecord
from accel.report import console as display
from accel.report.console import ProgressDisplay, fmt_eta, render_run
from tests.conftest import ROOT


def _plain() -> tuple[ProgressDisplay, io.StringIO]:
    out = io.StringIO()
    return ProgressDisplay(Console(file=out, width=200, force_terminal=False), live=False), out


def _live_text(progress: ProgressDisplay) -> str:
    out = io.StringIO()
    Console(file=out, width=200, force_terminal=False).print(progress)
    return out.getvalue()


class Clock:
    """A stand-in for ``time.perf_counter`` in the display: seconds set by the test."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(display.time, "perf_counter", c)
    return c


def _arm(progress: ProgressDisplay, arm: str, clock: Clock, stages=("load", "train")) -> None:
    progress.arm_started(arm)
    for stage in stages:
        progress.stage_started(arm, stage)
        clock.now += 1
        progress.stage_finished(arm, stage, 1.0)
    progress.arm_finished(arm, "ok")


def test_each_configuration_labels_its_lines_once(clock):
    progress, out = _plain()
    for label in ("single process", "1 worker", "2 workers"):
        progress.section(label)
        _arm(progress, "cpu", clock)
    lines = out.getvalue().splitlines()
    assert lines[0] == "single process: running load → features → to_device → train → predict"
    for label in ("single process", "1 worker", "2 workers"):
        # one line per stage per configuration, in order, none repeated, none unlabelled
        assert sum(f"[{label}] load " in line for line in lines) == 1
        assert f"{label}: ok" in lines
    assert not any("[cpu]" in line for line in lines)
    assert lines.index("1 worker: ok") < next(i for i, line in enumerate(lines) if "[2 workers] load" in line)


def test_the_live_panel_shows_the_current_configuration_only(clock):
    progress = ProgressDisplay(Console(file=io.StringIO(), force_terminal=False), live=False)
    progress.section("1 worker")
    _arm(progress, "cpu", clock)
    assert "[1 worker] load" in _live_text(progress)
    progress.section("2 workers")
    progress.arm_started("cpu")
    progress.stage_started("cpu", "load")
    shown = _live_text(progress)
    assert "1 worker" not in shown and "▶ [2 workers] load" in shown


def test_without_a_section_lines_name_the_arm(clock):
    progress, out = _plain()
    _arm(progress, "gpu", clock)
    _arm(progress, "cpu", clock)
    text = out.getvalue()
    assert "GPU arm: running" in text and "  [gpu] load " in text and "  [cpu] train " in text and "CPU arm: ok" in text


def test_rounds_and_the_time_left(clock):
    progress = ProgressDisplay(Console(file=io.StringIO(), force_terminal=False), live=False)
    progress.arm_started("cpu")
    progress.stage_started("cpu", "train")
    progress.rounds("cpu", "train", 1, 101)
    assert "round 1/101" in _live_text(progress) and "ETA" not in _live_text(progress), "no pace from one round"
    clock.now += 1.0
    progress.rounds("cpu", "train", 11, 101)  # 10 rounds a second: 90 rounds left
    assert "▶ [cpu] train" in _live_text(progress) and "round 11/101 · ETA 9 s" in _live_text(progress)
    clock.now += 4.0  # the time left counts down between rounds
    assert "round 11/101 · ETA 5 s" in _live_text(progress)


def test_outside_a_terminal_rounds_are_said_every_few_seconds_and_counted_at_the_end(clock):
    progress, out = _plain()
    progress.arm_started("cpu")
    progress.stage_started("cpu", "train")
    for done in range(1, 241):
        clock.now += 0.125  # 30 s of training: a line at 10 s and at 20 s
        progress.rounds("cpu", "train", done, 240)
    progress.stage_finished("cpu", "train", 30.0)
    lines = [line for line in out.getvalue().splitlines() if "[cpu] train" in line]
    assert len(lines) == 3, lines
    assert "10.0 s  round 80/240 · ETA 20 s" in lines[0] and "20.0 s  round 160/240 · ETA 10 s" in lines[1]
    assert "30.00 s  (240 rounds, peak host" in lines[2]


def test_a_stage_outside_an_arm_is_shown_only_while_it_runs(clock):
    """accel hpo's baseline: its result line follows, so no finished-stage line of its own."""
    progress, out = _plain()
    progress.section("default baseline")
    progress.stage_started("cpu", "train")
    assert "▶ [default baseline] train" in _live_text(progress)
    progress.stage_finished("cpu", "train", 1.0)
    progress.section(None)
    assert out.getvalue() == "" and _live_text(progress).strip() == ""


@pytest.mark.parametrize(("seconds", "shown"), [(0.4, "0 s"), (8.6, "9 s"), (89, "89 s"), (125, "2 min 05 s")])
def test_fmt_eta(seconds, shown):
    assert fmt_eta(seconds) == shown


def test_xgboost_reports_every_round():
    import xgboost

    from accel.backend import cpu_backend
    from accel.models import XGBoostModel, XGBoostSettings

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)).astype(np.float32)
    dtrain = xgboost.DMatrix(X, label=(X[:, 0] > 0).astype(np.float32))
    seen: list[tuple[int, int]] = []
    XGBoostModel(XGBoostSettings(n_estimators=7)).fit(cpu_backend(), dtrain, on_round=lambda d, t: seen.append((d, t)))
    assert seen == [(d, 7) for d in range(1, 8)]


def _skipped_record() -> dict:
    stages = {"load": 0.5, "features": 0.1, "to_device": 0.05, "train": 0.7, "predict": 0.01}
    reason = "GPU unavailable: no CUDA driver (libcuda.so.1 cannot be loaded)"
    return {
        "workflow": "flights",
        "arms": {
            "gpu": {"status": "skipped", "reason": reason, "stages": {}, "total_seconds": None, "metrics": {}},
            "cpu": {"status": "ok", "stages": stages, "total_seconds": 1.36, "metrics": {"auc": 0.7}, "device_used": "cpu"},
        },
        "speedup": {s: float("nan") for s in [*stages, "total"]},
        "parity": {"metric": "auc", "ok": None},
    }


def test_the_stage_table_says_what_the_record_says():
    out = io.StringIO()
    render_run(RunRecord.model_validate(_skipped_record()), Console(file=out, width=200))
    text = out.getvalue()
    assert "unavailable" not in text.replace("GPU unavailable", "")
    assert text.count("skipped") >= 6, "each stage and the total: the arm's status"
    assert text.count("no CUDA driver") == 1
    assert "GPU arm skipped: GPU unavailable: no CUDA driver (libcuda.so.1 cannot be loaded)" in text, "the record's words"


def _since_start(shell: str) -> float:
    code = "import time, accel.cli; print(time.time() - accel.cli.PROCESS_STARTED_AT)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["bash", "-c", shell.format(python=sys.executable, code=code)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return float(proc.stdout)


@pytest.mark.slow  # waits 4 s in the shell before the interpreter starts
def test_start_up_counts_from_the_interpreter_not_from_what_the_shell_ran_first():
    # bash -c 'sleep 4 && exec python': one process, started 4 s before the interpreter was.
    assert _since_start("sleep 4 && exec {python} -c '{code}'") < 2.0


def test_start_up_counts_from_the_process_start():
    before = time.time()
    seconds = _since_start("exec {python} -c '{code}'")
    assert 0 < seconds < time.time() - before + 0.05

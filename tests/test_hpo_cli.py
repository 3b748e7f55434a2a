"""``accel hpo`` end to end: the search, its record and storage, bad input, a killed study resumed, Dask workers."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from accel.cli.main import main
from tests.conftest import ROOT, gpu_skip_reason, read_json, records_in
from tests.hpo_bodies import SMALL, small_config


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("accel: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


def write_workflow(folder: Path, **hpo) -> Path:
    path = folder / "small.yaml"
    path.write_text(yaml.safe_dump({**SMALL, "hpo": {**SMALL["hpo"], **hpo}}))
    return path


def load_study(db: Path, name: str):
    import optuna

    return optuna.load_study(study_name=name, storage=f"sqlite:///{db}")


# --------------------------------------------------------------------------- one search, read back


@pytest.fixture(scope="module")
def search(tmp_path_factory):
    """One small search through the real command line: (record, its path, out folder, stderr lines, stdout)."""
    folder = tmp_path_factory.mktemp("hpo")
    out = folder / "runs"
    wf = write_workflow(folder)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["hpo", str(wf), "--trials", "6", "--top", "2", "--out", str(out)])
    assert code == 0, stderr.getvalue()
    [path] = records_in(out)
    return read_json(path), path, out, stderr.getvalue().splitlines(), stdout.getvalue()


def test_record_has_baseline_best_trial_top_k_and_final(search):
    record, path, out, *_ = search
    assert path.parent == out and json.loads(path.read_text())["study"]["name"] == record["study"]["name"]
    counts = record["trials"]
    assert counts["total"] == 6 and counts["complete"] + counts["pruned"] + counts["failed"] == 6 and counts["complete"] >= 2
    assert record["baseline"]["evaluated_on"] == "hold-out" and record["baseline"]["params"]["n_estimators"] == 30
    best = record["best_trial"]
    assert best["evaluated_on"].startswith("validation")
    assert best["rows"] == record["search"]["rows"]["subset"]
    top = record["top_k"]
    assert 1 <= len(top) <= 2 and top[0]["trial"] == best["number"]
    assert all(t["rows"] == record["search"]["rows"]["fit"] for t in top)
    final = record["final"]
    winner = max(top, key=lambda t: t["metric"])
    assert final["trial"] == winner["trial"] and final["params"]["n_estimators"] == winner["rounds"]
    assert final["rows"] == record["search"]["rows"]["train"] and final["evaluated_on"] == "hold-out"
    gain = record["improvement"]["tuned_minus_default"]
    assert gain == pytest.approx(final["metric"] - record["baseline"]["metric"])
    for entry in (record["baseline"], best, *top, final):
        assert entry["seconds"] > 0 and entry["peak_host_mb"] > 50


def test_gpu_arm_is_skipped_with_the_reason_never_invented(search):
    record, *_, lines, out = search
    if gpu_skip_reason() is not None:
        gpu = record["arms"]["gpu"]
        assert gpu["status"] == "skipped" and gpu["reason"].startswith("GPU unavailable: ")
        # Said once, with the results; the progress says only that the arm is skipped.
        said = "\n".join([*lines, out.replace("\n", " ")])
        assert said.count(gpu["reason"][:40]) == 1, said
        assert "search on the CPU arm (GPU arm skipped)" in lines
        assert all(math.isnan(v) for v in record["speedup"].values())
        assert record["arms"]["cpu"]["status"] == "ok" and record["arms"]["cpu"]["seconds"] == record["final"]["seconds"]
    else:
        assert record["arms"]["gpu"]["device_used"].startswith("cuda")
        assert record["arms"]["cpu"]["status"] == "ok" and record["speedup"]["final_model"] > 0
        assert all(record["speedup"][s] > 0 for s in ("to_device", "train", "predict"))
    # The final model is timed in accel run's stages by the one stage timer; they add up to its seconds.
    stages = record["arms"]["cpu"]["stages"]
    assert set(stages) == {"to_device", "train", "predict"} and stages["train"] > 0
    assert sum(stages.values()) == pytest.approx(record["arms"]["cpu"]["seconds"], rel=0.05, abs=0.01)


def test_every_trial_stores_time_and_memory_in_the_storage(search):
    record, _, out, *_ = search
    study = load_study(out / "hpo.db", record["study"]["name"])
    finished = [t for t in study.trials if t.state.is_finished()]
    assert len(finished) == 6
    for t in finished:
        assert t.user_attrs["seconds"] > 0 and t.user_attrs["peak_host_mb"] > 50, t
        # The stages done (a pruned trial stops in train): within the trial's seconds.
        stages = t.user_attrs["stages"]
        assert "to_device" in stages and sum(stages.values()) <= t.user_attrs["seconds"] + 1e-3, t
        if t.state.name == "COMPLETE":
            assert set(stages) == {"to_device", "train", "predict"}
    assert sum(t.state.name == "PRUNED" for t in study.trials) == record["trials"]["pruned"]
    assert study.user_attrs["summary"]["final"]["metric"] == record["final"]["metric"]
    assert study.user_attrs["accel"]["config"]["hpo"]["subset"] == 0.5


def test_baseline_is_the_model_accel_run_trains(search, tmp_path):
    from accel.backend import cpu_backend
    from accel.runner import build_workflow, run_arm

    record = search[0]
    result = run_arm(cpu_backend(), build_workflow(small_config(tmp_path)))
    assert result.metrics["auc"] == pytest.approx(record["baseline"]["metric"], abs=1e-9)


def test_same_seed_same_trials(search):
    """The same seed gives the same trials: parameters, values, pruning decisions."""
    import optuna

    from accel.backend import cpu_backend
    from accel.hpo.search import run_trials
    from accel.hpo.study import make_pruner, make_sampler
    from tests.hpo_bodies import small_context

    record, _, out, *_ = search
    stored = load_study(out / "hpo.db", record["study"]["name"]).trials
    again = optuna.create_study(direction="maximize", sampler=make_sampler(42), pruner=make_pruner("median"))
    run_trials(again, small_context(cpu_backend(), out), 4, None, lambda line: None)
    assert [(t.state, t.params, t.value) for t in again.trials] == [(t.state, t.params, t.value) for t in stored[:4]]


def test_progress_names_every_trial(search):
    lines = search[3]
    assert all(not line.startswith("accel: error") for line in lines)
    # The baseline is announced before it trains, then its result.
    starts = [i for i, line in enumerate(lines) if line.startswith("default baseline: xgboost on all ")]
    results = [i for i, line in enumerate(lines) if line.startswith("default baseline: auc ")]
    assert len(starts) == 1 and len(results) == 1 and starts[0] < results[0], lines
    assert sum(line.startswith("trial ") for line in lines) == 6
    assert any(line.startswith("retrained best (trial ") for line in lines)


# --------------------------------------------------------------------------- the command line


def test_cli_table_and_record(search):
    record, path, _, lines, out = search
    for needle in ("default baseline", "best subset trial", "top-2: trial", "retrained best", "final model, CPU baseline arm"):
        assert needle in out, needle
    folder = path.with_name(f"{path.stem}.pipeline") / "cpu"
    assert out.rstrip().endswith(f"result record: {path}\ntuned pipeline: {folder}")
    assert (folder / "pipeline.json").is_file() and record["pipelines"]["cpu"]["path"] == f"{path.stem}.pipeline/cpu"
    assert record["kind"] == "hpo" and lines[0] == f"study {record['study']['name']!r} in {record['study']['storage']}"


@pytest.mark.parametrize(
    "flags, needles",
    [
        (["--subset", "0"], ["--subset", "(0, 1]"]),
        (["--subset", "1.5"], ["--subset", "(0, 1]"]),
        (["--trials", "0"], ["--trials", "positive integer"]),
        (["--timeout", "-1"], ["--timeout"]),
        (["--top", "0"], ["--top"]),
        (["--workers", "2"], ["--workers applies to --cluster local"]),
        (["--cluster", "local", "--scheduler", "tcp://127.0.0.1:1"], ["not allowed with"]),
    ],
)
def test_bad_flags_are_one_line_errors(tmp_path, capsys, flags, needles):
    code, _, err = run_cli(capsys, "hpo", "flights", "--out", str(tmp_path), *flags)
    assert_one_line_error(code, err, *needles)
    assert list(tmp_path.iterdir()) == []


def test_unknown_parameter_in_workflow_file(tmp_path, capsys):
    wf = tmp_path / "w.yaml"
    wf.write_text("workflow: flights\nhpo:\n  search_space:\n    xgboost:\n      learnin_rate: {low: 0.01, high: 0.1}\n")
    code, _, err = run_cli(capsys, "hpo", str(wf), "--out", str(tmp_path / "r"))
    assert_one_line_error(code, err, "unknown parameter 'learnin_rate'", "did you mean 'learning_rate'")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "url, needle",
    [
        (
            "sqlite:////nonexistent-folder/deeper/hpo.db",
            "cannot open study storage 'sqlite:////nonexistent-folder/deeper/hpo.db'",
        ),
        ("postgresql://user:s3cret@127.0.0.1:9/db", "cannot open study storage 'postgresql://user:***@127.0.0.1:9/db'"),
        ("not a url", "cannot open study storage"),
    ],
)
def test_unreachable_storage(tmp_path, capsys, url, needle):
    code, _, err = run_cli(capsys, "hpo", "flights", "--out", str(tmp_path), "--storage", url)
    assert_one_line_error(code, err, needle, "--storage")
    assert "s3cret" not in err
    assert records_in(tmp_path) == []


def test_resume_of_a_study_that_does_not_exist(tmp_path, capsys):
    code, _, err = run_cli(capsys, "hpo", "flights", "--out", str(tmp_path), "--resume", "--study", "nope")
    assert_one_line_error(code, err, "--resume: no study named 'nope'")
    code, _, err = run_cli(capsys, "hpo", "flights", "--out", str(tmp_path), "--resume")
    assert_one_line_error(code, err, "--resume: no study in")
    assert records_in(tmp_path) == []


def test_existing_study_needs_resume_and_resume_refuses_other_settings(search, capsys):
    record, _, out, *_ = search
    name = record["study"]["name"]
    code, _, err = run_cli(capsys, "hpo", "flights", "--out", str(out), "--study", name)
    assert_one_line_error(code, err, f"study {name!r} already exists", "--resume")
    code, _, err = run_cli(capsys, "hpo", "flights", "--out", str(out), "--study", name, "--resume", "--subset", "0.3")
    assert_one_line_error(code, err, "hpo.subset: 0.5 in the study, 0.3 now")


def test_all_trials_failing_gives_no_tuned_model(tmp_path, capsys, monkeypatch):
    import accel.config

    # A value the settings refuse is now refused before the study exists; without that check the
    # trials fail one by one, as any trial that fails in the library does.
    monkeypatch.setattr(accel.config, "check_search_space", lambda model, params: None)
    wf = write_workflow(tmp_path, search_space={"xgboost": {"subsample": 1.5, "n_estimators": 20}})
    code, out, err = run_cli(capsys, "hpo", str(wf), "--trials", "3", "--out", str(tmp_path / "r"), "--json")
    assert code == 1, err
    record = json.loads(out)  # the whole of stdout: one JSON document
    assert record["trials"]["failed"] == 3 and record["trials"]["complete"] == 0
    assert record["final"]["status"] == "failed" and "subsample" in record["final"]["reason"]
    assert err.count("failed: ValidationError: subsample: Input should be less than or equal to 1") == 3, (
        "each failed trial is one line with its reason"
    )
    assert "Traceback" not in err


# --------------------------------------------------------------------------- killed, then resumed


def trial_states(db: Path) -> list[str]:
    """Trial states in number order, read-only straight from the SQLite file (no table creation race)."""
    import sqlite3

    if not db.exists():
        return []
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return [row[0] for row in con.execute("SELECT state FROM trials ORDER BY number")]
        finally:
            con.close()
    except sqlite3.Error:
        return []  # not created yet, or locked for a moment


@pytest.mark.slow
def test_sigkill_in_the_middle_then_resume(tmp_path):
    """A real process killed with SIGKILL while a trial runs; --resume keeps every finished trial."""
    import optuna

    wf = write_workflow(
        tmp_path, pruner="none", search_space={"xgboost": {"n_estimators": 80, "max_depth": 4, "learning_rate": 0.001}}
    )
    db, out = tmp_path / "hpo.db", tmp_path / "r"
    args = [str(wf), "--out", str(out), "--storage", f"sqlite:///{db}", "--study", "k", "--subset", "1", "--trial-rounds", "1"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    running_at_kill = None
    for attempt in range(3):  # the kill must land while a trial runs; a rare race gets another try
        flags = ["--trials", "40"] + (["--resume"] if attempt else [])
        proc = subprocess.Popen(
            [sys.executable, "-m", "accel", "hpo", *args, *flags],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                time.sleep(0.05)
                assert proc.poll() is None, proc.stderr.read()
                states = trial_states(db)
                if states.count("COMPLETE") >= 2 and states[-1] == "RUNNING":
                    proc.send_signal(signal.SIGKILL)
                    break
            else:
                pytest.fail("no trial was running within 120 s")
        finally:
            proc.kill()
            proc.wait()
        before = optuna.load_study(study_name="k", storage=f"sqlite:///{db}").trials
        running = [t.number for t in before if t.state.name == "RUNNING"]
        if running:
            running_at_kill = running
            break
    assert running_at_kill, "three kills all landed between trials"
    complete_before = {t.number: (t.params, t.value) for t in before if t.state.name == "COMPLETE"}
    assert records_in(out) == []

    # Resume in a subprocess that also reports whether the CPU run imported GPU libraries.
    code = (
        "import sys; from accel.cli.main import main; rc = main(sys.argv[1:]);"
        "print('GPU_MODULES', [m for m in ('cupy', 'cudf') if m in sys.modules]); sys.exit(rc)"
    )
    total = len(complete_before) + 1
    proc = subprocess.run(
        [sys.executable, "-c", code, "hpo", *args, "--resume", "--trials", str(total), "--top", "1",
         "--device", "cpu"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "GPU_MODULES []" in proc.stdout
    assert f"trials {running_at_kill[0]}" in proc.stderr and "marked failed" in proc.stderr
    after = optuna.load_study(study_name="k", storage=f"sqlite:///{db}").trials
    for number, (params, value) in complete_before.items():
        assert after[number].state.name == "COMPLETE" and (after[number].params, after[number].value) == (params, value)
    for number in running_at_kill:
        t = after[number]
        assert t.state.name == "FAIL" and t.user_attrs["interrupted"] is True and "interrupted" in t.user_attrs["error"]
    assert not [t for t in after if t.state.name == "RUNNING"]
    counted = [
        t
        for t in after
        if t.state.name in ("COMPLETE", "PRUNED") or (t.state.name == "FAIL" and not t.user_attrs.get("interrupted"))
    ]
    assert len(counted) == total
    [path] = records_in(out)
    record = json.loads(path.read_text())
    assert record["study"]["resumed"] is True and record["study"]["interrupted_trials"] == running_at_kill
    assert record["trials"]["interrupted"] >= len(running_at_kill)


# --------------------------------------------------------------------------- Dask workers


@pytest.mark.slow
def test_parallel_trials_on_a_local_cluster(tmp_path, capsys):
    """Two worker processes share the study; neither runs two trials at once."""
    wf = write_workflow(tmp_path, search_space={"xgboost": {"n_estimators": {"low": 20, "high": 40}, "max_depth": 3}})
    code, out, err = run_cli(
        capsys, "hpo", str(wf), "--trials", "4", "--top", "1", "--out", str(tmp_path / "r"), "--study", "par",
        "--cluster", "local", "--workers", "2", "--json",
    )  # fmt: skip
    assert code == 0, err
    record = json.loads(out)  # the whole of stdout: one JSON document
    assert record["search"]["parallel"] == {"cluster": "local", "scheduler": None, "workers": 2}
    study = load_study(tmp_path / "r" / "hpo.db", "par")
    finished = [t for t in study.trials if t.state.is_finished()]
    assert len(finished) == 4 and record["trials"]["total"] == 4
    by_process: dict[str, list] = {}
    for t in finished:
        assert t.user_attrs["seconds"] > 0
        by_process.setdefault(t.user_attrs["process"], []).append((t.datetime_start, t.datetime_complete))
    assert len(by_process) == 2 and str(os.getpid()) not in " ".join(by_process), "trials ran in the two workers"
    for spans in by_process.values():
        spans.sort()
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])), "one trial per worker at a time"
    assert sum(line.startswith("trial ") for line in err.splitlines()) == 4, "progress read back from the storage"


@pytest.mark.slow
def test_unreachable_scheduler(tmp_path, capsys):
    code, _, err = run_cli(capsys, "hpo", "flights", "--out", str(tmp_path), "--scheduler", "tcp://127.0.0.1:9")
    assert_one_line_error(code, err, "cannot reach a Dask scheduler at tcp://127.0.0.1:9")
    assert not (tmp_path / "hpo.db").exists()

"""accel compare on the CPU arm, end to end through the real command, and its comparers.

The scripts under tests/compare_scripts/ are ordinary user code (pandas + scikit-learn): they
know nothing of accel. GPU-arm checks are in test_compare_gpu.py.
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from accel.bench.compare import compare_file, compare_text, fallback_table
from tests.conftest import ROOT, read_json, records_in, run_accel, sigint_default

SCRIPTS = ROOT / "tests" / "compare_scripts"


def _one_line_error(proc, *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("accel: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def test_script_runs_unchanged_and_is_recorded(tmp_path):
    proc = run_accel(
        "compare", str(SCRIPTS / "features_model.py"), "--out", str(tmp_path), "--repeat", "2", "--", "--rows", "4000"
    )
    assert proc.returncode == 0, proc.stderr
    [path] = records_in(tmp_path)
    assert f"compare record: {path}" in proc.stdout
    r = read_json(path)  # strict JSON
    assert r["kind"] == "compare" and r["program"]["kind"] == "script" and r["program"]["args"] == ["--rows", "4000"]
    cpu = r["arms"]["cpu"]
    assert cpu["status"] == "ok" and cpu["exit_code"] == 0 and cpu["command"][1:] == ["features_model.py", "--rows", "4000"]
    assert cpu["cold_seconds"] > 0 and cpu["peak_host_mb"] > 50  # pandas + scikit-learn are loaded
    assert cpu["warm"]["repeats"] == 2 and cpu["warm"]["min"] <= cpu["warm"]["median"] <= cpu["warm"]["max"]
    assert "random forest AUC 0." in cpu["stdout_tail"] and "rows 4000" in cpu["stdout_tail"]
    assert cpu["files_written"] == ["predictions.csv"]
    # No GPU here: the GPU arm is skipped with the reason; nothing is invented for it.
    assert r["arms"]["gpu"]["status"] == "skipped" and r["arms"]["gpu"]["reason"]
    assert r["parity"]["agree"] is None and math.isnan(r["speedup"]["wall_cold"])
    assert "GPU arm skipped" in proc.stdout
    # The script ran in a copy: its folder is as it was.
    assert not (SCRIPTS / "predictions.csv").exists()


def test_a_small_scripts_peak_is_its_own_not_the_spawning_processs(tmp_path):
    """The script's peak memory is read from its own process (sampled, and Linux's VmHWM), not
    from its ``ru_maxrss``, which carries the peak of the process that spawned it: here 400 MB
    held by this one, against a script that holds a few MB."""
    import accel

    held = bytearray(400 * 10**6)
    held[::4096] = b"x" * len(held[::4096])  # touched: resident
    script = tmp_path / "tiny.py"
    script.write_text("import time\ntime.sleep(0.3)\nprint('done')\n")
    result = accel.compare(script, out=tmp_path / "out", profile=False)
    cpu = result.record["arms"]["cpu"]
    assert cpu["status"] == "ok" and 1 < cpu["peak_host_mb"] < 100, cpu["peak_host_mb"]
    del held


@pytest.mark.slow  # a notebook run through a Jupyter kernel
def test_notebook_runs_headless(tmp_path):
    proc = run_accel("compare", str(SCRIPTS / "groupby_model.ipynb"), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    r = read_json(records_in(tmp_path)[0])
    assert r["program"]["kind"] == "notebook" and r["arms"]["cpu"]["status"] == "ok"
    assert r["arms"]["cpu"]["stdout_tail"].splitlines() == ["{0: 381, 1: 379, 2: 416, 3: 405, 4: 419}", "1.0"]


def test_script_reading_stdin_gets_end_of_file_not_a_hang(tmp_path):
    proc = run_accel("compare", str(SCRIPTS / "reads_stdin.py"), "--out", str(tmp_path), "--timeout", "120")
    assert proc.returncode == 0, proc.stderr
    assert "read 0 characters" in read_json(records_in(tmp_path)[0])["arms"]["cpu"]["stdout_tail"]


def test_script_that_fails_is_an_error_with_its_own_message_and_no_record(tmp_path):
    proc = run_accel("compare", str(SCRIPTS / "fails.py"), "--out", str(tmp_path))
    _one_line_error(proc, "fails on the CPU arm", "ValueError: column 'price' not found")
    assert records_in(tmp_path) == []


def test_arguments_the_script_rejects(tmp_path):
    proc = run_accel("compare", str(SCRIPTS / "features_model.py"), "--out", str(tmp_path), "--", "--bogus")
    _one_line_error(proc, "exit code 2", "unrecognized arguments: --bogus")
    assert records_in(tmp_path) == []


@pytest.mark.slow
def test_a_script_that_never_ends_is_killed_with_its_children(tmp_path):
    proc = run_accel("compare", str(SCRIPTS / "never_ends.py"), "--out", str(tmp_path), "--timeout", "3")
    _one_line_error(proc, "did not finish within --timeout 3 s", "nothing was written")
    assert records_in(tmp_path) == []
    time.sleep(0.5)
    import psutil

    left = [p for p in psutil.process_iter(["cmdline"]) if "time.sleep(600)" in " ".join(p.info["cmdline"] or [])]
    assert left == [], "the script's child must be killed with it"


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda d: d / "missing.py", "does not exist"),
        (lambda d: d, "not a regular file"),
        (lambda d: _write(d / "broken.ipynb", "{not json"), "not valid JSON"),
        (lambda d: _write(d / "cells.ipynb", '{"metadata": {}}'), "no list of cells"),
        (lambda d: _write(d / "binary.py", "\0\1\2"), "binary file"),
    ],
)
def test_bad_programs_are_refused(tmp_path, make, fragment):
    proc = run_accel("compare", str(make(tmp_path)), "--out", str(tmp_path / "out"))
    _one_line_error(proc, fragment)
    assert records_in(tmp_path / "out") == []


def test_bad_flags_are_refused(tmp_path):
    script = str(SCRIPTS / "reads_stdin.py")
    _one_line_error(run_accel("compare", script, "--timeout", "0", "--out", str(tmp_path)), "--timeout")
    _one_line_error(run_accel("compare", script, "--repeat", "-1", "--out", str(tmp_path)), "--repeat")
    _one_line_error(run_accel("compare", script, "--ignore-lines", "(", "--out", str(tmp_path)), "--ignore-lines")
    _one_line_error(run_accel("compare", script, "--accelerators", "numba", "--out", str(tmp_path)), "unknown accelerator")
    _one_line_error(run_accel("compare", script, "--device", "gpu", "--out", str(tmp_path)), "--device gpu")
    assert records_in(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_script(tmp_path):
    path = _write(tmp_path / "secret.py", "print(1)\n")
    path.chmod(0)
    _one_line_error(run_accel("compare", str(path), "--out", str(tmp_path / "out")), "cannot read")


@pytest.mark.slow  # a compare run, then experiments and a report of it
def test_experiments_and_report_show_compare_records(tmp_path):
    out = tmp_path / "results"
    assert run_accel("compare", str(SCRIPTS / "writes_files.py"), "--out", str(out), "--", "2.5").returncode == 0
    before = sorted(out.iterdir())
    proc = run_accel("experiments", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    table = json.loads(proc.stdout)  # one JSON document, and no file: none was asked for (--save)
    assert "experiments record: " not in proc.stderr and sorted(out.iterdir()) == before
    rows = [r for r in table["rows"] if r["workflow"] == "compare:writes_files.py"]
    assert [r["arm"] for r in rows] == ["cpu"] and rows[0]["metric_name"] == "parity" and rows[0]["seconds"] > 0
    page = tmp_path / "report.html"
    proc = run_accel("report", str(out), "--out", str(page))
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    assert 'id="compare"' in text and "writes_files.py 2.5" in text


# --------------------------------------------------------------------------- the comparers


def test_text_parity_numbers_within_tolerance_and_words_exact():
    same = compare_text("AUC 0.81234\nrows 100\n", "AUC 0.812341\nrows 100\n", rtol=1e-5, atol=0)
    assert same["agree"] and same["numbers_compared"] == 2 and same["numbers_agree"] == 2
    off = compare_text("AUC 0.8123\nrows 100\n", "AUC 0.7000\nrows 100\n", rtol=1e-5, atol=0)
    assert not off["agree"] and off["differences"][0]["line"] == 1 and "0.8123 vs 0.7" in off["differences"][0]["why"]
    words = compare_text("ran on cpu\n", "ran on gpu\n", rtol=1e-5, atol=0)
    assert not words["agree"] and words["differences"][0]["why"] == "text differs"
    lines = compare_text("a 1\nb 2\n", "a 1\n", rtol=1e-5, atol=0)
    assert not lines["agree"] and lines["differences"][-1]["why"] == "line counts differ"
    nan = compare_text("loss nan\n", "loss nan\n", rtol=1e-5, atol=0)
    assert nan["agree"]
    import re

    timings = compare_text("took 1.2 s\nAUC 0.8\n", "took 0.1 s\nAUC 0.8\n", 1e-5, 0, ignore=re.compile(r"^took"))
    assert timings["agree"] and timings["numbers_compared"] == 1


def test_file_parity_tables_numerically_others_by_hash(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    df = pd.DataFrame({"k": ["x", "y"], "v": [1.0, 2.0]})
    df.to_csv(a / "t.csv", index=False)
    df.assign(v=[1.0 + 1e-9, 2.0]).to_csv(b / "t.csv", index=False)
    assert compare_file(a / "t.csv", b / "t.csv", 1e-6, 1e-8)[0] == "close"
    df.assign(v=[1.5, 2.0]).to_csv(b / "t.csv", index=False)
    status, why = compare_file(a / "t.csv", b / "t.csv", 1e-6, 1e-8)
    assert status == "differ" and "'v'" in why and "0.5" in why
    df.to_parquet(a / "t.parquet"), df.to_parquet(b / "t.parquet")
    assert compare_file(a / "t.parquet", b / "t.parquet", 1e-6, 1e-8)[0] in ("equal", "close")
    df.assign(k=["x", "z"]).to_parquet(b / "t.parquet")
    assert compare_file(a / "t.parquet", b / "t.parquet", 1e-6, 1e-8) == ("differ", "column 'k': values differ")
    _write(a / "n.txt", "one"), _write(b / "n.txt", "two")
    assert compare_file(a / "n.txt", b / "n.txt", 1e-6, 1e-8) == ("differ", "bytes differ")
    _write(b / "n.txt", "one")
    assert compare_file(a / "n.txt", b / "n.txt", 1e-6, 1e-8) == ("equal", "identical bytes")


def test_fallback_table_puts_the_costliest_cpu_fallback_first():
    profile = {
        "cudf.pandas": {
            "DataFrame.groupby": {"gpu_calls": 3, "gpu_time": 0.3, "cpu_calls": 0, "cpu_time": 0.0},
            "DataFrame.apply": {"gpu_calls": 0, "gpu_time": 0.0, "cpu_calls": 2, "cpu_time": 4.0},
        },
        "cuml.accel": {
            "RandomForestClassifier.fit": {
                "gpu_calls": 0, "gpu_time": 0.0, "cpu_calls": 1, "cpu_time": 1.5, "fallback_reasons": ["criterion='log_loss'"],
            },
        },
    }  # fmt: skip
    rows = fallback_table(profile)
    assert [r["function"] for r in rows] == ["DataFrame.apply", "RandomForestClassifier.fit", "DataFrame.groupby"]
    assert rows[1]["fallback_reasons"] == ["criterion='log_loss'"] and rows[0]["cpu_seconds"] == 4.0
    assert np.isclose(sum(r["gpu_seconds"] for r in rows), 0.3)


@pytest.mark.slow
def test_ctrl_c_kills_the_running_script(tmp_path):
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "accel", "compare", str(SCRIPTS / "never_ends.py"), "--out", str(tmp_path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=sigint_default,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        import psutil

        def sleeping(kid: psutil.Process) -> bool:
            try:
                return "time.sleep(600)" in " ".join(kid.cmdline())
            except psutil.Error:  # a short-lived helper process gone (or a zombie) meanwhile
                return False

        while time.monotonic() < deadline:
            if any(sleeping(k) for k in psutil.Process(proc.pid).children(recursive=True)):
                break
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and "interrupted; nothing was written" in err and "Traceback" not in err
    assert records_in(tmp_path) == []
    time.sleep(0.5)
    left = [p for p in psutil.process_iter(["cmdline"]) if "time.sleep(600)" in " ".join(p.info["cmdline"] or [])]
    assert left == []


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.slow  # a compare run, then a report
def test_report_sets_aside_a_compare_record_of_the_wrong_shape(tmp_path):
    out = tmp_path / "results"
    assert run_accel("compare", str(SCRIPTS / "writes_files.py"), "--out", str(out)).returncode == 0
    (out / "broken.json").write_text(json.dumps({"kind": "compare", "arms": ["not", "a", "mapping"]}))
    page = tmp_path / "report.html"
    proc = run_accel("report", str(out), "--out", str(page))
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    assert 'id="compare"' in text and "broken.json" in text and "not the shape of a compare record (arms:" in text

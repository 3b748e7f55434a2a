"""What the command line says of itself: ``--quiet``/``--verbose`` on every command and examples in
each ``--help``, from the one parser (shell completion: ``accel completion``, shtab over that parser)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

#: Examples shown at the end of each command's ``--help`` (the command path -> command lines).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "info": ("accel info", "accel info --json | jq .gpus"),
    "run": (
        "accel run flights --rows 20000                  # a seeded sample: a quick run",
        "accel run flights --device cpu                  # the CPU baseline only",
        "accel run --data sales.csv --target churned     # your own table (CSV, Parquet, a Parquet folder)",
        "accel run flights --json | jq .speedup          # the record as JSON on stdout",
        "accel run flights --cluster local --workers 2   # on a local Dask cluster",
        "accel run flights -q                            # only errors and the record's path",
    ),
    "predict": (
        "accel predict runs/2026-12-05-flights-001.json --data next.csv --out predictions.parquet",
        "accel predict runs/2026-12-05-flights-001.json --data next.csv --out p.csv --baseline   # also timed on the CPU arm",
    ),
    "scale": (
        "accel scale flights --cluster local --workers 1,2",
        "accel scale --data big.parquet --target y --cluster local-cuda --workers 1,2,4",
    ),
    "bench groupby": (
        "accel data groupby 1e7 1e2 G1.parquet && accel bench groupby --data G1.parquet",
        "accel bench groupby --data G1.parquet --questions q1,q2 --engines polars,duckdb",
    ),
    "bench join": ("accel data join 1e7 J1/ && accel bench join --data-dir J1/",),
    "bench models": ("accel bench models --rows 1e5", "accel bench models --rows 1e6 --models xgboost,random_forest"),
    "bench crossover": ("accel bench crossover",),
    "data groupby": ("accel data groupby 1e7 1e2 G1.parquet            # 1e7 rows, 100 groups",),
    "data join": ("accel data join 1e7 J1/ --format parquet",),
    "report": (
        "accel report runs/                     # writes runs/report.html",
        "accel report benchmarks/results --out results.html",
    ),
    "hpo": ("accel hpo flights --trials 40 --subset 0.1", "accel hpo --data sales.csv --target churned --trials 20"),
    "experiments": ("accel experiments runs/", "accel experiments runs/ --plot"),
    "compare": ("accel compare train.py", "accel compare train.py -- --rows 100000   # after --: the script's own arguments"),
    "completion": (
        'eval "$(accel completion bash)"         # in ~/.bashrc',
        "accel completion bash > ~/.local/share/bash-completion/completions/accel",
        "accel completion zsh > ~/.zfunc/_accel          # a folder on $fpath",
    ),
}


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command of ``parser`` that runs something (no subcommands of its own), with its path."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # argparse allows one
    if not subs:
        yield path, parser
    for name, child in subs[0].choices.items() if subs else ():
        yield from commands(child, (*path, name))


def finish(parser: argparse.ArgumentParser) -> None:
    """Give every command ``--quiet``/``--verbose`` and its examples."""
    for path, command in commands(parser):
        group = command.add_argument_group("output").add_mutually_exclusive_group()
        group.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors and where the files went")
        group.add_argument("-v", "--verbose", action="store_true", help="also print the seconds of each planning step")
        examples = EXAMPLES.get(" ".join(path))
        if examples:
            command.epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
            command.formatter_class = argparse.RawDescriptionHelpFormatter

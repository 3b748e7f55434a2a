"""The README and the docs: short, true to what CI runs, and generated where they say they are.

The docs build itself (``sphinx-build -W``) runs in ``.ci/run``; the tests of its two extensions
(``docs/_ext``) need the ``docs`` extra and skip without it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
TEXT_PAGES = [README, *sorted(DOCS.rglob("*.md")), DOCS / "notebooks" / "tour.ipynb"]


def _code_blocks(text: str) -> list[list[str]]:
    return [block.strip("\n").splitlines() for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)]


def _command(line: str) -> str:
    return line.split("  #")[0].strip()


def test_readme_is_short_and_its_two_commands_come_first():
    text = README.read_text()
    assert len(text.splitlines()) <= 200, "the README is one screen or two; the rest belongs in docs/"
    first = _code_blocks(text)[0]
    assert [_command(line) for line in first] == ["pip install -e . && accel run flights", 'pip install -e ".[test]" && pytest']
    before = text[: text.index("```")]
    assert "```" not in before and before.count("\n## ") <= 1, "nothing but the introduction before the two commands"


def test_the_readmes_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    install = ci.index('pip install -q -e ".[test]"')
    assert re.search(r"^run_pytest pytest$", ci[install:], flags=re.M), ".ci/run runs the README's `pytest` after that install"


def test_readme_links_point_at_files_that_exist():
    links = re.findall(r"\]\(([^)#]+)\)", README.read_text())
    assert links
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert not missing


#: Words about how the project was made rather than about the software ("session" alone is Dask's).
DEVELOPMENT = r"\bissue \d+|\bissue measured|closing notes?|\blent\b|device[ -]calls?\b|\.\./shared/|device-minutes|GPU session|session's time"


def test_the_text_speaks_of_the_software_not_of_its_development():
    bench = ROOT / "benchmarks"
    prose = [*TEXT_PAGES, *bench.glob("*.md"), *(bench / "results").glob("*.md")]
    code = [*bench.glob("*.py"), *bench.glob("*.sh"), *bench.glob("*.json"), *(ROOT / "accel").rglob("*.py")]
    code += [p for p in (ROOT / "tests").rglob("*.py") if p != Path(__file__)]
    found = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for pages, pattern in ((prose, DEVELOPMENT + "|this session"), (code, DEVELOPMENT))
        for p in pages
        for m in re.finditer(pattern, p.read_text(), flags=re.I)
    ]
    assert not found


def test_the_notebook_uses_the_python_api():
    cells = json.loads((DOCS / "notebooks" / "tour.ipynb").read_text())["cells"]
    source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert 'accel.run("flights"' in source and "accel.run(data=" in source and "compare(" in source


# --------------------------------------------------------------------------- the docs' extensions


@pytest.fixture(scope="module")
def ext():
    pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e '.[docs]')")
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import record_schema
        import results

        yield results, record_schema
    finally:
        sys.path.remove(str(DOCS / "_ext"))


def _models_result(gpu_status: str) -> dict:
    arm = {"status": "ok", "fit": {"median": 2.0}, "predict": {"median": 0.5}, "quality": 0.9}
    gpu = {**arm, "status": gpu_status, "fit": {"median": 0.25}}
    return {"benchmark": "models", "data": {"rows": 1000, "features": 4}, "config": {"repeats": 3},
            "models": [{"model": "xgboost_classifier", "metric": "accuracy", "cpu": arm, "gpu": gpu, "fit_speedup": 8.0}]}  # fmt: skip


def _headers(node) -> list[str]:
    return [e.astext() for e in node.findall() if e.tagname == "entry"][:20]


def test_gpu_columns_only_from_files_named_for_a_gpu(ext, tmp_path):
    results, _ = ext
    (tmp_path / "2030-01-01-models-cpu-001.json").write_text(json.dumps(_models_result("ok")))
    (tmp_path / "2030-01-01-models-nvidia-h200-001.json").write_text(json.dumps(_models_result("ok")))
    loaded = {r.name: r for r in results.load_results(tmp_path)}
    cpu_file = loaded["2030-01-01-models-cpu-001.json"]
    gpu_file = loaded["2030-01-01-models-nvidia-h200-001.json"]
    assert not cpu_file.gpu and gpu_file.gpu
    cpu_cells = _headers(results.render_models(cpu_file)[0])
    gpu_cells = _headers(results.render_models(gpu_file)[0])
    assert not any("GPU" in c for c in cpu_cells) and "8.00×" not in cpu_cells, "a CPU-named file's GPU fields are never shown"
    assert "GPU fit s" in gpu_cells and "0.250" in gpu_cells


def test_every_results_file_is_listed_and_every_kind_has_a_place(ext):
    results, _ = ext
    files = results.load_results()
    assert {r.name for r in files} == {p.name for p in (ROOT / "benchmarks" / "results").glob("*.json")}
    page = (DOCS / "results.md").read_text()
    claimed = set(re.findall(r"```\{accel-results\} (\w+)", page))
    assert {"files", "other"} <= claimed
    unclaimed = {r.kind for r in files} - claimed
    assert not unclaimed, f"benchmarks without a section on the results page (they fall under 'Other results'): {unclaimed}"


def test_every_results_file_is_read_as_its_typed_class(ext):
    """A benchmark script's result as its shape; the first memory files, which named the whole
    streamed run ``chunked_10x``, with that run where later files keep it."""
    from accel_fixtures.result_shapes import SHAPES, Memory

    results, _ = ext
    files = results.load_results()
    typed = [r for r in files if r.kind in SHAPES]
    assert typed and all(type(r.record) is SHAPES[r.kind] for r in typed)
    memory = [r.record for r in files if isinstance(r.record, Memory)]
    assert memory and all(m.streamed_run_10x is None or isinstance(m.streamed_run_10x.batches.batches, int) for m in memory)
    first = Memory.model_validate(
        {"benchmark": "memory", "chunked_10x": {"batches": {"batches": 9, "rows_total": 90}, "auc": 0.7}}
    )
    assert first.chunked_10x is None and first.streamed_run_10x.batches.rows_total == 90 and first.streamed_run_10x.auc == 0.7


def test_record_fields_are_walked_for_both_arms_at_once(ext):
    _, record_schema = ext
    record = {
        "run_id": "x",
        "arms": {"gpu": {"status": "skipped", "stages": {}}, "cpu": {"status": "ok", "stages": {"load": 0.1}}},
        "wall": {"parts": {"start_up": 1.0}, "process_seconds": 2.0},
        "config": {"rows": None},
    }
    fields = record_schema.walk(record, collapse={"config"})
    assert set(fields) == {"run_id", "arms", "arms.<arm>", "arms.<arm>.status", "arms.<arm>.stages", "wall", "wall.parts",
                           "wall.process_seconds", "config"}  # fmt: skip
    assert fields["arms.<arm>.stages"][1] == ["load"] and fields["config"][1] == ["rows"]


def test_every_described_record_field_names_a_field_the_code_writes(ext, tmp_path):
    """What the docs build checks with -W, here on a real record of a tiny run."""
    import yaml

    import accel

    _, record_schema = ext
    spec = yaml.safe_load((DOCS / "guide" / "record_fields.yaml").read_text())
    result = accel.run("flights", rows=1500, device="cpu", out=tmp_path)
    fields = record_schema.walk(json.loads(Path(result.path).read_text()), set(spec["collapse"]), spec["fields"])
    top = [f for f in fields if "." not in f or (f.startswith("arms.<arm>.") and f.count(".") == 2)]
    assert not [f for f in top if f not in spec["fields"] and f != "arms"], "describe them in docs/guide/record_fields.yaml"
    table_only = {"data.schema", "data.planning_seconds", "data.encoding_probe_seconds"}
    assert not [f for f in spec["fields"] if f not in fields and f not in table_only]

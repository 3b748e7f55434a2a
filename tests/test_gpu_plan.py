"""The device plan (benchmarks/gpu_plan.py, gpu_check.sh plan): every call within the carry and
time limits, every locked wheel carried once per track, and fetch's layout reassembling byte for byte."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("gpu_plan", ROOT / "benchmarks" / "gpu_plan.py")
gpu_plan = importlib.util.module_from_spec(spec)
sys.modules["gpu_plan"] = gpu_plan
spec.loader.exec_module(gpu_plan)

MIB = 1 << 20


@pytest.fixture(scope="module")
def lines():
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), "plan"], capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summaries = [json.loads(x) for x in proc.stderr.splitlines() if x.startswith("{")]
    return [json.loads(x) for x in proc.stdout.splitlines()], summaries


def test_every_call_fits_the_carry_and_time_limits(lines):
    calls, summaries = lines
    assert {s["track"] for s in summaries} == set(gpu_plan.TRACKS)
    for c in calls:
        assert set(c) >= {"call", "carry_mib", "seconds", "steps", "carry", "command"}
        assert c["carry_mib"] <= 64 and c["seconds"] <= 540, c
        assert "accel/_build_info.json" in c["carry"], "every call carries the provenance of its tree"
    for s in summaries:
        assert s["fits_the_budget"], s


def test_each_track_carries_every_locked_wheel_of_its_sets_once(lines):
    calls, _ = lines
    lock = gpu_plan.load_lock()
    for track, spec_ in gpu_plan.TRACKS.items():
        files = [f for c in calls if c["track"] == track for f in c["files"]]
        wheels = [w["filename"] for s in spec_["sets"] for w in lock["by_set"][s]["wheels"]]
        whole = [f for f in files if f.endswith(".whl")]
        parts = sorted({f.rsplit(".", 1)[0] for f in files if not f.endswith(".whl")})
        assert sorted(whole + parts) == sorted(wheels), track
        # Steps come in priority order and each after every set it needs has arrived.
        named = [s for c in calls if c["track"] == track for s in c["steps"] if not s.startswith("install what")]
        assert named == [s.name for s in spec_["steps"]], track


def test_the_lock_names_exact_versions_sizes_and_hashes():
    lock = gpu_plan.load_lock()
    for s in lock["sets"]:
        for w in s["wheels"]:
            assert w["filename"].endswith(".whl") and w["size"] > 0 and len(w["sha256"]) == 64, w
            assert w["version"] in w["filename"] or w["version"].replace("-", "_") in w["filename"], w
            assert "x86_64" in w["filename"] or w["filename"].endswith("-any.whl"), w


def test_fetch_layout_reassembles_each_wheel(tmp_path, monkeypatch):
    # Small stand-in wheels and a small call budget: the same packing and cutting as the real lock.
    cache = tmp_path / "cache"
    cache.mkdir()
    wheels = []
    for i, size in enumerate((300_000, 2_500_000, 40_000, 1_200_000)):
        data = hashlib.sha256(str(i).encode()).digest() * (size // 32 + 1)
        name = f"w{i}-1.0-py3-none-any.whl"
        (cache / name).write_bytes(data[:size])
        wheels.append({"name": f"w{i}", "version": "1.0", "filename": name, "size": size,
                       "sha256": hashlib.sha256(data[:size]).hexdigest()})  # fmt: skip
    lock = {"sets": [{"set": "a", "wheels": wheels[:2]}, {"set": "b", "wheels": wheels[2:]}]}
    lock["by_set"] = {s["set"]: s for s in lock["sets"]}
    monkeypatch.setattr(gpu_plan, "CALL_LIMIT_BYTES", 1_500_000)
    monkeypatch.setattr(gpu_plan, "MARGIN_BYTES", 0)
    monkeypatch.setattr(gpu_plan, "SPLIT_AT_LEAST", 1_000_000)
    monkeypatch.setattr(gpu_plan, "MIB", 100_000)
    monkeypatch.setitem(gpu_plan.TRACKS, "t", {"sets": ["a", "b"], "steps": []})
    folders = gpu_plan.lay_out(lock, "t", cache, tmp_path / "whl", tree=100_000)
    assert len(folders) >= 3
    for f in folders:
        assert sum(x.stat().st_size for x in f.iterdir()) <= 1_400_000
    for w in wheels:
        parts = sorted(p for f in folders for p in f.iterdir() if p.name.startswith(w["filename"]))
        joined = b"".join(p.read_bytes() for p in sorted(parts, key=lambda p: p.name))
        assert hashlib.sha256(joined).hexdigest() == w["sha256"], w["filename"]


def test_packing_ends_and_carries_each_wheel_whole_at_any_tree_size():
    """The plan depends on the working tree's size; at some sizes a wheel's last bytes came to
    under 1 MiB and the packer opened empty calls for them forever (CI hung in ``plan``)."""
    import signal

    def too_long(*_):
        raise TimeoutError("pack() did not finish within 10 s")

    lock = gpu_plan.load_lock()
    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(10)
    try:
        for track in gpu_plan.TRACKS:
            sizes = {w["filename"]: w["size"] for s in gpu_plan.TRACKS[track]["sets"] for w in lock["by_set"][s]["wheels"]}
            for tree in range(0, 8 * MIB, MIB // 8):  # trees of 0 to 8 MiB, in 128 KiB steps
                budget = gpu_plan.CALL_LIMIT_BYTES - tree - gpu_plan.MARGIN_BYTES
                calls = gpu_plan.pack(lock, track, budget)
                assert all(calls) and all(sum(p.size for p in c) <= budget for c in calls), (track, tree)
                carried: dict[str, int] = {}
                for piece in (p for c in calls for p in c):
                    carried[piece.filename] = carried.get(piece.filename, 0) + piece.size
                assert carried == sizes, (track, tree)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_the_lock_and_its_extra_name_the_same_rapids_packages_and_versions():
    """The lock carries the CUDA 13 wheels of the GPU machine: each RAPIDS package in it is one of
    pyproject's ``gpu-cu13`` extra, at a version the extra's pin allows, and every package of that
    extra is either carried or on the image."""
    from packaging.requirements import Requirement

    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

    lock = gpu_plan.load_lock()
    extra = lock["extra"]
    assert extra == f"gpu-cu{lock['cuda']}"
    pins = {
        r.name: r
        for r in map(Requirement, tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][extra])
    }
    carried = {w["name"]: w["version"] for s in lock["sets"] for w in s["wheels"]}
    for name, requirement in pins.items():
        if name in carried:
            assert requirement.specifier.contains(carried[name]), (name, carried[name], str(requirement))
        else:
            assert name.split("-")[0] in lock["on_the_image"].lower(), f"{name} is neither carried nor on the image"
    rapids = {n for n in carried if n.endswith(f"-cu{lock['cuda']}") and not n.startswith(("lib", "pylib", "nvidia"))}
    assert rapids & set(pins) == {"cudf-cu13", "cuml-cu13", "rmm-cu13", "dask-cudf-cu13"}, rapids

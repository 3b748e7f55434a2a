"""Shared fixtures. Markers are registered in pyproject.toml (``gpu``, ``slow``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from accel.backend import probe_gpu

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session", autouse=True)
def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Extracted data goes to a per-session folder, not the user's ~/.cache; what a command
    # writes without --out, to another (not runs/ in the checkout).
    os.environ["ACCEL_CACHE_DIR"] = str(tmp_path_factory.mktemp("accel-cache"))
    os.environ["ACCEL_OUT_DIR"] = str(tmp_path_factory.mktemp("accel-out"))


def gpu_skip_reason() -> str | None:
    """Why GPU tests cannot run here (the probe's own reason), or None."""
    probe = probe_gpu()
    return None if probe.usable else f"no usable GPU: {probe.reason}"


requires_gpu = pytest.mark.skipif(gpu_skip_reason() is not None, reason=gpu_skip_reason() or "")


def sigint_default() -> None:
    """A ``preexec_fn`` for a child that is sent SIGINT: SIGINT at its default there, whatever this
    process inherited (a shell starts a background job with SIGINT ignored, and a Python started
    so installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_accel(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the real ``accel`` command line in a subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "accel", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=ROOT,
    )


def records_in(folder: Path) -> list[Path]:
    return sorted(Path(folder).glob("*.json")) if Path(folder).exists() else []


def strict_json(text: str):
    """JSON read the way a strict parser reads it (bare NaN/Infinity refused, as most parsers
    outside Python do), then as accel reads its records (the ``nulls`` it lists back as NaN)."""
    from accel.record import loads

    def refuse(constant: str):
        raise ValueError(f"not valid JSON: bare {constant}")

    json.loads(text, parse_constant=refuse)
    return loads(text)


def read_json(path: Path) -> dict:
    """A record or result written by accel: strict JSON, every one (see :func:`strict_json`)."""
    return strict_json(Path(path).read_text())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Skipped tests, one line per reason with a count (``-ra`` repeats a reason per test location)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    counts: dict[str, int] = {}
    for report in skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        counts[reason] = counts.get(reason, 0) + 1
    terminalreporter.write_sep("=", "skipped, by reason")
    for reason, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        terminalreporter.write_line(f"SKIPPED [{n}] {reason}")

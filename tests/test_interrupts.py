"""Ctrl-C is never lost: an interrupt that lands in a garbage-collector callback (where Python
only prints "Exception ignored") still stops the program, here and in a real ``accel run``."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT, records_in, sigint_default

#: A program that sends itself SIGINT from inside a gc callback, then has work left to do.
_IN_A_GC_CALLBACK = """
import gc, os, signal, sys, time
{setup}
def callback(phase, info):
    if phase == "start" and not fired:
        fired.append(1)
        signal.raise_signal(signal.SIGINT)  # handled right here, inside the callback
        for _ in range(1000):  # bytecode for Python to run the handler in
            pass
fired = []
gc.callbacks.append(callback)
try:
    {body}
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
print("finished", flush=True)
"""


def _run(setup: str, body: str) -> subprocess.CompletedProcess:
    code = _IN_A_GC_CALLBACK.format(setup=setup, body=body)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300, preexec_fn=sigint_default
    )


def test_python_swallows_an_interrupt_in_a_gc_callback():
    # The failure this module exists for: without the hook the program finishes.
    proc = _run("", "gc.collect(); time.sleep(1.0)")
    assert proc.returncode == 0 and "finished" in proc.stdout, proc.stderr
    assert "Exception ignored" in proc.stderr and "KeyboardInterrupt" in proc.stderr


def test_a_swallowed_interrupt_is_delivered_again():
    proc = _run(
        "from accel.interrupts import never_lost\nguard = never_lost(); guard.__enter__()",
        "gc.collect(); time.sleep(5.0)",
    )
    assert proc.returncode == 130 and "interrupted" in proc.stdout, (proc.stdout, proc.stderr)
    assert "Exception ignored" not in proc.stderr


def test_an_interrupt_in_a_gc_callback_stops_accel_run(tmp_path):
    """A real run, SIGINT delivered inside a gc callback during it: exit 130, the one line, no record."""
    code = f"""
import gc, signal, sys
from accel.cli.main import main
state = {{"collections": 0}}
def callback(phase, info):
    if phase == "start":
        state["collections"] += 1
        if state["collections"] == 50:
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):
                pass
gc.callbacks.append(callback)
sys.exit(main(["run", "flights", "--device", "cpu", "--rows", "3000", "--out", {str(tmp_path)!r}]))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300, preexec_fn=sigint_default
    )
    assert proc.returncode == 130, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert "accel: interrupted; nothing was written" in proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert records_in(tmp_path) == []


def test_an_interrupt_caught_in_code_run_from_a_string_keeps_exit_130_under_python_m(tmp_path):
    """``python -m accel``: a Ctrl-C that passed through code run from a string (``exec``/``eval``: a
    dataclass or a namedtuple being built when it landed) still exits 130, not killed by SIGINT.

    CPython remembers such an interrupt even once it is handled, and at the exit of ``python -m``
    it kills the process with SIGINT instead of exiting with the status the program gave."""
    module = tmp_path / "interrupted_in_exec.py"
    module.write_text(f"""
import sys
import accel.runner
from accel.cli.main import main
measured = accel.runner.task_metrics
def task_metrics(*args, **kwargs):  # Ctrl-C lands while code run from a string is running
    exec("import signal\\nsignal.raise_signal(signal.SIGINT)\\nfor _ in range(1000):\\n    pass")
    return measured(*args, **kwargs)
accel.runner.task_metrics = task_metrics
sys.argv = ["accel", "run", "flights", "--device", "cpu", "--rows", "3000", "--out", {str(tmp_path / "out")!r}]
sys.exit(main())
""")
    proc = subprocess.run(
        [sys.executable, "-m", module.stem], capture_output=True, text=True, cwd=tmp_path, timeout=300,
        preexec_fn=sigint_default,
    )  # fmt: skip
    assert proc.returncode == 130, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert "accel: interrupted; nothing was written" in proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert not (tmp_path / "out").exists() or records_in(tmp_path / "out") == []

"""How accel installs and what ``import accel`` does to the process that imports it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

IMPORT_RUN = "import accel; print(accel.run.__module__, accel.__file__)"


def _in_parent_of(clone: Path, python: str) -> subprocess.CompletedProcess:
    """Python started in the folder that holds ``clone`` (a folder named ``accel``), importing accel.run."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([python, "-c", IMPORT_RUN], cwd=clone.parent, capture_output=True, text=True, env=env, timeout=120)


def test_import_works_from_the_folder_that_holds_a_clone_named_accel(tmp_path):
    """The checkout this interpreter has installed, seen as ``<folder>/accel``, and Python started
    in ``<folder>``: the clone is not taken for a namespace package ``accel`` (the installed
    package is found on sys.path, which an editable install's import hook would come after)."""
    (tmp_path / "accel").symlink_to(ROOT, target_is_directory=True)
    proc = _in_parent_of(tmp_path / "accel", sys.executable)
    assert proc.returncode == 0, f"reinstall with `pip install -e .` if this checkout was installed before: {proc.stderr}"
    module, where = proc.stdout.split()
    assert module == "accel.api" and Path(where).resolve() == (ROOT / "accel" / "__init__.py").resolve()


@pytest.mark.slow
def test_fresh_clone_installed_as_the_readme_says_imports_from_its_parent_folder(tmp_path):
    """git clone into ``<tmp>/parent/accel``, ``pip install -e`` it into a new virtual environment
    (its dependencies seen from this one's site-packages, so nothing is downloaded but the build
    backend), and start Python in ``<tmp>/parent``: ``accel.run`` is there."""
    import site
    import sysconfig

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path / "parent" / "accel"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=120)
    python = str(tmp_path / "venv" / "bin" / "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    ours = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    Path(purelib, "deps-from-test.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n")
    install = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(clone)], capture_output=True, text=True, timeout=600
    )
    assert install.returncode == 0, install.stderr
    proc = _in_parent_of(clone, python)
    assert proc.returncode == 0, proc.stderr
    module, where = proc.stdout.split()
    assert module == "accel.api" and Path(where).resolve() == (clone / "accel" / "__init__.py").resolve()


def test_import_accel_changes_nothing_and_shows_only_the_api():
    """``import accel`` (and reaching ``accel.run``) leaves os.environ as it was; ``dir(accel)``
    lists the public API, not internal modules or settings."""
    code = (
        "import os\n"
        "before = dict(os.environ)\n"
        "import accel, accel.record\n"
        "accel.run, accel.tune\n"
        "print(dict(os.environ) == before)\n"
        "print(' '.join(dir(accel)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    unchanged, names = proc.stdout.splitlines()
    assert unchanged == "True"
    shown = set(names.split())
    assert {"run", "tune", "compare", "benchmark", "scale", "info", "RunResult", "__version__"} <= shown
    assert not shown & {"api", "record", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT_DEFAULT"}, shown
    assert all(not n.startswith("_") or n == "__version__" for n in shown), shown

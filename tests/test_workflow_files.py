"""Every workflow file that ships validates, and runs through the same config path as flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.config import build_config, read_workflow_file
from accel.workflows import WORKFLOWS

FILES = sorted((Path(__file__).resolve().parents[1] / "workflows").glob("*.yaml"))


def test_there_are_workflow_files():
    assert FILES


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_workflow_file_validates(path):
    config = build_config(read_workflow_file(path), {}, str(path))
    assert config.workflow in WORKFLOWS


def test_flights_file_is_the_default():
    from accel.config import RunConfig

    path = next(p for p in FILES if p.name == "flights.yaml")
    assert build_config(read_workflow_file(path), {}) == RunConfig()

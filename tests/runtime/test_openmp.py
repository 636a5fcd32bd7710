"""OpenMP's waiting policy (runtime/openmp.py) is set before torch loads, by every package that runs models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.openmp import OPENMP_DEFAULTS

REPO = Path(__file__).resolve().parents[2]
PROBE = ("import {package}, torch, os; from runtime import openmp; "
         "print(openmp.configured_before_torch, os.environ['OMP_WAIT_POLICY'], os.environ['GOMP_SPINCOUNT'])")


def probe(package: str, **environment: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in OPENMP_DEFAULTS} | environment
    done = subprocess.run([sys.executable, "-c", PROBE.format(package=package)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    return done.stdout.split()


@pytest.mark.parametrize("package", ["app", "models", "benchmarks"])
def test_entry_packages_set_the_policy_before_torch_loads(package: str) -> None:
    assert probe(package) == ["True", "ACTIVE", "300000"]


def test_a_value_the_user_set_is_kept() -> None:
    assert probe("app", OMP_WAIT_POLICY="PASSIVE") == ["True", "PASSIVE", "300000"]

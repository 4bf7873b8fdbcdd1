"""Shared fixtures: the repository root, the CLI binary (for comparing against `wafsim run
--json`), and small experiments that run in well under a second."""

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]

# Uniform random 4 KiB writes on a 64 MB drive: WAF well above 1, a fraction of a second.
SMALL = """
name = "small random writes"
seed = 7

[device]
capacity = "64MB"
over_provisioning = 0.07
erase_unit = "256KiB"

[[namespace]]
name = "ns1"
size = "64MB"

[[phase]]
name = "measure"
[[phase.workload]]
namespace = "ns1"
pattern = "random"
bs = "4KiB"
amount = "3x"

[[variant]]
name = "greedy"

[[variant]]
name = "fifo"
device.gc_policy = "fifo"
"""


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def wafsim_bin():
    """The CLI: $WAFSIM_BIN (scripts/test sets it), else a built one in target/."""
    env = os.environ.get("WAFSIM_BIN")
    if env:
        return env
    for p in (ROOT / "target/release/wafsim", ROOT / "target/debug/wafsim"):
        if p.exists():
            return str(p)
    pytest.fail("no wafsim binary: set WAFSIM_BIN or run scripts/test (which builds it)")


@pytest.fixture
def small_file(tmp_path):
    p = tmp_path / "small.toml"
    p.write_text(SMALL)
    return p


def cli(wafsim_bin, *args, cwd=None):
    return subprocess.run([wafsim_bin, *map(str, args)], check=True, capture_output=True, text=True, cwd=cwd)

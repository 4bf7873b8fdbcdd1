"""wafsim.sweep locally, on a Ray cluster started here, and `wafsim sweep --ray`."""

import json
import os
import sys

import pandas as pd
import pytest

import wafsim
from conftest import SMALL, cli

SWEEP = """
base = "small.toml"
[axes]
"device.over_provisioning" = [0.07, 0.14, 0.28]
"""


@pytest.fixture
def sweep_file(tmp_path):
    (tmp_path / "small.toml").write_text(SMALL)
    p = tmp_path / "sweep.toml"
    p.write_text(SWEEP)
    return p


def rows_of(path):
    return json.loads(path.read_text())


def test_local_sweep_equals_the_cli(sweep_file, tmp_path, wafsim_bin):
    cli(wafsim_bin, "sweep", sweep_file, "--out", tmp_path / "cli.json")
    s = wafsim.sweep(sweep_file, out=tmp_path / "py.json", jobs=2)
    assert s.rows == rows_of(tmp_path / "cli.json") == rows_of(tmp_path / "py.json")
    assert (s.executed_points, s.kept_points) == (3, 0)
    df = s.to_pandas()
    assert len(df) == 6  # 3 points x 2 variants
    greedy = df[df.variant == "greedy"].sort_values("device.over_provisioning")
    assert greedy["waf"].is_monotonic_decreasing


def test_resume_from_parquet(sweep_file, tmp_path):
    out = tmp_path / "r.parquet"
    first = wafsim.sweep(sweep_file, out=out)
    again = wafsim.sweep(sweep_file, out=out)
    assert (again.executed_points, again.kept_points) == (0, 3)
    assert again.rows == first.rows
    df = pd.read_parquet(out)
    assert len(df) == 6 and set(df["namespace"]) == {"ns1"}


def test_bad_point_names_itself(sweep_file):
    sweep_file.write_text('base = "small.toml"\n[axes]\n"device.over_provisioning" = [0.07, -0.5]\n')
    with pytest.raises(wafsim.WafsimError, match=r"point 2 \(device.over_provisioning = -0.5\)"):
        wafsim.sweep(sweep_file)


@pytest.fixture(scope="module")
def ray_cluster():
    """A Ray cluster of a head without CPUs and two 1-CPU worker nodes on this machine."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    for _ in range(2):
        c.add_node(num_cpus=1)
    c.wait_for_nodes()
    yield c
    ray.shutdown()
    c.shutdown()


def test_ray_sweep_equals_local(ray_cluster, sweep_file, tmp_path):
    import ray

    local = wafsim.sweep(sweep_file, out=tmp_path / "local.csv")
    seen = []
    on_ray = wafsim.sweep(sweep_file, out=tmp_path / "ray.csv", ray=ray_cluster.address, progress=lambda d, t: seen.append((d, t)))
    ray.shutdown()
    assert on_ray.rows == local.rows
    assert (tmp_path / "ray.csv").read_text() == (tmp_path / "local.csv").read_text()
    assert seen[0] == (0, 3) and seen[-1] == (3, 3)


def test_ray_retries_lost_workers(ray_cluster, sweep_file, tmp_path):
    """Every point's first attempt kills its worker process; Ray runs it again."""
    import ray

    crashes = tmp_path / "crashes"
    crashes.mkdir()
    ray.init(address=ray_cluster.address, runtime_env={"env_vars": {"WAFSIM_TEST_RAY_CRASH_ONCE": str(crashes)}}, log_to_driver=False)
    try:
        on_ray = wafsim.sweep(sweep_file, ray=ray_cluster.address)
    finally:
        ray.shutdown()
    assert sorted(os.listdir(crashes)) == ["point-1", "point-2", "point-3"]
    assert on_ray.rows == wafsim.sweep(sweep_file).rows


def test_ray_tasks_ask_for_the_memory_estimate(sweep_file):
    s = wafsim._native.Sweep(str(sweep_file), None, None)
    est = [s.memory_estimate(i) for i in s.todo()]
    # 64 MiB for the program plus 12 B per raw mapping unit: more OP, more raw flash.
    assert est[0] > 64 << 20 and est[0] < est[1] < est[2] < 80 << 20


def test_cli_ray_flag(ray_cluster, sweep_file, tmp_path, wafsim_bin):
    cli(wafsim_bin, "sweep", sweep_file, "--out", tmp_path / "local.json")
    r = cli(wafsim_bin, "sweep", sweep_file, "--ray", ray_cluster.address, "--python", sys.executable, "--out", tmp_path / "ray.json")
    assert rows_of(tmp_path / "ray.json") == rows_of(tmp_path / "local.json")
    local_table = cli(wafsim_bin, "sweep", sweep_file).stdout
    assert r.stdout == local_table
    assert "3 run, 0 kept" in r.stderr


def test_cli_advise_on_ray(ray_cluster, root, wafsim_bin):
    """The advisor's candidate sweeps on the cluster: the same ranking as on local threads."""
    exp = root / "experiments/advise/hot-cold.toml"
    local = json.loads(cli(wafsim_bin, "advise", exp, "--handles", "2", "--json").stdout)
    on_ray = json.loads(cli(wafsim_bin, "advise", exp, "--handles", "2", "--json", "--ray", ray_cluster.address, "--python", sys.executable).stdout)
    local.pop("seconds")
    on_ray.pop("seconds")
    assert on_ray == local
    assert on_ray["ranking"][0]["label"] == "{hot1,hot2}{cold1,cold2}"

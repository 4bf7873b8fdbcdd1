"""Wall time of one sweep on 1 and 2 local cores and on a 2-worker local Ray cluster (README's
scaling figure). Rounds alternate between the three setups; medians are printed.

    python examples/python/scaling.py [--sweep experiments/sweeps/scaling.toml] [--rounds 3]

The Ray cluster is started here (ray.cluster_utils.Cluster: a head without CPUs and two worker
nodes of one CPU each, all on this machine) and connected to once, so the Ray times include
scheduling and moving rows, not the cluster's start.
"""

import argparse
import pathlib
import statistics
import time

import ray
from ray.cluster_utils import Cluster

import wafsim

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", default=str(ROOT / "experiments/sweeps/scaling.toml"))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    for _ in range(2):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    setups = {
        "1 local core (jobs=1)": lambda: wafsim.sweep(a.sweep, jobs=1),
        "2 local cores (jobs=2)": lambda: wafsim.sweep(a.sweep, jobs=2),
        "Ray, 2 worker nodes x 1 CPU": lambda: wafsim.sweep(a.sweep, ray=cluster.address),
    }
    times = {k: [] for k in setups}
    rows = {}
    try:
        for r in range(a.rounds):
            for name, run in setups.items():
                t = time.perf_counter()
                res = run()
                times[name].append(time.perf_counter() - t)
                rows.setdefault(name, res.rows)
                print(f"round {r + 1}: {name}: {times[name][-1]:.2f} s", flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()
    first = next(iter(rows.values()))
    same = all(v == first for v in rows.values())
    print(f"\n{len(first)} rows; identical across setups: {same}")
    base = statistics.median(times["1 local core (jobs=1)"])
    print("| setup | median wall time | speed-up |\n|---|---|---|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {m:.2f} s ({', '.join(f'{t:.2f}' for t in ts)}) | {base / m:.2f}x |")


if __name__ == "__main__":
    main()

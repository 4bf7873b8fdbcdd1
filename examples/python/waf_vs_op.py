"""WAF against over-provisioning: run a sweep with the wafsim Python package and draw it.

    python examples/python/waf_vs_op.py                 # writes waf_vs_op.png and .csv
    python examples/python/waf_vs_op.py --ray auto      # the points as tasks on a Ray cluster
    python examples/python/waf_vs_op.py --out-dir /tmp

Needs the package (scripts/test builds it into .venv; or `maturin build --release -m
crates/wafsim-py/Cargo.toml` and pip install the wheel), pandas and matplotlib. The sweep is
experiments/sweeps/op.toml: uniform random 4 KiB writes on a 4 GB drive at five OPs, with greedy
garbage collection; about a second on two cores.
"""

import argparse
import pathlib

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt
import matplotlib.ticker

import wafsim

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", default=str(ROOT / "experiments/sweeps/op.toml"))
    ap.add_argument("--out-dir", default=".")
    ap.add_argument("--ray", help='"auto", "local" or a Ray cluster address')
    a = ap.parse_args()
    out = pathlib.Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    rows = wafsim.sweep(a.sweep, ray=a.ray).to_pandas()
    rows = rows.sort_values("device.over_provisioning")
    rows.to_csv(out / "waf_vs_op.csv", index=False)

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for variant, g in rows.groupby("variant"):
        ax.plot(g["device.over_provisioning"] * 100, g["waf"], marker="o", label=variant)
    ax.set_xlabel("over-provisioning (% of logical capacity)")
    ax.set_ylabel("write amplification (media / host bytes)")
    ax.set_title("Uniform random 4 KiB writes, greedy GC")
    ax.set_yscale("log")
    ax.set_yticks([1, 2, 4, 8, 16], labels=["1", "2", "4", "8", "16"])
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "waf_vs_op.png")
    for _, r in rows.iterrows():
        print(f"OP {r['device.over_provisioning']:.0%}: WAF {r['waf']:.2f}")
    print(f"wrote {out / 'waf_vs_op.png'} and {out / 'waf_vs_op.csv'}")


if __name__ == "__main__":
    main()

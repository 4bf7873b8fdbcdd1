"""Sweeps on a Ray cluster: one Ray task per point.

Each task runs every variant of its point (the same Rust code as a local sweep, seeded by the
experiment alone, so rows are identical to a local run's) and asks for the point's memory
estimate as its `memory` resource, so Ray places no more runs on a node than fit. A task whose
worker dies (killed, out of memory, node lost) is retried up to `max_retries` times; a point
whose experiment fails raises `WafsimError` at once (retrying would fail the same way).

`wafsim sweep SWEEP.toml --ray ADDRESS` (and `wafsim advise --ray`) run this module as
`python -m wafsim.ray_sweep --bundle SWEEP.json --address ADDRESS --rows-json FILE [--out F]
[--scale S]`, the bundle being the sweep with its base experiment's text.
"""

import argparse
import logging
import os
import sys

import wafsim
from wafsim import _native

# Tests only: with this set to a directory, the first attempt of each point's task kills its
# own worker process (leaving a marker file), so the suite sees Ray retry lost workers.
_CRASH_ONCE = "WAFSIM_TEST_RAY_CRASH_ONCE"


def _point(bundle, index, scale):
    crash_dir = os.environ.get(_CRASH_ONCE)
    if crash_dir:
        marker = os.path.join(crash_dir, f"point-{index}")
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
    return index, _native.point_rows(bundle, index, scale)


def run_points(sweep, address, progress=None, max_retries=3):
    """Run the points `sweep` (a `wafsim._native.Sweep`) still has to run as Ray tasks on the
    cluster at `address` ("auto": the one `ray start` started on this machine), recording each
    as it finishes (so an `out` file grows as points finish, and a rerun resumes)."""
    import ray

    if not ray.is_initialized():
        # "local": a Ray instance of this process's own, for trying a sweep without a cluster.
        ray.init(address=None if address == "local" else address, log_to_driver=False, include_dashboard=False, logging_level=logging.WARNING)
    task = ray.remote(max_retries=max_retries, retry_exceptions=False)(_point)
    bundle = ray.put(sweep.bundle())
    scale = sweep.scale()
    todo = sweep.todo()
    total, _ = sweep.shape()
    done = total - len(todo)
    pending = [
        task.options(memory=max(1, sweep.memory_estimate(i)), name=f"wafsim sweep point {i}").remote(bundle, i, scale)
        for i in todo
    ]
    if progress:
        progress(done, total)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        try:
            index, rows = ray.get(ready[0])
        except ray.exceptions.RayTaskError as e:
            for p in pending:
                ray.cancel(p)
            cause = e.cause if getattr(e, "cause", None) is not None else e
            raise wafsim.WafsimError(str(cause).strip().splitlines()[-1]) from None
        done = sweep.record(index, rows)
        if progress:
            progress(done, total)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m wafsim.ray_sweep", description="Run a wafsim sweep on a Ray cluster.")
    ap.add_argument("sweep", nargs="?", help="a sweep file (or --bundle)")
    ap.add_argument("--bundle", help="a file with the sweep's bundle (wafsim sweep --ray writes one)")
    ap.add_argument("--address", default="auto")
    ap.add_argument("--out")
    ap.add_argument("--scale", type=float)
    ap.add_argument("--rows-json", required=True, help="write the rows here (JSON: every field of every row but the axes)")
    ap.add_argument("--max-retries", type=int, default=3)
    a = ap.parse_args(argv)
    tty = sys.stderr.isatty()

    def progress(done, total):
        if tty:
            print(f"\r\x1b[K{done}/{total} points on Ray", end="", file=sys.stderr, flush=True)

    try:
        if (a.sweep is None) == (a.bundle is None):
            ap.error("give a sweep file or --bundle")
        if a.bundle:
            with open(a.bundle) as f:
                s = _native.Sweep(None, a.scale, a.out, bundle=f.read())
        else:
            s = _native.Sweep(a.sweep, a.scale, a.out)
        run_points(s, a.address, progress=progress, max_retries=a.max_retries)
        _, executed, kept = s.finish()
        text = s.rows_wire()
    except wafsim.WafsimError as e:
        if tty:
            print("\r\x1b[K", end="", file=sys.stderr)
        print(f"wafsim: error: {e}", file=sys.stderr)
        return 1
    if tty:
        print("\r\x1b[K", end="", file=sys.stderr)
    with open(a.rows_json, "w") as f:
        f.write(text)
    print(f"{executed} {kept}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

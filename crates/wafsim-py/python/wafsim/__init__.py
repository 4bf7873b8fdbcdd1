"""wafsim from Python: run experiments and sweeps, get pandas tables.

    >>> import wafsim
    >>> r = wafsim.run("experiments/quickstart.toml")
    >>> r.to_pandas("variants")[["variant", "waf"]]
    >>> s = wafsim.sweep("experiments/sweeps/op.toml", out="op.parquet")   # all local cores
    >>> s = wafsim.sweep("experiments/sweeps/op.toml", ray="auto")         # a Ray cluster

An experiment is a path, TOML text or a dict of the same schema as the CLI's experiment files
(docs in the repository's README and crates/wafsim-experiment/src/schema.rs). `run` returns
what `wafsim run --json` prints; errors raise `WafsimError` with the CLI's message.
"""

import json
import os

from wafsim import _native
from wafsim._native import WafsimError

__all__ = ["run", "sweep", "Results", "SweepResults", "WafsimError", "__version__"]
__version__ = _native.__version__


def _source(experiment, base_dir):
    """(source, is_path, origin, base_dir) for the native loader."""
    if isinstance(experiment, dict):
        return _native.json_to_toml(json.dumps(experiment)), False, "<dict>", base_dir or os.getcwd()
    if isinstance(experiment, os.PathLike):
        return os.fspath(experiment), True, os.fspath(experiment), None
    if isinstance(experiment, str):
        # A file name has no line break and no '='; TOML text of an experiment has both.
        looks_like_text = "\n" in experiment or "=" in experiment
        if not looks_like_text:
            return experiment, True, experiment, None
        return experiment, False, "<string>", base_dir or os.getcwd()
    raise TypeError(f"experiment: expected a path, TOML text or a dict, not {type(experiment).__name__}")


def run(experiment, *, variants=None, scale=None, full_scale=False, sample_every=None, serial=False, base_dir=None):
    """Run an experiment's variants (all, or those named in `variants`) and return `Results`.

    experiment: a path (str or os.PathLike), TOML text, or a dict with the same keys.
    scale: capacity scale 0 < s <= 1 (default: as `wafsim run`, about 10 GB drives);
    full_scale: run at the experiment's real capacities.
    sample_every: bytes of host writes between time-series samples (None: no time series).
    serial: run variants one after another instead of on all cores.
    base_dir: where relative paths in TOML text or a dict resolve (default: the working
    directory; a file's own directory for a path).

    The GIL is released while the simulation runs.
    """
    if isinstance(variants, str):
        variants = [variants]
    source, is_path, origin, base = _source(experiment, base_dir)
    text = _native.run(source, is_path, origin, base, list(variants or []), scale, full_scale, sample_every, serial)
    return Results(json.loads(text))


def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}_{k}" if prefix else k, v, out)
    else:
        out[prefix] = value


class Results:
    """What `wafsim run --json` prints, as `data` (a dict), with pandas views of it."""

    TABLES = ("variants", "namespaces", "jobs", "phases", "timeseries")

    def __init__(self, data):
        self.data = data

    def __repr__(self):
        # A run without host writes has no WAF (null in the JSON): "n/a", as the tables say.
        names = ", ".join(f"{v['name']}: WAF " + ("n/a" if v["waf"] is None else f"{v['waf']:.3f}") for v in self.data["variants"])
        return f"<wafsim.Results {names}>"

    @property
    def variants(self):
        """Per-variant result dicts (the "variants" list of `wafsim run --json`)."""
        return self.data["variants"]

    def waf(self, variant=None):
        """Device WAF of `variant` (by name; the only variant when None); None when the measured
        phases wrote nothing (read-only or trim-only runs)."""
        vs = self.data["variants"]
        if variant is None:
            if len(vs) != 1:
                raise ValueError(f"{len(vs)} variants: name one ({', '.join(v['name'] for v in vs)})")
            return vs[0]["waf"]
        for v in vs:
            if v["name"] == variant:
                return v["waf"]
        raise KeyError(variant)

    def records(self, table):
        """Rows of `table` (one of Results.TABLES) as a list of flat dicts."""
        if table == "variants":
            rows = []
            for v in self.data["variants"]:
                r = {"variant": v["name"]}
                for k, x in v.items():
                    if k != "name" and not isinstance(x, (list, dict)):
                        r[k] = x
                _flatten("erase_count", v.get("erase_count", {}), r)
                if v.get("timing"):
                    _flatten("timing", v["timing"], r)
                rows.append(r)
            return rows
        if table in ("namespaces", "phases"):
            return [dict({"variant": v["name"]}, **x) for v in self.data["variants"] for x in v[table]]
        if table == "jobs":
            rows = []
            for j in self.data["jobs"]:
                r = {}
                for k, x in j.items():
                    if k in ("read", "write", "trim"):
                        _flatten(k, x, r)
                    else:
                        r[k] = x
                rows.append(r)
            return rows
        if table == "timeseries":
            return list(self.data.get("timeseries", []))
        raise ValueError(f"table {table!r}: expected one of {', '.join(self.TABLES)}")

    def to_pandas(self, table=None):
        """A pandas DataFrame of `table` ("variants", "namespaces", "jobs", "phases",
        "timeseries"), or a dict of all of them when `table` is None. The time series needs
        `run(..., sample_every=BYTES)`."""
        import pandas as pd

        if table is None:
            return {t: pd.DataFrame.from_records(self.records(t)) for t in self.TABLES}
        return pd.DataFrame.from_records(self.records(table))

    def to_parquet(self, path):
        """Write one row per (variant, namespace) as Parquet (pyarrow): the namespace's bytes
        and WAF beside the variant's device figures, the layout of `wafsim sweep`'s Parquet
        rows without the point columns."""
        df = self.to_pandas("namespaces").rename(columns={"name": "namespace", "waf": "ns_waf", "host_bytes": "ns_host_bytes", "media_bytes": "ns_media_bytes", "gc_bytes": "ns_gc_bytes"})
        v = self.to_pandas("variants")[["variant", "waf", "hbmw", "mbmw", "mbe", "gc_bytes"]]
        df.merge(v, on="variant").to_parquet(path, index=False)


class SweepResults:
    """Rows of a sweep (one per point and variant, as `wafsim sweep --out F.json` writes)."""

    def __init__(self, rows, axes, executed_points, kept_points):
        self.rows = rows
        self.axes = axes
        self.executed_points = executed_points
        self.kept_points = kept_points

    def __repr__(self):
        return f"<wafsim.SweepResults {len(self.rows)} rows, {self.executed_points} points run, {self.kept_points} kept>"

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame.from_records(self.rows)


def sweep(path, *, out=None, jobs=None, scale=None, full_scale=False, ray=None, progress=None):
    """Run a sweep file (see `wafsim sweep --help`) and return `SweepResults`.

    out: .csv, .json or .parquet results file; rows already in it are kept (resume).
    jobs: local threads (default all cores). ray: "auto" or a cluster address to run each point
    as a Ray task instead (needs `ray`; workers need this package and the sweep's files at the
    same paths). progress: called as progress(points_done, points_total) on Ray runs.
    Results do not depend on where points run.
    """
    s = _native.Sweep(os.fspath(path), 1.0 if full_scale else scale, None if out is None else os.fspath(out))
    if ray is None:
        s.run_local(jobs)
    else:
        from wafsim.ray_sweep import run_points

        run_points(s, ray, progress=progress)
    text, executed, kept = s.finish()
    return SweepResults(json.loads(text), s.axes(), executed, kept)

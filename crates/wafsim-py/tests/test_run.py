"""wafsim.run against the CLI, its three input forms, its errors, its tables, the GIL."""

import json
import threading
import time
import tomllib

import pandas as pd
import pytest

import wafsim
from conftest import SMALL, cli


def without_warnings(doc):
    doc = dict(doc)
    doc.pop("warnings", None)
    return doc


def test_run_equals_cli_json(root, wafsim_bin):
    exp = root / "experiments/quickstart.toml"
    want = json.loads(cli(wafsim_bin, "run", exp, "--json").stdout)
    got = wafsim.run(str(exp))
    assert without_warnings(got.data) == want
    # The eight-VM case: FDP removes the blender's GC, no placement does not.
    assert got.waf("fdp") == pytest.approx(1.0, abs=0.01)
    assert got.waf("no-fdp") > 1.5


def test_path_text_and_dict_give_the_same_results(small_file):
    by_path = wafsim.run(small_file)
    by_text = wafsim.run(SMALL)
    by_dict = wafsim.run(tomllib.loads(SMALL))
    assert by_path.data["variants"] == by_text.data["variants"] == by_dict.data["variants"]
    # Greedy beats FIFO under uniform random writes (Desnoyers), both amplify.
    assert 1.5 < by_path.waf("greedy") < by_path.waf("fifo")


def test_variants_and_scale(root):
    r = wafsim.run(root / "experiments/quickstart.toml", variants="fdp", scale=0.001)
    assert [v["name"] for v in r.variants] == ["fdp"]
    assert r.variants[0]["scale"] == 0.001


def test_errors_carry_the_cli_message(tmp_path):
    with pytest.raises(wafsim.WafsimError, match=r"<string>:7:1: unknown field `bogus_key`"):
        wafsim.run(SMALL.replace('capacity = "64MB"', 'capacity = "64MB"\nbogus_key = 1'))
    with pytest.raises(wafsim.WafsimError, match="cannot read"):
        wafsim.run(str(tmp_path / "missing.toml"))
    with pytest.raises(wafsim.WafsimError, match=r"no variant named \"nope\""):
        wafsim.run(SMALL, variants=["nope"])
    with pytest.raises(wafsim.WafsimError, match="no TOML form"):
        wafsim.run({"device": {"capacity": None}})
    with pytest.raises(TypeError):
        wafsim.run(42)
    # A ValueError, so code catching bad input generically catches it too.
    assert issubclass(wafsim.WafsimError, ValueError)


def test_tables(small_file):
    r = wafsim.run(small_file, sample_every=16 << 20)
    t = r.to_pandas()
    assert set(t) == set(wafsim.Results.TABLES)
    v = t["variants"].set_index("variant")
    assert list(v.index) == ["greedy", "fifo"]
    assert (v["waf"] == v["mbmw"] / v["hbmw"]).all()
    ns = t["namespaces"]
    assert len(ns) == 2 and set(ns["name"]) == {"ns1"}
    jobs = t["jobs"]
    assert (jobs["write_io_bytes"] > 0).all()
    ts = t["timeseries"]
    assert len(ts) > 4
    for _, g in ts.groupby("variant"):
        assert g["host_bytes"].is_monotonic_increasing
    # The last sample's WAF (cumulative since the precondition) is the variant's WAF at most
    # one sample interval before the end.
    last = ts.groupby("variant").last()
    assert last.loc["greedy", "waf"] == pytest.approx(v.loc["greedy", "waf"], rel=0.05)


def test_parquet(small_file, tmp_path):
    r = wafsim.run(small_file)
    out = tmp_path / "run.parquet"
    r.to_parquet(out)
    df = pd.read_parquet(out)
    assert list(df["variant"]) == ["greedy", "fifo"]
    assert list(df["namespace"]) == ["ns1", "ns1"]
    assert (df["ns_waf"] == df["waf"]).all()  # one namespace: its WAF is the drive's


def test_gil_is_released_while_simulating(root):
    """Python code keeps running in another thread during a simulation."""
    done = threading.Event()
    result = {}

    # Random writes on a 4 GB drive, twelve drive writes: about a second on a quiet core.
    exp = (root / "experiments/sweeps/random-writes.toml").read_text().replace('amount = "2x"', 'amount = "6x"')

    def work():
        result["r"] = wafsim.run(exp, serial=True)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    time.sleep(0.05)
    ticks = 0
    start = time.perf_counter()
    while not done.is_set():
        ticks += 1
    elapsed = time.perf_counter() - start
    t.join()
    assert result["r"].waf() > 5
    assert elapsed > 0.2, "the run was too short to tell"
    # Holding the GIL, the loop would get the interpreter only at switch intervals (5 ms)
    # while the native call holds it for the whole run: a few hundred ticks at most.
    assert ticks > 100_000, f"{ticks} ticks in {elapsed:.2f} s: the GIL was held"


def test_cli_parquet_equals_python_parquet(small_file, tmp_path, wafsim_bin):
    """`wafsim run --parquet` (Rust's writer) and Results.to_parquet (pyarrow) agree."""
    cli(wafsim_bin, "run", small_file, "--parquet", tmp_path / "cli.parquet")
    wafsim.run(small_file).to_parquet(tmp_path / "py.parquet")
    a = pd.read_parquet(tmp_path / "cli.parquet")
    b = pd.read_parquet(tmp_path / "py.parquet")
    assert list(a["variant"]) == list(b["variant"]) == ["greedy", "fifo"]
    for col in ("waf", "hbmw", "mbmw", "mbe", "gc_bytes", "ns_host_bytes", "ns_media_bytes", "ns_waf"):
        assert list(a[col]) == list(b[col]), col
    assert list(a["namespace"]) == list(b["namespace"])

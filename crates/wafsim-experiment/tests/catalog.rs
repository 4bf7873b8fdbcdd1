//! Every catalog experiment, run at a tiny scale (1/10,000: 682 erase units of 1.3 MB), keeps the
//! qualitative result the catalog documents; plus trace replay and fio phases end to end.
use std::path::Path;
use wafsim_experiment::plan::scale::scale_spec;
use wafsim_experiment::{load_experiment, run_variants, RunOptions, VariantResult};

fn run(path: &str, scale: f64) -> Vec<VariantResult> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut vs = load_experiment(&root.join(path)).unwrap();
    for v in &mut vs {
        scale_spec(&mut v.spec, scale).unwrap();
    }
    run_variants(&vs, RunOptions::default(), &|_, _| {}).into_iter().map(|r| r.unwrap()).collect()
}

fn waf(rs: &[VariantResult], name: &str) -> f64 {
    rs.iter().find(|r| r.name == name).unwrap().waf()
}

#[test]
fn section2_fdp_multi_namespace() {
    let rs = run("experiments/fdp-multi-namespace/experiment.toml", 1e-4);
    assert!(waf(&rs, "no-fdp") > 1.4, "{}", waf(&rs, "no-fdp"));
    assert_eq!(waf(&rs, "fdp"), 1.0);
    // Equal IOPS per job: every write job issued the same number of I/Os.
    let r = &rs[0];
    let writes: Vec<u64> = r.jobs.iter().filter(|j| j.measured && j.name == "write").map(|j| j.stats.write_ios).collect();
    assert_eq!(writes.len(), 8);
    assert!(writes.iter().all(|&w| w == writes[0]));
    assert_eq!(r.phases[0].name, "precondition");
    assert_eq!(r.phases[0].waf(), 1.0);
}

#[test]
fn section3_four_namespaces() {
    let rs = run("experiments/four-namespaces-sequential.toml", 1e-4);
    assert_eq!(waf(&rs, "dedicated"), 1.0);
    assert_eq!(waf(&rs, "shared-fdp"), 1.0);
    assert!(waf(&rs, "shared-no-fdp") > 1.2);
}

#[test]
fn section8_log_structured() {
    let rs = run("experiments/log-structured-writers.toml", 1e-4);
    assert_eq!(waf(&rs, "log-fdp"), 1.0);
    assert!(waf(&rs, "log-no-fdp") > 1.2);
    assert!(waf(&rs, "random-no-fdp") > waf(&rs, "log-no-fdp"));
}

#[test]
fn quickstart_runs_unchanged() {
    let rs = run("experiments/quickstart.toml", 1.0);
    assert_eq!(waf(&rs, "fdp"), 1.0);
    assert!(waf(&rs, "no-fdp") > 1.3);
}

#[test]
fn traces_on_two_namespaces_interleave_by_timestamp() {
    let dir = std::env::temp_dir().join(format!("wafsim-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wafsim-workload/tests/fixtures");
    let exp = format!(
        r#"
[device]
capacity = "256MiB"
over_provisioning = 0.1
erase_unit = "1MiB"
[[namespace]]
name = "a"
size = "128MiB"
[[namespace]]
name = "b"
size = "128MiB"
[[phase]]
name = "replay"
[[phase.trace]]
file = "{msr}"
format = "msr"
namespace = "a"
[[phase.trace]]
file = "{iolog}"
namespace = "b"
"#,
        msr = fixtures.join("msr.csv").display(),
        iolog = fixtures.join("iolog_v3.log").display()
    );
    let f = dir.join("t.toml");
    std::fs::write(&f, exp).unwrap();
    let vs = load_experiment(&f).unwrap();
    let r = run_variants(&vs, RunOptions::default(), &|_, _| {}).remove(0).unwrap();
    assert_eq!(r.jobs.len(), 1);
    let j = &r.jobs[0];
    assert!(j.stats.write_ios > 0 && j.stats.read_ios > 0, "{:?}", j.stats);
    assert_eq!(r.namespaces[0].host_bytes + r.namespaces[1].host_bytes, j.stats.write_bytes);
    assert!(r.namespaces[0].host_bytes > 0 && r.namespaces[1].host_bytes > 0);
}

/// Per job (name, write B/s, read IOPS, mean read latency ns, p99 read latency ns) of the
/// measured jobs of a timed run.
fn timed_rows(r: &VariantResult) -> Vec<(String, f64, f64, f64, f64)> {
    r.jobs
        .iter()
        .filter(|j| j.measured)
        .map(|j| {
            let t = j.timing.expect("timed");
            (format!("{}/{}", j.namespace, j.name), t.write.bytes_per_sec, t.read.iops, t.read.lat_mean_ns, t.read.lat_p99_ns as f64)
        })
        .collect()
}

/// Scale invariance: the same drive and workload at two scales give the same bandwidth, IOPS
/// and latency within 5% (docs/model.md, "Scaled runs").
fn assert_scale_invariant(a: &[VariantResult], b: &[VariantResult]) {
    for (ra, rb) in a.iter().zip(b) {
        for (x, y) in timed_rows(ra).iter().zip(timed_rows(rb)) {
            for (what, u, v) in [("write B/s", x.1, y.1), ("read IOPS", x.2, y.2), ("read mean latency", x.3, y.3), ("read p99", x.4, y.4)] {
                if u == 0.0 && v == 0.0 {
                    continue;
                }
                let rel = (u - v).abs() / u.max(v);
                eprintln!("{} {}: {what} {u:.4e} vs {v:.4e} ({:+.2}%)", ra.name, x.0, (v - u) / u * 100.0);
                assert!(rel < 0.05, "{} {}: {what} {u} vs {v} differ by {:.1}% between scales", ra.name, x.0, rel * 100.0);
            }
        }
    }
}

#[test]
fn section2_timed_fdp_raises_bandwidth_and_read_iops() {
    let rs = run("experiments/fdp-multi-namespace/timed.toml", 1e-3);
    assert_scale_invariant(&rs, &run("experiments/fdp-multi-namespace/timed.toml", 2e-3));
    let totals = |r: &VariantResult| {
        let mut w = 0.0;
        let mut ri = 0.0;
        let mut per_vm = Vec::new();
        for j in r.jobs.iter().filter(|j| j.measured) {
            let t = j.timing.expect("timed");
            w += t.write.bytes_per_sec;
            ri += t.read.iops;
            if t.write.ios > 0 {
                per_vm.push(t.write.iops);
            }
            // Little's law per job: mean in flight = IOPS x mean latency.
            let ios = (t.read.ios + t.write.ios) as f64;
            let lat = (t.read.lat_mean_ns * t.read.ios as f64 + t.write.lat_mean_ns * t.write.ios as f64) / ios;
            let little = ios / (t.window_ns as f64 * 1e-9) * lat * 1e-9;
            assert!((little - t.mean_inflight).abs() / t.mean_inflight < 0.02, "{}: {little} vs {}", j.name, t.mean_inflight);
        }
        (w, ri, per_vm)
    };
    let no = rs.iter().find(|r| r.name == "no-fdp").unwrap();
    let fdp = rs.iter().find(|r| r.name == "fdp").unwrap();
    let (w0, r0, vm0) = totals(no);
    let (w1, r1, _) = totals(fdp);
    eprintln!("write {w0:.3e} -> {w1:.3e} B/s, read {r0:.0} -> {r1:.0} IOPS, WAF {} -> {}", no.waf(), fdp.waf());
    // Issue 28's check: the datapath keeps the no-FDP figures within 10% of those before it
    // was modelled (2,205 MB/s, 39,900 read IOPS at this scale; they match the publication).
    assert!((w0 / 2205e6 - 1.0).abs() < 0.10 && (r0 / 39_900.0 - 1.0).abs() < 0.10, "no-FDP {w0:.4e} B/s, {r0:.0} IOPS");
    assert!(w1 > 1.5 * w0, "FDP write bandwidth well above no-FDP");
    assert!(r1 > 1.5 * r0, "FDP read IOPS well above no-FDP (each VM's reads queue behind its writes)");
    assert!(no.waf() > 1.4 && fdp.waf() == 1.0);
    // Without FDP the per-VM write IOPS are nearly equal whatever the block size.
    let (lo, hi) = vm0.iter().fold((f64::MAX, 0f64), |(a, b), &v| (a.min(v), b.max(v)));
    assert!(hi / lo < 1.05, "per-VM write IOPS {lo}..{hi}");
    let t = no.timed.unwrap();
    assert!(t.busy.gc_ns() > 0 && fdp.timed.unwrap().busy.gc_ns() < t.busy.gc_ns());
    assert!(no.lifetime_years().is_some() && fdp.sustainable_dwpd().unwrap() > no.sustainable_dwpd().unwrap());
}

/// A 4 KiB random-write steady state on the calibrated 7.68 TB preset at two scales.
#[test]
fn random_write_steady_state_is_scale_invariant() {
    let doc = r#"
name = "4 KiB random write steady state, timed"
seed = 1
[device]
preset = "enterprise-tlc-7.68tb"
[device.fdp]
enabled = false
[[namespace]]
name = "a"
size = "7.68TB"
[timing]
enabled = true
datapath = "DATAPATH"
[[phase]]
name = "season"
measure = false
[[phase.workload]]
namespace = "a"
pattern = "random"
bs = "4KiB"
amount = "1.5x"
[[phase]]
name = "measure"
[[phase.fio]]
namespaces = ["a"]
args = "--name=rw --rw=randwrite --bs=4k --iodepth=32 --numjobs=2 --time_based --runtime=1500 --ioengine=io_uring --direct=1"
"#;
    // The GC pacing's tail, without the controller datapath; then with the preset's (6.5 GB/s,
    // about 85% busy here).
    for (datapath, p99_tol) in [("none", 0.07), ("6.5GB/s", 0.07)] {
        steady_state_at_two_scales(&doc.replace("DATAPATH", datapath), p99_tol);
    }
}

fn steady_state_at_two_scales(doc: &str, p99_tol: f64) {
    let at = |scale: f64| {
        let mut vs = wafsim_experiment::parse_experiment(doc, "rw").unwrap();
        for v in &mut vs {
            wafsim_experiment::plan::scale::scale_spec(&mut v.spec, scale).unwrap();
        }
        run_variants(&vs, RunOptions::default(), &|_, _| {}).into_iter().map(|r| r.unwrap()).collect::<Vec<_>>()
    };
    let (a, b) = (at(1e-3), at(2e-3));
    let iops = |r: &[VariantResult]| r[0].jobs.iter().filter(|j| j.measured).map(|j| j.timing.unwrap().write.iops).sum::<f64>();
    eprintln!("random write steady state: {:.0} vs {:.0} IOPS, WAF {:.3} vs {:.3}", iops(&a), iops(&b), a[0].waf(), b[0].waf());
    assert!(a[0].waf() > 3.0, "steady state reached (WAF {})", a[0].waf());
    assert!((iops(&a) - iops(&b)).abs() / iops(&a) < 0.05);
    for (x, y) in a[0].jobs.iter().zip(&b[0].jobs).filter(|(x, _)| x.measured) {
        let (x, y) = (x.timing.unwrap().write, y.timing.unwrap().write);
        // GC is paced (docs/model.md, "GC pacing"), so the tail no longer grows with the erase
        // unit's chunk of relocation work; measured p99 1.09 / 1.09 ms at 1/1000 / 1/500 with
        // seed 1 (1.30 / 1.43 ms unpaced). With the datapath 1.34 / 1.42 ms: GC reads are
        // released a program unit ahead of the copies that take their data (docs/model.md,
        // "Controller datapath"); released a victim's worth at a time before its copies, they
        // gave 1.44 / 1.63 ms (+13%).
        for (what, u, v, tol) in [("mean", x.lat_mean_ns, y.lat_mean_ns, 0.05), ("p99", x.lat_p99_ns as f64, y.lat_p99_ns as f64, p99_tol)] {
            eprintln!("write latency {what}: {u:.0} vs {v:.0} ns");
            assert!((u - v).abs() / u < tol, "write latency {what}: {u} vs {v}");
        }
    }
}

/// Section 5's MongoDB entry at two scales: both variants measure the TPC-C run after their
/// load, and the drives' WAF from the run start to the 5 h checkpoint moves less than 4% between
/// 1/2000 and 1/1000 (seen: WiredTiger 5.627 / 5.605, HSE 1.224 / 1.264, and 1.235 at 1/100 in
/// the catalog, not monotonic in the scale; the windows' ends differ: HSE's run ends where its capacity drive fills,
/// at a scale-dependent point). Scale terms this has caught: the conventional file system's
/// 8 MiB chunk (its files' unwritten tails were spare the drive kept, 8.5% of the namespace at
/// 1/2000), WiredTiger's 100 MB journal files and the file system's 1 GiB directory spacing
/// (where the journal's never-trimmed cursor started). The total WAF is not held to this: both
/// engines' store levels carry writes that do not scale (a checkpoint's root, extent lists and
/// metadata; HSE's page padding per mblock stream), a term of about b/scale (docs/model.md,
/// "Scaled runs").
#[test]
fn docstore_tpcc_agrees_at_two_scales() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let at = |scale: f64| -> Vec<VariantResult> {
        let mut vs: Vec<_> = load_experiment(&root.join("experiments/kv/docstore-tpcc.toml")).unwrap().into_iter().filter(|v| v.name == "wiredtiger" || v.name == "hse-staging+capacity").collect();
        for v in &mut vs {
            scale_spec(&mut v.spec, scale).unwrap();
        }
        run_variants(&vs, RunOptions::default(), &|_, _| {}).into_iter().map(|r| r.unwrap()).collect()
    };
    let (small, large) = (at(0.0005), at(0.001));
    assert_eq!(small.len(), 2);
    for (a, b) in small.iter().zip(&large) {
        let (wa, wb) = (a.waf(), b.waf());
        let (ta, tb) = (a.total_waf().unwrap(), b.total_waf().unwrap());
        eprintln!("{}: drive WAF {wa:.4} / {wb:.4}, total WAF {ta:.3} / {tb:.3}", a.name);
        for r in [a, b] {
            assert!(r.measured_window().starts_with("the run after the stores' load"), "{}: {}", r.name, r.measured_window());
        }
        let five = |r: &VariantResult| {
            let c = r.phases.iter().flat_map(|p| &p.checkpoints).find(|c| c.label == "5h").expect("a 5h checkpoint");
            assert!(c.reached.is_some(), "{}: 5h not reached", r.name);
            c.waf
        };
        let (fa, fb) = (five(a), five(b));
        eprintln!("{}: drive WAF to 5 h {fa:.4} / {fb:.4}", a.name);
        assert!((fa - fb).abs() / fb < 0.04, "{}: drive WAF to 5 h {fa:.4} at 1/2000, {fb:.4} at 1/1000", a.name);
    }
}

/// Noisy neighbours (issue 28): the quiet tenant's reads wait for what crosses the NAND
/// interface of their drive (program data, GC's page reads and copies, other reads) on the
/// channels and the datapath. So its latency follows that traffic, computed here from each
/// variant's own counters, not guessed: the less traffic on its drive, the shorter its reads.
/// And an idle tenant leaves its share to the busy one (performance sharing).
#[test]
fn noisy_neighbours_latency_follows_the_traffic_and_idle_shares_go_to_the_busy() {
    let rs = run("experiments/noisy-neighbours/experiment.toml", 1e-3);
    let get = |n: &str| rs.iter().find(|r| r.name == n).unwrap_or_else(|| panic!("variant {n}"));
    let job = |r: &VariantResult, name: &str| r.jobs.iter().find(|j| j.measured && j.name == name).and_then(|j| j.timing).unwrap_or_else(|| panic!("{}: job {name}", r.name));
    // Bytes per second across the NAND interface of the quiet tenant's drive: programs (host
    // and GC), GC's page reads and host reads. A dedicated layout's quiet drive holds only it.
    let traffic = |r: &VariantResult| {
        let on_drive = |n: &&wafsim_experiment::results::NsResult| r.layout != "dedicated" || n.name == "quiet";
        let bytes: u64 = r.namespaces.iter().filter(on_drive).map(|n| n.media_bytes + n.gc_bytes + n.read_bytes).sum();
        bytes as f64 / (r.timed.as_ref().unwrap().elapsed_ns as f64 * 1e-9)
    };
    let quiet = ["one-namespace", "two-namespaces", "fdp", "dedicated", "fdp-noisy-idle"];
    let rows: Vec<(&str, f64, f64)> = quiet.iter().map(|&n| (n, traffic(get(n)), job(get(n), "quiet").read.lat_mean_ns)).collect();
    for (n, t, l) in &rows {
        eprintln!("{n}: {:.3} GB/s across the quiet drive's NAND interface, quiet reads {l:.0} ns mean", t * 1e-9);
    }
    for a in &rows {
        for b in &rows {
            if a.1 < 0.97 * b.1 {
                assert!(a.2 < b.2, "{} carries less traffic than {} ({:.3e} vs {:.3e} B/s) but its quiet reads are slower ({:.0} vs {:.0} ns)", a.0, b.0, a.1, b.1, a.2, b.2);
            } else if (a.1 - b.1).abs() <= 0.03 * a.1.max(b.1) {
                assert!((a.2 - b.2).abs() <= 0.15 * a.2.max(b.2), "{} and {}: equal traffic, quiet reads {:.0} vs {:.0} ns", a.0, b.0, a.2, b.2);
            }
        }
    }
    // The two ways of sharing without placement are one mechanism (one write frontier, one GC).
    assert!((waf(&rs, "one-namespace") / waf(&rs, "two-namespaces") - 1.0).abs() < 0.03);
    assert!(waf(&rs, "fdp") < 0.9 * waf(&rs, "two-namespaces"), "one RUH each keeps the quiet tenant's data out of GC");
    // Performance sharing: with the quiet tenant idle the noisy one takes its share; a drive of
    // its own (half the spare capacity) gives it less than the shared FDP drive.
    let noisy = |n: &str| job(get(n), "noisy").write.bytes_per_sec;
    eprintln!("noisy: alone {:.4e}, beside the quiet tenant {:.4e}, dedicated drive {:.4e} B/s", noisy("fdp-quiet-idle"), noisy("fdp"), noisy("dedicated"));
    assert!(noisy("fdp-quiet-idle") > noisy("fdp"));
    assert!(noisy("fdp") > noisy("dedicated"));
    assert_eq!(job(get("fdp-noisy-idle"), "quiet").write.ios, 0);
    assert_eq!(get("fdp-noisy-idle").counters.host_write_bytes, 0, "the idle tenant wrote nothing in the window");
    // Scale: every figure within 5% at 1/500 (the datapath lets host reads go first; first
    // come, first served, GC's page reads released together would book it in bursts that grow
    // with the erase unit, and the quiet reads would wait behind them).
    assert_scale_invariant(&rs, &run("experiments/noisy-neighbours/experiment.toml", 2e-3));
}

/// experiments/fdp-hostile-mixes at its default (full) scale: what the mechanism fixes exactly,
/// and the orderings the entry documents.
#[test]
fn fdp_hostile_mixes_follow_the_gc_destinations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let all = load_experiment(&root.join("experiments/fdp-hostile-mixes/experiment.toml")).unwrap();
    let pick = |n: &str| all.iter().find(|v| v.name == n).unwrap_or_else(|| panic!("variant {n}")).clone();
    let op = |n: &str, op: f64| {
        let mut set = toml::Table::new();
        set.insert("device".into(), toml::Value::Table(toml::Table::from_iter([("over_provisioning".to_string(), toml::Value::Float(op))])));
        let mut v = wafsim_experiment::plan::variant_with(&pick(n), &set).unwrap();
        v.name = format!("{n}@{op}");
        v
    };
    // One handle for all streams, the other seven holding no unit (as no placement holds none).
    let mut one_lazy = {
        let fdp = toml::Table::from_iter([("idle_handles_hold_units".to_string(), toml::Value::Boolean(false))]);
        let set = toml::Table::from_iter([("device".to_string(), toml::Value::Table(toml::Table::from_iter([("fdp".to_string(), toml::Value::Table(fdp))])))]);
        wafsim_experiment::plan::variant_with(&pick("one-handle"), &set).unwrap()
    };
    one_lazy.name = "one-handle, idle handles empty".into();
    let mut half = pick("fdp-ii");
    scale_spec(&mut half.spec, 0.5).unwrap();
    half.name = "fdp-ii@1/2".into();
    let vs = vec![pick("no-placement"), pick("one-handle"), one_lazy, pick("fdp-ii"), pick("fdp-pi"), op("fdp-ii", 0.03), op("fdp-pi", 0.03), half];
    let rs: Vec<VariantResult> = run_variants(&vs, RunOptions::default(), &|_, _| {}).into_iter().map(|r| r.unwrap()).collect();
    let get = |n: &str| rs.iter().find(|r| r.name == n).unwrap_or_else(|| panic!("variant {n}"));
    for r in &rs {
        eprintln!("{}: WAF {:.4}", r.name, r.waf());
    }
    // Every stream through one handle is the drive without placement when the idle handles
    // hold nothing: one host frontier and one GC frontier either way, the same writes in the
    // same order. Holding a unit each (the default), the seven idle handles take spare away.
    let lazy = get("one-handle, idle handles empty");
    assert_eq!(lazy.counters.media_units(), get("no-placement").counters.media_units());
    assert_eq!(lazy.counters.gc_units, get("no-placement").counters.gc_units);
    assert!(get("one-handle").counters.gc_units > lazy.counters.gc_units);
    // Persistently isolated handles never move data into a shared unit; initially isolated
    // ones do, and only their GC frontier receives copies.
    assert_eq!(get("fdp-pi").counters.fdp_events.media_reallocated, 0);
    assert!(get("fdp-ii").counters.fdp_events.media_reallocated > 0);
    assert!(get("fdp-pi").frontiers.iter().filter(|f| f.gc_bytes > 0).all(|f| f.kind == "gc" && f.ruh.is_some()));
    // Isolating the sequential stream keeps GC off its reclaim units, which die whole when the
    // next pass rewrites them.
    assert!(get("fdp-ii").waf() < 0.8 * get("no-placement").waf(), "FDP {} vs none {}", get("fdp-ii").waf(), get("no-placement").waf());
    // Less spare, more GC, for both types. Persistently isolated handles keep each handle's GC
    // copies apart, which pays at 10% OP for the two more open GC units they hold (WARP FAST
    // '26 Obs. 8 finds initially isolated handles better below 7-9% OP; wafsim does not down to
    // 3%: docs/experiments.md says why).
    for t in ["fdp-ii", "fdp-pi"] {
        assert!(get(&format!("{t}@0.03")).waf() > 1.5 * get(t).waf());
    }
    assert!(get("fdp-pi").waf() < get("fdp-ii").waf());
    // The entry runs at full scale because shrinking the erase unit changes the answer; half
    // scale (32,768 mapping units per unit) does not yet.
    let (full, h) = (get("fdp-ii").waf(), get("fdp-ii@1/2").waf());
    assert!((h / full - 1.0).abs() < 0.02, "full {full} vs half {h}");
}

//! Sweeps: axes expand to points (product and zip), explicit points, overrides land in the
//! runs, errors name the point and key, results do not depend on the thread count, and an
//! output file makes a sweep resumable.

use std::path::{Path, PathBuf};
use wafsim_experiment::studies::sweep::{read_rows, SweepOptions, SweepResult, SweepSpec};

/// A tiny drive (256 erase units) under uniform random 4 KiB writes: a run takes milliseconds.
const BASE: &str = r#"
name = "random writes"
seed = 7
[device]
capacity = "64MiB"
over_provisioning = 0.07
erase_unit = "256KiB"
gc_policy = "greedy"
[[workload]]
namespace = "ns1"
pattern = "random"
bs = "4KiB"
amount = "2x"
"#;

/// A fresh directory holding `base.toml` (= `base`) and `sweep.toml` (= `sweep`).
fn setup(name: &str, base: &str, sweep: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wafsim-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("base.toml"), base).unwrap();
    std::fs::write(dir.join("sweep.toml"), sweep).unwrap();
    dir
}

fn run(dir: &Path, jobs: Option<usize>, out: Option<&str>) -> SweepResult {
    let spec = SweepSpec::load(&dir.join("sweep.toml")).unwrap();
    let opts = SweepOptions { jobs, scale: Some(1.0), out: out.map(|o| dir.join(o)) };
    spec.run(&opts, &|_| {}).unwrap()
}

#[test]
fn axes_product_expands_every_combination_and_waf_falls_as_op_rises() {
    let dir = setup(
        "product",
        BASE,
        "base = \"base.toml\"\n[axes]\n\"device.over_provisioning\" = [0.07, 0.14, 0.28, 0.5]\ndevice.gc_policy = [\"greedy\", \"fifo\"]\n",
    );
    let spec = SweepSpec::load(&dir.join("sweep.toml")).unwrap();
    assert_eq!(spec.axes, ["device.over_provisioning", "device.gc_policy"]);
    let pts: Vec<String> = spec.points().iter().map(|p| p.describe()).collect();
    assert_eq!(pts.len(), 8);
    // The last axis varies fastest, as nested loops in the file's order.
    assert_eq!(pts[0], "device.over_provisioning = 0.07, device.gc_policy = \"greedy\"");
    assert_eq!(pts[1], "device.over_provisioning = 0.07, device.gc_policy = \"fifo\"");
    assert_eq!(pts[7], "device.over_provisioning = 0.5, device.gc_policy = \"fifo\"");
    // The overrides reach the resolved experiment.
    let v = spec.variants(&spec.points()[7]).unwrap();
    assert_eq!((v[0].spec.device.over_provisioning, v[0].spec.device.gc_policy), (Some(0.5), wafsim_core::GcPolicy::Fifo));

    let r = run(&dir, None, None);
    assert_eq!((r.rows.len(), r.executed_points, r.kept_points), (8, 8, 0));
    for policy in ["greedy", "fifo"] {
        let wafs: Vec<f64> = r.rows.iter().filter(|x| x.axis_text("device.gc_policy") == policy).map(|x| x.waf).collect();
        assert_eq!(wafs.len(), 4);
        assert!(wafs.windows(2).all(|w| w[0] > w[1]), "{policy}: WAF should fall as OP rises: {wafs:?}");
        assert!(wafs[0] > 2.0 && wafs[3] < 2.0, "{policy}: {wafs:?}");
    }
    // Greedy beats FIFO under uniform random writes at every OP.
    for op in 0..4 {
        assert!(r.rows[2 * op].waf <= r.rows[2 * op + 1].waf, "{:?}", &r.rows[2 * op..2 * op + 2]);
    }
    // String values go into CSV as they are (no TOML quotes), numbers as TOML writes them.
    let csv = wafsim_experiment::studies::sweep::to_csv(&spec.axes, &r.rows);
    assert!(csv.starts_with("point,device.over_provisioning,device.gc_policy,variant,waf,hbmw,mbmw,mbe,gc_bytes,waf[ns1],hash\n1,0.07,greedy,default,"), "{csv}");
    let row = &r.rows[0];
    assert_eq!(row.hbmw, 2 * (64 << 20));
    assert_eq!(row.mbmw, row.hbmw + row.gc_bytes);
    assert_eq!(row.ns_waf.len(), 1);
    assert!((row.ns_waf[0].1 - row.waf).abs() < 1e-9);
}

#[test]
fn zip_mode_pairs_axes_and_explicit_points_cross_every_variant() {
    let dir = setup(
        "zip",
        BASE,
        "base = \"base.toml\"\nmode = \"zip\"\n[axes]\n\"device.over_provisioning\" = [0.07, 0.28]\n\"workload.0.amount\" = [\"1x\", \"3x\"]\n",
    );
    let spec = SweepSpec::load(&dir.join("sweep.toml")).unwrap();
    let pts: Vec<String> = spec.points().iter().map(|p| p.describe()).collect();
    assert_eq!(pts, ["device.over_provisioning = 0.07, workload.0.amount = \"1x\"", "device.over_provisioning = 0.28, workload.0.amount = \"3x\""]);
    let r = run(&dir, None, None);
    assert_eq!(r.rows.iter().map(|x| x.hbmw).collect::<Vec<_>>(), [64 << 20, 3 * (64 << 20)], "an array-of-tables index override lands");

    // Unequal lengths in zip mode are an error.
    std::fs::write(dir.join("sweep.toml"), "base = \"base.toml\"\nmode = \"zip\"\n[axes]\n\"device.over_provisioning\" = [0.07, 0.28]\n\"device.gc_policy\" = [\"fifo\"]\n").unwrap();
    let e = SweepSpec::load(&dir.join("sweep.toml")).unwrap_err();
    assert!(format!("{e:#}").contains("equal length"), "{e:#}");

    // Explicit points over a base with two variants: a point x variant grid; a point may set
    // different keys than another, and a table value merges.
    let base = format!("{BASE}[[variant]]\nname = \"greedy\"\n[[variant]]\nname = \"fifo\"\ndevice.gc_policy = \"fifo\"\n");
    std::fs::write(dir.join("base.toml"), base).unwrap();
    std::fs::write(
        dir.join("sweep.toml"),
        "base = \"base.toml\"\n[[point]]\ndevice.over_provisioning = 0.1\n[[point]]\n\"device.over_provisioning\" = 0.3\nseed = 9\n[[point]]\ndevice = { over_provisioning = 0.2 }\n",
    )
    .unwrap();
    let spec = SweepSpec::load(&dir.join("sweep.toml")).unwrap();
    assert_eq!(spec.axes, ["device.over_provisioning", "seed"]);
    let r = run(&dir, None, None);
    let got: Vec<(usize, String, String, &str)> = r.rows.iter().map(|x| (x.point, x.axis_text("device.over_provisioning"), x.axis_text("seed"), x.variant.as_str())).collect();
    assert_eq!(
        got,
        [(1, "0.1", "", "greedy"), (1, "0.1", "", "fifo"), (2, "0.3", "9", "greedy"), (2, "0.3", "9", "fifo"), (3, "0.2", "", "greedy"), (3, "0.2", "", "fifo")].map(|(p, o, s, v)| (p, o.to_string(), s.to_string(), v))
    );
    assert!(r.rows[0].waf > r.rows[4].waf && r.rows[4].waf > r.rows[2].waf, "WAF by OP 0.1 > 0.2 > 0.3: {:?}", r.rows);
}

#[test]
fn errors_name_the_point_and_the_key() {
    let err = |sweep: &str, base: &str| {
        let dir = setup("errors", base, sweep);
        let spec = SweepSpec::load(&dir.join("sweep.toml")).unwrap();
        let e = spec.run(&SweepOptions { scale: Some(1.0), ..Default::default() }, &|_| {}).unwrap_err();
        format!("{e:#}")
    };
    // A value the experiment's checks reject.
    let e = err("base = \"base.toml\"\n[axes]\n\"device.over_provisioning\" = [0.07, \"lots\"]\n", BASE);
    assert!(e.starts_with("point 2 (device.over_provisioning = \"lots\"): "), "{e}");
    assert!(e.contains("over_provisioning"), "{e}");
    // An unknown key.
    let e = err("base = \"base.toml\"\n[axes]\n\"device.over_provisoning\" = [0.1]\n", BASE);
    assert!(e.starts_with("point 1 (device.over_provisoning = 0.1): "), "{e}");
    assert!(e.contains("unknown field `over_provisoning`") || e.contains("over_provisoning"), "{e}");
    // An index past the end of an array of tables.
    let e = err("base = \"base.toml\"\n[axes]\n\"workload.3.amount\" = [\"1x\"]\n", BASE);
    assert!(e.contains("point 1 (workload.3.amount = \"1x\"): workload.3.amount: workload has 1 entries: no index 3"), "{e}");
    // A variant that sets the swept key would silently win.
    let e = err("base = \"base.toml\"\n[axes]\n\"device.gc_policy\" = [\"fifo\"]\n", &format!("{BASE}[[variant]]\nname = \"cb\"\ndevice.gc_policy = \"cost-benefit\"\n"));
    assert!(e.contains("point 1 (device.gc_policy = \"fifo\"): device.gc_policy: variant \"cb\""), "{e}");
    // Sweep file errors.
    let dir = setup("errors2", BASE, "base = \"base.toml\"\n[axes]\n\"device.gc_policy\" = []\n");
    let e = SweepSpec::load(&dir.join("sweep.toml")).unwrap_err();
    assert!(format!("{e:#}").contains("axis \"device.gc_policy\" needs a non-empty list"), "{e:#}");
    std::fs::write(dir.join("sweep.toml"), "base = \"missing.toml\"\n[[point]]\nseed = 1\n").unwrap();
    assert!(format!("{:#}", SweepSpec::load(&dir.join("sweep.toml")).unwrap_err()).contains("cannot read base"));
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let dir = setup(
        "jobs",
        &format!("{BASE}[[variant]]\nname = \"greedy\"\n[[variant]]\nname = \"cb\"\ndevice.gc_policy = \"cost-benefit\"\n"),
        "base = \"base.toml\"\n[axes]\n\"device.over_provisioning\" = [0.07, 0.14, 0.28]\n\"seed\" = [1, 2]\n",
    );
    let one = run(&dir, Some(1), Some("one.csv"));
    let two = run(&dir, Some(2), Some("two.csv"));
    assert_eq!(one.rows.len(), 12);
    assert_eq!(one.rows, two.rows);
    assert_eq!(std::fs::read_to_string(dir.join("one.csv")).unwrap(), std::fs::read_to_string(dir.join("two.csv")).unwrap());
    // Different seeds give different numbers (the seed axis lands).
    assert_ne!(one.rows[0].waf, one.rows[2].waf);
}

#[test]
fn a_sweep_with_an_output_file_resumes_where_it_stopped() {
    for out in ["res.csv", "res.json"] {
        let dir = setup(
            &format!("resume-{out}"),
            BASE,
            "base = \"base.toml\"\n[axes]\n\"device.over_provisioning\" = [0.07, 0.14, 0.28, 0.5]\n\"device.gc_policy\" = [\"greedy\", \"fifo\"]\n",
        );
        let path = dir.join(out);
        let first = run(&dir, None, Some(out));
        assert_eq!((first.executed_points, first.kept_points), (8, 0));
        assert_eq!(read_rows(&path).unwrap().len(), 8);
        let full = std::fs::read_to_string(&path).unwrap();

        // Again: nothing runs, the file stays as it was.
        let again = run(&dir, None, Some(out));
        assert_eq!((again.executed_points, again.kept_points, again.dropped_rows), (0, 8, 0));
        // (CSV and JSON keep no per-namespace byte counts: rows read back have none.)
        let no_ns_bytes = |rows: &[wafsim_experiment::studies::sweep::Row]| rows.iter().map(|r| wafsim_experiment::studies::sweep::Row { ns_bytes: Vec::new(), ..r.clone() }).collect::<Vec<_>>();
        assert_eq!(again.rows, no_ns_bytes(&first.rows));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), full);

        // Delete point 3's row: only point 3 runs, and the file is whole again.
        let mut rows = read_rows(&path).unwrap();
        rows.retain(|r| r.point != 3);
        let spec = SweepSpec::load(&dir.join("sweep.toml")).unwrap();
        let text = if out.ends_with("json") { wafsim_experiment::studies::sweep::to_json(&spec.axes, &rows) } else { wafsim_experiment::studies::sweep::to_csv(&spec.axes, &rows) };
        std::fs::write(&path, text).unwrap();
        let resumed = run(&dir, None, Some(out));
        assert_eq!((resumed.executed_points, resumed.kept_points), (1, 7), "{out}");
        assert_eq!(no_ns_bytes(&resumed.rows), no_ns_bytes(&first.rows), "{out}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), full, "{out}");

        // A changed base experiment invalidates every row (the hash covers its text).
        std::fs::write(dir.join("base.toml"), BASE.replace("seed = 7", "seed = 8")).unwrap();
        let changed = run(&dir, None, Some(out));
        assert_eq!((changed.executed_points, changed.kept_points, changed.dropped_rows), (8, 0, 8), "{out}");
    }
}

/// Two namespaces and two variants, so the Parquet file has a row per (point, variant,
/// namespace).
const BASE_TWO_NS: &str = r#"
name = "two namespaces"
seed = 7
[device]
capacity = "64MiB"
over_provisioning = 0.07
erase_unit = "256KiB"
gc_policy = "greedy"
[[namespace]]
name = "hot"
size = "24MiB"
[[namespace]]
name = "cold"
size = "24MiB"
[[workload]]
namespace = "hot"
pattern = "random"
bs = "4KiB"
amount = "2x"
[[workload]]
namespace = "cold"
pattern = "sequential"
bs = "64KiB"
amount = "1x"
[[variant]]
name = "greedy"
[[variant]]
name = "fifo"
device.gc_policy = "fifo"
"#;

#[test]
fn parquet_output_has_a_row_per_point_variant_and_namespace_and_reads_back() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let dir = setup("parquet", BASE_TWO_NS, "base = \"base.toml\"\n[axes]\n\"device.over_provisioning\" = [0.07, 0.14, 0.28]\n");
    let r = run(&dir, Some(2), Some("out.parquet"));
    assert_eq!(r.rows.len(), 3 * 2);
    let csv = wafsim_experiment::studies::sweep::to_csv(&["device.over_provisioning".to_string()], &r.rows);
    let csv: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();

    let path = dir.join("out.parquet");
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let names: Vec<String> = reader.metadata().file_metadata().schema_descr().columns().iter().map(|c| c.name().to_string()).collect();
    assert_eq!(
        names,
        ["point", "device.over_provisioning", "variant", "namespace", "waf", "hbmw", "mbmw", "mbe", "gc_bytes", "ns_host_bytes", "ns_media_bytes", "ns_waf", "hash"]
    );
    let recs: Vec<Vec<(String, Field)>> = reader.get_row_iter(None).unwrap().map(|r| r.unwrap().into_columns()).collect();
    assert_eq!(recs.len(), 3 * 2 * 2, "points x variants x namespaces");
    let col = |i: usize, c: &str| recs[i].iter().find(|(n, _)| n == c).unwrap().1.clone();
    // Record 2k and 2k+1 are CSV row k+1's two namespaces.
    for (k, row) in csv[1..].iter().enumerate() {
        let h = &csv[0];
        let at = |c: &str| row[h.iter().position(|x| *x == c).unwrap()];
        for (j, ns) in ["hot", "cold"].iter().enumerate() {
            let i = 2 * k + j;
            assert_eq!(col(i, "point"), Field::UInt(at("point").parse().unwrap()));
            assert_eq!(col(i, "device.over_provisioning"), Field::Str(at("device.over_provisioning").to_string()));
            assert_eq!(col(i, "variant"), Field::Str(at("variant").to_string()));
            assert_eq!(col(i, "namespace"), Field::Str(ns.to_string()));
            assert_eq!(col(i, "waf"), Field::Double(at("waf").parse().unwrap()));
            for c in ["hbmw", "mbmw", "mbe", "gc_bytes"] {
                assert_eq!(col(i, c), Field::ULong(at(c).parse().unwrap()), "{c}");
            }
            assert_eq!(col(i, "ns_waf"), Field::Double(at(&format!("waf[{ns}]")).parse().unwrap()));
            let (Field::ULong(h), Field::ULong(m)) = (col(i, "ns_host_bytes"), col(i, "ns_media_bytes")) else { panic!("ns bytes") };
            assert!(h > 0 && m >= h);
            assert_eq!(col(i, "hash"), Field::Str(at("hash").to_string()));
        }
    }
    assert_eq!(col(0, "device.over_provisioning"), Field::Str("0.07".into()));
    assert_eq!(col(4, "variant"), Field::Str("greedy".into()));

    // Reads back as the rows written (axes aside), so a Parquet sweep resumes.
    let back = read_rows(&path).unwrap();
    let strip = |rows: &[wafsim_experiment::studies::sweep::Row]| rows.iter().map(|r| wafsim_experiment::studies::sweep::Row { axes: Vec::new(), ..r.clone() }).collect::<Vec<_>>();
    assert_eq!(back, strip(&r.rows));
    let again = run(&dir, None, Some("out.parquet"));
    assert_eq!((again.executed_points, again.kept_points, again.dropped_rows), (0, 3, 0));
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

/// A fio iolog of `n` 4 KiB writes over the first `span` blocks of the namespace (a seeded LCG).
fn iolog(n: u64, span: u64, seed: u64) -> String {
    let mut x = seed;
    let mut log = String::from("fio version 2 iolog\n/dev/t add\n/dev/t open\n");
    for _ in 0..n {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        log += &format!("/dev/t write {} 4096\n", ((x >> 33) % span) * 4096);
    }
    log + "/dev/t close\n"
}

#[test]
fn an_axis_of_trace_files_runs_each_trace() {
    // Two traces of the same length on a 64 MiB namespace: one overwrites the whole namespace,
    // one only its first quarter (the rest stays cold, so GC finds emptier victims).
    let base = r#"
name = "trace replay"
[device]
capacity = "64MiB"
over_provisioning = 0.07
erase_unit = "256KiB"
[[namespace]]
name = "t"
size = "64MiB"
[[phase]]
name = "replay"
[[phase.trace]]
file = "wide.log"
namespace = "t"
"#;
    let sweep = "base = \"base.toml\"\n[axes]\n\"phase.0.trace.0.file\" = [\"wide.log\", \"narrow.log\"]\n";
    let dir = setup("traces", base, sweep);
    let blocks = (64u64 << 20) / 4096;
    std::fs::write(dir.join("wide.log"), iolog(4 * blocks, blocks, 1)).unwrap();
    std::fs::write(dir.join("narrow.log"), iolog(4 * blocks, blocks / 4, 1)).unwrap();
    let r = run(&dir, Some(2), None);
    assert_eq!(r.rows.len(), 2);
    assert_eq!(r.rows[0].axis_text("phase.0.trace.0.file"), "wide.log");
    assert_eq!(r.rows[1].axis_text("phase.0.trace.0.file"), "narrow.log");
    // Each row is its trace's own run: the same figures as the experiment run alone with it.
    for (row, file) in r.rows.iter().zip(["wide.log", "narrow.log"]) {
        let text = base.replace("wide.log", file);
        std::fs::write(dir.join("alone.toml"), &text).unwrap();
        let v = &wafsim_experiment::load_experiment(&dir.join("alone.toml")).unwrap()[0];
        let alone = wafsim_experiment::run_variant(v, Default::default(), &|_| {}).unwrap();
        assert_eq!((row.hbmw, row.mbmw), (alone.hbmw(), alone.mbmw()), "{file}");
    }
    assert_eq!(r.rows[0].hbmw, r.rows[1].hbmw);
    assert!(r.rows[1].waf < r.rows[0].waf, "narrow {} vs wide {}", r.rows[1].waf, r.rows[0].waf);
}

//! End-to-end tests of the `wafsim` binary.
use std::process::Command;

fn wafsim(args: &[&str]) -> (bool, String, String) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new(env!("CARGO_BIN_EXE_wafsim")).args(args).current_dir(root).output().expect("run wafsim");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn quickstart_json_has_the_documented_keys_and_results() {
    let (ok, out, err) = wafsim(&["run", "experiments/quickstart.toml", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let variants = v["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 3);
    for var in variants {
        for key in ["name", "waf", "hbmw", "mbmw", "mbe", "namespaces"] {
            assert!(var.get(key).is_some(), "missing {key}");
        }
        let ns = var["namespaces"].as_array().unwrap();
        assert_eq!(ns.len(), 8);
        let host: u64 = ns.iter().map(|n| n["host_bytes"].as_u64().unwrap()).sum();
        assert_eq!(host, var["hbmw"].as_u64().unwrap());
        let media: u64 = ns.iter().map(|n| n["media_bytes"].as_u64().unwrap()).sum();
        assert_eq!(media, var["mbmw"].as_u64().unwrap());
    }
    let waf = |name: &str| variants.iter().find(|x| x["name"] == name).unwrap()["waf"].as_f64().unwrap();
    assert!(waf("no-fdp") > 1.3, "blender WAF {}", waf("no-fdp"));
    assert!(waf("fdp") <= 1.01);
    assert!(waf("dedicated") <= 1.01);
}

#[test]
fn table_output_and_variant_filter() {
    let (ok, out, err) = wafsim(&["run", "experiments/quickstart.toml", "--variant", "fdp"]);
    assert!(ok, "{err}");
    assert!(out.contains("variant \"fdp\"") && out.contains("vm8") && out.contains("WAF"));
    assert!(!out.contains("no-fdp"));
    let (ok, _, err) = wafsim(&["run", "experiments/quickstart.toml", "--variant", "nope"]);
    assert!(!ok && err.contains("no variant named \"nope\""), "{err}");
}

#[test]
fn device_show_prints_derived_figures() {
    let (ok, out, err) = wafsim(&["device", "show", "devices/enterprise-tlc-7.68tb.toml"]);
    assert!(ok, "{err}");
    // 16 KiB x 3072 x 4 planes x 64 dies = 12 GiB superblock; 8 TiB / 12 GiB = 682 whole erase
    // units, so 682 x 12 GiB of 7,681,501,126,656 B logical: OP 14.40%, the one figure shown
    // everywhere.
    assert!(out.contains("12 GiB = 3145728 mapping units"), "{out}");
    assert!(out.contains("erase units          682"), "{out}");
    assert!(out.contains("OP                   14.40% ((physical - logical) / logical)"), "{out}");
    let (ok, out, _) = wafsim(&["device", "show", "devices/enterprise-tlc-7.68tb.toml", "--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["erase_units"], 682);
    assert!(v["memory_bytes"].as_u64().unwrap() < 16 << 30, "a full 7.68 TB drive must fit in 16 GiB");
}

#[test]
fn bad_input_gives_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("wafsim-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.toml");
    std::fs::write(&f, "[device]\ncapacity = \"1GiB\"\nover_provisioning = 0.1\nerase_unit = \"1MiB\"\ngc_policy = \"lru\"\n").unwrap();
    let (ok, _, err) = wafsim(&["run", f.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("gc_policy \"lru\"") && err.contains("d-choices:N"), "{err}");
    let (ok, _, err) = wafsim(&["run", "does/not/exist.toml"]);
    assert!(!ok && err.contains("cannot read"), "{err}");
}

#[test]
fn bench_small_reports_json_keys() {
    let (ok, out, err) = wafsim(&["bench", "--json", "--units-log2", "16"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in ["media_writes_per_sec", "host_writes_per_sec", "waf", "bytes_per_mapping_unit"] {
        assert!(v[k].as_f64().unwrap() > 0.0, "{k}");
    }
    assert!(v["bytes_per_mapping_unit"].as_f64().unwrap() <= 9.0);
}

#[test]
fn fio_like_json_timeseries_plots_and_warnings() {
    let dir = std::env::temp_dir().join(format!("wafsim-cli-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("w.fio");
    std::fs::write(&job, "[w]\nrw=randwrite\nbs=4k\nio_size=64m\nfrobnicate=1\n").unwrap();
    let exp = dir.join("e.toml");
    std::fs::write(
        &exp,
        "[device]\ncapacity = \"64MiB\"\nover_provisioning = 0.2\nerase_unit = \"256KiB\"\n[[phase]]\nname = \"m\"\n[[phase.fio]]\nfile = \"w.fio\"\nnamespace = \"ns1\"\n",
    )
    .unwrap();
    let ts = dir.join("ts.csv");
    let plots = dir.join("plots");
    let (ok, out, err) = wafsim(&[
        "run",
        exp.to_str().unwrap(),
        "--output-format",
        "json",
        "--timeseries",
        ts.to_str().unwrap(),
        "--sample-every",
        "4MiB",
        "--plot",
        plots.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("w.fio:5") && err.contains("frobnicate"), "unknown option warning with file:line: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["fio version"].as_str().unwrap().starts_with("wafsim-"));
    let job = &v["jobs"][0];
    assert_eq!(job["jobname"], "w");
    assert_eq!(job["write"]["io_bytes"], 64 << 20);
    assert_eq!(job["write"]["total_ios"], 16384);
    assert_eq!(v["variants"][0]["scale"], 1.0);
    let csv = std::fs::read_to_string(&ts).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "variant,phase,drive,host_bytes,media_bytes,gc_bytes,erases,waf_cumulative,waf_interval,app_bytes");
    assert!(rows[1..].iter().all(|r| r.split(',').nth(2) == Some("all")), "one drive: only the all-drives series");
    assert!(rows.len() >= 16, "one sample per 4 MiB of 64 MiB: {}", rows.len());
    for f in ["waf_over_time.svg", "host_vs_media_default.svg", "tenant_waf.svg"] {
        let svg = std::fs::read_to_string(plots.join(f)).unwrap();
        assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{f}");
    }
}

#[test]
fn scale_is_reported_and_presets_listed() {
    let (ok, out, err) = wafsim(&["run", "experiments/four-namespaces-sequential.toml", "--scale", "0.0001", "--variant", "shared-fdp"]);
    assert!(ok, "{err}");
    assert!(out.contains("scale 1/10000"), "{out}");
    let (ok, out, _) = wafsim(&["device", "presets"]);
    assert!(ok && out.contains("qlc-15.36tb") && out.contains("client-tlc-2tb"));
    let (ok, out, _) = wafsim(&["device", "show", "client-tlc-2tb"]);
    assert!(ok && out.contains("2000398934016 B"), "{out}");
}

#[test]
fn timed_run_reports_fio_like_latency_keys() {
    let dir = std::env::temp_dir().join(format!("wafsim-cli-timed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("j.fio"), "[global]\niodepth=16\ntime_based\nruntime=1\n[r]\nrw=randread\nbs=4k\n[w]\nrw=randwrite\nbs=4k\nrate_iops=2000\n").unwrap();
    let exp = dir.join("e.toml");
    std::fs::write(
        &exp,
        "[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.25\n[device.geometry]\npage_size = \"16KiB\"\npages_per_block = 3\nplanes_per_die = 4\ndies_per_channel = 2\nchannels = 2\n[timing]\nenabled = true\n[[phase]]\nname = \"m\"\n[[phase.fio]]\nfile = \"j.fio\"\nnamespace = \"ns1\"\n",
    )
    .unwrap();
    let (ok, out, err) = wafsim(&["run", exp.to_str().unwrap(), "--json", "--full-scale"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let w = v["jobs"].as_array().unwrap().iter().find(|j| j["jobname"] == "w").unwrap();
    // rate_iops=2000 for 1 s of simulated time.
    let iops = w["write"]["iops"].as_f64().unwrap();
    assert!((iops - 2000.0).abs() < 20.0, "{iops}");
    for k in ["50.000000", "99.000000", "99.900000", "99.990000"] {
        assert!(w["write"]["clat_ns"]["percentile"][k].as_u64().unwrap() > 0);
    }
    assert!(w["write"]["bw_bytes"].as_u64().unwrap() > 0);
    let t = &v["variants"][0]["timing"];
    assert!(t["elapsed_ns"].as_u64().unwrap() >= 1_000_000_000);
    assert!(t["lifetime_years"].as_f64().unwrap() > 0.0);
    assert!(t["busy_ns"]["host"].as_u64().unwrap() > 0);
}

#[test]
fn zone_report_at_a_phase_end() {
    let count = |out: &str, cond: &str| out.lines().filter(|l| l.contains(cond)).count();
    let (ok, fill, err) = wafsim(&["zone", "report", "experiments/zoned-fio/zns.toml", "--at-phase", "fill"]);
    assert!(ok, "{err}");
    // The fill phase writes half of the 904 zones full and opens none.
    let (full, empty) = (count(&fill, "(fu)"), count(&fill, "(em)"));
    assert_eq!(full + empty, 904, "{fill}");
    assert!((440..=460).contains(&full), "{full} full zones after the fill");
    let (ok, end, err) = wafsim(&["zone", "report", "experiments/zoned-fio/zns.toml"]);
    assert!(ok, "{err}");
    assert!(count(&end, "(fu)") > full, "the overwrite phase fills more zones");
    let (ok, _, err) = wafsim(&["zone", "report", "experiments/zoned-fio/zns.toml", "--at-phase", "nope"]);
    assert!(!ok && err.contains("phases: fill, overwrite"), "{err}");
}

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
        // Each namespace's (with a drive each: each drive's) share of host and media writes.
        for n in ns {
            let want = n["media_bytes"].as_u64().unwrap() as f64 / media as f64;
            assert!((n["media_share"].as_f64().unwrap() - want).abs() < 1e-12);
        }
        let shares: f64 = ns.iter().map(|n| n["host_share"].as_f64().unwrap()).sum();
        assert!((shares - 1.0).abs() < 1e-9, "host shares sum to {shares}");
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
    // A sweep file given to `run` names the command that runs it.
    let (ok, _, err) = wafsim(&["run", "experiments/sweeps/op.toml"]);
    assert!(!ok && err.contains("sweep file") && err.contains("wafsim sweep experiments/sweeps/op.toml"), "{err}");
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
    // The machine's limit is measured over the simulator's own footprint (the probe's table
    // holds whole 4-byte entries: at most 4 B less in all), and the ratio is the two rates'.
    let units = v["mapping_units"].as_f64().unwrap();
    let (sim, probe) = (v["bytes_per_mapping_unit"].as_f64().unwrap(), v["probe_bytes_per_mapping_unit"].as_f64().unwrap());
    assert!(probe <= sim && (sim - probe) * units < 4.0, "footprints {sim} vs {probe} B per unit");
    let (media, limit) = (v["media_writes_per_sec"].as_f64().unwrap(), v["limit_updates_per_sec"].as_f64().unwrap());
    assert!(limit > 0.0 && v["probe_runs_updates_per_sec"].as_array().unwrap().len() == 2);
    assert!((v["ratio_to_limit"].as_f64().unwrap() - media / limit).abs() < 1e-9 * media / limit);
    assert!(!v["cpu"].as_str().unwrap().is_empty());
}

#[test]
fn bench_drive_fills_a_device_file_and_reloads_its_image() {
    let dir = std::env::temp_dir().join(format!("wafsim-cli-drive-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("small.toml");
    std::fs::write(&f, "[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.1\nerase_unit = \"1MiB\"\n").unwrap();
    let (ok, out, err) = wafsim(&["bench", "--json", "--drive", f.to_str().unwrap(), "--image", dir.to_str().unwrap()]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["mapping_units"], 65536, "256 MiB of 4 KiB units, each written once");
    assert_eq!(v["precondition_waf"], 1.0);
    assert_eq!(v["image"]["identical"], true);
    assert!(v["image"]["image_bytes"].as_u64().unwrap() > 4 * 65536);
    assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().ends_with(".img")), "the image file is removed");
    // A zoned drive has no fill to measure: refused with the reason.
    let (ok, _, err) = wafsim(&["bench", "--drive", "zns-zn540"]);
    assert!(!ok && err.contains("zoned"), "{err}");
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
    // stderr is a pipe here: no progress bars, no terminal escapes.
    assert!(!err.contains('\x1b') && !err.contains("ETA") && !err.contains('\r'), "progress drawn to a pipe: {err:?}");
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
    // Charts: SVG and PNG by default, and neither a zone map nor tier traffic (no zones, no tiers).
    check_charts(&plots, &[("waf_over_time", &["WAF over time (per sampling interval)", "host writes (GiB)", "WAF", "default"]), ("host_vs_media_default", &["default: host vs media writes", "cumulative writes (GiB)", "host writes", "media writes"]), ("tenant_waf", &["WAF per tenant (namespace)", "ns1", "default"])]);
    let names = chart_files(&plots);
    assert_eq!(names.len(), 6, "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("zone_map_") || n.starts_with("tiers_")), "{names:?}");
    // --plot-format picks one format.
    let svg_only = dir.join("svg-only");
    let (ok, _, err) = wafsim(&["run", exp.to_str().unwrap(), "--plot", svg_only.to_str().unwrap(), "--plot-format", "svg"]);
    assert!(ok, "{err}");
    assert!(chart_files(&svg_only).iter().all(|n| n.ends_with(".svg")) && chart_files(&svg_only).len() == 3);
    let (ok, _, err) = wafsim(&["run", exp.to_str().unwrap(), "--plot", svg_only.to_str().unwrap(), "--plot-format", "gif"]);
    assert!(!ok && err.contains("gif"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// File names in `dir`, sorted.
fn chart_files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// The trimmed contents of every `<text>` element of an SVG.
fn svg_texts(svg: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in svg.match_indices("<text") {
        let open = svg[i..].find('>').unwrap() + i + 1;
        let close = svg[open..].find("</text>").unwrap() + open;
        out.push(svg[open..close].trim().to_string());
    }
    out
}

/// Each chart exists as SVG (one root, balanced tags, the given texts among its text elements)
/// and as PNG (signature, IHDR size 1200 x 675 or, for zone maps, 1200 x 450, more than one
/// colour).
fn check_charts(dir: &std::path::Path, charts: &[(&str, &[&str])]) {
    for (name, want) in charts {
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap_or_else(|e| panic!("{name}.svg: {e}"));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{name}.svg");
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count(), "{name}.svg");
        let texts = svg_texts(&svg);
        for w in *want {
            assert!(texts.iter().any(|t| t == w), "{name}.svg: {w:?} not among {texts:?}");
        }
        let png = std::fs::read(dir.join(format!("{name}.png"))).unwrap_or_else(|e| panic!("{name}.png: {e}"));
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{name}.png signature");
        assert_eq!(&png[12..16], b"IHDR");
        let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
        let expect = if name.starts_with("zone_map_") { (1200, 450) } else { (1200, 675) };
        assert_eq!((w, h), expect, "{name}.png size");
        let mut r = png::Decoder::new(std::io::Cursor::new(&png)).read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        let colours: std::collections::HashSet<&[u8]> = buf[..info.buffer_size()].chunks(3).collect();
        assert!(colours.len() > 2, "{name}.png is blank");
    }
}

#[test]
fn zone_maps_and_tier_charts_only_where_there_are_zones_and_tiers() {
    let dir = std::env::temp_dir().join(format!("wafsim-cli-charts-{}", std::process::id()));
    let zns = dir.join("zns");
    let (ok, _, err) = wafsim(&["run", "experiments/zoned-fio/zns.toml", "--plot", zns.to_str().unwrap()]);
    assert!(ok, "{err}");
    let names = chart_files(&zns);
    let maps: Vec<&String> = names.iter().filter(|n| n.starts_with("zone_map_")).collect();
    assert_eq!(maps, ["zone_map_default_zns.png", "zone_map_default_zns.svg"], "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("tiers_")), "{names:?}");
    check_charts(&zns, &[("zone_map_default_zns", &["zone index (sequential zones)", "written (% of zone capacity)", "full"])]);
    let svg = std::fs::read_to_string(zns.join("zone_map_default_zns.svg")).unwrap();
    assert!(svg_texts(&svg).iter().any(|t| t.starts_with("default / zns: ") && t.contains("% of zone capacity written")), "zone map title");

    let tiers = dir.join("tiers");
    let (ok, _, err) = wafsim(&["run", "experiments/tiering/hot-cold.toml", "--plot", tiers.to_str().unwrap()]);
    assert!(ok, "{err}");
    let names = chart_files(&tiers);
    // The tiered variant has a tier timeline; the capacity drive alone has none.
    let tier: Vec<&String> = names.iter().filter(|n| n.starts_with("tiers_")).collect();
    assert_eq!(tier, ["tiers_tiered.png", "tiers_tiered.svg"], "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("zone_map_")), "{names:?}");
    check_charts(
        &tiers,
        &[("tiers_tiered", &["tiered: traffic per tier", "user writes (GiB)", "cumulative bytes (GiB)", "hot: user writes", "cold: migration writes", "cold: user writes", "hot: migration reads"])],
    );
    let _ = std::fs::remove_dir_all(&dir);
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

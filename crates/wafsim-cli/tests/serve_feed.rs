//! `wafsim feed` against `wafsim serve`: a store model's traffic sent over NBD to a served drive
//! leaves the drive where `wafsim run` leaves it (the same commands in the same order on a
//! drive that starts the same way), placement handles included.

mod common;

use common::*;

/// The device WAF `wafsim run --json` reports for `variant` of `experiment` at `scale`.
fn run_waf(experiment: &str, variant: &str, scale: &str) -> f64 {
    let out = wafsim(&["run", experiment, "--variant", variant, "--scale", scale, "--json"]);
    assert!(out.status.success(), "wafsim run: {}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    j["variants"][0]["waf"].as_f64().unwrap()
}

/// Feed `variant` to `served`; what feed printed on stdout (it must succeed).
fn feed(served: &Served, experiment: &str, variant: &str, scale: &str, extra: &[&str]) -> String {
    let server = format!("nbd://127.0.0.1:{}", served.nbd);
    let mut args = vec!["feed", experiment, "--variant", variant, "--scale", scale, "--server", &server, "--control", &served.control];
    args.extend_from_slice(extra);
    let out = wafsim(&args);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string());
    assert!(out.status.success(), "wafsim feed: {stderr}\n{stdout}");
    assert!(!stderr.contains("warning: the served drive has never been written"), "{stderr}");
    stdout
}

/// The WAF feed reports for drive `d` over the feed.
fn fed_waf(out: &str, d: usize) -> f64 {
    let line = out.lines().find(|l| l.starts_with(&format!("drive {d} over the feed: WAF "))).unwrap_or_else(|| panic!("no WAF line for drive {d}: {out}"));
    line.split_whitespace().nth(6).unwrap().parse().unwrap_or_else(|_| panic!("{line}"))
}

#[test]
fn four_aerospike_stores_fed_over_nbd_end_where_the_run_ends() {
    // The run starts from a sequential fill (the experiment's default history): the server is
    // told the same with --precondition.
    let exp = "experiments/kv/four-aerospike.toml";
    for variant in ["shared-no-fdp", "shared-fdp"] {
        let want = run_waf(exp, variant, "0.0001");
        let s = Served::start(exp, variant, None, &["--scale", "0.0001", "--precondition"]);
        let out = feed(&s, exp, variant, "0.0001", &["--skip-reads"]);
        let got = fed_waf(&out, 0);
        assert!((got - want).abs() < 1e-4, "{variant}: served drive {got} vs run {want}\n{out}");
        // The four stores' rows come with their own figures.
        assert_eq!(out.matches("[log-structured KV]").count(), 4, "{out}");
        assert!(out.contains("skipped"), "{out}");
        s.stop();
    }
}

/// A flash cache writing its two engines through placement handles 1 and 2 (exports NAME@1,
/// NAME@2), on a fresh drive, reads included.
#[test]
fn a_flash_cache_through_two_placement_handles_ends_where_the_run_ends() {
    let exp = "crates/wafsim-cli/tests/data/small-flash-cache.toml";
    let mut wafs = Vec::new();
    for variant in ["fdp", "no-fdp"] {
        let want = run_waf(exp, variant, "0.00005");
        let s = Served::start(exp, variant, None, &["--scale", "0.00005"]);
        let out = feed(&s, exp, variant, "0.00005", &[]);
        let got = fed_waf(&out, 0);
        assert!((got - want).abs() < 1e-4, "{variant}: served drive {got} vs run {want}\n{out}");
        assert!(!out.contains("skipped"), "reads are sent unless --skip-reads: {out}");
        let reads: u64 = out.lines().next().unwrap().split(" reads (").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
        assert!(reads > 0, "{out}");
        // With FDP both engines' handles were written (two write frontiers took host data),
        // through the exports NAME@1 and NAME@2; without, one frontier took all.
        let written = s.state_now().counters.frontiers.iter().filter(|f| f.host_units > 0).count();
        assert_eq!(written, if variant == "fdp" { 2 } else { 1 }, "{variant}");
        wafs.push(got);
        s.stop();
    }
    // Placement separates the engines: the drive copies less with it.
    assert!(wafs[0] < wafs[1], "fdp {} vs no-fdp {}", wafs[0], wafs[1]);
}

#[test]
fn feed_refuses_another_scale_and_names_what_is_wrong() {
    let exp = "experiments/kv/four-aerospike.toml";
    let s = Served::start(exp, "shared-fdp", None, &["--scale", "0.0001"]);
    let server = format!("nbd://127.0.0.1:{}", s.nbd);
    let out = wafsim(&["feed", exp, "--variant", "shared-fdp", "--scale", "0.0002", "--server", &server, "--control", "none"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("same --scale"), "{err}");
    // An experiment whose namespaces the server does not have: the error lists its exports.
    let out = wafsim(&["feed", "experiments/quickstart.toml", "--server", &server, "--control", "none"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("refused export") && err.contains("ns1, ns2, ns3, ns4"), "{err}");
    s.stop();
    // Nothing listening.
    let out = wafsim(&["feed", exp, "--server", &format!("nbd://127.0.0.1:{}", free_port()), "--control", "none"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("connecting to nbd://127.0.0.1:"), "{err}");
}

//! End-to-end tests of `wafsim nvme ...` and `wafsim waf` (src/nvme.rs) through the binary.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use wafsim_core::{
    Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, Rng, RuhType,
};
use wafsim_report::nvme::drive::*;
use wafsim_report::nvme::*;

/// Runs the binary in the C locale (nvme-cli's text depends on the locale; C has no thousands
/// separators), with `stdin` piped in. Returns (success, stdout, stderr).
fn wafsim(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wafsim"))
        .args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run wafsim");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A one-namespace FDP drive after `writes` 4 KiB writes (sequential fill, then random
/// overwrites: GC runs).
fn state(writes: u64) -> DriveState {
    let mu = 4096u64;
    let cfg = DeviceConfig {
        logical_bytes: 48 * 64 * mu,
        physical_bytes: 64 * 64 * mu,
        mapping_unit: mu as u32,
        erase_unit_bytes: 64 * mu,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement: Placement::Fdp {
            reclaim_groups: 1,
            ruh_types: vec![RuhType::InitiallyIsolated, RuhType::InitiallyIsolated],
        },
        namespaces: vec![NamespaceConfig {
            name: "ns1".into(),
            size_bytes: 48 * 64 * mu,
            placement_handles: vec![0, 1],
        }],
        seed: 1,
        slc_cache: None,
    };
    let mut dev = Device::new(cfg).unwrap();
    let units = 48 * 64;
    let mut rng = Rng::new(2);
    for i in 0..writes {
        let u = if i < units { i } else { rng.below(units) };
        let io = Io {
            op: Op::Write,
            ns: 0,
            offset: u * mu,
            len: mu as u32,
            pid: Pid::new(0, 1),
        };
        dev.submit(&io).unwrap();
    }
    DriveState::from_device(&dev, (writes, 0), 7200)
}

fn tmp(name: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("wafsim-nvme-cli-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn nvme_commands_print_what_nvme_cli_prints() {
    let st = state(8000);
    let f = tmp("state.json", &st.to_json());
    let file = f.to_str().unwrap();
    let c = TextOptions::c_locale();

    let (ok, out, err) = wafsim(&["nvme", "fdp", "stats", "--state", file], "");
    assert!(ok, "{err}");
    assert_eq!(out, print_fdp_stats(&fdp_stats(&st).unwrap(), &c));

    let (ok, out, err) = wafsim(&["nvme", "smart-log", "--state", file, "-o", "json"], "");
    assert!(ok, "{err}");
    assert_eq!(out, smart_log_json(&smart_log(&st, None).unwrap(), false));

    let (ok, out, err) = wafsim(
        &["nvme", "ocp", "smart-add-log", "--state", "-"],
        &st.to_json(),
    );
    assert!(ok, "{err}");
    assert_eq!(out, print_ocp_smart_add_log(&ocp_smart_add_log(&st)));

    let (ok, out, err) = wafsim(
        &[
            "nvme", "fdp", "status", "--state", file, "-n", "1", "-o", "json",
        ],
        "",
    );
    assert!(ok, "{err}");
    assert_eq!(out, fdp_status_json(&fdp_status(&st, 1).unwrap()));

    for sub in ["configs", "usage", "events"] {
        let (ok, out, err) = wafsim(&["nvme", "fdp", sub, "--state", file, "-e", "1"], "");
        assert!(ok, "{sub}: {err}");
        assert!(sub == "events" || !out.is_empty(), "{sub}");
    }

    // Errors: no source, another endurance group, a file that is not a drive state.
    let (ok, _, err) = wafsim(&["nvme", "smart-log"], "");
    assert!(!ok && err.contains("--state"), "{err}");
    let (ok, _, err) = wafsim(&["nvme", "fdp", "usage", "--state", file, "-e", "2"], "");
    assert!(
        !ok && err.contains("endurance group 2 does not exist"),
        "{err}"
    );
    let g = tmp("garbage.json", "{\"hbmw\": 1}");
    let (ok, _, err) = wafsim(&["nvme", "smart-log", "--state", g.to_str().unwrap()], "");
    assert!(!ok && err.contains("not a wafsim drive state"), "{err}");
    let _ = (std::fs::remove_file(&f), std::fs::remove_file(&g));
}

#[test]
fn nvme_reads_a_server() {
    let st = state(5000);
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let json = st.to_json();
    let h = std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        let mut line = String::new();
        BufReader::new(&s).read_line(&mut line).unwrap();
        (&s).write_all(json.as_bytes()).unwrap();
        line
    });
    let (ok, out, err) = wafsim(
        &["nvme", "fdp", "stats", "--server", &addr, "-o", "json"],
        "",
    );
    assert!(ok, "{err}");
    assert_eq!(h.join().unwrap(), "STATE\n");
    assert_eq!(out, fdp_stats_json(&fdp_stats(&st).unwrap()));
}

#[test]
fn waf_between_captures() {
    let (b, a) = (state(4000), state(12000));
    let truth = (a.media_bytes() - b.media_bytes()) as f64
        / (a.counters.host_write_bytes - b.counters.host_write_bytes) as f64;
    let fb = tmp("before.json", &b.to_json());
    // The later capture as nvme-cli text: fdp stats, then smart-log + ocp.
    let en = TextOptions::default();
    let text = print_fdp_stats(&fdp_stats(&a).unwrap(), &en)
        + &print_smart_log(&smart_log(&a, None).unwrap(), 0xffff_ffff, "nvme0", &en)
        + &print_ocp_smart_add_log(&ocp_smart_add_log(&a));
    let fa = tmp("after.txt", &text);
    let (before, after) = (fb.to_str().unwrap(), fa.to_str().unwrap());

    let (ok, out, err) = wafsim(&["waf", before, after, "--json"], "");
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["method"], "fdp-stats");
    assert_eq!(v["waf"].as_f64().unwrap(), truth);
    assert!(truth > 1.0);

    let (ok, out, err) = wafsim(&["waf", before, "-"], &text);
    assert!(ok, "{err}");
    assert!(out.starts_with(&format!("WAF {truth:.4}\n")), "{out}");

    // Errors name the file and the line.
    let bad = tmp("bad.txt", "smart-log\nData Units Written : lots\n");
    let (ok, _, err) = wafsim(&["waf", before, bad.to_str().unwrap()], "");
    assert!(!ok, "{err}");
    assert!(
        err.contains(&format!("{}: line 2: 'Data Units Written'", bad.display())),
        "{err}"
    );
    let (ok, _, err) = wafsim(&["waf", after, before], "");
    assert!(!ok && err.contains(&format!("AFTER ({before})")), "{err}");
    for p in [fb, fa, bad] {
        let _ = std::fs::remove_file(p);
    }
}

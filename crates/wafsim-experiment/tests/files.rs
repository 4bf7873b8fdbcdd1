//! File workloads through file systems in experiments (`[[phase.files]]`): the section 5
//! comparison (experiments/zoned-fs/lsm-files.toml) at a small scale.

mod common;
use common::{experiment, run_at};

#[test]
fn lsm_files_on_zns_with_a_zoned_fs_against_a_conventional_ssd() {
    let mut waf = std::collections::HashMap::new();
    for v in experiment("zoned-fs/lsm-files.toml") {
        let name = v.name.clone();
        let r = run_at(v, 0.01).unwrap();
        let fs = &r.filesystems[0];
        assert!(fs.file_write_bytes > 50 << 30, "{}: the application wrote 3x the drive", name);
        // Neither file system amplifies here: the zoned one's groups die whole (no host GC).
        assert!(fs.waf() >= 1.0 && fs.waf() < 1.02, "{}: file system WAF {}", name, fs.waf());
        assert_eq!(r.counters.host_write_bytes, fs.dev_write_bytes, "{}: the device got what the file system sent", name);
        eprintln!("{}: device WAF {:.3}, file system WAF {:.3}", name, r.waf(), fs.waf());
        waf.insert(name.clone(), r.waf() * fs.waf());
    }
    let (zns, on, off) = (waf["zns-zoned-fs"], waf["ssd-fs-discard"], waf["ssd-fs-no-discard"]);
    assert!(zns < 1.02, "ZNS total WAF {zns:.3}");
    // With the file system's chunk scaled: 1.28 and 2.13 at 1/100; 1.42 and 1.62 at 1/10; at full
    // scale 1.44 and 1.64 (the unscaled 8 MiB chunk gave 2.75 without discard at 1/100).
    assert!(on > zns + 0.1 && off > on + 0.5, "ZNS {zns:.3} < SSD with discard {on:.3} < without {off:.3}");
}

/// The time series carries the application level too: what the file system was given, never
/// ahead of what the device received (the file system sends at least what it is given), rising,
/// and at the end exactly the file system's own count.
#[test]
fn time_series_has_the_application_level() {
    let mut v = experiment("zoned-fs/lsm-files.toml").into_iter().find(|v| v.name == "ssd-fs-discard").unwrap();
    wafsim_experiment::plan::scale::scale_spec(&mut v.spec, 0.01).unwrap();
    let r = wafsim_experiment::run_variant(&v, wafsim_experiment::RunOptions { sample_every_bytes: Some(1 << 30), ..wafsim_experiment::RunOptions::default() }, &|_| {}).unwrap();
    let all: Vec<_> = r.timeseries.iter().filter(|s| s.device.is_none()).collect();
    assert!(all.len() > 10, "{} samples", all.len());
    let app: Vec<u64> = all.iter().map(|s| s.app_bytes.expect("file workload: application bytes in every sample")).collect();
    assert!(app.windows(2).all(|w| w[0] <= w[1]), "application bytes never fall");
    for s in &all {
        assert!(s.app_bytes.unwrap() <= s.host_bytes, "application {} ahead of the device's {}", s.app_bytes.unwrap(), s.host_bytes);
    }
    assert_eq!(*app.last().unwrap(), r.filesystems.iter().map(|f| f.file_write_bytes).sum::<u64>());
}

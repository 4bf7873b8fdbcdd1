//! Host layers in experiments (`[host]`): dm-zoned over SMR disks.

mod common;
use common::{experiment, run_at, run_doc};
use wafsim_experiment::parse_experiment;

/// A sequential fill through dm-zoned writes every chunk twice: first to a cache zone (a write
/// to an unmapped chunk always goes there), then reclaim copies it to a sequential zone; the
/// metadata flushes add a little (dm-zoned-target.c dmz_handle_write, dm-zoned-reclaim.c).
#[test]
fn dm_zoned_sequential_fill_writes_everything_twice() {
    for v in experiment("dm-zoned/smr.toml").into_iter().filter(|v| v.name == "cache+2" || v.name == "one-disk") {
        let name = v.name.clone();
        // The default scale (2 MiB zones): metadata flushed per reclaimed zone does not shrink
        // with the zones, so much smaller zones inflate its share.
        let r = run_at(v, 0.01).unwrap();
        let waf = r.waf();
        eprintln!("{}: dm-zoned WAF {waf:.3}", name);
        assert!(r.counters.host_write_bytes > 0);
        assert!((1.95..2.1).contains(&waf), "{}: WAF {waf:.3}, expected 2 plus metadata", name);
        if name == "cache+2" {
            // Every user byte enters through the cache device; reclaim copies it onto the disks,
            // about evenly (chunks go to whichever disk's worker takes their cache zone).
            let (cache, disks) = (&r.host_devices[0], &r.host_devices[1..]);
            assert_eq!((cache.device.as_str(), disks.len()), ("cache", 2));
            assert_eq!(cache.user_write_bytes, r.counters.host_write_bytes);
            let copied: u64 = disks.iter().map(|d| d.reclaim_write_bytes).sum();
            assert!((copied as f64 / cache.reclaim_read_bytes as f64 - 1.0).abs() < 0.01, "{copied} written vs {} read", cache.reclaim_read_bytes);
            let share = disks[0].reclaim_write_bytes as f64 / copied as f64;
            assert!((share - 0.5).abs() < 0.05, "disk 1 took {share:.3} of the copies");
        }
    }
}

#[test]
fn dm_zoned_specs_that_cannot_work_are_refused_with_the_reason() {
    let doc = |device: &str, host: &str, extra: &str| {
        format!("name = \"d\"\nprecondition = false\n[device]\n{device}\n[host]\n{host}\n[[namespace]]\nname = \"t\"\n[[workload]]\nnamespace = \"t\"\npattern = \"sequential\"\nbs = \"1MiB\"\namount = \"1GiB\"\n{extra}")
    };
    // Refused when parsed, or when run.
    let err = |d: String| match parse_experiment(&d, "d.toml") {
        Ok(mut v) => format!("{:#}", run_at(v.remove(0), 0.01).unwrap_err()),
        Err(e) => format!("{e:#}"),
    };
    let smr = "preset = \"smr-hm-14tb\"";
    assert!(err(doc("preset = \"client-tlc-2tb\"", "layer = \"dm-zoned\"", "")).contains("device.kind = \"smr\""));
    assert!(err(doc(smr, "layer = \"dm-cache\"", "")).contains("expected \"dm-zoned\""));
    assert!(err(doc(smr, "layer = \"dm-zoned\"\ndisks = 0", "")).contains("at least one disk"));
    assert!(err(doc(smr, "layer = \"dm-zoned\"", "[timing]\nenabled = true\n")).contains("does not cover host layers"));
}

/// Layers stack: a conventional file system on the dm-zoned target. The file system writes what
/// the application writes; dm-zoned about doubles it; the variant's WAF is dm-zoned's, and the
/// total (media / application) is the product.
#[test]
fn a_file_system_on_dm_zoned_stacks_the_layers() {
    let doc = r#"
name = "fs on dm-zoned"
precondition = false
[device]
preset = "smr-hm-14tb"
[host]
layer = "dm-zoned"
disks = 2
cache_size = "1TB"
[[namespace]]
name = "t"
[[phase]]
name = "load"
[[phase.files]]
namespace = "t"
filesystem = "conventional"
amount = "1x"
[[phase.files.group]]
name = "a"
file_size = ["1GiB", "4GiB"]
live_files = 5000
"#;
    let r = run_doc(doc, 0.01).unwrap();
    let fs = &r.filesystems[0];
    assert_eq!(fs.dev_write_bytes, r.counters.host_write_bytes, "dm-zoned got what the file system sent");
    assert_eq!(fs.waf(), 1.0);
    let copied: u64 = r.host_devices.iter().map(|d| d.reclaim_write_bytes).sum();
    assert!(copied > 0, "reclaim ran");
    assert!((1.95..2.1).contains(&r.waf()), "dm-zoned WAF {:.3}", r.waf());
}

/// Tiering over two flash drives (experiments/tiering/hot-cold.toml): every user byte lands on
/// the hot drive; what migrates to the cold drive is read from the hot one; the variant's WAF
/// counts both drives' NAND programs.
#[test]
fn tiering_writes_land_hot_and_migrations_move_hot_to_cold() {
    let v = experiment("tiering/hot-cold.toml").into_iter().find(|v| v.name == "tiered").unwrap();
    let r = run_at(v, 0.001).unwrap();
    let (hot, cold) = (&r.host_devices[0], &r.host_devices[1]);
    assert_eq!((hot.device.as_str(), cold.device.as_str()), ("hot", "cold"));
    assert_eq!(cold.user_write_bytes, 0, "user writes go to the hot drive");
    assert_eq!(hot.reclaim_read_bytes, cold.reclaim_write_bytes, "migrations move data from hot to cold");
    assert!(cold.reclaim_write_bytes > 0 && cold.reclaim_write_bytes < hot.user_write_bytes);
    // Migrated bytes are written twice (hot, then cold): WAF at least 1 + migrated / user of
    // the measured phase, before either drive's own GC.
    assert!(r.waf() > 1.0, "WAF {:.3}", r.waf());
}

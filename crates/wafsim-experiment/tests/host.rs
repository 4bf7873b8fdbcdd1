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
    // Timed with a cache device: the cache's rates are required.
    assert!(err(doc(smr, "layer = \"dm-zoned\"\ncache_size = \"1TB\"", "[timing]\nenabled = true\n")).contains("[timing.cache]"));
    assert!(err(doc(smr, "layer = \"dm-zoned\"\ndisk_zones = 10", "")).contains("host.dm-zoned.disk_zones = 10"));
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
discard = true                  # deleted files reach dm-zoned as discards
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
    // Each drive's own media bytes (its NAND programs) add up to the layer's media over the
    // whole run (every phase; the drives start fresh), and neither drive writes less than it
    // is sent.
    let phases_media: u64 = r.phases.iter().map(|p| p.counters.media_units() * r.mapping_unit as u64).sum();
    assert!((hot.media_write_bytes + cold.media_write_bytes).abs_diff(phases_media) < 2 * r.mapping_unit as u64, "{} + {} vs {phases_media}", hot.media_write_bytes, cold.media_write_bytes);
    assert!(hot.device_waf() >= 1.0 && cold.device_waf() >= 1.0, "{:.3} {:.3}", hot.device_waf(), cold.device_waf());
}

/// Reference section 6 in time (experiments/dm-zoned/timed.toml, shortened): while free cache
/// zones last, the target takes writes at the cache device's rate; once they are used up, at the
/// rate reclaim empties them, which is each disk's sequential write rate (a reclaimed chunk is
/// one zone written in order on one disk) times the disks: the drop shrinks as disks are added.
#[test]
fn dm_zoned_in_time_plateau_then_disk_bound() {
    let disk_rate = 235.7 * 1048576.0; // the preset's od_rate: the outer zones the target uses
    let cache_rate = 2.5e9; // the experiment's [timing.cache] write rate
    let mut steady = Vec::new();
    for v in experiment("dm-zoned/timed.toml").into_iter().filter(|v| v.name == "cache+2" || v.name == "cache+4") {
        let mut v = v;
        let disks = v.spec.host.as_ref().unwrap().dm_zoned.disks as f64;
        v.spec.host.as_mut().unwrap().dm_zoned.cache_size = Some(wafsim_experiment::schema::BytesOrNone::Given("4GiB".parse().unwrap()));
        v.spec.host.as_mut().unwrap().dm_zoned.disk_zones = Some(600);
        v.spec.phase[0].fio[0].args = Some("--name=w --rw=write --bs=1m --iodepth=8 --numjobs=8 --size=3g --offset_increment=3g".into());
        let r = run_at(v, 1.0).unwrap();
        assert_eq!(r.counters.host_write_bytes, 24 << 30);
        let bw: Vec<f64> = r.bandwidth.iter().map(|b| b.write_bytes as f64).collect();
        assert!((bw[0] / cache_rate - 1.0).abs() < 0.05, "{}: first second {:.3e} B/s, cache {cache_rate:.3e}", r.name, bw[0]);
        // From the first sample without a free cache zone to the last whole second.
        let full = r.host_timeline.iter().position(|h| h.cache_free == 0).expect("the cache runs out");
        let tail = &bw[full + 1..bw.len() - 1];
        let mean = tail.iter().sum::<f64>() / tail.len() as f64;
        let expect = disks * disk_rate;
        // Each disk's reclaim writes at its media rate (median of its per-second rates).
        let mut per_disk: Vec<f64> = r.host_timeline[full..]
            .windows(2)
            .flat_map(|h| (0..h[0].reclaim_write_bytes.len()).map(move |d| (h[1].reclaim_write_bytes[d] - h[0].reclaim_write_bytes[d]) as f64 / (h[1].t_s - h[0].t_s)))
            .collect();
        per_disk.sort_by(f64::total_cmp);
        let disk = per_disk[per_disk.len() / 2];
        eprintln!("{}: plateau {:.0} MB/s, then {:.0} MB/s; reclaim {:.0} MB/s per disk ({} disks x disk rate = {:.0} MB/s)", r.name, bw[0] / 1e6, mean / 1e6, disk / 1e6, disks, expect / 1e6);
        assert!(disk > 0.9 * disk_rate && disk < 1.01 * disk_rate, "{}: reclaim {disk:.3e} B/s per disk, disk rate {disk_rate:.3e}", r.name);
        // The streams move in step (each waits for a zone at the end of its chunk), so the user
        // rate swings around the reclaim rate in cycles of ~10 s; the window holds a few.
        assert!(mean > 0.8 * expect && mean < 1.1 * expect, "{}: {mean:.3e} B/s after the cache filled, expected about {expect:.3e}", r.name);
        steady.push(mean);
        // Reclaim is spread over the disks.
        let last = r.host_timeline.last().unwrap();
        let (lo, hi) = (last.reclaim_write_bytes.iter().min().unwrap(), last.reclaim_write_bytes.iter().max().unwrap());
        assert!(*lo as f64 > 0.8 * *hi as f64, "{}: reclaim per disk {:?}", r.name, last.reclaim_write_bytes);
    }
    assert_eq!(steady.len(), 2);
    assert!((steady[1] / steady[0] - 2.0).abs() < 0.3, "4 disks {:.3e} vs 2 disks {:.3e} B/s", steady[1], steady[0]);
}

//! dm-zoned in time: a cache device in front of SMR disks under a sustained sequential write.
//! Expectations from the devices' rates alone: while free cache zones last, user writes go at
//! the cache's write rate; once they are gone, at the rate reclaim empties cache zones, which is
//! the disks' sequential write rate (each reclaimed chunk is one zone written sequentially on
//! one disk) times the number of disks.

use wafsim_core::plain::PlainDevice;
use wafsim_core::smr::{SmrConfig, SmrDevice};
use wafsim_core::{Io, Op, Pid};
use wafsim_core::pipeline::Script;
use wafsim_host::dmzoned::DmZonedClock;
use wafsim_host::{DmZonedConfig, DmZonedDevice, DmZonedTimed};
use wafsim_time::hdd::HddConfig;
use wafsim_time::{DiskTimed, DiskTimeline, EngineOptions, JobSpec, PlainTimed, PlainTimeline, PlainTiming};

const ZONE: u64 = 16 << 20;
const DISK_ZONE: u64 = 256 << 20;
const CACHE_RATE: f64 = 2.5e9;
const SAMPLE_NS: u64 = 50_000_000;

struct Outcome {
    /// User write bytes/s per 50 ms interval.
    bw: Vec<f64>,
    waf: f64,
    samples: Vec<wafsim_host::DmzSample>,
    user_bytes: u64,
    written: u64,
}

/// Sequential write of three quarters of the target (writing all of it ends in a crawl: the last
/// chunks need zones only idle-time reclaim frees), 1 MiB writes, 8 streams of QD 4 each over
/// their eighth of that.
fn run(disks: u32, zones_per_disk: u32, cache_zones: u64) -> Outcome {
    let disk = SmrConfig::small(zones_per_disk, ZONE, 0, 0);
    let cache = PlainDevice::new(cache_zones * ZONE, 4096).unwrap();
    let devs = (0..disks).map(|_| SmrDevice::new(disk.clone()).unwrap()).collect();
    let mut dmz = DmZonedDevice::new(Some(cache), devs, &DmZonedConfig::with_reserved(16)).unwrap();
    let cap = wafsim_core::BlockDevice::namespace_bytes(&dmz, 0);
    let mut clock = DmZonedClock::new(dmz.layer(), Some(SAMPLE_NS));
    let mut cache_tl =
        PlainTimeline::new(PlainTiming { write_bytes_per_sec: CACHE_RATE, read_bytes_per_sec: CACHE_RATE, latency_ns: 20_000, shared: false }).unwrap();
    let mut disk_tls: Vec<DiskTimeline> =
        (0..disks).map(|_| DiskTimeline::new(HddConfig::hc620_14tb(), ZONE, DISK_ZONE).unwrap().with_zone_write_plugging(0)).collect();
    let share = cap * 3 / 4 / 8 / (1 << 20) * (1 << 20);
    let jobs: Vec<JobSpec> = (0..8u64)
        .map(|j| {
            let ios = (0..share >> 20).map(|k| Io { op: Op::Write, ns: 0, offset: j * share + (k << 20), len: 1 << 20, pid: Pid::NONE }).collect();
            JobSpec::new(format!("w{j}"), Box::new(Script::new(ios)), 4, j as u32)
        })
        .collect();
    let tr = dmz.with_parts(|layer, cache_dev, disk_devs| {
        let cache_m = PlainTimed::new(cache_dev.unwrap(), &mut cache_tl);
        let disk_ms: Vec<_> = disk_devs.iter_mut().zip(disk_tls.iter_mut()).map(|(d, tl)| DiskTimed::new(d, tl)).collect();
        let mut m = DmZonedTimed::new(layer, Some(cache_m), disk_ms, &mut clock);
        wafsim_time::run_on_with(&mut m, jobs, &EngineOptions { sample_ns: Some(SAMPLE_NS), ..Default::default() }).unwrap()
    });
    dmz.layer().check_invariants().unwrap();
    let written: u64 = tr.jobs.iter().map(|j| j.write.bytes).sum();
    Outcome {
        bw: tr.series.iter().map(|s| s.write_bytes as f64 / (SAMPLE_NS as f64 * 1e-9)).collect(),
        waf: dmz.layer().waf(),
        samples: clock.take_samples(),
        user_bytes: dmz.layer().counters().host_write_bytes,
        written,
    }
}

/// Mean user write rate from the first sample without a free cache zone to the last whole
/// interval (reclaim frees zones in bursts, so single intervals swing).
fn steady(o: &Outcome) -> f64 {
    let full = o.samples.iter().position(|s| s.cache_free == 0).expect("the cache runs out");
    let v = &o.bw[full + 1..o.bw.len() - 1];
    v.iter().sum::<f64>() / v.len() as f64
}

/// The disks' sequential write rate at the outer zones (hc620: 235.7 MiB/s).
fn disk_rate() -> f64 {
    HddConfig::hc620_14tb().od_rate
}

#[test]
fn cache_plateau_then_reclaim_bound_rate() {
    let o = run(2, 96, 24);
    assert_eq!(o.written, o.user_bytes, "every user write completed");
    // Plateau: the first interval runs at the cache's write rate.
    assert!((o.bw[0] / CACHE_RATE - 1.0).abs() < 0.05, "plateau {:.3e} B/s vs cache {CACHE_RATE:.3e}", o.bw[0]);
    // The cache runs out: samples reach zero free cache zones.
    assert!(o.samples.iter().any(|s| s.cache_free == 0), "cache never full");
    // After: the reclaim-bound rate, two disks streaming (seeks between zones and metadata
    // flushes cost a little).
    if std::env::var("DMZ_DEBUG").is_ok() {
        eprintln!("{:?}", o.bw.iter().map(|b| (b / 1048576.0) as u64).collect::<Vec<_>>());
        eprintln!("{:?}", o.samples.iter().map(|s| s.cache_free).collect::<Vec<_>>());
    }
    let steady = steady(&o);
    let expect = 2.0 * disk_rate();
    assert!(steady > 0.85 * expect && steady < 1.02 * expect, "steady {:.1} MiB/s vs 2 disks {:.1} MiB/s", steady / 1048576.0, expect / 1048576.0);
    // Each disk's reclaim wrote about half.
    let last = o.samples.last().unwrap();
    let (a, b) = (last.reclaim_write_bytes[0] as f64, last.reclaim_write_bytes[1] as f64);
    assert!((a / b - 1.0).abs() < 0.2, "reclaim per disk {a} vs {b}");
    // A sequential fill writes every byte twice (cache, then disk), plus metadata.
    assert!(o.waf > 1.5 && o.waf < 2.05, "waf {}", o.waf);
}

#[test]
fn more_disks_shrink_the_drop() {
    let two = run(2, 96, 24);
    let four = run(4, 48, 24);
    let (s2, s4) = (steady(&two), steady(&four));
    if std::env::var("DMZ_DEBUG").is_ok() {
        eprintln!("steady 2 disks {:.1} MiB/s, 4 disks {:.1} MiB/s; waf {:.3} {:.3}", s2 / 1048576.0, s4 / 1048576.0, two.waf, four.waf);
    }
    assert!((s4 / s2 - 2.0).abs() < 0.2, "4 disks {s4:.3e} vs 2 disks {s2:.3e} B/s");
}

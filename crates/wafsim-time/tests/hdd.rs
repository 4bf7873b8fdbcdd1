//! The mechanical HDD model against the figures it documents: the 14 TB HM-SMR drive's measured
//! sequential and random-zone write rates (zonedstorage.io fio runs, 15 TB sibling for the
//! random one), SPTF against FIFO, QD1 random read latency against the configuration's own seek
//! and rotation figures, and the ID/OD rate ratio. Each run is a small closed loop: a fixed
//! number of commands outstanding at the host, each completion issuing the next one; the drive
//! side is `HddQueue` (command queue and write cache around the mechanics).

use std::collections::HashMap;
use wafsim_core::smr::{SmrConfig, SmrDevice};
use wafsim_core::{BlockDevice, Io, Op, Pid, Rng};
use wafsim_time::hdd::{Hdd, HddCmd, HddConfig, HddQueue, Queued, Scheduling};

const MIB: f64 = (1u64 << 20) as f64;
/// 256 KiB in 4 KiB blocks.
const CMD_BLOCKS: u32 = 64;
/// 256 MiB zones in 4 KiB blocks.
const ZONE_BLOCKS: u64 = 65_536;

/// Closed-loop result, as the host sees it (a cached write completes when acknowledged).
struct Run {
    bytes: u64,
    end_ns: u64,
    commands: u64,
    latency_ns: u64,
    /// Commands the drive had to position for (not streamed).
    positioned: u64,
}

impl Run {
    fn mib_s(&self) -> f64 {
        self.bytes as f64 / MIB / (self.end_ns as f64 / 1e9)
    }
    fn iops(&self) -> f64 {
        self.commands as f64 / (self.end_ns as f64 / 1e9)
    }
    fn mean_latency_ms(&self) -> f64 {
        self.latency_ns as f64 / self.commands as f64 / 1e6
    }
}

/// Keep `depth` commands outstanding at the host from time 0 until `max_ns` of simulated time
/// or `max_bytes` completed; `issue` makes a new command (seeing what waits at the drive),
/// `served` is called for each command in the order the drive writes or reads it.
fn closed_loop(
    cfg: HddConfig,
    depth: usize,
    max_ns: u64,
    max_bytes: u64,
    mut issue: impl FnMut(&[Queued]) -> HddCmd,
    mut served: impl FnMut(&HddCmd),
) -> Run {
    let mut host = Host { bs: cfg.block_size as u64, issued: HashMap::new(), outstanding: 0 };
    let mut q = HddQueue::new(Hdd::new(cfg).unwrap());
    let mut r = Run { bytes: 0, end_ns: 0, commands: 0, latency_ns: 0, positioned: 0 };
    let (mut now, mut tag) = (0u64, 0u64);
    loop {
        while host.outstanding < depth {
            let cmd = issue(q.queued());
            tag += 1;
            host.outstanding += 1;
            host.issued.insert(tag, (now, cmd.blocks));
            if q.submit(tag, cmd) {
                host.complete(tag, now, &mut r);
            }
        }
        if now >= max_ns || r.bytes >= max_bytes {
            return r;
        }
        let s = q.serve_next(now).expect("commands outstanding");
        served(&s.cmd);
        now = s.done_ns;
        r.positioned += (s.positioning_ns > 0) as u64;
        if s.completes {
            host.complete(s.tag, now, &mut r);
        }
        for t in s.acked {
            host.complete(t, now, &mut r);
        }
    }
}

/// The host side of the loop: issue time and size of every outstanding command.
struct Host {
    bs: u64,
    issued: HashMap<u64, (u64, u32)>,
    outstanding: usize,
}

impl Host {
    fn complete(&mut self, tag: u64, t: u64, r: &mut Run) {
        let (t0, blocks) = self.issued.remove(&tag).unwrap();
        self.outstanding -= 1;
        r.bytes += blocks as u64 * self.bs;
        r.commands += 1;
        r.latency_ns += t - t0;
        r.end_ns = t;
    }
}

fn config(scheduling: Scheduling) -> HddConfig {
    HddConfig { scheduling, ..HddConfig::hc620_14tb() }
}

/// First zone after the 524 conventional ones (the preset's layout, as on the 15 TB drive).
fn first_swr_zone() -> u64 {
    SmrConfig::hc620_14tb().conventional_zones as u64
}

/// 1 GiB of 256 KiB writes at QD8 from zone `zone` on (fio `--zonemode=zbd --iodepth=8`).
fn sequential(zone: u64) -> Run {
    let mut next = zone * ZONE_BLOCKS;
    let issue = |_: &[Queued]| {
        let c = HddCmd { lba: next, blocks: CMD_BLOCKS, write: true };
        next += CMD_BLOCKS as u64;
        c
    };
    closed_loop(config(Scheduling::Sptf), 8, u64::MAX, 1 << 30, issue, |_| {})
}

#[test]
fn sequential_writes_from_the_first_sequential_zone_stream_at_236_mib_s() {
    let r = sequential(first_swr_zone());
    let rate = r.mib_s();
    eprintln!(
        "sequential 256 KiB QD8 at zone 524: {rate:.1} MiB/s ({} commands, {} positioned)",
        r.commands, r.positioned
    );
    // zonedstorage.io smr-fio.md: 235 and 237 MiB/s (1 GiB, 256 KiB, QD8).
    assert!((rate / 236.0 - 1.0).abs() < 0.10, "{rate:.1} MiB/s vs 236");
    assert!((rate / 236.0 - 1.0).abs() < 0.01, "fitted figure: {rate:.1} MiB/s should be within 1% of 236");
    assert_eq!(r.positioned, 1, "only the first command positions; the rest stream");
}

/// 256 KiB writes, each at the write pointer of a random zone of the sequential range, 16
/// outstanding (fio 4 jobs x QD4 `--zonemode=zbd --rw=randwrite`), for 10 s of simulated time.
/// The SMR device checks every write against the zone rules as the drive serves it.
fn random_zone_writes(scheduling: Scheduling, seed: u64) -> (Run, SmrDevice) {
    let smr_cfg = SmrConfig::hc620_14tb();
    let (first, zones) = (smr_cfg.conventional_zones as u64, smr_cfg.zones as u64);
    let mut dev = SmrDevice::new(smr_cfg).unwrap();
    let mut rng = Rng::new(seed);
    let mut wp: HashMap<u64, u64> = HashMap::new();
    let issue = |queue: &[Queued]| loop {
        let z = first + rng.below(zones - first);
        // One write per zone at the drive (fio locks the zone it issues to; a cached write
        // counts too, so the drive never has to keep two writes of a zone in order).
        if queue.iter().any(|q| q.cmd.lba / ZONE_BLOCKS == z) {
            continue;
        }
        let p = wp.entry(z).or_insert(0);
        let lba = z * ZONE_BLOCKS + *p;
        *p += CMD_BLOCKS as u64;
        assert!(*p <= ZONE_BLOCKS, "a zone filled up: reset not modelled in this driver");
        return HddCmd { lba, blocks: CMD_BLOCKS, write: true };
    };
    let served = |c: &HddCmd| {
        let io = Io { op: Op::Write, ns: 0, offset: c.lba * 4096, len: c.blocks * 4096, pid: Pid::NONE };
        dev.submit(&io).expect("every write lands on its zone's write pointer");
    };
    let r = closed_loop(config(scheduling), 16, 10_000_000_000, u64::MAX, issue, served);
    (r, dev)
}

#[test]
fn random_zone_writes_at_16_outstanding_reach_40_mib_s_with_sptf() {
    let (r, dev) = random_zone_writes(Scheduling::Sptf, 1);
    let (rate, iops) = (r.mib_s(), r.iops());
    eprintln!(
        "random-zone 256 KiB writes, 16 outstanding, SPTF: {rate:.1} MiB/s, {iops:.0} IOPS, mean latency {:.1} ms",
        r.mean_latency_ms()
    );
    // zonedstorage.io smr-fio.md (15 TB model): BW=40.2MiB/s, IOPS=160, mean clat ~98.9 ms.
    assert!((rate / 40.2 - 1.0).abs() < 0.10, "{rate:.1} MiB/s vs 40.2");
    // Little's law holds for the closed loop: 16 outstanding / IOPS.
    assert!((r.mean_latency_ms() / (16.0 / iops * 1e3) - 1.0).abs() < 0.02);
    // The zone state the writes leave: 128 open, the rest closed, none full (fio's report:
    // 128 implicitly open, 4,498 closed after 30 s).
    let z = dev.zones();
    assert_eq!(z.open_zones(), 128);
    assert_eq!(dev.report_zones(0, 0, wafsim_core::zone::ReportFilter::Full).unwrap().len(), 0);
    dev.check_invariants().unwrap();
    // The host saw every write the disk wrote, plus at most a cache-full of acknowledged ones.
    let written = dev.counters().host_write_bytes;
    assert!(written <= r.bytes && r.bytes - written <= 24 * 256 * 1024);
    // Another seed lands within a few percent.
    let (r2, _) = random_zone_writes(Scheduling::Sptf, 2);
    eprintln!("  seed 2: {:.1} MiB/s", r2.mib_s());
    assert!((r2.mib_s() / 40.2 - 1.0).abs() < 0.10);
}

#[test]
fn random_reads_of_written_zones_cross_check() {
    // Not a fitted figure: zonedstorage.io measured 29.7 MiB/s (IOPS 118) for 256 KiB random
    // reads of the data the random-zone write run left (4 jobs x QD4). Reads get no help from
    // the write cache, so the mechanics alone answer; the proxy seek figures make the model
    // faster than the drive (docs/model.md). Kept as a bound so a change of the mechanics shows.
    let cfg = config(Scheduling::Sptf);
    let smr = SmrConfig::hc620_14tb();
    let (first, zones) = (smr.conventional_zones as u64, smr.zones as u64);
    let mut rng = Rng::new(3);
    let issue = |_: &[Queued]| HddCmd {
        lba: (first + rng.below(zones - first)) * ZONE_BLOCKS,
        blocks: CMD_BLOCKS,
        write: false,
    };
    let r = closed_loop(cfg, 16, 10_000_000_000, u64::MAX, issue, |_| {});
    eprintln!(
        "random-zone 256 KiB reads, 16 outstanding: {:.1} MiB/s, {:.0} IOPS (measured 29.7 MiB/s)",
        r.mib_s(),
        r.iops()
    );
    assert!(r.mib_s() > 29.7 && r.mib_s() < 29.7 * 1.25);
}

#[test]
fn fifo_is_slower_than_sptf_on_random_zone_writes() {
    let (sptf, _) = random_zone_writes(Scheduling::Sptf, 1);
    let (fifo, _) = random_zone_writes(Scheduling::Fifo, 1);
    eprintln!("random-zone writes: SPTF {:.1} MiB/s, FIFO {:.1} MiB/s", sptf.mib_s(), fifo.mib_s());
    assert!(fifo.mib_s() < 0.8 * sptf.mib_s());
    // FIFO serves each write after a random seek: about 1 / (overhead + average write seek +
    // half a revolution + transfer) commands per second.
    let cfg = config(Scheduling::Fifo);
    let per_cmd_ms =
        (cfg.command_overhead_ns + cfg.seek_write.average_ns) as f64 / 1e6 + cfg.revolution_ns() / 2e6 + 1.3;
    let expect = 0.25 / (per_cmd_ms / 1e3);
    assert!((fifo.mib_s() / expect - 1.0).abs() < 0.15, "FIFO {:.1} vs about {expect:.1} MiB/s", fifo.mib_s());
}

#[test]
fn qd1_random_read_latency_is_overhead_plus_average_seek_plus_half_a_revolution() {
    let cfg = config(Scheduling::Fifo);
    let probe = Hdd::new(cfg.clone()).unwrap();
    let mut rng = Rng::new(7);
    // Uniform over cylinders, as the datasheet's average seek is defined.
    let issue = |_: &[Queued]| HddCmd { lba: probe.lba_at(rng.unit_f64()), blocks: 1, write: false };
    let r = closed_loop(cfg.clone(), 1, u64::MAX, 4000 * 4096, issue, |_| {});
    let expect_ms = (cfg.command_overhead_ns + cfg.seek_read.average_ns) as f64 / 1e6 + cfg.revolution_ns() / 2e6;
    let got = r.mean_latency_ms();
    eprintln!("QD1 random 4 KiB read: mean {got:.2} ms vs overhead + average seek + half revolution {expect_ms:.2} ms");
    assert!((got / expect_ms - 1.0).abs() < 0.10);
    assert!((got / expect_ms - 1.0).abs() < 0.03, "the model's own figures: within 3%");
}

#[test]
fn inner_zones_stream_slower_by_the_configured_ratio() {
    let outer = sequential(first_swr_zone());
    let last = SmrConfig::hc620_14tb().zones as u64 - 4;
    let inner = sequential(last);
    let ratio = inner.mib_s() / outer.mib_s();
    let cfg = HddConfig::hc620_14tb();
    eprintln!(
        "sequential at zones {}..: {:.1} MiB/s, at zones {last}..: {:.1} MiB/s, ratio {ratio:.3} (configured ID/OD {})",
        first_swr_zone(),
        outer.mib_s(),
        inner.mib_s(),
        cfg.id_od_ratio
    );
    assert!((ratio / cfg.id_od_ratio - 1.0).abs() < 0.10);
    // Against the model's own rates at those LBAs.
    let d = Hdd::new(cfg).unwrap();
    let model = d.media_rate_at(last * ZONE_BLOCKS) / d.media_rate_at(first_swr_zone() * ZONE_BLOCKS);
    assert!((ratio / model - 1.0).abs() < 0.01, "{ratio:.4} vs {model:.4}");
}

#[test]
fn seek_curve_meets_the_three_datasheet_figures() {
    let cfg = HddConfig::hc620_14tb();
    let d = Hdd::new(cfg.clone()).unwrap();
    let n = cfg.cylinders();
    eprintln!("cylinders {n}, OD track {:.0} bytes", cfg.od_track_bytes());
    for (write, s) in [(false, cfg.seek_read), (true, cfg.seek_write)] {
        assert_eq!(d.seek_ns(0, write), 0.0);
        assert!((d.seek_ns(1, write) - s.track_to_track_ns as f64).abs() < 1.0);
        assert!((d.seek_ns(n, write) / s.full_stroke_ns as f64 - 1.0).abs() < 1e-4);
        // HGST weighted average: seek length n weighted by (max + 1 - n), i.e. two uniform
        // cylinders; numerically over 100,000 lengths.
        let steps = 100_000u64;
        let (mut num, mut den) = (0.0, 0.0);
        for i in 1..=steps {
            let len = i * n / steps;
            let w = (n + 1 - len) as f64;
            num += w * d.seek_ns(len, write);
            den += w;
        }
        let avg = num / den;
        assert!((avg / s.average_ns as f64 - 1.0).abs() < 0.002, "weighted average {avg:.0} vs {}", s.average_ns);
    }
    // Geometry round trip and the rotational position: LBA -> fraction -> LBA.
    for lba in [0u64, 1, 123_456_789, d.lbas() / 2, d.lbas() - 1] {
        let back = d.lba_at(d.fraction_of(lba));
        assert!(back.abs_diff(lba) <= 1, "{lba} -> {back}");
    }
    assert!(d.fraction_of(d.lbas()) <= 1.0);
    // A figure set a sqrt + linear curve cannot fit is refused.
    let mut bad = cfg.clone();
    bad.seek_read.full_stroke_ns = 8_000_000;
    assert!(Hdd::new(bad).is_err());
}

#[test]
fn positioning_is_seek_plus_rotation_and_service_moves_the_head() {
    let cfg = HddConfig { command_overhead_ns: 0, ..HddConfig::hc620_14tb() };
    let mut d = Hdd::new(cfg.clone()).unwrap();
    let rev = cfg.revolution_ns();
    // Same track, just ahead of the head: no seek, a little rotation.
    let first = HddCmd { lba: 0, blocks: 8, write: false };
    let t = d.service(0, &first);
    assert!(t < (rev / 50.0) as u64, "8 blocks at the OD take under 2% of a revolution: {t} ns");
    // Streaming: the next LBA at once costs nothing; a little later, nearly a revolution.
    let next = HddCmd { lba: 8, blocks: 8, write: false };
    assert_eq!(d.positioning_time(t, &next), 0);
    let late = d.positioning_time(t + 1_000, &next) as f64;
    assert!(late > rev - 2_000.0 && late < rev, "missed by 1 us: {late} ns");
    // Far away: full stroke plus at most a revolution.
    let far = HddCmd { lba: d.lbas() - 8, blocks: 8, write: false };
    let p = d.positioning_time(t, &far) as f64;
    assert!(p >= cfg.seek_read.full_stroke_ns as f64 * 0.99 && p < cfg.seek_read.full_stroke_ns as f64 + rev);
    let done = d.service(t, &far);
    assert_eq!(d.free_at(), done);
    assert_eq!(d.cylinder_of(far.lba), cfg.cylinders() - 1);
    // SPTF picks the nearby command over the far one, FIFO the first queued.
    let queue = [HddCmd { lba: 0, blocks: 8, write: false }, HddCmd { lba: d.lbas() - 64, blocks: 8, write: false }];
    assert_eq!(d.pick(done, &queue), 1);
    let fifo = Hdd::new(HddConfig { scheduling: Scheduling::Fifo, ..cfg }).unwrap();
    assert_eq!(fifo.pick(done, &queue), 0);
}

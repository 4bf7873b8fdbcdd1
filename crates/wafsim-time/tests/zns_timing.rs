//! Timing model driving a ZNS device: a zone's writes use the dies its erase units span.
use wafsim_core::blockdev::{BlockDevice, ZoneAction};
use wafsim_core::zns::{ZnsConfig, ZnsDevice};
use wafsim_core::{Io, Op, Pid};
use wafsim_core::pipeline::Script;
use wafsim_time::{run, JobSpec, TimedRun, TimingConfig, Timeline};

const BS: u32 = 4096;
/// Erase unit: 32 program units on each of 4 dies (48 blocks of 4 KiB per TLC program unit).
const EU_BLOCKS: u64 = 48 * 4 * 32;
const EUS_PER_ZONE: u32 = 2;
const ZONE_CAP: u64 = EU_BLOCKS * EUS_PER_ZONE as u64;
const ZONE_SIZE: u64 = 16384;

/// 8 dies on 8 channels in `groups` die groups (reclaim groups of the timing model).
fn cfg(groups: u32) -> TimingConfig {
    TimingConfig { reclaim_groups: groups, write_buffer_bytes: 2 << 20, mapping_unit: BS, ..TimingConfig::plain_tlc(8, 8) }
}

fn device(zones: u32) -> ZnsDevice {
    let mut c = ZnsConfig::small(zones, ZONE_SIZE * BS as u64, ZONE_CAP * BS as u64);
    c.erase_units_per_zone = EUS_PER_ZONE;
    ZnsDevice::new(c).unwrap()
}

fn zone_start(z: u32) -> u64 {
    z as u64 * ZONE_SIZE * BS as u64
}

/// `op` (Write or Append) of `blocks` blocks into zone `z`, `bs` bytes per command.
fn zone_writes(z: u32, op: Op, blocks: u64, bs: u32) -> Vec<Io> {
    let bytes = blocks * BS as u64;
    (0..bytes.div_ceil(bs as u64))
        .map(|i| {
            let off = i * bs as u64;
            let offset = if op == Op::Append { zone_start(z) } else { zone_start(z) + off };
            Io { op, ns: 0, offset, len: (bs as u64).min(bytes - off) as u32, pid: Pid::NONE }
        })
        .collect()
}

fn job(name: &str, ios: Vec<Io>, iodepth: u32, ramp_ns: u64, group: u32) -> JobSpec {
    JobSpec { ramp_ns, ..JobSpec::new(name, Box::new(Script::new(ios)), iodepth, group) }
}

fn write_bw(r: &TimedRun, j: usize) -> f64 {
    r.jobs[j].bandwidth(&r.jobs[j].write)
}

/// Write bandwidth of a zone on `dies` dies, computed from the configuration: each die programs
/// one program unit (page x planes x bits per cell) per tPROG, capped by the channels those dies
/// use and by the host link.
fn zone_bandwidth(t: &TimingConfig, first_die: u32, dies: u32) -> f64 {
    let program_bytes = (t.page_bytes * t.planes_per_die as u64 * t.nand.bits_per_cell as u64) as f64;
    let die_bw = dies as f64 * program_bytes / (t.nand.t_prog_ns as f64 * 1e-9);
    let mut channels: Vec<u32> = (first_die..first_die + dies).map(|d| d % t.channels).collect();
    channels.sort();
    channels.dedup();
    die_bw.min(channels.len() as f64 * t.channel_bytes_per_sec).min(t.host_link_bytes_per_sec)
}

#[test]
fn one_zone_writes_at_the_bandwidth_of_its_dies() {
    // 2 die groups of 4 dies: a zone spans 4 dies.
    let t = cfg(2);
    let mut dev = device(4);
    let mut tl = Timeline::new(t.clone(), &mut dev);
    let r = run(&mut dev, &mut tl, vec![job("w", zone_writes(1, Op::Write, ZONE_CAP, 128 << 10), 32, 10_000_000, 0)]).unwrap();
    let got = write_bw(&r, 0);
    let want = zone_bandwidth(&t, 4, 4);
    eprintln!("one zone (4 dies): {got:.4e} B/s vs {want:.4e}");
    assert!((got - want).abs() / want < 0.02, "{got} vs {want}");
    assert_eq!(dev.zones().state(1), wafsim_core::zone::ZoneState::Full);
    // Every host program ran: the zone's capacity in program units, each tPROG.
    let pus = ZONE_CAP / 48;
    while let Some(m) = tl.media.next_event() {
        tl.media.advance(m);
        tl.media.step();
    }
    assert_eq!(tl.media.busy.host_program_ns, pus * t.nand.t_prog_ns);
    assert_eq!(tl.media.busy.gc_ns(), 0);
}

/// Two writers in zones `a` and `b` (Zone Append, QD 16); their total write bandwidth.
fn two_writers(a: u32, b: u32) -> f64 {
    let t = cfg(2);
    let mut dev = device(4);
    let mut tl = Timeline::new(t, &mut dev);
    let jobs = vec![
        job("a", zone_writes(a, Op::Append, ZONE_CAP, 64 << 10), 16, 10_000_000, 0),
        job("b", zone_writes(b, Op::Append, ZONE_CAP, 64 << 10), 16, 10_000_000, 1),
    ];
    let r = run(&mut dev, &mut tl, jobs).unwrap();
    write_bw(&r, 0) + write_bw(&r, 1)
}

#[test]
fn zones_on_different_die_groups_write_in_parallel() {
    // Zone z is on die group z % 2: zones 0 and 1 use different dies, zones 0 and 2 the same.
    let apart = two_writers(0, 1);
    let together = two_writers(0, 2);
    let t = cfg(2);
    eprintln!("two writers: different groups {apart:.4e} B/s, same group {together:.4e} B/s, ratio {:.3}", apart / together);
    assert!((together - zone_bandwidth(&t, 0, 4)).abs() / zone_bandwidth(&t, 0, 4) < 0.03, "{together}");
    assert!((apart - zone_bandwidth(&t, 0, 8)).abs() / zone_bandwidth(&t, 0, 8) < 0.03, "{apart}");
    assert!((apart / together - 2.0).abs() < 0.1, "ratio {}", apart / together);
}

#[test]
fn reads_of_written_data_cost_a_page_read_and_unwritten_blocks_none() {
    let t = cfg(2);
    let mut dev = device(4);
    for io in zone_writes(0, Op::Write, ZONE_CAP / 2, 128 << 10) {
        dev.submit(&io).unwrap();
    }
    let mut tl = Timeline::new(t.clone(), &mut dev);
    tl.now = 10_000_000_000; // well after every program of the fill
    // QD1 4 KiB reads spread over the written half of zone 0.
    let n = 2000u64;
    let stride = (ZONE_CAP / 2 / n) * BS as u64;
    let reads: Vec<Io> = (0..n).map(|i| Io { op: Op::Read, ns: 0, offset: i * stride + 4096 * (i % 7), len: BS, pid: Pid::NONE }).collect();
    let r = run(&mut dev, &mut tl, vec![job("r", reads, 1, 0, 0)]).unwrap();
    let j = &r.jobs[0];
    let per_io = t.nand.t_read_ns as f64 + BS as f64 / t.channel_bytes_per_sec * 1e9 + BS as f64 / t.host_link_bytes_per_sec * 1e9;
    let got = j.read.lat.mean();
    eprintln!("QD1 read of written blocks: mean {got:.0} ns vs tR + transfers {per_io:.0} ns");
    assert_eq!(j.read.ios, n);
    assert!((got - per_io).abs() / per_io < 0.01);
    // Each read holds its die for tR and the page's transfer over the channel.
    let xfer = (BS as f64 / t.channel_bytes_per_sec * 1e9).round() as u64;
    assert_eq!(r.busy.host_read_ns, n * (t.nand.t_read_ns + xfer));
    // Unwritten: the second half of zone 0 and empty zone 3.
    let reads: Vec<Io> = (0..n)
        .map(|i| Io { op: Op::Read, ns: 0, offset: if i % 2 == 0 { zone_start(0) + (ZONE_CAP / 2 + i) * BS as u64 } else { zone_start(3) + i * BS as u64 }, len: BS, pid: Pid::NONE })
        .collect();
    let r = run(&mut dev, &mut tl, vec![job("u", reads, 1, 0, 0)]).unwrap();
    let j = &r.jobs[0];
    eprintln!("QD1 read of unwritten blocks: mean {:.0} ns, NAND read time {} ns", j.read.lat.mean(), r.busy.host_read_ns);
    assert_eq!(j.read.ios, n);
    assert_eq!(r.busy.host_read_ns, 0);
    assert!(j.read.lat.mean() < 1_000.0);
}

#[test]
fn finish_pads_and_reset_erases_the_zone_dies() {
    let t = cfg(2);
    let mut dev = device(4);
    let mut tl = Timeline::new(t.clone(), &mut dev);
    // 100 blocks into zone 1 (two program units and part of a third), Finish, Reset.
    let mut ios = zone_writes(1, Op::Write, 100, 4096);
    for a in [ZoneAction::Finish, ZoneAction::Reset] {
        ios.push(Io { op: Op::Zone(a), ns: 0, offset: zone_start(1), len: 0, pid: Pid::NONE });
    }
    run(&mut dev, &mut tl, vec![job("z", ios, 1, 0, 0)]).unwrap();
    while let Some(m) = tl.media.next_event() {
        tl.media.advance(m);
        tl.media.step();
    }
    let b = tl.media.busy;
    let pus = ZONE_CAP / 48;
    // The third program unit holds host data; the rest of the capacity is padding.
    assert_eq!(b.host_program_ns, 3 * t.nand.t_prog_ns);
    assert_eq!(b.gc_program_ns, (pus - 3) * t.nand.t_prog_ns);
    // Both erase units: a block erase on each of the group's 4 dies.
    assert_eq!(b.erase_ns, EUS_PER_ZONE as u64 * 4 * t.nand.t_erase_ns);
    assert_eq!(dev.counters().erases, EUS_PER_ZONE as u64);
}

/// A Zone Reset completes after the configured fixed time plus the time per byte the zone held
/// (counted at full scale: a scaled zone holding `erase_scale` of the data takes as long).
#[test]
fn zone_reset_latency_grows_with_the_data_the_zone_held() {
    let reset = |blocks: u64, erase_scale: f64| {
        let mut dev = device(4);
        let c = TimingConfig { zone_reset_ns: 1_580_000, zone_reset_ns_per_byte: 12.8e3 / (1u64 << 20) as f64, erase_scale, ..cfg(1) };
        let mut tl = Timeline::new(c, &mut dev);
        let mut ios = zone_writes(1, Op::Write, blocks, 128 << 10);
        ios.push(Io { op: Op::Zone(ZoneAction::Reset), ns: 0, offset: zone_start(1), len: 0, pid: Pid::NONE });
        run(&mut dev, &mut tl, vec![job("w", ios, 1, 0, 0)]).unwrap();
        // Now the reset alone, on a drained drive.
        let mut ios = zone_writes(2, Op::Write, blocks, 128 << 10);
        ios.push(Io { op: Op::Zone(ZoneAction::Reset), ns: 0, offset: zone_start(2), len: 0, pid: Pid::NONE });
        let r = run(&mut dev, &mut tl, vec![job("w", ios, 1, 0, 0)]).unwrap();
        assert_eq!(r.jobs[0].zone_resets, 1);
        r.jobs[0].trim.lat.mean()
    };
    let mib = |blocks: u64| (blocks * BS as u64) as f64 / (1u64 << 20) as f64;
    let full = reset(ZONE_CAP, 1.0);
    let want = 1.58e6 + 12.8e3 * mib(ZONE_CAP);
    assert!((full - want).abs() / want < 0.01, "full zone: {full:.0} ns vs {want:.0}");
    let half = reset(ZONE_CAP / 2, 1.0);
    let want_half = 1.58e6 + 12.8e3 * mib(ZONE_CAP / 2);
    assert!((half - want_half).abs() / want_half < 0.01, "half zone: {half:.0} ns vs {want_half:.0}");
    // The same zone seen as a 1/4-scale copy of a zone four times larger.
    let scaled = reset(ZONE_CAP, 0.25);
    let want_scaled = 1.58e6 + 12.8e3 * mib(ZONE_CAP) * 4.0;
    assert!((scaled - want_scaled).abs() / want_scaled < 0.01, "scaled: {scaled:.0} ns vs {want_scaled:.0}");
}

/// With a write-command processor of 5.4 us, 4 KiB writes from many zones at QD1 saturate at
/// 1 / 5.4 us = 185K IOPS, whatever else would allow more.
#[test]
fn write_command_time_caps_small_write_iops() {
    let mut dev = device(8);
    let c = TimingConfig { write_command_ns: 5_400, write_buffer_bytes: 64 << 20, ..cfg(1) };
    let mut tl = Timeline::new(c, &mut dev);
    let jobs = (0..8).map(|z| job(&format!("z{z}"), zone_writes(z, Op::Write, 4096, BS), 1, 0, z)).collect();
    let r = run(&mut dev, &mut tl, jobs).unwrap();
    let iops: f64 = r.jobs.iter().map(|j| j.iops(&j.write)).sum();
    eprintln!("8 zones x QD1 4 KiB: {iops:.0} IOPS (cap {:.0})", 1e9 / 5400.0);
    assert!((iops / (1e9 / 5400.0) - 1.0).abs() < 0.03, "{iops:.0} IOPS");
}

//! fio `zonemode=zbd` (and `strided`): the generated streams run on wafsim's ZNS drive (its zone
//! state machine enforces write pointers, capacities and the open/active limits) without an
//! error, and follow fio's zbd.c rules.

use std::path::Path;

use wafsim_core::blockdev::{BlockDevice, ZoneAction};
use wafsim_core::smr::{SmrConfig, SmrDevice};
use wafsim_core::zns::{ZnsConfig, ZnsDevice};
use wafsim_core::zone::{ReportFilter, ZoneConfig, ZoneState, Zones};
use wafsim_core::{Io, Op};
use wafsim_workload::fio::{parse_job_str, JobFile, SourceParams, ZbdZones};
use wafsim_workload::{Interleave, InterleaveMode, IoSource, SourceStats};

const K: u64 = 1024;
const M: u64 = 1 << 20;

/// A ZNS drive: `zones` zones of 1 MiB with `cap` bytes writable, 4 KiB blocks.
fn drive(zones: u32, cap: u64, max_open: u32, max_active: u32, conventional: u32) -> ZnsDevice {
    let mut z = ZoneConfig::new(M / 4096, cap / 4096, zones);
    z.max_open = max_open;
    z.max_active = max_active;
    z.conventional_zones = conventional;
    ZnsDevice::new(ZnsConfig { block_size: 4096, zones: z, erase_units_per_zone: 1, finish_pads: true }).unwrap()
}

/// A host-managed SMR disk: `zones` zones of `zone_size` bytes (capacity = size), the first
/// `conventional` of them conventional, 8 open zones at most, 4 KiB blocks.
fn smr(zones: u32, zone_size: u64, conventional: u32) -> SmrDevice {
    SmrDevice::new(SmrConfig::small(zones, zone_size, conventional, 8)).unwrap()
}

/// The zoned drives the streams run on.
trait Drive: BlockDevice {
    fn zone_set(&self) -> &Zones;
    fn invariants(&self) -> Result<(), String>;
}

impl Drive for ZnsDevice {
    fn zone_set(&self) -> &Zones {
        self.zones()
    }
    fn invariants(&self) -> Result<(), String> {
        self.check_invariants()
    }
}

impl Drive for SmrDevice {
    fn zone_set(&self) -> &Zones {
        self.zones()
    }
    fn invariants(&self) -> Result<(), String> {
        self.check_invariants()
    }
}

fn params<D: BlockDevice>(dev: &D, seed: u64) -> SourceParams {
    SourceParams { ns: 0, ns_bytes: dev.namespace_bytes(0), seed, zones: dev.zone_geometry(0), ..SourceParams::default() }
}

fn parse(text: &str) -> JobFile {
    parse_job_str(text, "z.fio", Path::new("."), &|_| None).unwrap()
}

/// What a run did.
struct Run {
    ios: Vec<Io>,
    stats: Vec<SourceStats>,
    max_open: u32,
    max_active: u32,
}

/// Every job of the file on `dev` (stonewall phases in turn, the jobs of a phase interleaved),
/// all sharing one zone state; every I/O must succeed on the drive.
fn run<D: Drive>(text: &str, dev: &mut D, seed: u64) -> Run {
    let jf = parse(text);
    let zones = ZbdZones::new();
    let mut sources: Vec<Box<dyn IoSource>> = Vec::new();
    let mut stage = Vec::new();
    for job in jf.jobs() {
        sources.push(job.source_zbd(params(dev, seed), &zones).unwrap_or_else(|e| panic!("{e}")));
        stage.push((0, job.phase));
    }
    let weights = vec![1; sources.len()];
    let mut il = Interleave::staged(sources, weights, stage, InterleaveMode::RoundRobin);
    let mut ios = Vec::new();
    let mut buf = Vec::new();
    let (mut max_open, mut max_active) = (0, 0);
    while il.fill(&mut buf, 97).unwrap() > 0 {
        for io in buf.drain(..) {
            if let Err(e) = dev.submit(&io) {
                panic!("{io:?} after {} I/Os: {e}", ios.len());
            }
            max_open = max_open.max(dev.zone_set().open_zones());
            max_active = max_active.max(dev.zone_set().active_zones());
            ios.push(io);
        }
        assert!(ios.len() < 5_000_000, "runaway source");
    }
    dev.invariants().unwrap();
    Run { ios, stats: il.stats().to_vec(), max_open, max_active }
}

fn state(dev: &ZnsDevice, z: u32) -> ZoneState {
    dev.zones().state(z)
}

fn writes(r: &Run) -> impl Iterator<Item = &Io> {
    r.ios.iter().filter(|io| io.op == Op::Write)
}

fn resets(r: &Run) -> Vec<u64> {
    r.ios.iter().filter(|io| io.op == Op::Zone(ZoneAction::Reset)).map(|io| io.offset).collect()
}

#[test]
fn sequential_write_fills_each_zone_to_its_capacity() {
    let mut dev = drive(8, 768 * K, 0, 0, 0);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=64k\nsize=4z\n", &mut dev, 1);
    // size=4z is four zones of the drive; each written up to its capacity, at the write pointer
    for z in 0..8 {
        assert_eq!(state(&dev, z), if z < 4 { ZoneState::Full } else { ZoneState::Empty }, "zone {z}");
    }
    let offs: Vec<u64> = writes(&r).map(|io| io.offset).collect();
    let expect: Vec<u64> = (0..4).flat_map(|z| (0..12).map(move |i| z * M + i * 64 * K)).collect();
    assert_eq!(offs, expect);
    assert_eq!(r.stats[0].write_bytes, 4 * 768 * K);
    assert_eq!((r.stats[0].zone_resets, r.stats[0].zone_finishes), (0, 0));
}

#[test]
fn second_pass_resets_each_zone_first() {
    let mut dev = drive(8, 768 * K, 0, 0, 0);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=128k\nsize=4z\nloops=2\n", &mut dev, 1);
    assert_eq!(r.stats[0].zone_resets, 4);
    assert_eq!(resets(&r), [0, M, 2 * M, 3 * M]);
    // the reset of zone k comes right before the first write of pass 2 to zone k
    for z in 0..4 {
        let at = r.ios.iter().position(|io| io.op == Op::Zone(ZoneAction::Reset) && io.offset == z * M).unwrap();
        assert_eq!(r.ios[at + 1], Io { op: Op::Write, offset: z * M, ..r.ios[at + 1] });
    }
    assert_eq!(r.stats[0].write_bytes, 2 * 4 * 768 * K);
    assert_eq!(r.stats[0].ios, 2 * 4 * 6, "zone resets are not counted as I/Os");
    assert_eq!(dev.counters().erases, 4);
}

#[test]
fn random_writes_keep_to_max_open_zones() {
    // The drive allows 6 open/active zones; the job asks for 4.
    let mut dev = drive(16, 512 * K, 6, 6, 0);
    let text = "[r]\nzonemode=zbd\ndirect=1\nrw=randwrite\nbs=32k\nsize=16z\nio_size=40m\nmax_open_zones=4\n";
    let r = run(text, &mut dev, 7);
    assert!(r.max_open <= 4 && r.max_active <= 4, "open {} active {}", r.max_open, r.max_active);
    assert_eq!(r.stats[0].write_bytes, 40 * M);
    // 40 MiB into 16 zones of 512 KiB: full zones were reset and written again
    assert!(r.stats[0].zone_resets >= 40 * 2 - 16 - 4, "{}", r.stats[0].zone_resets);
    // writes spread over all zones of the region
    let zones: std::collections::BTreeSet<u64> = writes(&r).map(|io| io.offset / M).collect();
    assert_eq!(zones.len(), 16);
}

#[test]
fn random_writes_use_the_drives_limits_by_default() {
    let mut dev = drive(16, M, 3, 5, 0);
    let r = run("[r]\nzonemode=zbd\ndirect=1\nrw=randwrite\nbs=64k\nio_size=24m\nrandseed=3\n", &mut dev, 1);
    assert!(r.max_open <= 3 && r.max_active <= 3, "open {} active {}", r.max_open, r.max_active);
    assert_eq!(r.stats[0].write_bytes, 24 * M);
}

#[test]
fn a_drive_with_only_an_active_limit_keeps_to_it() {
    let mut dev = drive(32, M, 0, 4, 0);
    let r = run("[r]\nzonemode=zbd\ndirect=1\nrw=randwrite\nbs=64k\nio_size=48m\n", &mut dev, 1);
    assert!(r.max_active <= 4, "active {}", r.max_active);
}

#[test]
fn job_max_open_zones_limits_one_job() {
    let mut dev = drive(16, M, 8, 8, 0);
    let r = run("[r]\nzonemode=zbd\ndirect=1\nrw=randwrite\nbs=64k\nio_size=20m\njob_max_open_zones=2\n", &mut dev, 1);
    assert!(r.max_active <= 2, "active {}", r.max_active);
}

#[test]
fn limit_errors_follow_fio() {
    let dev = drive(16, M, 4, 4, 0);
    let err = |text: &str| parse(text).phases[0][0].source_zbd(params(&dev, 1), &ZbdZones::new()).err().map(|e| e.to_string()).unwrap_or_default();
    let e = err("[r]\nzonemode=zbd\ndirect=1\nrw=randwrite\nmax_open_zones=8\n");
    assert!(e.starts_with("z.fio:1: job \"r\"") && e.contains("is larger than max (4)"), "{e}");
    let e = err("[r]\nzonemode=zbd\ndirect=1\nrw=randwrite\nmax_open_zones=8\nignore_zone_limits=1\n");
    assert!(e.contains("active zones"), "{e}");
    let e = err("[r]\nzonemode=zbd\nrw=write\n");
    assert!(e.contains("Using direct I/O is mandatory"), "{e}");
    let e = err("[r]\nzonemode=zbd\ndirect=1\nrw=write\nzonesize=2m\n");
    assert!(e.contains("does not match the device zone size"), "{e}");
    let e = err("[r]\nzonemode=zbd\nrw=trim\nbs=4k\n");
    assert!(e.contains("trim block size 4096 is not the zone size"), "{e}");
    let e = err("[r]\nzonemode=zbd\ndirect=1\nrw=write\nbs=2m\n");
    assert!(e.contains("larger than the zone size"), "{e}");
    let e = err("[r]\nzonemode=zbd\ndirect=1\nrw=write\noffset=512k\nsize=1m\n");
    assert!(e.contains("io_size must be at least one zone"), "{e}");
    // parse-time checks
    let p = |text: &str| parse_job_str(text, "z.fio", Path::new("."), &|_| None).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(p("[r]\nmax_open_zones=5000\n").contains("4096"));
    assert!(p("[r]\nzone_reset_threshold=1.5\n").contains("between 0 and 1"));
    assert!(p("[r]\nzonemode=zoned\n").contains("none, strided or zbd"));
    let e = p("[r]\nzonemode=none\nzonesize=1m\n");
    assert!(e.starts_with("z.fio:2:") && e.contains("not compatible"), "{e}");
    assert!(p("[r]\nzonemode=strided\n").contains("zonesize must be specified"));
}

#[test]
fn zbd_on_a_namespace_that_is_not_zoned() {
    let jf = parse("[w]\nzonemode=zbd\nrw=write\nbs=64k\nsize=4z\n");
    let p = SourceParams { ns: 0, ns_bytes: 64 * M, seed: 1, ..SourceParams::default() };
    let e = jf.phases[0][0].source_with(p).err().unwrap().to_string();
    assert!(e.starts_with("z.fio:1: job \"w\"") && e.contains("not a zoned block device"), "{e}");
    assert!(e.contains("Specifying the zone size is mandatory"), "{e}");
    // With zonesize, fio emulates zones on the regular device: writes follow the emulated write
    // pointers, and no zone command reaches the drive.
    let jf = parse("[w]\nzonemode=zbd\nrw=write\nbs=64k\nzonesize=1m\nzonecapacity=512k\nsize=4z\nloops=2\n");
    let mut src = jf.phases[0][0].source_with(p).unwrap();
    let mut v = Vec::new();
    while src.fill(&mut v, 64).unwrap() > 0 {}
    assert!(v.iter().all(|io| io.op == Op::Write));
    let pass: Vec<u64> = (0..4).flat_map(|z| (0..8).map(move |i| z * M + i * 64 * K)).collect();
    assert_eq!(v.iter().map(|io| io.offset).collect::<Vec<_>>(), [pass.clone(), pass].concat());
}

#[test]
fn reads_stay_below_the_write_pointers() {
    // Phase 1 writes 2.5 zones; phase 2 reads the 6-zone region sequentially and at random.
    let text = "[global]\nzonemode=zbd\ndirect=1\nsize=6z\n[w]\nrw=write\nbs=64k\nio_size=2560k\n\
                [seq]\nstonewall\nrw=read\nbs=128k\n[rand]\nrw=randread\nbs=16k\nio_size=4m\n";
    let mut dev = drive(8, M, 0, 0, 0);
    let r = run(text, &mut dev, 5);
    assert_eq!(dev.counters().unmapped_read_units, 0);
    assert_eq!(r.stats[1].read_bytes, 2560 * K, "the sequential reader reads what was written, once");
    assert_eq!(r.stats[2].read_bytes, 4 * M);
    assert!(r.ios.iter().filter(|io| io.op == Op::Read).all(|io| io.offset + io.len as u64 <= 2 * M + 512 * K));
    // read_beyond_wp=1 reads the whole region, unwritten blocks included
    let mut dev = drive(8, M, 0, 0, 0);
    let r = run(&text.replace("[seq]\n", "[seq]\nread_beyond_wp=1\n"), &mut dev, 5);
    assert_eq!(r.stats[1].read_bytes, 6 * M);
    assert!(dev.counters().unmapped_read_units > 0);
}

#[test]
fn reads_of_empty_zones_end_the_job() {
    let mut dev = drive(8, M, 0, 0, 0);
    let r = run("[r]\nzonemode=zbd\nrw=randread\nbs=4k\n", &mut dev, 1);
    assert!(r.ios.is_empty());
}

#[test]
fn mixed_job_writes_before_it_reads() {
    let mut dev = drive(8, M, 0, 0, 0);
    let r = run("[m]\nzonemode=zbd\ndirect=1\nrw=randrw\nrwmixread=90\nbs=4k\nsize=2z\nio_size=1m\n", &mut dev, 3);
    assert_eq!(r.ios[0].op, Op::Write);
    assert!(r.stats[0].read_ios > 0);
    assert_eq!(dev.counters().unmapped_read_units, 0);
}

#[test]
fn capacity_not_a_multiple_of_the_block_size_finishes_zones() {
    let mut dev = drive(4, 768 * K, 0, 0, 0);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=512k\n", &mut dev, 1);
    // each zone takes one 512k block; the 256k rest is finished (fio's zbd_finish_zone)
    assert_eq!(r.stats[0].write_ios, 4);
    assert_eq!(r.stats[0].zone_finishes, 4);
    assert!((0..4).all(|z| state(&dev, z) == ZoneState::Full));
}

#[test]
fn trims_reset_zones_with_data() {
    let text = "[global]\nzonemode=zbd\ndirect=1\nsize=4z\n[w]\nrw=write\nbs=64k\nio_size=2560k\n[t]\nstonewall\nrw=trim\nbs=1m\n";
    let mut dev = drive(8, M, 0, 0, 0);
    let r = run(text, &mut dev, 1);
    assert_eq!(r.stats[1].zone_resets, 3, "zones 0, 1 and 2 held data, zone 3 did not");
    assert!((0..8).all(|z| state(&dev, z) == ZoneState::Empty));
}

#[test]
fn zone_reset_threshold_and_frequency() {
    // threshold 0, frequency 1: every write resets its zone first (when it holds data)
    let mut dev = drive(4, M, 0, 0, 0);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=64k\nsize=4z\nio_size=1m\nzone_reset_threshold=0\nzone_reset_frequency=1\n", &mut dev, 1);
    assert_eq!(r.stats[0].write_ios, 16);
    assert_eq!(r.stats[0].zone_resets, 15);
    assert!(writes(&r).all(|io| io.offset == 0));
    // threshold 0.5: no forced reset until half of the region holds data, then every 2nd write
    let mut dev = drive(4, M, 0, 0, 0);
    let text = "[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=64k\nsize=4z\nio_size=3m\nzone_reset_threshold=0.5\nzone_reset_frequency=0.5\n";
    let r = run(text, &mut dev, 1);
    let first = r.ios.iter().position(|io| io.op == Op::Zone(ZoneAction::Reset)).unwrap();
    let written: u64 = r.ios[..first].iter().filter(|io| io.op == Op::Write).map(|io| io.len as u64).sum();
    assert_eq!(written, 2 * M + 64 * K, "the threshold (2 MiB of data) is reached, then the 2nd write resets");
    // then it stays in zone 2: every 2nd write resets it, 16 writes after the threshold
    assert_eq!(r.stats[0].zone_resets, 8);
}

#[test]
fn concurrent_writers_need_their_own_zones() {
    let dev = drive(16, M, 0, 0, 0);
    let jf = parse("[w]\nzonemode=zbd\ndirect=1\nrw=randwrite\nbs=64k\nsize=8z\nnumjobs=2\n");
    let zones = ZbdZones::new();
    let _a = jf.phases[0][0].source_zbd(params(&dev, 1), &zones).unwrap();
    let e = jf.phases[0][1].source_zbd(params(&dev, 1), &zones).err().unwrap().to_string();
    assert!(e.contains("both write zones 0..8 at the same time") && e.contains("offset_increment"), "{e}");
    // with offset_increment each clone writes its own zones; both run interleaved
    let mut dev = drive(16, M, 4, 4, 0);
    let text = "[w]\nzonemode=zbd\ndirect=1\nrw=randwrite\nbs=64k\nsize=8z\noffset_increment=8z\nio_size=16m\nnumjobs=2\nmax_open_zones=4\n";
    let r = run(text, &mut dev, 9);
    assert!(r.max_active <= 4, "{}", r.max_active);
    assert!(r.ios.iter().take(400).any(|io| io.offset >= 8 * M) && r.ios.iter().take(400).any(|io| io.offset < 8 * M));
    assert_eq!(r.stats.iter().map(|s| s.write_bytes).sum::<u64>(), 32 * M);
    // jobs of later phases may use the same zones: they continue at the write pointers
    let mut dev = drive(8, M, 0, 0, 0);
    let r = run("[global]\nzonemode=zbd\ndirect=1\nbs=64k\nsize=4z\n[a]\nrw=write\nio_size=512k\n[b]\nstonewall\nrw=write\nio_size=1m\n", &mut dev, 1);
    let offs: Vec<u64> = writes(&r).map(|io| io.offset / K).collect();
    assert_eq!(offs, (0..24).map(|i| i * 64).collect::<Vec<_>>());
    assert_eq!(r.stats[1].zone_resets, 0);
    // a sequential writer that finds its first zone full resets it (fio's zbd_adjust_block)
    let mut dev = drive(8, M, 0, 0, 0);
    let r = run("[global]\nzonemode=zbd\ndirect=1\nbs=64k\nsize=4z\n[a]\nrw=write\nio_size=1m\n[b]\nstonewall\nrw=write\nio_size=128k\n", &mut dev, 1);
    assert_eq!(resets(&r), [0]);
    assert_eq!(r.stats[1].zone_resets, 1);
}

#[test]
fn shared_state_across_sources_of_a_thread() {
    // source_with shares the zone state between live sources of one namespace
    let dev = drive(8, M, 0, 0, 0);
    let jf = parse("[global]\nzonemode=zbd\ndirect=1\nbs=64k\nsize=4z\n[a]\nrw=write\nio_size=1m\n[b]\nstonewall\nrw=write\nio_size=64k\n");
    let mut a = jf.phases[0][0].source_with(params(&dev, 1)).unwrap();
    let mut b = jf.phases[1][0].source_with(params(&dev, 1)).unwrap();
    let mut v = Vec::new();
    while a.fill(&mut v, 64).unwrap() > 0 {}
    while b.fill(&mut v, 64).unwrap() > 0 {}
    // b's first zone is full: reset, then written from its start
    assert_eq!(v[v.len() - 2], Io { op: Op::Zone(ZoneAction::Reset), offset: 0, len: 0, ..v[v.len() - 2] });
    assert_eq!((v[v.len() - 1].op, v[v.len() - 1].offset), (Op::Write, 0));
    assert_eq!(v.len(), 16 + 2);
}

#[test]
fn state_from_a_zone_report() {
    let mut dev = drive(8, M, 4, 4, 0);
    dev.submit(&Io { op: Op::Write, ns: 0, offset: M, len: 65536, pid: wafsim_core::Pid::NONE }).unwrap();
    let report = dev.report_zones(0, 0, ReportFilter::All).unwrap();
    let zones = ZbdZones::from_report(&dev.zone_geometry(0).unwrap(), dev.namespace_bytes(0), 4096, &report).unwrap();
    assert_eq!(zones.write_pointer(1), Some(M + 65536));
    let jf = parse("[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=64k\noffset=1z\nsize=1z\nio_size=128k\n");
    let mut src = jf.phases[0][0].source_zbd(params(&dev, 1), &zones).unwrap();
    let mut v = Vec::new();
    while src.fill(&mut v, 64).unwrap() > 0 {}
    assert_eq!(v.iter().map(|io| io.offset).collect::<Vec<_>>(), [M + 65536, M + 131072]);
    for io in &v {
        dev.submit(io).unwrap();
    }
}

#[test]
fn conventional_zones_take_writes_anywhere() {
    let mut dev = drive(8, M, 0, 0, 2);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=randwrite\nbs=64k\nio_size=12m\n", &mut dev, 4);
    assert!(writes(&r).any(|io| io.offset < 2 * M));
    assert!(resets(&r).iter().all(|&o| o >= 2 * M));
}

/// The bytes the writes of `r` cover, as merged ranges; panics when a byte is written twice.
fn written_once(r: &Run) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = writes(r).map(|io| (io.offset, io.offset + io.len as u64)).collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s < last.1 => panic!("bytes {s}..{} written twice", last.1.min(e)),
            Some(last) if s == last.1 => last.1 = e,
            _ => out.push((s, e)),
        }
    }
    out
}

/// A sequential write of `len` bytes at `at` as the drive gets it: one command per zone.
fn split(at: u64, len: u64, zone_size: u64) -> Vec<(Op, u64, u64)> {
    let (mut at, end) = (at, at + len);
    let mut v = Vec::new();
    while at < end {
        let cut = ((at / zone_size + 1) * zone_size).min(end);
        v.push((Op::Write, at, cut - at));
        at = cut;
    }
    v
}

/// What fio does with a sequential write job over zones `first..last` whose first `conv` zones
/// (of the drive) are conventional: the conventional zones in order, `bs` at a time (the write
/// that would run into the first sequential zone ends at its start), then each sequential zone
/// at its write pointer up to the last whole block, the rest finished.
fn sequential_reference(zone_size: u64, conv: u64, first: u64, last: u64, bs: u64) -> Vec<(Op, u64, u64)> {
    let mut v = Vec::new();
    let conv_end = conv * zone_size;
    let mut at = first * zone_size;
    while at < conv_end.min(last * zone_size) {
        let len = bs.min(conv_end - at);
        v.extend(split(at, len, zone_size));
        at += len;
    }
    for z in first.max(conv)..last {
        let start = z * zone_size;
        let blocks = zone_size / bs;
        v.extend((0..blocks).map(|i| (Op::Write, start + i * bs, bs)));
        if !zone_size.is_multiple_of(bs) {
            v.push((Op::Zone(ZoneAction::Finish), start, 0));
        }
    }
    v
}

fn ops(r: &Run) -> Vec<(Op, u64, u64)> {
    r.ios.iter().map(|io| (io.op, io.offset, io.len as u64)).collect()
}

/// 2.56 MiB: the zone size of the scaled-down host-managed SMR disk, not a multiple of 1 MiB.
const SMR_ZONE: u64 = 2_682_880;

#[test]
fn sequential_write_crosses_from_conventional_into_sequential_zones() {
    // Zone size a multiple of bs: 4 conventional and 36 sequential zones of 2 MiB.
    let mut dev = smr(40, 2 * M, 4);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=1m\nsize=100%\n", &mut dev, 1);
    assert_eq!(ops(&r), sequential_reference(2 * M, 4, 0, 40, M));
    assert_eq!(written_once(&r), [(0, 80 * M)]);
    assert!((4..40).all(|z| dev.zones().state(z) == ZoneState::Full));
    assert_eq!((r.stats[0].write_bytes, r.stats[0].zone_resets, r.stats[0].zone_finishes), (80 * M, 0, 0));

    // A region that starts in the conventional zones and ends inside the sequential ones.
    let mut dev = smr(40, 2 * M, 4);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=1m\noffset=2z\nsize=6z\n", &mut dev, 1);
    assert_eq!(ops(&r), sequential_reference(2 * M, 4, 2, 8, M));
    assert_eq!(written_once(&r), [(4 * M, 16 * M)]);
    assert!((4..8).all(|z| dev.zones().state(z) == ZoneState::Full));
    assert!((8..40).all(|z| dev.zones().state(z) == ZoneState::Empty));

    // loops=2: the second pass writes the conventional zones again, then resets each
    // sequential zone before writing it again.
    let mut dev = smr(12, 2 * M, 4);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=1m\nsize=100%\nloops=2\n", &mut dev, 1);
    let pass = sequential_reference(2 * M, 4, 0, 12, M);
    let mut second = Vec::new();
    for op in &pass {
        if op.1 >= 8 * M && op.1 % (2 * M) == 0 {
            second.push((Op::Zone(ZoneAction::Reset), op.1, 0));
        }
        second.push(*op);
    }
    assert_eq!(ops(&r), [pass, second].concat());
    assert_eq!(r.stats[0].zone_resets, 8);
    assert!((4..12).all(|z| dev.zones().state(z) == ZoneState::Full));
}

#[test]
fn sequential_write_with_a_zone_size_not_a_multiple_of_bs() {
    // 4 conventional and 36 sequential zones of 2.56 MiB, bs=1m: the conventional area ends
    // 240 KiB past the last whole MiB. fio's conventional-zone rule would move that write back
    // into zone 3 (and the job would then cycle there); the write ends at zone 4 instead.
    let conv_end = 4 * SMR_ZONE;
    for (bs, text) in [(M, "bs=1m"), (768 * K, "bs=768k"), (M, "bsrange=1m-1m")] {
        let mut dev = smr(40, SMR_ZONE, 4);
        let r = run(&format!("[w]\nzonemode=zbd\ndirect=1\nrw=write\n{text}\nsize=100%\n"), &mut dev, 1);
        assert_eq!(ops(&r), sequential_reference(SMR_ZONE, 4, 0, 40, bs), "{text}");
        let tail = conv_end / bs * bs;
        assert!(writes(&r).any(|io| io.offset == tail && io.offset + io.len as u64 == conv_end), "{text}");
        // every byte at most once: the conventional area whole, each sequential zone up to its
        // last whole block; the rest of each sequential zone is finished
        let mut expect = vec![(0, conv_end + SMR_ZONE / bs * bs)];
        expect.extend((5..40).map(|z| (z * SMR_ZONE, z * SMR_ZONE + SMR_ZONE / bs * bs)));
        assert_eq!(written_once(&r), expect, "{text}");
        assert!((4..40).all(|z| dev.zones().state(z) == ZoneState::Full), "{text}");
        assert_eq!((r.stats[0].zone_resets, r.stats[0].zone_finishes), (0, 36), "{text}");
        assert!(r.ios.iter().all(|io| io.offset % 4096 == 0 && io.len % 4096 == 0));
    }

    // The same on a ZNS drive: 2 conventional zones of 1 MiB, bs=192k (128 KiB left at the end).
    let mut dev = drive(8, M, 0, 0, 2);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=192k\nsize=100%\n", &mut dev, 1);
    assert_eq!(ops(&r), sequential_reference(M, 2, 0, 8, 192 * K));
    assert!((2..8).all(|z| state(&dev, z) == ZoneState::Full));

    // size=10% of a larger disk: the job leaves the conventional zones and stops at its end
    // (10% is 40 zones, aligned down to bs, then to whole zones: 39 zones, as in fio).
    let mut dev = smr(400, SMR_ZONE, 12);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=write\nbs=1m\nsize=10%\n", &mut dev, 1);
    assert_eq!(ops(&r), sequential_reference(SMR_ZONE, 12, 0, 39, M));
    assert!((12..39).all(|z| dev.zones().state(z) == ZoneState::Full));
    assert!((39..400).all(|z| dev.zones().state(z) == ZoneState::Empty));
}

#[test]
fn random_writes_over_conventional_and_sequential_zones() {
    for (zone_size, bs) in [(SMR_ZONE, "1m"), (SMR_ZONE, "256k"), (2 * M, "1m"), (2 * M, "64k")] {
        let mut dev = smr(40, zone_size, 4);
        let conv_end = 4 * zone_size;
        let text = format!("[w]\nzonemode=zbd\ndirect=1\nrw=randwrite\nbs={bs}\nio_size=200m\n");
        let r = run(&text, &mut dev, 3);
        assert_eq!(r.stats[0].write_bytes, 200 * M, "{bs}");
        assert!(r.max_open <= 8);
        // writes in conventional zones never run into the first sequential zone
        assert!(writes(&r).all(|io| io.offset >= conv_end || io.offset + io.len as u64 <= conv_end), "{bs}");
        assert!(writes(&r).any(|io| io.offset < conv_end), "{bs}");
        let zones: std::collections::BTreeSet<u64> = writes(&r).filter(|io| io.offset >= conv_end).map(|io| io.offset / zone_size).collect();
        // (random writes stay in the write-zone set, reset when full: not every zone is used)
        assert!(zones.len() >= 18, "{bs}: {} sequential zones written", zones.len());
        assert!(resets(&r).iter().all(|&o| o >= conv_end && o % zone_size == 0));
    }
}

#[test]
fn number_ios_and_time_based_bound_zbd_jobs() {
    let mut dev = drive(8, M, 0, 0, 0);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=randwrite\nbs=64k\nnumber_ios=100\n", &mut dev, 1);
    assert_eq!(r.stats[0].write_ios, 100);
    let mut dev = drive(8, M, 0, 0, 0);
    let r = run("[w]\nzonemode=zbd\ndirect=1\nrw=randwrite\nbs=64k\ntime_based\nruntime=10\nio_size=20m\n", &mut dev, 1);
    assert_eq!(r.stats[0].write_bytes, 20 * M);
}

#[test]
fn strided_reads_zonesize_bytes_then_skip() {
    let jf = parse("[s]\nzonemode=strided\nzonesize=64k\nzoneskip=192k\nrw=read\nbs=16k\nsize=512k\n");
    let mut src = jf.phases[0][0].source(0, M, 1).unwrap();
    let mut v = Vec::new();
    while src.fill(&mut v, 64).unwrap() > 0 {}
    // 64k at 0, then at 256k, 512k, 768k, then back to the start (fio wraps at the device end)
    let offs: Vec<u64> = v.iter().map(|io| io.offset / K).collect();
    let zone = |s: u64| (0..4).map(move |i| s + 16 * i);
    let expect: Vec<u64> = [0, 256, 512, 768, 0, 256, 512, 768].into_iter().flat_map(zone).collect();
    assert_eq!(offs, expect);
    // zonesize without zonemode is strided too (fio's default); random offsets stay in the window
    let jf = parse("[s]\nzonesize=64k\nzonerange=128k\nzoneskip=128k\nrw=randread\nbs=16k\nsize=512k\n");
    let mut src = jf.phases[0][0].source(0, M, 1).unwrap();
    let mut v = Vec::new();
    while src.fill(&mut v, 64).unwrap() > 0 {}
    assert_eq!(v.len(), 32);
    for (i, io) in v.iter().enumerate() {
        let window = (i as u64 / 4 % 4) * 256 * K;
        assert!((window..window + 128 * K).contains(&io.offset), "I/O {i} at {}", io.offset);
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A job file of 1..=3 clones writing their own zones (then, after a stonewall, a reader,
    /// writer or trimmer over everything), on a drive with or without open/active limits and
    /// conventional zones, the jobs interleaved at random.
    fn case() -> impl Strategy<Value = (u32, u64, u32, u32, u32, String, u64)> {
        (
            6u32..24,
            proptest::sample::select(vec![256 * K, 512 * K, 768 * K, 1024 * K, 640 * K]),
            proptest::sample::select(vec![(0u32, 0u32), (2, 2), (3, 5), (4, 4), (0, 3), (6, 6)]),
            1u32..=3,
            proptest::sample::select(vec!["write", "randwrite", "randrw", "rw"]),
            proptest::sample::select(vec!["16k", "64k", "128k", "4k-256k", "64k:192k"]),
            proptest::sample::select(vec!["", "max_open_zones=2\n", "job_max_open_zones=1\nmax_open_zones=2\n", "zone_reset_threshold=0.3\nzone_reset_frequency=0.25\n", "verify=crc32c\n"]),
            proptest::sample::select(vec!["read", "randread", "randwrite", "trim"]),
            (any::<u64>(), 0u32..=2),
        )
            .prop_map(|(zones, cap, (mo, ma), jobs, rw, bs, extra, second, (seed, conv))| {
                let per = (zones / jobs).max(1);
                let bs = match bs {
                    "4k-256k" => "bsrange=4k-256k\n".to_string(),
                    "64k:192k" => "bssplit=64k/50:192k/50\n".to_string(),
                    b => format!("bs={b}\n"),
                };
                // limits the drive refuses are not the point here
                let extra = if extra.contains("max_open_zones=2") && mo != 0 && mo < 2 { "" } else { extra };
                let second_bs = if second == "trim" { "bs=1m\n".to_string() } else { bs.clone() };
                let text = format!(
                    "[global]\nzonemode=zbd\ndirect=1\n{extra}[w]\nrw={rw}\n{bs}size={per}z\noffset_increment={per}z\nnumjobs={jobs}\nio_size={}k\n\
                     [second]\nstonewall\nrw={second}\n{second_bs}io_size={}k\n",
                    per as u64 * 1536,
                    zones as u64 * 700
                );
                (zones, cap, mo, ma, conv, text, seed)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn every_stream_is_legal_on_the_drive((zones, cap, mo, ma, conv, text, seed) in case()) {
            let mut dev = drive(zones, cap, mo, ma, conv);
            let jf = parse(&text);
            let shared = ZbdZones::new();
            let mut sources: Vec<Box<dyn IoSource>> = Vec::new();
            let mut stage = Vec::new();
            for job in jf.jobs() {
                match job.source_zbd(params(&dev, seed), &shared) {
                    Ok(s) => sources.push(s),
                    // refused up front (e.g. a job_max_open_zones the limits make pointless)
                    Err(e) => { let e = e.to_string(); prop_assert!(e.contains("z.fio:"), "{}", e); return Ok(()); }
                }
                stage.push((0, job.phase));
            }
            let n = sources.len();
            let mut il = Interleave::staged(sources, vec![1; n], stage, InterleaveMode::Random { seed });
            let mut buf = Vec::new();
            let mut total = 0usize;
            while il.fill(&mut buf, 1 + (seed % 300) as usize).unwrap() > 0 {
                for io in buf.drain(..) {
                    if let Err(e) = dev.submit(&io) {
                        prop_assert!(false, "{:?} after {} I/Os: {}\n{}", io, total, e, text);
                    }
                    if mo > 0 {
                        prop_assert!(dev.zones().open_zones() <= mo);
                    }
                    total += 1;
                }
                prop_assert!(total < 2_000_000);
            }
            dev.check_invariants().unwrap();
            // the readers never read unwritten blocks (fio reads a conventional zone as asked,
            // also where the read runs into the next zone)
            if conv == 0 {
                prop_assert_eq!(dev.counters().unmapped_read_units, 0, "{}", text);
            }
        }
    }
}

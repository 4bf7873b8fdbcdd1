//! dm-zoned model: data placement against a reference model (property test and a long seeded
//! run, every command checked against the real SMR disks' zone rules), write amplification
//! against hand-derived figures, the kernel's watermark rule, the step API (abort of a job by
//! user I/O, concurrent workers), the block-device surface, and configuration errors.

use proptest::prelude::*;
use std::collections::{BTreeMap, VecDeque};
use wafsim_core::blockdev::{BlockDevice, ZoneAction};
use wafsim_core::smr::{SmrConfig, SmrDevice};
use wafsim_core::zns::{ZnsConfig, ZnsDevice};
use wafsim_core::zone::{ReportFilter, ZoneStatus};
use wafsim_core::{Device, DeviceConfig, DeviceError, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, Rng};
use wafsim_host::dmzoned::{ConfigError, DeviceShape, DmZonedConfig, Layout};
use wafsim_host::{
    DevId, DevIo, DmZoned, DmZonedDevice, IoClass, MapStatus, ReclaimCase, ReclaimProgress, StallReason,
};

const KIB: u64 = 1024;
const MIB: u64 = 1 << 20;
const BS: u64 = 4096;

type Dmz = DmZonedDevice<Device, SmrDevice>;

fn io(op: Op, offset: u64, len: u64) -> Io {
    Io { op, ns: 0, offset, len: len as u32, pid: Pid::NONE }
}

/// A flash device of exactly `bytes` logical bytes (the regular cache device).
fn flash(bytes: u64) -> Device {
    let eu = 64 * KIB;
    let eus = (bytes * 3 / 2).div_ceil(eu) + 4;
    Device::new(DeviceConfig {
        logical_bytes: bytes,
        physical_bytes: eus * eu,
        mapping_unit: 4096,
        erase_unit_bytes: eu,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement: Placement::Conventional,
        namespaces: vec![NamespaceConfig { name: "cache".into(), size_bytes: bytes, placement_handles: vec![0] }],
        seed: 1,
        slc_cache: None,
    })
    .unwrap()
}

/// An SMR disk with at most 4 open zones (so implicit closes happen too).
fn smr(zones: u32, zone_size: u64, conventional: u32) -> SmrDevice {
    SmrDevice::new(SmrConfig::small(zones, zone_size, conventional, 4)).unwrap()
}

/// Multi-device set: a cache device of `cache_zones` zones and `disks` disks.
fn multi(cache_zones: u64, disks: usize, disk_zones: u32, conv: u32, zone: u64, cfg: DmZonedConfig) -> Dmz {
    let d = (0..disks).map(|_| smr(disk_zones, zone, conv)).collect();
    DmZonedDevice::new(Some(flash(cache_zones * zone)), d, &cfg).unwrap()
}

/// Single-device set on one disk with conventional zones.
fn single(zones: u32, conv: u32, zone: u64, cfg: DmZonedConfig) -> Dmz {
    DmZonedDevice::new(None, vec![smr(zones, zone, conv)], &cfg).unwrap()
}

fn cfg(reserved: u32, subjob: u64) -> DmZonedConfig {
    DmZonedConfig { reserved_seq: reserved, kcopyd_subjob_bytes: subjob as u32 }
}

// ---------------------------------------------------------------------------------------------
// Reference model
// ---------------------------------------------------------------------------------------------

type Loc = (DevId, u64);

/// Where each user block's latest data is, built only from the device commands the layer
/// emits: user writes place blocks, reclaim copies move them.
struct Reference {
    loc: Vec<Option<Loc>>,
    owner: BTreeMap<Loc, u64>,
    zone: u64,
    /// Metadata device and the byte range of both sets on it.
    meta: (DevId, u64),
}

impl Reference {
    fn new(l: &Layout) -> Reference {
        let blocks = l.capacity() / BS;
        let meta_end = l.meta_offset[1] + l.nr_meta_zones as u64 * l.zone_size;
        Reference {
            loc: vec![None; blocks as usize],
            owner: BTreeMap::new(),
            zone: l.zone_size,
            meta: (l.meta_dev, meta_end),
        }
    }

    fn set(&mut self, b: u64, l: Option<Loc>) -> Result<(), String> {
        if let Some(old) = self.loc[b as usize].take() {
            self.owner.remove(&old);
        }
        if let Some(l) = l {
            if let Some(&o) = self.owner.get(&l) {
                return Err(format!("block {b} placed at {l:?}, which holds the latest data of block {o}"));
            }
            self.owner.insert(l, b);
        }
        self.loc[b as usize] = l;
        Ok(())
    }

    fn range_free(&self, dev: DevId, off: u64, len: u64, what: &str) -> Result<(), String> {
        if let Some((l, b)) = self.owner.range((dev, off)..(dev, off + len)).next() {
            return Err(format!("{what} over {dev:?} [{off}, +{len}) destroys block {b} at {l:?}"));
        }
        Ok(())
    }

    /// Apply the commands logged for one user command. `blocks`: its block range;
    /// `expected_reads`: for a read, the locations it must read, in order.
    fn apply(
        &mut self,
        op: Op,
        blocks: std::ops::Range<u64>,
        log: &[DevIo],
        mut expected_reads: VecDeque<Loc>,
    ) -> Result<(), String> {
        let mut next_user = blocks.start;
        let mut i = 0;
        while i < log.len() {
            let d = log[i];
            let (off, len) = (d.io.offset, d.io.len as u64);
            match (d.class, d.io.op) {
                (IoClass::User, Op::Write) => {
                    if op != Op::Write {
                        return Err(format!("user write emitted for a {op:?}"));
                    }
                    for k in 0..len / BS {
                        if next_user >= blocks.end {
                            return Err("more user data written than the command carries".into());
                        }
                        self.set(next_user, Some((d.dev, off + k * BS)))?;
                        next_user += 1;
                    }
                }
                (IoClass::User, Op::Read) => {
                    for k in 0..len / BS {
                        let got = (d.dev, off + k * BS);
                        match expected_reads.pop_front() {
                            Some(e) if e == got => {}
                            other => return Err(format!("read of {got:?}, expected {other:?}")),
                        }
                    }
                }
                (IoClass::User | IoClass::ReclaimReset, Op::Zone(ZoneAction::Reset)) => {
                    if off % self.zone != 0 {
                        return Err(format!("reset at unaligned offset {off}"));
                    }
                    self.range_free(d.dev, off, self.zone, "reset")?;
                }
                (IoClass::ReclaimRead, Op::Read) => {
                    let w = log.get(i + 1).copied().ok_or("reclaim read without its write")?;
                    if w.class != IoClass::ReclaimWrite || w.io.op != Op::Write || w.io.len != d.io.len {
                        return Err(format!("reclaim read not followed by its write: {w:?}"));
                    }
                    if off % self.zone != w.io.offset % self.zone {
                        return Err("reclaim copy changes the in-zone offset".into());
                    }
                    for k in 0..len / BS {
                        let src = (d.dev, off + k * BS);
                        let dst = (w.dev, w.io.offset + k * BS);
                        let Some(&b) = self.owner.get(&src) else {
                            return Err(format!("reclaim copies {src:?}, which holds no latest data"));
                        };
                        self.set(b, None)?;
                        self.set(b, Some(dst))?;
                    }
                    i += 1;
                }
                (IoClass::ReclaimZero, Op::Write) => self.range_free(d.dev, off, len, "zero-fill")?,
                (IoClass::Metadata, Op::Write) => {
                    if d.dev != self.meta.0 || off + len > self.meta.1 {
                        return Err(format!("metadata write outside the metadata zones: {d:?}"));
                    }
                    self.range_free(d.dev, off, len, "metadata write")?;
                }
                (IoClass::Metadata, Op::Flush) => {}
                _ => return Err(format!("unexpected command {d:?}")),
            }
            i += 1;
        }
        if op == Op::Write && next_user != blocks.end {
            return Err(format!("write placed {} of {} blocks", next_user - blocks.start, blocks.end - blocks.start));
        }
        if !expected_reads.is_empty() {
            return Err(format!("{} blocks with data were not read", expected_reads.len()));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy)]
enum Cmd {
    Write(u64, u64),
    Read(u64, u64),
    Trim(u64, u64),
    Flush,
    Idle,
}

/// Run `cmds` on `dev`, checking after every command: the reference model against
/// `DmZoned::locate` for every block, the layer's invariants, the disks' invariants, and that
/// every byte the layer counts as written reached a device.
fn run_checked(dev: &mut Dmz, cmds: &[Cmd]) -> Result<(), String> {
    dev.set_io_log(true);
    let mut r = Reference::new(dev.layer().layout());
    let nblocks = dev.layer().capacity() / BS;
    let mut user_written = 0;
    for (step, &c) in cmds.iter().enumerate() {
        let ctx = |e: String| format!("command {step} {c:?}: {e}");
        let (op, range) = match c {
            Cmd::Write(b, n) => (Op::Write, b..(b + n).min(nblocks)),
            Cmd::Read(b, n) => (Op::Read, b..(b + n).min(nblocks)),
            Cmd::Trim(b, n) => (Op::Trim, b..(b + n).min(nblocks)),
            Cmd::Flush => (Op::Flush, 0..0),
            Cmd::Idle => (Op::Flush, 0..0),
        };
        let mut expected = VecDeque::new();
        if op == Op::Read {
            expected = range.clone().filter_map(|b| r.loc[b as usize]).collect();
        }
        if op == Op::Trim {
            for b in range.clone() {
                r.set(b, None).map_err(ctx)?;
            }
        }
        let res = match c {
            Cmd::Idle => dev.idle().map(|_| ()),
            Cmd::Flush => dev.submit(&io(Op::Flush, 0, 0)).map(|_| ()),
            _ => dev.submit(&io(op, range.start * BS, (range.end - range.start) * BS)).map(|_| ()),
        };
        res.map_err(|e| ctx(format!("device error {e}")))?;
        if op == Op::Write {
            user_written += (range.end - range.start) * BS;
        }
        let log = dev.take_io_log();
        r.apply(op, range, &log, expected).map_err(ctx)?;
        let l = dev.layer();
        l.check_invariants().map_err(ctx)?;
        for b in 0..nblocks {
            let got = l.locate(b * BS);
            if got != r.loc[b as usize] {
                return Err(ctx(format!("block {b}: layer says {got:?}, reference {:?}", r.loc[b as usize])));
            }
        }
        if l.counters().host_write_bytes != user_written {
            return Err(ctx("host counter disagrees with the bytes written".into()));
        }
        let c = dev.counters();
        if (c.host_units, c.media_units()) != (user_written / BS, l.device_bytes_written() / BS) {
            return Err(ctx(format!("as a device: {} host, {} media units", c.host_units, c.media_units())));
        }
        for (i, d) in dev.disks().iter().enumerate() {
            d.check_invariants().map_err(ctx)?;
            if d.counters().host_write_bytes != l.traffic(DevId::Disk(i as u32)).write_bytes() {
                return Err(ctx(format!(
                    "disk {i}: device counted {} bytes, layer {}",
                    d.counters().host_write_bytes,
                    l.traffic(DevId::Disk(i as u32)).write_bytes()
                )));
            }
        }
        if let Some(cd) = dev.cache_device() {
            if cd.counters().host_write_bytes != l.traffic(DevId::Cache).write_bytes() {
                return Err(ctx("cache device write bytes disagree".into()));
            }
        }
    }
    Ok(())
}

/// Config 0: cache of 12 x 64 KiB + 2 disks of 12 sequential zones, 3 reserved, default kcopyd
/// pieces (a 64 KiB zone copies in one piece). 27 chunks, 6 cache zones for data.
/// Config 1: one disk of 28 x 64 KiB zones, 10 conventional, 2 reserved, 16 KiB pieces.
/// 22 chunks, 6 random zones for data.
/// Config 2: cache of 10 zones + 3 disks of 10 zones (2 conventional each), 4 reserved, 16 KiB
/// pieces. 30 chunks, 4 cache zones for data; reclaim can fall back to conventional zones.
fn small_config(i: usize) -> Dmz {
    let z = 64 * KIB;
    match i {
        0 => multi(12, 2, 12, 0, z, cfg(3, 512 * KIB)),
        1 => single(28, 10, z, cfg(2, 16 * KIB)),
        _ => multi(10, 3, 10, 2, z, cfg(4, 16 * KIB)),
    }
}

#[test]
fn small_configs_have_the_expected_geometry() {
    let want = [(27, 6, 3), (22, 6, 2), (30, 4, 3)];
    for (i, &(chunks, cache, meta_per_set)) in want.iter().enumerate() {
        let d = small_config(i);
        let l = d.layer().layout();
        assert_eq!(
            (l.nr_chunks, d.layer().cache_usage().total, l.nr_meta_zones),
            (chunks, cache, meta_per_set),
            "config {i}"
        );
    }
}

fn cmd_strategy(nblocks: u64) -> impl Strategy<Value = Cmd> {
    prop_oneof![
        10 => (0..nblocks, 1u64..24).prop_map(|(b, n)| Cmd::Write(b, n)),
        // whole chunk-aligned writes (16-block chunks)
        3 => (0..nblocks / 16, 1u64..3).prop_map(|(c, k)| Cmd::Write(c * 16, 16 * k)),
        4 => (0..nblocks, 1u64..40).prop_map(|(b, n)| Cmd::Read(b, n)),
        3 => (0..nblocks, 1u64..40).prop_map(|(b, n)| Cmd::Trim(b, n)),
        1 => Just(Cmd::Flush),
        1 => Just(Cmd::Idle),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// Random writes, reads, discards, flushes and idle periods: after every command the layer's
    /// read mapping equals the reference built from the emitted commands, no command breaks a
    /// zone rule of the real disks, and nothing valid is overwritten, zero-filled or reset.
    #[test]
    fn mapping_follows_the_last_write(which in 0usize..3, cmds in prop::collection::vec(cmd_strategy(27 * 16), 1..150)) {
        let mut dev = small_config(which);
        let n = dev.layer().capacity() / BS;
        let cmds: Vec<Cmd> = cmds.into_iter().map(|c| match c {
            Cmd::Write(b, k) => Cmd::Write(b % n, k),
            Cmd::Read(b, k) => Cmd::Read(b % n, k),
            Cmd::Trim(b, k) => Cmd::Trim(b % n, k),
            o => o,
        }).collect();
        if let Err(e) = run_checked(&mut dev, &cmds) {
            prop_assert!(false, "config {}: {}", which, e);
        }
    }
}

/// A long seeded run per configuration: enough traffic to use up the reserved zones, run
/// reclaim out of destinations, and fill the whole namespace.
#[test]
fn long_random_runs_stay_consistent() {
    for which in 0..3 {
        let mut dev = small_config(which);
        let n = dev.layer().capacity() / BS;
        let mut rng = Rng::new(0xd2 + which as u64);
        let mut cmds: Vec<Cmd> = (0..n / 16).map(|c| Cmd::Write(c * 16, 16)).collect();
        for _ in 0..1500 {
            let b = rng.below(n);
            cmds.push(match rng.below(100) {
                0..=59 => Cmd::Write(b, 1 + rng.below(20)),
                60..=79 => Cmd::Read(b, 1 + rng.below(40)),
                80..=93 => Cmd::Trim(b, 1 + rng.below(30)),
                94..=97 => Cmd::Flush,
                _ => Cmd::Idle,
            });
        }
        run_checked(&mut dev, &cmds).unwrap_or_else(|e| panic!("config {which}: {e}"));
        let s = dev.layer().reclaim_stats();
        assert!(s.zones[1] > 0 && s.zones[3] > 0, "config {which}: rnd_data and seq_data both ran: {s:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Write amplification
// ---------------------------------------------------------------------------------------------

/// The layer's unmapped percentage, computed independently (`dmz_reclaim_percentage`).
fn pct(unmapped: u32, total: u32) -> u32 {
    if unmapped <= 1 {
        0
    } else {
        unmapped * 100 / total
    }
}

/// 1 MiB zones: cache of 16 zones + 2 disks of 40 sequential zones, 4 reserved.
/// 96 zones, 96 bitmap blocks + 1 map block + super block = 98 blocks = 1 zone per set, so 2
/// metadata zones, 14 cache zones for data, 96 - 2 - 4 = 90 chunks.
fn wa_set() -> Dmz {
    let d = multi(16, 2, 40, 0, MIB, cfg(4, 512 * KIB));
    let l = d.layer().layout();
    assert_eq!((l.nr_meta_zones, l.nr_chunks, d.layer().cache_usage().total), (1, 90, 14));
    d
}

/// Sequential fill of whole chunks. Every write to an unmapped chunk lands in a cache zone
/// (dm-zoned never writes a new chunk straight to a sequential zone), and reclaim copies it once
/// into a sequential zone, so the data cost is 2x once everything has been reclaimed.
///
/// Hand derivation, N = 60 chunks of Z = 1 MiB, C = 14 cache zones:
/// - the k-th write leaves u = 14 - k zones unmapped; reclaim starts at the first u with
///   u*100/14 <= 30: u = 4 (28 %), the 10th write (j1 = 10). One zone is reclaimed (u = 5,
///   35 %), and from then on every write is followed by exactly one reclaimed zone. Reclaimed:
///   N - j1 + 1 = 51 zones; 9 chunks stay in the cache.
/// - data written: 60 MiB user + 51 MiB reclaim; no zero-fill (the cache zones are full).
/// - metadata: the first reclaim flush finds the map block, the bitmap blocks of the 10 cache
///   zones written so far and the destination's bitmap block dirty (12 blocks: 2*12 + 2 super
///   blocks = 26 writes); each later one finds the map block and the bitmap blocks of the new
///   cache zone, the victim and the destination (4: 10 writes): 26 + 50*10 = 526 blocks.
/// - idle then reclaims the 9 cached chunks: 9 MiB more, 9 flushes of 3 dirty blocks (map,
///   victim, destination: 8 writes each) = 72 blocks; the closing periodic flush finds nothing.
#[test]
fn sequential_fill_costs_two_writes() {
    let mut d = wa_set();
    let n = 60u64;
    for c in 0..n {
        d.submit(&io(Op::Write, c * MIB, MIB)).unwrap();
    }
    let c_zones = 14;
    let j1 = (1..=c_zones).find(|&j| pct(c_zones - j, c_zones) <= 30).unwrap() as u64;
    assert_eq!(j1, 10);
    let l = d.layer();
    let user = n * MIB;
    let reclaimed = n - j1 + 1;
    assert_eq!(l.reclaim_stats().zones, [0, reclaimed, 0, 0]);
    let meta_blocks = 2 * (j1 + 2) + 2 + (n - j1) * 10;
    assert_eq!(meta_blocks, 526);
    assert_eq!(l.metadata_bytes(), meta_blocks * BS);
    let reclaim_written: u64 = (0..2).map(|i| l.reclaim_bytes(DevId::Disk(i)).1).sum();
    assert_eq!(reclaim_written, reclaimed * MIB);
    assert_eq!(l.reclaim_bytes(DevId::Cache).0, reclaimed * MIB);
    let expect = (user + reclaimed * MIB + meta_blocks * BS) as f64 / user as f64;
    assert!((l.waf() - expect).abs() < 1e-12, "WAF {} vs {expect}", l.waf());
    assert!((l.waf() - 1.885).abs() < 0.001);
    let u = l.cache_usage();
    assert_eq!((u.free, u.data, u.buffer), (5, 9, 0));
    // Two workers take zones alternately: the disks share the copies evenly.
    let (a, b) = (l.reclaim_bytes(DevId::Disk(0)).1, l.reclaim_bytes(DevId::Disk(1)).1);
    assert!(a.abs_diff(b) <= MIB, "disk 0 {a} vs disk 1 {b}");

    assert_eq!(d.idle().unwrap(), 9);
    let l = d.layer();
    let meta_blocks = meta_blocks + 9 * 8;
    assert_eq!(l.metadata_bytes(), meta_blocks * BS);
    let data = l.device_bytes_written() - l.metadata_bytes();
    assert_eq!(data, 2 * user, "data WAF is exactly 2 after everything is reclaimed");
    let expect = (2 * user + meta_blocks * BS) as f64 / user as f64;
    assert!((l.waf() - expect).abs() < 1e-12);
    assert_eq!(l.chunk_stats().in_seq, n as u32);
    assert_eq!(l.cache_usage().free, 14);
}

/// Small overwrites of a chunk that sits in a sequential zone: u = 16 single-block writes at
/// distinct offsets of a full chunk (V = 256 valid blocks) go to a buffer zone; reclaim merges
/// the V - u old blocks into the buffer (seq_data) and then moves all V blocks to a new
/// sequential zone (rnd_data): device writes u + (V - u) + V = 2V, so WA = 2V/u = 32.
/// Metadata: two flushes of 3 dirty blocks (map, buffer bitmap, data-zone bitmap; then map,
/// buffer bitmap, destination bitmap) = 16 blocks, so the total is (512 + 16) / 16 = 33.
#[test]
fn small_overwrites_cost_two_v_over_u() {
    let mut d = wa_set();
    d.submit(&io(Op::Write, 0, MIB)).unwrap();
    assert_eq!(d.idle().unwrap(), 1);
    assert_eq!(d.layer().chunk_stats().in_seq, 1);
    let (dev0, meta0, disk_read0) = (
        d.layer().device_bytes_written(),
        d.layer().metadata_bytes(),
        d.layer().reclaim_bytes(DevId::Disk(0)).0 + d.layer().reclaim_bytes(DevId::Disk(1)).0,
    );
    let v = 256u64;
    let u = 16u64;
    for i in 0..u {
        let b = (i * 97 + 13) % v;
        d.submit(&io(Op::Write, b * BS, BS)).unwrap();
    }
    assert_eq!(d.layer().chunk_stats().buffered, 1);
    assert_eq!(d.idle().unwrap(), 2);
    let l = d.layer();
    assert_eq!(l.reclaim_stats().zones, [0, 2, 0, 1], "rnd_data (twice: fill and final move) and seq_data once");
    let data = (l.device_bytes_written() - dev0) - (l.metadata_bytes() - meta0);
    assert_eq!(data, 2 * v * BS);
    assert_eq!(data as f64 / (u * BS) as f64, 2.0 * v as f64 / u as f64);
    assert_eq!(l.metadata_bytes() - meta0, 16 * BS);
    let total = (l.device_bytes_written() - dev0) as f64 / (u * BS) as f64;
    assert_eq!(total, 33.0);
    // Reads: V - u blocks of the sequential zone (merge), then V of the buffer (move).
    let disk_read = l.reclaim_bytes(DevId::Disk(0)).0 + l.reclaim_bytes(DevId::Disk(1)).0 - disk_read0;
    assert_eq!(disk_read, (v - u) * BS);
    assert_eq!(l.chunk_stats().in_seq, 1);
    assert_eq!(
        l.traffic(DevId::Disk(0)).resets + l.traffic(DevId::Disk(1)).resets,
        1,
        "the old sequential zone was reset"
    );
}

/// Writes past the write pointer of a sequential chunk are buffered; reclaim appends them to the
/// sequential zone and zero-fills the gap (dmz_reclaim_buf + dmz_reclaim_align_wp). Chunk half
/// written (wp = 128), then blocks 200..204: writes 4 (user) + 72 (zeros) + 4 (copy) = 80 blocks,
/// WA 20; one flush of 3 dirty blocks (map, buffer bitmap, data bitmap) = 8 blocks: 88/4 = 22.
#[test]
fn appends_past_the_write_pointer_are_zero_filled() {
    let mut d = wa_set();
    d.submit(&io(Op::Write, 0, 128 * BS)).unwrap();
    d.idle().unwrap();
    let dev0 = d.layer().device_bytes_written();
    d.submit(&io(Op::Write, 200 * BS, 4 * BS)).unwrap();
    assert_eq!(d.idle().unwrap(), 1);
    let l = d.layer();
    assert_eq!(l.reclaim_stats().zones[2], 1, "the Buf case ran");
    assert_eq!(l.reclaim_stats().zero_blocks, 72);
    assert_eq!(l.device_bytes_written() - dev0, 88 * BS);
    let disk = match l.locate(0).unwrap() {
        (DevId::Disk(i), _) => i,
        other => panic!("chunk 0 not on a disk: {other:?}"),
    };
    let start = l.locate(0).unwrap().1;
    for b in 0..256u64 {
        let want = (128..200).contains(&b) || b >= 204;
        assert_eq!(l.locate(b * BS).is_none(), want, "block {b}");
        if !want {
            assert_eq!(l.locate(b * BS), Some((DevId::Disk(disk), start + b * BS)));
        }
    }
    assert_eq!(d.disk(disk as usize).zones().descriptor((start / MIB) as u32).write_pointer, Some(start / BS + 204));
}

// ---------------------------------------------------------------------------------------------
// Watermarks
// ---------------------------------------------------------------------------------------------

/// Write fresh chunks one by one; after each write: (free zones, zones reclaimed so far).
fn fresh_chunk_writes(d: &mut Dmz, n: u64) -> Vec<(u32, u64)> {
    let zone = d.layer().layout().zone_size;
    (0..n)
        .map(|c| {
            d.submit(&io(Op::Write, c * zone, zone)).unwrap();
            (d.layer().cache_usage().free, d.layer().reclaim_stats().total_zones())
        })
        .collect()
}

/// The kernel rule, independently: after an allocation, a busy worker reclaims (one zone at a
/// time) while p <= 30, and never when p >= 50.
fn expected_watermarks(total: u32, n: u64) -> Vec<(u32, u64)> {
    let (mut u, mut r) = (total, 0);
    (0..n)
        .map(|_| {
            u -= 1;
            while pct(u, total) < 50 && pct(u, total) <= 30 {
                u += 1;
                r += 1;
            }
            (u, r)
        })
        .collect()
}

/// 256 KiB zones, 12 cache zones (2 hold metadata: 10 for data), 2 disks of 24 zones. Reclaim
/// starts when a write leaves 3 of 10 zones unmapped (30 %) and stops as soon as 4 are (40 %):
/// the kernel's busy rule has no hysteresis up to the 50 % mark.
#[test]
fn busy_reclaim_starts_at_30_percent_and_stops_just_above() {
    let mut d = multi(12, 2, 24, 0, 256 * KIB, cfg(3, 512 * KIB));
    assert_eq!(d.layer().cache_usage().total, 10);
    let got = fresh_chunk_writes(&mut d, 14);
    let want: Vec<(u32, u64)> = vec![
        (9, 0),
        (8, 0),
        (7, 0),
        (6, 0),
        (5, 0),
        (4, 0),
        (4, 1),
        (4, 2),
        (4, 3),
        (4, 4),
        (4, 5),
        (4, 6),
        (4, 7),
        (4, 8),
    ];
    assert_eq!(got, want);
    assert_eq!(got, expected_watermarks(10, 14));
    let l = d.layer();
    assert_eq!(l.unmapped_percentage(0), 40);
    assert!(!l.should_reclaim(0, false) && !l.should_reclaim(1, false));
    assert!(l.should_reclaim(0, true), "an idle target always reclaims");
    assert_eq!(l.throttle(0, false), 75);
    assert_eq!(l.throttle(0, true), 100);
    assert_eq!(d.idle().unwrap(), 6);
    assert_eq!(d.layer().cache_usage().free, 10);
}

/// 4 cache zones for data: 2 unmapped is 50 % (no reclaim), 1 unmapped counts as 0 % (the July
/// 2020 trigger fix), so reclaim runs until 2 are unmapped again and stops there, at 50 %.
#[test]
fn one_unmapped_zone_counts_as_zero_percent() {
    let mut d = multi(6, 2, 24, 0, 256 * KIB, cfg(3, 512 * KIB));
    assert_eq!(d.layer().cache_usage().total, 4);
    let got = fresh_chunk_writes(&mut d, 6);
    assert_eq!(got, vec![(3, 0), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4)]);
    assert_eq!(got, expected_watermarks(4, 6));
    assert_eq!(d.layer().throttle(0, false), 75);
}

/// Single device: the watermark is over the disk's conventional zones (12 left for data out of
/// 16 after 4 metadata zones): reclaim at 3 of 12 (25 %), stop at 4 (33 %).
#[test]
fn single_device_watermarks_use_conventional_zones() {
    let mut d = single(64, 16, 256 * KIB, cfg(4, 512 * KIB));
    assert_eq!(d.layer().cache_usage().total, 12);
    assert_eq!(d.layer().layout().nr_meta_zones, 2);
    let got = fresh_chunk_writes(&mut d, 12);
    assert_eq!(got, expected_watermarks(12, 12));
    assert_eq!(got[8], (4, 1));
    assert_eq!(got[7], (4, 0));
    assert_eq!(d.layer().throttle(0, false), 75);
}

// ---------------------------------------------------------------------------------------------
// Step API: aborts and concurrent workers (what a timed driver does)
// ---------------------------------------------------------------------------------------------

fn submit_all(cache: &mut Device, disks: &mut [SmrDevice], out: &mut Vec<DevIo>) {
    for d in out.drain(..) {
        match d.dev {
            DevId::Cache => BlockDevice::submit(cache, &d.io).unwrap(),
            DevId::Disk(i) => disks[i as usize].submit(&d.io).unwrap(),
        };
    }
}

/// A user write to a chunk under reclaim stalls; the job finishes its current extent (kcopyd
/// pieces of 16 KiB), then aborts and resets the destination it had written; the write then
/// proceeds. Two workers can hold jobs at the same time on different chunks.
#[test]
fn user_io_aborts_reclaim_at_the_next_extent() {
    let z = 64 * KIB;
    let mut cache = flash(12 * z);
    let mut disks = vec![smr(12, z, 0), smr(12, z, 0)];
    let mut l = DmZoned::from_devices(Some(&cache), &disks, &cfg(3, 16 * KIB)).unwrap();
    let mut out = Vec::new();
    for c in 0..2 {
        assert_eq!(l.map_write(&io(Op::Write, c * z, z), &mut out).unwrap(), MapStatus::Done);
    }
    submit_all(&mut cache, &mut disks, &mut out);
    // Both workers start (idle): each locks a different chunk.
    assert_eq!(l.reclaim_step_worker(0, true, &mut out), Some(ReclaimProgress::Copy { worker: 0, bytes: 16 * KIB }));
    assert_eq!(l.reclaim_step_worker(1, true, &mut out), Some(ReclaimProgress::Copy { worker: 1, bytes: 16 * KIB }));
    submit_all(&mut cache, &mut disks, &mut out);
    l.check_invariants().unwrap();
    // Chunk 0 (worker 0's, the LRU head) is busy: the write stalls.
    let st = l.map_write(&io(Op::Write, 0, BS), &mut out).unwrap();
    assert_eq!(st, MapStatus::Stalled { done_bytes: 0, reason: StallReason::ChunkInReclaim { worker: 0 } });
    // The extent (the whole zone) is finished first: 3 more pieces, then the abort.
    let mut pieces = 0;
    loop {
        match l.reclaim_step_worker(0, true, &mut out) {
            Some(ReclaimProgress::Copy { .. }) => pieces += 1,
            Some(ReclaimProgress::Aborted { worker: 0, chunk: 0 }) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(pieces, 3);
    assert!(out.iter().any(|d| d.class == IoClass::ReclaimReset), "the destination was reset");
    submit_all(&mut cache, &mut disks, &mut out);
    assert_eq!(l.map_write(&io(Op::Write, 0, BS), &mut out).unwrap(), MapStatus::Done);
    submit_all(&mut cache, &mut disks, &mut out);
    assert_eq!(l.locate(0).map(|x| x.0), Some(DevId::Cache));
    // Worker 1 completes its job undisturbed.
    while let Some(p) = l.reclaim_step_worker(1, true, &mut out) {
        if let ReclaimProgress::Done { case, chunk, .. } = p {
            assert_eq!((case, chunk), (ReclaimCase::RndData, 1));
            break;
        }
    }
    submit_all(&mut cache, &mut disks, &mut out);
    assert!(matches!(l.locate(z), Some((DevId::Disk(_), _))));
    assert_eq!(l.reclaim_stats().aborted, 1);
    l.check_invariants().unwrap();
}

// ---------------------------------------------------------------------------------------------
// Block-device surface
// ---------------------------------------------------------------------------------------------

#[test]
fn block_device_surface() {
    let mut d = small_config(0);
    assert_eq!(d.namespace_count(), 1);
    assert_eq!(d.namespace_bytes(0), 27 * 64 * KIB);
    assert_eq!(d.block_size(), 4096);
    assert!(d.zone_geometry(0).is_none());
    assert_eq!(d.report_zones(0, 0, ReportFilter::All).unwrap_err(), DeviceError::NotZoned { ns: 0 });
    assert_eq!(d.zone_mgmt(0, 0, ZoneAction::Reset).unwrap_err(), DeviceError::NotZoned { ns: 0 });
    assert_eq!(d.submit(&io(Op::Append, 0, BS)).unwrap_err(), DeviceError::NotZoned { ns: 0 });
    assert!(matches!(
        d.submit(&io(Op::Write, 512, BS)),
        Err(DeviceError::Zone { status: ZoneStatus::InvalidField, .. })
    ));
    assert!(matches!(d.submit(&io(Op::Write, 27 * 64 * KIB, BS)), Err(DeviceError::OutOfRange { .. })));
    assert_eq!(d.submit(&io(Op::Read, 0, 0)).unwrap_err(), DeviceError::ZeroLength);
    assert_eq!(d.submit(&Io { ns: 1, ..io(Op::Read, 0, BS) }).unwrap_err(), DeviceError::NoSuchNamespace(1));
    // A write spanning three chunks, read back, trimmed.
    d.submit(&io(Op::Write, 60 * KIB, 80 * KIB)).unwrap();
    let c = d.counters().clone();
    assert_eq!((c.host_write_bytes, c.host_units), (80 * KIB, 20));
    d.submit(&io(Op::Read, 56 * KIB, 88 * KIB)).unwrap();
    assert_eq!(d.counters().read_units, 22);
    assert_eq!(d.counters().unmapped_read_units, 2);
    d.submit(&io(Op::Trim, 64 * KIB, 64 * KIB)).unwrap();
    assert_eq!(d.counters().trimmed_units, 16);
    assert_eq!(d.layer().chunk_stats().unmapped, 25, "the fully trimmed chunk was freed at once");
    // Flush: nothing dirty after a reclaim-free history except the user changes: one flush.
    d.submit(&io(Op::Flush, 0, 0)).unwrap();
    assert_eq!(d.layer().metadata_stats().flushes, 1);
    assert_eq!(d.layer().dirty_metadata_blocks(), 0);
    d.submit(&io(Op::Flush, 0, 0)).unwrap();
    assert_eq!(d.layer().metadata_stats().empty_flushes, 1);
}

/// A metadata flush writes each dirty block to the log set (set 1), flushes, writes the log
/// super block, flushes, then the same in place to the primary set (set 0). Config 0: 3 zones
/// per set on the cache device (set 1 at 192 KiB); one 4 KiB write to chunk 0 dirties the map
/// block (block 1) and the bitmap block of cache zone 6, the first zone after the 6 metadata
/// zones (block 1 + 1 map block + 6).
#[test]
fn flush_writes_each_dirty_block_twice() {
    let mut d = small_config(0);
    d.set_io_log(true);
    d.submit(&io(Op::Write, 0, BS)).unwrap();
    assert_eq!(d.layer().locate(0), Some((DevId::Cache, 6 * 64 * KIB)));
    assert_eq!(d.layer().dirty_metadata_blocks(), 2);
    d.take_io_log();
    d.submit(&io(Op::Flush, 0, 0)).unwrap();
    let got: Vec<(DevId, Op, u64, u32)> =
        d.take_io_log().iter().map(|x| (x.dev, x.io.op, x.io.offset, x.io.len)).collect();
    let set1 = 3 * 64 * KIB;
    let w = |off: u64| (DevId::Cache, Op::Write, off, BS as u32);
    let f = (DevId::Cache, Op::Flush, 0, 0);
    let want = vec![w(set1 + BS), w(set1 + 8 * BS), f, w(set1), f, w(BS), w(8 * BS), f, w(0), f];
    assert_eq!(got, want);
    let m = d.layer().metadata_stats();
    assert_eq!((m.flushes, m.dirty_blocks, m.super_blocks, m.cache_flushes, m.bytes), (1, 2, 2, 4, 6 * BS));
    assert_eq!(d.cache_device().unwrap().counters().host_write_bytes, BS + 6 * BS);
}

#[test]
fn periodic_flush_by_bytes() {
    let mut d = small_config(0);
    d.set_flush_every_bytes(Some(128 * KIB));
    for c in 0..4 {
        d.submit(&io(Op::Write, c * 64 * KIB, 64 * KIB)).unwrap();
    }
    assert_eq!(d.layer().metadata_stats().flushes, 2);
}

/// As a block device the target counts as a drive does: the user's bytes are host units, every
/// other block its devices took (reclaim, zero-fill, metadata) GC units, in the counting unit;
/// the user-level counters stay the layer's.
#[test]
fn counters_as_a_device() {
    let mut d = small_config(0);
    d.submit(&io(Op::Write, 0, BS)).unwrap();
    d.submit(&io(Op::Flush, 0, 0)).unwrap();
    // One user block, six metadata blocks (flush_writes_each_dirty_block_twice).
    let c = d.counters();
    assert_eq!((c.host_write_bytes, c.host_units, c.gc_units, c.erases), (BS, 1, 6, 0));
    assert_eq!((c.namespaces[0].host_units, c.namespaces[0].gc_units), (1, 6));
    assert_eq!((d.user_counters().host_units, d.user_counters().gc_units), (1, 0));
    // In 16 KiB units: the 4 KiB written round up to one unit, the 28 KiB taken to two.
    let d = d.with_counting_unit(16 * KIB);
    assert_eq!((d.counters().host_units, d.counters().gc_units), (1, 1));
    // Reclaim at idle is counted as it happens, not at the next command.
    let mut d = small_config(0);
    d.submit_batch(&[io(Op::Write, 0, 64 * KIB), io(Op::Write, 64 * KIB, 64 * KIB)]).unwrap();
    assert_eq!(d.counters().media_units() * BS, d.layer().device_bytes_written());
    d.idle().unwrap();
    assert!(d.user_counters().gc_units > 0);
    assert_eq!(d.counters().media_units() * BS, d.layer().device_bytes_written());
}

// ---------------------------------------------------------------------------------------------
// Configuration errors
// ---------------------------------------------------------------------------------------------

fn shape_of<D: BlockDevice>(d: &D) -> DeviceShape {
    DeviceShape::of(d)
}

#[test]
fn config_errors() {
    let z = 64 * KIB;
    let disk = |zones, conv| shape_of(&smr(zones, z, conv));
    let cache = |zones: u64| Some(shape_of(&flash(zones * z)));
    let c = DmZonedConfig::with_reserved(3);
    let err = |cache: Option<DeviceShape>, disks: &[DeviceShape], c: &DmZonedConfig| {
        Layout::new(cache, disks, c).unwrap_err()
    };

    assert_eq!(err(cache(12), &[], &c), ConfigError::NoDisks);
    assert_eq!(err(None, &[disk(12, 4), disk(12, 4)], &c), ConfigError::MultipleDisksWithoutCache { disks: 2 });
    assert_eq!(err(Some(disk(12, 12)), &[disk(12, 0)], &c), ConfigError::CacheDeviceZoned);
    assert_eq!(err(cache(12), &[disk(12, 0), shape_of(&flash(12 * z))], &c), ConfigError::DiskNotZoned { disk: 1 });
    let zns = shape_of(&ZnsDevice::new(ZnsConfig::small(12, z, 32 * KIB)).unwrap());
    assert!(matches!(err(cache(12), &[zns], &c), ConfigError::ZoneCapacity { disk: 0, .. }));
    let big = shape_of(&smr(12, 2 * z, 0));
    assert!(matches!(err(cache(12), &[disk(12, 0), big], &c), ConfigError::ZoneSizeMismatch { disk: 1, .. }));
    let odd = shape_of(&smr(12, 96 * KIB, 0));
    assert!(matches!(err(cache(12), &[odd], &c), ConfigError::BadZoneSize { size } if size == 96 * KIB));
    assert_eq!(err(cache(2), &[disk(12, 0)], &c), ConfigError::TooFewCacheZones { have: 2 });
    assert_eq!(err(None, &[disk(12, 2)], &c), ConfigError::TooFewCacheZones { have: 2 });
    assert_eq!(err(cache(12), &[disk(12, 0)], &DmZonedConfig::with_reserved(0)), ConfigError::NoReservedZones);
    // 3 conventional 64 KiB zones: a set needs 2 zones (super block + map + 30 bitmap blocks),
    // both sets 4 > 3.
    assert!(matches!(err(None, &[disk(30, 3)], &c), ConfigError::MetadataTooLarge { need: 4, have: 3 }));
    // 4 conventional zones: both sets take all 4.
    assert!(matches!(
        err(None, &[disk(30, 4)], &DmZonedConfig::with_reserved(2)),
        ConfigError::NoDataCacheZones { cache: 4, meta: 4 }
    ));
    // Two disks, 2 reserved: dmzadm's count of the tertiary super block zones leaves no spare.
    assert!(matches!(
        err(cache(12), &[disk(12, 0), disk(12, 0)], &DmZonedConfig::with_reserved(2)),
        ConfigError::NoSpareZone { chunks: 28, data_zones: 28 }
    ));
    assert!(matches!(
        err(cache(12), &[disk(12, 0)], &DmZonedConfig { reserved_seq: 3, kcopyd_subjob_bytes: 3000 }),
        ConfigError::BadSubjob { bytes: 3000 }
    ));
    assert!(matches!(
        err(cache(12), &[disk(12, 0)], &DmZonedConfig { reserved_seq: 3, kcopyd_subjob_bytes: 2 << 20 }),
        ConfigError::BadSubjob { .. }
    ));
    // dmzadm clamps the reserved count to the cache zones minus one.
    let l = Layout::new(cache(12), &[disk(24, 0)], &DmZonedConfig::default()).unwrap();
    assert_eq!(l.reserved_seq, 11);
    // Messages say what to change.
    let m = err(cache(12), &[disk(12, 0), disk(12, 0)], &DmZonedConfig::with_reserved(2)).to_string();
    assert!(m.contains("reserved_seq"), "{m}");
    let m = err(None, &[disk(12, 4), disk(12, 4)], &c).to_string();
    assert!(m.contains("cache device"), "{m}");
    // The driver reports the same errors.
    assert!(matches!(DmZonedDevice::<Device, SmrDevice>::new(None, vec![], &c), Err(ConfigError::NoDisks)));
}

/// The 14 TB HM-SMR disk behind dm-zoned alone, as dmzadm formats it: 524 conventional zones,
/// 52,156 zones of 256 MiB, 2 bitmap blocks per zone: 104,312 bitmap blocks + 102 map blocks + 1
/// = 104,415 blocks = 2 zones per set, 4 metadata zones, 16 reserved, 52,136 chunks.
#[test]
fn full_size_geometry_matches_dmzadm() {
    let disk = DeviceShape::of(&SmrDevice::new(SmrConfig::hc620_14tb()).unwrap());
    let l = Layout::new(None, &[disk], &DmZonedConfig::default()).unwrap();
    assert_eq!(l.zone_bitmap_blocks, 2);
    assert_eq!((l.nr_bitmap_blocks, l.nr_map_blocks, l.nr_meta_blocks), (104_312, 102, 104_415));
    assert_eq!((l.nr_meta_zones, l.reserved_seq, l.nr_chunks), (2, 16, 52_136));
}

/// A zone with a user command in flight cannot be locked for reclaim (`dmz_lock_zone_reclaim`
/// refuses active zones): the idle worker passes over the least recently used chunk while it is
/// active and takes it once released.
#[test]
fn reclaim_passes_over_active_zones() {
    let mut d = multi(8, 1, 32, 0, MIB, cfg(4, 512 * KIB));
    for chunk in [0u64, 1] {
        d.submit(&io(Op::Write, chunk * MIB, 64 * KIB)).unwrap();
    }
    d.with_parts(|layer, _, _| {
        let a = layer.activate_chunk(0).expect("chunk 0 is mapped");
        let chunk_of = |p: Option<ReclaimProgress>| match p {
            Some(ReclaimProgress::Done { chunk, .. }) => chunk,
            other => panic!("expected a finished zone, got {other:?}"),
        };
        let mut out = Vec::new();
        let mut run_zone = |layer: &mut DmZoned| loop {
            match layer.reclaim_step_worker(0, true, &mut out) {
                Some(ReclaimProgress::Copy { .. } | ReclaimProgress::ZeroFill { .. }) => continue,
                p => return p,
            }
        };
        // Chunk 0 is the older one, but active: chunk 1 goes first.
        assert_eq!(chunk_of(run_zone(layer)), 1);
        assert!(matches!(run_zone(layer), Some(ReclaimProgress::NoVictim { .. })), "the only candidate is active");
        layer.deactivate_zone(a);
        assert_eq!(chunk_of(run_zone(layer)), 0);
        layer.check_invariants().unwrap();
    });
}

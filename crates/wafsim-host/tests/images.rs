//! Drive images of host layers (dm-zoned, tiering): a layer saved and loaded again continues
//! bit-identically to one that never stopped (every later command's outcome and device
//! command, counters, WAF, where every block lies, the devices' own state), through reclaim
//! and migration before and after the save; a truncated, damaged or foreign image is refused
//! with the reason and never panics.

use wafsim_core::blockdev::BlockDevice;
use wafsim_core::image::SavesImage;
use wafsim_core::plain::PlainDevice;
use wafsim_core::smr::{SmrConfig, SmrDevice};
use wafsim_core::zone::ReportFilter;
use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, Op, Pid, Rng};
use wafsim_host::{DevId, DmZonedConfig, DmZonedDevice, TieringConfig, TieringDevice};

const KIB: u64 = 1024;
const MIB: u64 = 1 << 20;
const BS: u64 = 4096;

type Dmz = DmZonedDevice<PlainDevice, SmrDevice>;
type Tiered = TieringDevice<Device, Device>;

fn save(d: &dyn SavesImage) -> Vec<u8> {
    let mut out = Vec::new();
    d.save_image_to(&mut out).unwrap();
    out
}

/// The error loading `bytes` into `d` gives (it must give one).
fn refusal(d: &mut dyn SavesImage, bytes: &[u8]) -> String {
    d.load_image_from(&mut &bytes[..]).map(|_| ()).unwrap_err().to_string()
}

/// One random command of a seeded workload over `bytes` of a layer: mostly writes of 4 KiB to
/// 256 KiB, some over a hot tenth of the space, then trims, reads and the odd flush. Its
/// outcome, as text, is part of what must match.
fn step(dev: &mut dyn BlockDevice, rng: &mut Rng, bytes: u64) -> String {
    let blocks = bytes / BS;
    let n = 1 + rng.below(64);
    let hot = rng.below(10) < 7;
    let first = if hot { rng.below(blocks / 10) } else { rng.below(blocks) }.min(blocks - n);
    let op = match rng.below(100) {
        0..=74 => Op::Write,
        75..=87 => Op::Trim,
        88..=98 => Op::Read,
        _ => Op::Flush,
    };
    let (offset, len) = if op == Op::Flush { (0, 0) } else { (first * BS, (n * BS) as u32) };
    format!("{:?}", dev.submit(&Io { op, ns: 0, offset, len, pid: Pid::NONE }))
}

/// dm-zoned over `disks` SMR disks of 40 zones of 1 MiB (4 conventional) and a plain cache
/// device of 24 zones, as the experiment builds it; without a cache on one disk. Metadata is
/// also flushed every 600 KiB of user writes (the image carries the progress towards it).
fn dmz(disks: usize, cache: bool, max_open: u32) -> Dmz {
    let disk = || SmrDevice::new(SmrConfig::small(40, MIB, 4, max_open)).unwrap();
    let cache = cache.then(|| PlainDevice::new(24 * MIB, 4096).unwrap());
    let mut d = DmZonedDevice::new(cache, (0..disks).map(|_| disk()).collect(), &DmZonedConfig { reserved_seq: 3, kcopyd_subjob_bytes: 64 * KIB as u32 }).unwrap();
    d.set_flush_every_bytes(Some(600 * KIB));
    d
}

/// Where every 4 KiB block of a dm-zoned target lies.
fn dmz_placement(d: &Dmz) -> Vec<Option<(DevId, u64)>> {
    (0..d.namespace_bytes(0) / BS).map(|b| d.layer().locate(b * BS)).collect()
}

/// Everything the layer and its devices report, to compare a loaded layer with the original.
fn dmz_state(d: &Dmz) -> String {
    let l = d.layer();
    let zones: Vec<_> = d.disks().iter().map(|z| z.report_zones(0, 0, ReportFilter::All).unwrap()).collect();
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {}",
        d.counters(),
        l.counters(),
        l.reclaim_stats(),
        l.metadata_stats(),
        l.chunk_stats(),
        l.cache_usage(),
        d.cache_device().map(|c| c.counters().clone()),
        d.disks().iter().map(|z| z.counters().clone()).collect::<Vec<_>>(),
        zones,
        l.waf()
    )
}

/// `before` commands, save, load into a freshly built layer, then `after` commands on both:
/// everything must match, device commands included.
fn dmz_continues(make: impl Fn() -> Dmz, seed: u64, span: f64, before: usize, after: usize) {
    let mut a = make();
    let bytes = (a.namespace_bytes(0) as f64 * span) as u64 / BS * BS;
    let mut rng = Rng::new(seed);
    for _ in 0..before {
        step(&mut a, &mut rng, bytes);
    }
    let reclaimed = a.layer().reclaim_stats().total_zones();
    assert!(reclaimed > 10, "reclaim ran before the save: {reclaimed} zones");
    let image = save(&a);
    let mut b = make();
    b.load_image_from(&mut &image[..]).unwrap();
    assert_eq!(save(&b), image, "saving the loaded layer gives the same image");
    assert_eq!(dmz_state(&b), dmz_state(&a));
    b.layer().check_invariants().unwrap();
    a.set_io_log(true);
    b.set_io_log(true);
    let mut rng_b = rng.clone();
    for i in 0..after {
        let (x, y) = (step(&mut a, &mut rng, bytes), step(&mut b, &mut rng_b, bytes));
        assert_eq!(x, y, "command {i} after the load");
        assert_eq!(a.take_io_log(), b.take_io_log(), "device commands of command {i} after the load");
    }
    assert!(a.layer().reclaim_stats().total_zones() > reclaimed + 10, "reclaim ran after the save");
    assert_eq!(a.idle().unwrap(), b.idle().unwrap());
    assert_eq!(dmz_state(&b), dmz_state(&a));
    assert_eq!(dmz_placement(&b), dmz_placement(&a));
    b.layer().check_invariants().unwrap();
}

#[test]
fn a_dm_zoned_image_continues_bit_identically() {
    // Over the whole target (more chunks than sequential zones: cache zones stay mapped and
    // reclaim merges buffers), and over half of it (every chunk can move to a disk).
    for (seed, span) in [(1, 1.0), (2, 1.0), (3, 0.5), (4, 0.5)] {
        dmz_continues(|| dmz(2, true, 4), seed, span, 6000, 6000);
    }
    // One disk, its conventional zones as the cache and the metadata's home.
    dmz_continues(|| dmz(1, false, 4), 9, 1.0, 6000, 6000);
    dmz_continues(|| dmz(1, false, 4), 10, 0.5, 6000, 6000);
}

/// A reclaim job stopped half way (the step API leaves it there, as a timed run may) is in the
/// image and finishes the same way after the load.
#[test]
fn a_dm_zoned_image_keeps_a_reclaim_job_in_progress() {
    let mut a = dmz(2, true, 4);
    // Half the target, so that sequential zones stay free for reclaim to copy into.
    let bytes = a.namespace_bytes(0) / 2;
    let mut rng = Rng::new(5);
    for _ in 0..3000 {
        step(&mut a, &mut rng, bytes);
    }
    let mid_job = a.with_parts(|layer, mut cache, disks| {
        let mut out = Vec::new();
        // Step the workers until one is inside a job (a job of an empty zone ends at once).
        let workers = layer.workers();
        let started = (0..20).flat_map(|_| 0..workers).find(|&w| {
            layer.reclaim_step_worker(w, true, &mut out);
            layer.reclaim_active(w)
        });
        for c in out {
            match c.dev {
                DevId::Cache => cache.as_mut().unwrap().submit(&c.io).unwrap(),
                DevId::Disk(i) => disks[i as usize].submit(&c.io).unwrap(),
            };
        }
        started
    });
    assert!(mid_job.is_some(), "a job stopped after its first piece");
    let image = save(&a);
    let mut b = dmz(2, true, 4);
    b.load_image_from(&mut &image[..]).unwrap();
    assert!(b.layer().reclaim_active(mid_job.unwrap()));
    assert_eq!(save(&b), image);
    let mut rng_b = rng.clone();
    for i in 0..2000 {
        assert_eq!(step(&mut a, &mut rng, bytes), step(&mut b, &mut rng_b, bytes), "command {i} after the load");
    }
    assert_eq!(dmz_state(&b), dmz_state(&a));
    assert_eq!(dmz_placement(&b), dmz_placement(&a));
}

/// Checks every refusal of `good` (an image of a layer `make` builds): cut anywhere, a byte
/// flipped anywhere past the header, an image of another kind. None panics.
fn refuses_damage(make: &dyn Fn() -> Box<dyn SavesImage>, good: &[u8], foreign: &[u8]) {
    let mut d = make();
    for cut in (0..good.len()).step_by(good.len() / 97 + 1).chain([good.len() - 1]) {
        let e = refusal(&mut *d, &good[..cut]);
        assert!(e.contains("truncated") || e.contains("not a wafsim drive image"), "cut at {cut}: {e}");
    }
    // Past the magic, version and kind, every flip is named as damage (a checksum that does not
    // match, or a structure that cannot be right), but in a configuration's text, which is
    // compared before the checksum is reached and reads as another configuration.
    for at in (40..good.len()).step_by(good.len() / 211 + 1) {
        let mut bad = good.to_vec();
        bad[at] ^= 0x20;
        let e = refusal(&mut *d, &bad);
        assert!(e.starts_with("drive image damaged") || e.contains("another configuration"), "byte {at} flipped: {e}");
    }
    let e = refusal(&mut *make(), foreign);
    assert!(e.contains("drive image of a"), "{e}");
    // The layer still loads a good image after all that.
    d.load_image_from(&mut &good[..]).unwrap();
}

#[test]
fn a_damaged_or_foreign_dm_zoned_image_is_refused_clearly() {
    let mut a = dmz(2, true, 4);
    let mut rng = Rng::new(3);
    let bytes = a.namespace_bytes(0);
    for _ in 0..3000 {
        step(&mut a, &mut rng, bytes);
    }
    let image = save(&a);
    let foreign = save(&tiered());
    refuses_damage(&|| Box::new(dmz(2, true, 4)), &image, &foreign);
    // Another layout (more reserved zones), or another disk (more open zones).
    let disks = (0..2).map(|_| SmrDevice::new(SmrConfig::small(40, MIB, 4, 4)).unwrap()).collect();
    let more_reserved = DmZonedDevice::new(Some(PlainDevice::new(24 * MIB, 4096).unwrap()), disks, &DmZonedConfig { reserved_seq: 4, kcopyd_subjob_bytes: 64 * KIB as u32 });
    let e = refusal(&mut more_reserved.unwrap(), &image);
    assert!(e.contains("another configuration") && e.contains("reserved_seq"), "{e}");
    let e = refusal(&mut dmz(2, true, 5), &image);
    assert!(e.contains("another configuration") && e.contains("disk 1") && e.contains("max_open"), "{e}");
}

/// A flash drive of `erase_units` erase units of 64 KiB with 1/8 spare, its GC seeded by
/// `seed`.
fn flash(erase_units: u32, gc_policy: GcPolicy, seed: u64) -> Device {
    Device::new(DeviceConfig::single_namespace(erase_units, 16, 4096, 0.125, gc_policy, seed)).unwrap()
}

/// Tiering with `extent` extents over a hot drive of 4 MiB and a cold drive of 32 MiB (their
/// GC seeded by `seed` and `seed + 1`).
fn tiering(cold_gc: GcPolicy, seed: u64, extent: u64) -> Tiered {
    TieringDevice::new(flash(72, GcPolicy::Greedy, seed), flash(576, cold_gc, seed + 1), &TieringConfig { extent_bytes: extent, ..TieringConfig::default() }).unwrap()
}

/// Tiering with 64 KiB extents.
fn tiered() -> Tiered {
    tiering(GcPolicy::Greedy, 1, 64 * KIB)
}

/// Everything the layer and its drives report.
fn tier_state(d: &Tiered) -> String {
    let l = d.layer();
    let extents: Vec<_> = (0..l.extents()).map(|e| (l.extent_slot(e), l.extent_writes(e))).collect();
    let blocks: Vec<_> = (0..d.namespace_bytes(0) / BS).map(|b| l.locate(b * BS)).collect();
    format!(
        "{:?} {:?} {:?} {:?} {} {} {} {} {:?} {:?} {:?} {:?} {:?} {:?}",
        d.counters(),
        l.counters(),
        l.tier_counters(wafsim_host::Tier::Hot),
        l.tier_counters(wafsim_host::Tier::Cold),
        l.free_slots(),
        l.dirty_blocks(),
        l.absorbed_bytes(),
        l.migrated_extents(),
        extents,
        blocks,
        d.hot().counters(),
        d.cold().counters(),
        d.hot().erase_counts(),
        d.cold().erase_counts()
    )
}

#[test]
fn a_tiering_image_continues_bit_identically() {
    for seed in 1..=4 {
        let mut a = tiered();
        let bytes = a.namespace_bytes(0);
        let mut rng = Rng::new(seed);
        for _ in 0..8000 {
            step(&mut a, &mut rng, bytes);
        }
        let migrated = a.layer().migrated_extents();
        assert!(migrated > 50 && a.cold().counters().gc_units > 0, "migration and the cold drive's GC ran before the save: {migrated} extents");
        let image = save(&a);
        let mut b = tiered();
        b.load_image_from(&mut &image[..]).unwrap();
        assert_eq!(save(&b), image, "saving the loaded layer gives the same image");
        assert_eq!(tier_state(&b), tier_state(&a));
        a.set_io_log(true);
        b.set_io_log(true);
        let mut rng_b = rng.clone();
        for i in 0..8000 {
            let (x, y) = (step(&mut a, &mut rng, bytes), step(&mut b, &mut rng_b, bytes));
            assert_eq!(x, y, "command {i} after the load");
            assert_eq!(a.take_io_log(), b.take_io_log(), "device commands of command {i} after the load");
        }
        assert!(a.layer().migrated_extents() > migrated + 50, "migration ran after the save");
        assert_eq!(a.migrate_all().unwrap(), b.migrate_all().unwrap());
        assert_eq!(tier_state(&b), tier_state(&a));
        b.hot().check_invariants().unwrap();
        b.cold().check_invariants().unwrap();
    }
}

#[test]
fn a_damaged_or_foreign_tiering_image_is_refused_clearly() {
    let mut a = tiered();
    let mut rng = Rng::new(3);
    let bytes = a.namespace_bytes(0);
    for _ in 0..4000 {
        step(&mut a, &mut rng, bytes);
    }
    let image = save(&a);
    let foreign = save(&dmz(1, false, 4));
    refuses_damage(&|| Box::new(tiered()), &image, &foreign);
    // Other extents, or a cold drive of another GC policy (the seed may differ: the image
    // carries the GC's random state).
    let e = refusal(&mut tiering(GcPolicy::Greedy, 1, 128 * KIB), &image);
    assert!(e.contains("another configuration") && e.contains("extent_bytes"), "{e}");
    let e = refusal(&mut tiering(GcPolicy::Fifo, 1, 64 * KIB), &image);
    assert!(e.contains("another configuration") && e.contains("the cold device") && e.contains("Fifo"), "{e}");
    let mut reseeded = tiering(GcPolicy::Greedy, 7, 64 * KIB);
    reseeded.load_image_from(&mut &image[..]).unwrap();
    assert_eq!(tier_state(&reseeded), tier_state(&a));
}

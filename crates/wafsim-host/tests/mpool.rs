//! mpool placement (wafsim_host::fs::mpool): expectations worked out by hand from mpool-kmod
//! r1.9.0's smap_alloc / pmd_obj_erase_cb rules, on a small drive.

use wafsim_core::pipeline::FileOp;
use wafsim_core::{Io, Op};
use wafsim_host::fs::mpool::{MLOG_GROUP_BIT, MLOG_ZONES_SHIFT, SPARE_GROUP_BIT};
use wafsim_host::fs::{FsError, MpoolConfig, MpoolFs};

const MIB: u64 = 1 << 20;
const Z: u64 = 32 * MIB;

/// 16 zones of 32 MiB, 4 regions of 4 zones, no spare.
fn pool() -> MpoolFs {
    MpoolFs::new(MpoolConfig { spare_pct: 0, ..MpoolConfig::new(0, 16 * Z) }).unwrap()
}

fn op(fs: &mut MpoolFs, op: FileOp) -> Vec<Io> {
    let mut out = Vec::new();
    fs.apply(&op, &mut out).unwrap();
    out
}

fn zone_of(fs: &MpoolFs, file: u64) -> u64 {
    fs.allocation(file).unwrap().0 / Z
}

#[test]
fn allocations_round_robin_the_regions_from_region_one() {
    let mut fs = pool();
    for f in 0..6 {
        op(&mut fs, FileOp::Create { file: f, group: 0 });
    }
    // The cursor advances before the search: regions 1, 2, 3, 0, 1, 2; each region's lowest zone.
    let zones: Vec<u64> = (0..6).map(|f| zone_of(&fs, f)).collect();
    assert_eq!(zones, vec![4, 8, 12, 0, 5, 9]);
    assert_eq!(fs.counters().region_allocs, vec![1, 2, 2, 1]);
}

#[test]
fn writes_land_in_the_zone_and_cannot_pass_it() {
    let mut fs = pool();
    op(&mut fs, FileOp::Create { file: 7, group: 3 });
    let w = op(&mut fs, FileOp::Write { file: 7, offset: 0, len: MIB as u32 });
    assert_eq!((w[0].op, w[0].offset, w[0].len), (Op::Write, 4 * Z, MIB as u32));
    let w = op(&mut fs, FileOp::Write { file: 7, offset: MIB, len: MIB as u32 });
    assert_eq!(w[0].offset, 4 * Z + MIB);
    // Fill to exactly 32 MiB, then one more block is refused and sends nothing.
    for k in 2..32 {
        op(&mut fs, FileOp::Write { file: 7, offset: k * MIB, len: MIB as u32 });
    }
    let mut out = Vec::new();
    let e = fs.apply(&FileOp::Write { file: 7, offset: Z, len: 4096 }, &mut out).unwrap_err();
    assert_eq!(e, FsError::NoSpace { need: Z + 4096, free: Z });
    assert!(out.is_empty());
    // Appends only.
    assert!(fs.apply(&FileOp::Write { file: 7, offset: 0, len: 4096 }, &mut out).is_err());
}

#[test]
fn delete_discards_the_whole_zone_and_the_lowest_hole_is_reused_first() {
    let mut fs = pool();
    // 8 mblocks: regions 1,2,3,0,1,2,3,0 -> zones 4,8,12,0,5,9,13,1.
    for f in 0..8 {
        op(&mut fs, FileOp::Create { file: f, group: 0 });
    }
    assert_eq!(zone_of(&fs, 4), 5);
    // File 4 (zone 5) holds 5 MiB; its delete trims all 32 MiB of zone 5.
    for k in 0..5 {
        op(&mut fs, FileOp::Write { file: 4, offset: k * MIB, len: MIB as u32 });
    }
    op(&mut fs, FileOp::Close { file: 4 });
    let d = op(&mut fs, FileOp::Delete { file: 4 });
    assert_eq!(d.iter().map(|i| (i.op, i.offset, i.len as u64)).collect::<Vec<_>>(), vec![(Op::Trim, 5 * Z, Z)]);
    // An unwritten mblock's delete trims its zone too.
    let d = op(&mut fs, FileOp::Delete { file: 0 });
    assert_eq!((d[0].offset, d[0].len as u64), (4 * Z, Z));
    assert_eq!(fs.counters().dev_trim_bytes, 2 * Z);
    // Region 1 free: zones 4, 5 (merged into one extent [4, 8)), 6, 7. The cursor is at region 0;
    // the next allocations go to regions 1 (lowest: zone 4), 2 (zone 10), 3 (zone 14), 0 (2),
    // 1 (zone 5).
    let mut got = Vec::new();
    for f in 100..105 {
        op(&mut fs, FileOp::Create { file: f, group: 0 });
        got.push(zone_of(&fs, f));
    }
    assert_eq!(got, vec![4, 10, 14, 2, 5]);
}

#[test]
fn a_full_region_falls_to_the_next_and_a_full_drive_says_no_space() {
    let mut fs = pool();
    for f in 0..16 {
        op(&mut fs, FileOp::Create { file: f, group: 0 });
    }
    assert_eq!(fs.free_zones(), 0);
    let e = fs.apply(&FileOp::Create { file: 99, group: 0 }, &mut Vec::new()).unwrap_err();
    assert!(matches!(e, FsError::NoSpace { .. }), "{e}");
    // Free one zone of region 3 (zone 13); the cursor (next: region 1) searches 1, 2, 3.
    let z13 = (0..16).find(|&f| zone_of(&fs, f) == 13).unwrap();
    op(&mut fs, FileOp::Delete { file: z13 });
    op(&mut fs, FileOp::Create { file: 99, group: 0 });
    assert_eq!(zone_of(&fs, 99), 13);
}

#[test]
fn mlogs_take_contiguous_zones_and_erase_discards_them_all() {
    let mut fs = pool();
    let g = MLOG_GROUP_BIT | 3 << MLOG_ZONES_SHIFT;
    op(&mut fs, FileOp::Create { file: 1, group: g });
    assert_eq!(fs.allocation(1).unwrap(), (4 * Z, 3 * Z, 0), "3 zones from region 1's start");
    // An mlog grows past one zone.
    for k in 0..40 {
        op(&mut fs, FileOp::Write { file: 1, offset: k * MIB, len: MIB as u32 });
    }
    let e = op(&mut fs, FileOp::Truncate { file: 1, size: 0 });
    assert_eq!(e.iter().map(|i| (i.op, i.offset, i.len as u64)).collect::<Vec<_>>(), vec![(Op::Trim, 4 * Z, 3 * Z)]);
    // Written again from its start, in place.
    let w = op(&mut fs, FileOp::Write { file: 1, offset: 0, len: 4096 });
    assert_eq!(w[0].offset, 4 * Z);
    assert_eq!(fs.counters().mlog_erases, 1);
    // mblocks cannot be truncated.
    op(&mut fs, FileOp::Create { file: 2, group: 0 });
    assert!(fs.apply(&FileOp::Truncate { file: 2, size: 0 }, &mut Vec::new()).is_err());
    // A 5-zone mlog does not fit in a 4-zone region... except the last one is 4 too: no space.
    assert!(fs.apply(&FileOp::Create { file: 3, group: MLOG_GROUP_BIT | 5 << MLOG_ZONES_SHIFT }, &mut Vec::new()).is_err());
}

#[test]
fn the_spare_reserve_is_only_for_spare_allocations() {
    // 20 zones, 5 % spare = 1 zone: 19 ordinary allocations, the 20th needs the spare bit.
    let mut fs = MpoolFs::new(MpoolConfig::new(0, 20 * Z)).unwrap();
    for f in 0..19 {
        op(&mut fs, FileOp::Create { file: f, group: 0 });
    }
    assert!(fs.apply(&FileOp::Create { file: 19, group: 0 }, &mut Vec::new()).is_err());
    op(&mut fs, FileOp::Create { file: 19, group: SPARE_GROUP_BIT });
    assert_eq!(fs.counters().spare_allocs, 1);
    assert_eq!(fs.free_zones(), 0);
}

#[test]
fn conservation_of_written_bytes() {
    let mut fs = pool();
    let mut sent = 0u64;
    let mut dev = 0u64;
    for f in 0..4u64 {
        op(&mut fs, FileOp::Create { file: f, group: 0 });
        for k in 0..(f + 1) {
            let len = 4096 * (k as u32 + 1);
            let off = fs.allocation(f).unwrap().2;
            sent += len as u64;
            dev += op(&mut fs, FileOp::Write { file: f, offset: off, len }).iter().map(|i| i.len as u64).sum::<u64>();
        }
    }
    assert_eq!(sent, dev);
    assert_eq!(fs.counters().file_write_bytes, sent);
    assert_eq!(fs.counters().dev_write_bytes, sent);
}

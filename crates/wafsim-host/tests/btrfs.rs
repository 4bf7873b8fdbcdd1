//! The Btrfs-like file system model (`wafsim_host::fs::btrfs`): each expectation is worked
//! out by hand from the mechanisms in the module doc (chunk placement, pinned frees, discard
//! timing in rate-mapped bytes, zoned reset/reclaim rules).

use std::collections::{BTreeSet, HashMap};

use wafsim_core::blockdev::ZoneAction;
use wafsim_core::pipeline::FileOp;
use wafsim_core::{Io, Op};
use wafsim_core::blockdev::BlockDevice;
use wafsim_core::pipeline::IoSource;
use wafsim_core::zns::{ZnsConfig, ZnsDevice};
use wafsim_core::{Device, DeviceConfig, GcPolicy, NamespaceConfig};
use wafsim_host::fs::{BtrfsConfig, BtrfsDiscard as Discard, BtrfsFs, BtrfsPlacement, FileSystem, FsError, FsSource};
use wafsim_workload::files::{DeleteOrder, SyntheticFiles};

mod common;
use common::{drive, groups, MIB};

const K: u64 = 1 << 10;
const M: u64 = 1 << 20;

fn run(fs: &mut BtrfsFs, op: FileOp) -> Vec<Io> {
    let mut out = Vec::new();
    fs.apply(&op, &mut out).unwrap_or_else(|e| panic!("{op:?}: {e}"));
    out
}

fn create(fs: &mut BtrfsFs, file: u64, group: u32) {
    run(fs, FileOp::Create { file, group });
}

fn write(fs: &mut BtrfsFs, file: u64, offset: u64, len: u64) -> Vec<Io> {
    run(fs, FileOp::Write { file, offset, len: len as u32 })
}

fn commit(fs: &mut BtrfsFs) -> Vec<Io> {
    let mut out = Vec::new();
    fs.commit(&mut out).unwrap();
    out
}

fn trims(ios: &[Io]) -> Vec<(u64, u64)> {
    ios.iter().filter(|i| i.op == Op::Trim).map(|i| (i.offset, i.len as u64)).collect()
}

fn resets(ios: &[Io]) -> Vec<u64> {
    ios.iter().filter(|i| i.op == Op::Zone(ZoneAction::Reset)).map(|i| i.offset).collect()
}

/// 1 GiB conventional device, 16 MiB data chunks, 8 MiB metadata chunks, no automatic commit
/// (30 GiB per interval), no size classes. mkfs's metadata chunk: DUP at [1, 9) and [9, 17)
/// MiB, so the first data chunk goes to 17 MiB.
fn conv(discard: Discard) -> BtrfsFs {
    let mut c = BtrfsConfig::conventional(0, 1 << 30);
    c.data_chunk_bytes = 16 * M;
    c.meta_chunk_bytes = 8 * M;
    c.write_rate = 1 << 30;
    c.size_classes = false;
    c.discard = discard;
    BtrfsFs::new(c).unwrap()
}

#[test]
fn default_config_figures() {
    let c = BtrfsConfig::conventional(0, 2 << 40);
    assert_eq!((c.data_chunk_bytes, c.meta_chunk_bytes), (1 << 30, 1 << 30));
    let c = BtrfsConfig::conventional(0, 40 << 30);
    assert_eq!((c.data_chunk_bytes, c.meta_chunk_bytes), (1 << 30, 256 * M));
    // 10 % of 1 GiB, in whole MiB.
    let c = BtrfsConfig::conventional(0, 1 << 30);
    assert_eq!(c.data_chunk_bytes, 102 * M);
    assert_eq!((c.commit_interval_s, c.discard, c.size_classes), (30, Discard::Async, true));
}

#[test]
fn freed_space_waits_for_the_commit_then_lowest_first() {
    let mut fs = conv(Discard::None);
    assert_eq!(fs.block_groups(), vec![(false, M, 8 * M, 0)], "mkfs metadata chunk at 1 MiB");
    create(&mut fs, 1, 0);
    create(&mut fs, 2, 0);
    write(&mut fs, 1, 0, M);
    write(&mut fs, 2, 0, M);
    assert_eq!(fs.extents(1).unwrap(), vec![(0, 17 * M, M)]);
    assert_eq!(fs.extents(2).unwrap(), vec![(0, 18 * M, M)]);
    run(&mut fs, FileOp::Delete { file: 1 });
    // Pinned: not reused in the same transaction.
    create(&mut fs, 3, 0);
    write(&mut fs, 3, 0, M);
    assert_eq!(fs.extents(3).unwrap(), vec![(0, 19 * M, M)]);
    commit(&mut fs);
    create(&mut fs, 4, 0);
    write(&mut fs, 4, 0, M);
    assert_eq!(fs.extents(4).unwrap(), vec![(0, 17 * M, M)], "lowest free after the commit");
}

#[test]
fn an_overwrite_is_copy_on_write_and_pinned() {
    let mut fs = conv(Discard::None);
    create(&mut fs, 1, 0);
    write(&mut fs, 1, 0, M);
    let w = write(&mut fs, 1, 256 * K, 256 * K);
    assert_eq!((w[0].offset, w[0].len as u64), (18 * M, 256 * K), "new space, not in place");
    assert_eq!(fs.extents(1).unwrap(), vec![(0, 17 * M, 256 * K), (256 * K, 18 * M, 256 * K), (512 * K, 17 * M + 512 * K, 512 * K)]);
    // The old 256 KiB is reusable only after the commit.
    create(&mut fs, 2, 0);
    write(&mut fs, 2, 0, 256 * K);
    assert_eq!(fs.extents(2).unwrap(), vec![(0, 18 * M + 256 * K, 256 * K)]);
    commit(&mut fs);
    create(&mut fs, 3, 0);
    write(&mut fs, 3, 0, 256 * K);
    assert_eq!(fs.extents(3).unwrap(), vec![(0, 17 * M + 256 * K, 256 * K)]);
}

#[test]
fn an_appending_file_continues_where_it_ended() {
    let mut fs = conv(Discard::None);
    for f in 1..=3 {
        create(&mut fs, f, 0);
    }
    write(&mut fs, 1, 0, M); // 17 MiB
    write(&mut fs, 2, 0, M); // 18 MiB
    write(&mut fs, 3, 0, 256 * K); // 19 MiB
    run(&mut fs, FileOp::Delete { file: 1 });
    commit(&mut fs);
    // First fit would say 17 MiB; the hint (end of file 3) is free, so the file grows in place.
    write(&mut fs, 3, 256 * K, 256 * K);
    assert_eq!(fs.extents(3).unwrap(), vec![(0, 19 * M, 512 * K)]);
    // A new file takes the lowest hole.
    create(&mut fs, 4, 0);
    write(&mut fs, 4, 0, 256 * K);
    assert_eq!(fs.extents(4).unwrap(), vec![(0, 17 * M, 256 * K)]);
}

#[test]
fn chunks_go_to_the_lowest_free_device_offset_and_removed_ones_are_reused() {
    let mut fs = conv(Discard::None);
    create(&mut fs, 1, 0);
    // 11 MiB used + 2 MiB >= 80 % of 16 MiB: a second data chunk, right after the first.
    write(&mut fs, 1, 0, 11 * M);
    let data: Vec<_> = fs.block_groups().into_iter().filter(|g| g.0).map(|g| g.1).collect();
    assert_eq!(data, vec![17 * M, 33 * M]);
    // 8 MiB does not fit in the 5 MiB left of the first: it goes to the second.
    create(&mut fs, 2, 0);
    write(&mut fs, 2, 0, 8 * M);
    assert_eq!(fs.extents(2).unwrap(), vec![(0, 33 * M, 8 * M)]);
    run(&mut fs, FileOp::Delete { file: 2 });
    commit(&mut fs);
    let data: Vec<_> = fs.block_groups().into_iter().filter(|g| g.0).map(|g| g.1).collect();
    assert_eq!(data, vec![17 * M], "the emptied chunk is removed at the commit");
    assert_eq!(fs.counters().chunks_removed, 1);
    // Filling the first again: the next chunk takes the freed range at 33 MiB.
    create(&mut fs, 3, 0);
    write(&mut fs, 3, 0, 5 * M);
    let data: Vec<_> = fs.block_groups().into_iter().filter(|g| g.0).map(|g| g.1).collect();
    assert_eq!(data, vec![17 * M, 33 * M]);
    assert_eq!(fs.counters().chunks_allocated, 4, "metadata + 3 data");
}

#[test]
fn size_classes_keep_small_and_large_extents_apart() {
    let mut c = BtrfsConfig::conventional(0, 1 << 30);
    c.data_chunk_bytes = 32 * M;
    c.meta_chunk_bytes = 8 * M;
    c.write_rate = 1 << 30;
    let mut fs = BtrfsFs::new(c).unwrap();
    create(&mut fs, 1, 0);
    create(&mut fs, 2, 0);
    // The first (small, 64 KiB) allocation sets the class of the chunk at 17 MiB.
    write(&mut fs, 1, 0, 64 * K);
    // A 16 MiB (large) extent skips it and gets a fresh chunk at 49 MiB. That chunk holds the
    // superblock copy at 64 MiB (kept out of its free space), so the first free run of 16 MiB
    // starts just past it.
    write(&mut fs, 2, 0, 16 * M);
    assert_eq!(fs.extents(2).unwrap(), vec![(0, 64 * M + 4 * K, 16 * M)]);
    let data: Vec<_> = fs.block_groups().into_iter().filter(|g| g.0).map(|g| g.1).collect();
    assert_eq!(data, vec![17 * M, 49 * M]);
}

/// Conventional, async discard: 1 MiB/s, so 120 s = 120 MiB of file writes.
fn async_fs() -> BtrfsFs {
    let mut c = BtrfsConfig::conventional(0, 1 << 30);
    c.data_chunk_bytes = 16 * M;
    c.meta_chunk_bytes = 8 * M;
    c.write_rate = M;
    c.size_classes = false;
    c.discard = Discard::Async;
    BtrfsFs::new(c).unwrap()
}

#[test]
fn async_discard_trims_a_freed_range_after_the_delay() {
    let mut fs = async_fs();
    create(&mut fs, 1, 0);
    create(&mut fs, 2, 0);
    write(&mut fs, 1, 0, M);
    write(&mut fs, 2, 0, M);
    run(&mut fs, FileOp::Delete { file: 1 });
    commit(&mut fs); // unpinned at clock 2 MiB: due at 122 MiB
    assert_eq!(fs.now_bytes(), 2 * M);
    let mut out = Vec::new();
    fs.advance_time(119.0, &mut out).unwrap();
    assert_eq!(fs.now_bytes(), 121 * M);
    assert!(trims(&out).is_empty(), "{:?}", trims(&out));
    out.clear();
    fs.advance_time(1.0, &mut out).unwrap();
    assert_eq!(trims(&out), vec![(17 * M, M)]);
    assert_eq!(fs.counters().trim_bytes, M);
}

#[test]
fn async_discard_skips_a_range_reallocated_first_and_small_ranges() {
    let mut fs = async_fs();
    for f in 1..=4 {
        create(&mut fs, f, 0);
    }
    write(&mut fs, 1, 0, M); // 17 MiB
    write(&mut fs, 2, 0, 16 * K); // 18 MiB
    write(&mut fs, 3, 0, 16 * K); // 18 MiB + 16 KiB
    run(&mut fs, FileOp::Delete { file: 1 });
    run(&mut fs, FileOp::Delete { file: 2 });
    commit(&mut fs);
    write(&mut fs, 4, 0, M); // takes 17 MiB again before the trim is due
    assert_eq!(fs.extents(4).unwrap(), vec![(0, 17 * M, M)]);
    let mut out = Vec::new();
    fs.advance_time(300.0, &mut out).unwrap();
    assert!(trims(&out).is_empty(), "{:?}", trims(&out));
    assert_eq!(fs.counters().trim_bytes, 0);
}

#[test]
fn nodiscard_never_trims_and_sync_trims_at_commit() {
    let mut fs = conv(Discard::None);
    create(&mut fs, 1, 0);
    create(&mut fs, 2, 0);
    write(&mut fs, 1, 0, M);
    write(&mut fs, 2, 0, 12 * M); // a second chunk
    run(&mut fs, FileOp::Delete { file: 1 });
    run(&mut fs, FileOp::Delete { file: 2 });
    let mut out = commit(&mut fs);
    fs.advance_time(1000.0, &mut out).unwrap();
    assert_eq!(fs.counters().trim_bytes, 0);
    assert!(trims(&out).is_empty());

    let mut fs = conv(Discard::Sync);
    create(&mut fs, 1, 0);
    create(&mut fs, 2, 0);
    write(&mut fs, 1, 0, M);
    write(&mut fs, 2, 0, M);
    let d = run(&mut fs, FileOp::Delete { file: 1 });
    assert!(trims(&d).is_empty(), "nothing at delete time");
    let out = commit(&mut fs);
    assert_eq!(trims(&out), vec![(17 * M, M)], "the first commit frees no metadata yet");
}

#[test]
fn async_discard_trims_an_empty_chunk_then_removes_it() {
    let mut fs = async_fs();
    create(&mut fs, 1, 0);
    create(&mut fs, 2, 0);
    write(&mut fs, 1, 0, 11 * M); // chunk 2 at 33 MiB appears
    write(&mut fs, 2, 0, 8 * M); // in chunk 2
    run(&mut fs, FileOp::Delete { file: 2 });
    commit(&mut fs); // clock 19 MiB: partial trim due at 139, empty chunk due at 29
    let mut out = Vec::new();
    fs.advance_time(9.0, &mut out).unwrap();
    assert!(trims(&out).is_empty());
    fs.advance_time(1.0, &mut out).unwrap();
    assert_eq!(trims(&out), vec![(33 * M, 8 * M)], "the untrimmed part of the empty chunk");
    assert_eq!(fs.counters().chunks_removed, 1);
    fs.advance_time(200.0, &mut out).unwrap();
    assert_eq!(fs.counters().trim_bytes, 8 * M, "nothing twice");
}

// ---- zoned ----

const ZB: u64 = 4 * M;
const CAP: u64 = 3 * M;

/// `zones` zones of 4 MiB (3 MiB capacity): zones 0-1 the superblock log, 2-3 the metadata
/// BG, data from zone 4. No automatic commit.
fn zoned(zones: u64, placement: BtrfsPlacement) -> BtrfsFs {
    let mut c = BtrfsConfig::zoned(0, zones * ZB, ZB, CAP, 0);
    c.write_rate = 1 << 30;
    c.placement = placement;
    BtrfsFs::new(c).unwrap()
}

#[test]
fn a_zoned_bg_is_reset_at_the_first_commit_after_it_empties() {
    let mut fs = zoned(16, BtrfsPlacement::Upstream);
    create(&mut fs, 1, 0);
    create(&mut fs, 2, 0);
    let w = write(&mut fs, 1, 0, CAP);
    assert_eq!((w[0].offset, w[0].len as u64), (4 * ZB, CAP));
    write(&mut fs, 2, 0, M); // zone 5, partly written
    assert_eq!(fs.extents(2).unwrap(), vec![(0, 5 * ZB, M)]);
    let d = run(&mut fs, FileOp::Delete { file: 2 });
    assert!(resets(&d).is_empty());
    let c = commit(&mut fs);
    assert_eq!(resets(&c), vec![5 * ZB], "partly written, no live data: reset");
    assert!(resets(&commit(&mut fs)).is_empty());
    // A full zone likewise.
    run(&mut fs, FileOp::Delete { file: 1 });
    create(&mut fs, 3, 0);
    write(&mut fs, 3, 0, M); // zone 5 again (lowest empty)
    assert_eq!(fs.extents(3).unwrap(), vec![(0, 5 * ZB, M)]);
    assert_eq!(resets(&commit(&mut fs)), vec![4 * ZB]);
    assert_eq!(fs.zone_live_bytes().unwrap()[5], M);
}

#[test]
fn files_dying_in_whole_zones_cost_no_data_copies() {
    let mut fs = zoned(16, BtrfsPlacement::Upstream);
    let mut live = std::collections::VecDeque::new();
    for f in 0..40u64 {
        create(&mut fs, f, 0);
        write(&mut fs, f, 0, CAP);
        live.push_back(f);
        if live.len() > 3 {
            run(&mut fs, FileOp::Delete { file: live.pop_front().unwrap() });
        }
        commit(&mut fs);
    }
    let c = fs.counters();
    assert_eq!(c.file_write_bytes, 40 * CAP);
    assert_eq!(c.reloc_write_bytes, 0);
    assert_eq!(c.dev_write_bytes - c.meta_write_bytes - c.sb_write_bytes, c.file_write_bytes, "file-system data WAF 1");
    assert!(c.zone_resets >= 36, "{c:?}");
}

#[test]
fn reclaim_needs_the_threshold_and_a_mostly_allocated_device() {
    // 32 zones: 24 in BGs is the 75 % gate.
    let mut fs = zoned(32, BtrfsPlacement::Upstream);
    let t = CAP * 3 / 4; // 2.25 MiB: 75 % of the capacity
    for f in 1..=4 {
        create(&mut fs, f, 0);
    }
    write(&mut fs, 1, 0, t); // zone 4: P, then Q
    write(&mut fs, 2, 0, CAP - t);
    write(&mut fs, 3, 0, t - 4 * K); // zone 5: a block below the threshold
    write(&mut fs, 4, 0, CAP - t + 4 * K);
    run(&mut fs, FileOp::Delete { file: 1 });
    run(&mut fs, FileOp::Delete { file: 3 });
    commit(&mut fs);
    assert_eq!(fs.zones_allocated_percent(), Some(12));
    commit(&mut fs);
    assert_eq!(fs.counters().reloc_write_bytes, 0, "below the allocation gate");
    // 20 zones of long-lived data: 2 + 2 + 20 = 24 zones in BGs = 75 %.
    create(&mut fs, 9, 1);
    for k in 0..20 {
        write(&mut fs, 9, k * CAP, CAP);
    }
    assert_eq!(fs.zones_allocated_percent(), Some(75));
    let out = commit(&mut fs);
    let c = fs.counters();
    assert_eq!(c.reclaimed_bgs, 1, "zone 4 only; zone 5 is a block short");
    assert_eq!(c.reloc_write_bytes, CAP - t, "exactly the live bytes");
    let reads: Vec<(u64, u64)> = out.iter().filter(|i| i.op == Op::Read).map(|i| (i.offset, i.len as u64)).collect();
    assert_eq!(reads, vec![(4 * ZB + t, CAP - t)]);
    // The relocation BG is the lowest empty zone, 26.
    assert_eq!(fs.extents(2).unwrap(), vec![(0, 26 * ZB, CAP - t)]);
    assert!(out.iter().any(|i| i.op == Op::Write && i.offset == 26 * ZB && i.len as u64 == CAP - t));
    assert!(resets(&out).is_empty(), "reset at the next commit");
    assert_eq!(resets(&commit(&mut fs)), vec![4 * ZB]);
}

#[test]
fn upstream_interleaves_groups_per_group_separates_them() {
    for (placement, shared) in [(BtrfsPlacement::Upstream, true), (BtrfsPlacement::PerGroup, false)] {
        let mut fs = zoned(16, placement);
        create(&mut fs, 1, 1);
        create(&mut fs, 2, 2);
        for k in 0..4 {
            write(&mut fs, 1, k * 256 * K, 256 * K);
            write(&mut fs, 2, k * 256 * K, 256 * K);
        }
        let zones = |f| fs.extents(f).unwrap().iter().map(|e| e.1 / ZB).collect::<BTreeSet<_>>();
        let (a, b) = (zones(1), zones(2));
        assert_eq!(!a.is_disjoint(&b), shared, "{placement:?}: {a:?} {b:?}");
        if !shared {
            assert_eq!((a, b), ([4].into(), [5].into()));
        }
    }
}

#[test]
fn an_active_zone_limit_finishes_the_fullest_data_bg() {
    // 8 active zones: 1 superblock log + 2 for metadata, so 5 for data.
    let mut c = BtrfsConfig::zoned(0, 32 * ZB, ZB, CAP, 8);
    c.write_rate = 1 << 30;
    c.placement = BtrfsPlacement::PerGroup;
    let mut fs = BtrfsFs::new(c).unwrap();
    let mut finishes = Vec::new();
    let finish = |ios: &[Io]| ios.iter().filter(|i| i.op == Op::Zone(ZoneAction::Finish)).map(|i| i.offset).collect::<Vec<_>>();
    // Groups 0-4 open zones 4-8 with (g + 1) * 64 KiB each; group 5 needs a sixth.
    for g in 0..6u64 {
        create(&mut fs, g, g as u32);
        finishes.extend(finish(&write(&mut fs, g, 0, (g + 1) * 64 * K)));
    }
    // The least room left: group 4's zone 8 (320 KiB written).
    assert_eq!(finishes, vec![8 * ZB]);
    assert_eq!(fs.extents(5).unwrap()[0].1, 9 * ZB);
    // Group 4 again: its zone is finished, so it needs a new one, which finishes group 5's
    // (384 KiB, now the fullest); the data goes to zone 10.
    create(&mut fs, 99, 4);
    assert_eq!(finish(&write(&mut fs, 99, 0, 64 * K)), vec![9 * ZB]);
    assert_eq!(fs.extents(99).unwrap()[0].1, 10 * ZB);
    assert_eq!(fs.counters().zone_finishes, 2);
}

// ---- conservation and errors ----

/// A tiny zone checker: every write at its zone's write pointer and inside the capacity.
fn check_zoned_stream(ios: &[Io], wps: &mut HashMap<u64, u64>) {
    for io in ios {
        let z = io.offset / ZB;
        match io.op {
            Op::Write => {
                let wp = wps.entry(z).or_insert(0);
                assert_eq!(io.offset, z * ZB + *wp, "write off the write pointer: {io:?}");
                *wp += io.len as u64;
                assert!(*wp <= CAP, "past capacity: {io:?}");
            }
            Op::Zone(ZoneAction::Reset) => {
                wps.insert(z, 0);
            }
            Op::Zone(ZoneAction::Finish) => {
                wps.insert(z, CAP);
            }
            _ => {}
        }
    }
}

/// A mixed workload: appends, overwrites, truncates, deletes, automatic commits.
fn churn(fs: &mut BtrfsFs, rounds: u64, check: &mut dyn FnMut(&[Io])) -> u64 {
    let mut written = 0;
    let mut x: u64 = 12345;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut sizes: HashMap<u64, u64> = HashMap::new();
    for r in 0..rounds {
        let f = rnd(12);
        let mut out = Vec::new();
        let size = sizes.get(&f).copied();
        let op = match (size, rnd(10)) {
            (None, _) => FileOp::Create { file: f, group: (f % 3) as u32 },
            (Some(s), 0) if s > 0 => FileOp::Truncate { file: f, size: s / 2 / 4096 * 4096 },
            (Some(_), 1) => FileOp::Delete { file: f },
            (Some(s), 2) if s > 0 => FileOp::Write { file: f, offset: rnd(s / 4096) * 4096, len: 4096 * (1 + rnd(8)) as u32 },
            (Some(s), _) => FileOp::Write { file: f, offset: s, len: 4096 * (1 + rnd(64)) as u32 },
        };
        fs.apply(&op, &mut out).unwrap_or_else(|e| panic!("round {r} {op:?}: {e}"));
        match op {
            FileOp::Create { .. } => {
                sizes.insert(f, 0);
            }
            FileOp::Truncate { size, .. } => {
                sizes.insert(f, size);
            }
            FileOp::Delete { .. } => {
                sizes.remove(&f);
            }
            FileOp::Write { offset, len, .. } => {
                written += len as u64;
                let s = sizes.get_mut(&f).unwrap();
                *s = (*s).max(offset + len as u64);
            }
            _ => {}
        }
        check(&out);
    }
    written
}

#[test]
fn device_writes_add_up_and_match_the_io_stream() {
    for discard in [Discard::Sync, Discard::Async] {
        let mut c = BtrfsConfig::conventional(0, 1 << 30);
        c.data_chunk_bytes = 16 * M;
        c.meta_chunk_bytes = 8 * M;
        c.write_rate = 64 * K; // a commit every 1.875 MiB of file writes
        c.discard = discard;
        let mut fs = BtrfsFs::new(c).unwrap();
        let mut dev = 0u64;
        let written = churn(&mut fs, 3000, &mut |ios| dev += ios.iter().filter(|i| i.op == Op::Write).map(|i| i.len as u64).sum::<u64>());
        let c = fs.counters();
        assert_eq!(c.file_write_bytes, written);
        assert_eq!(c.dev_write_bytes, c.data_write_bytes + c.meta_write_bytes + c.reloc_write_bytes + c.sb_write_bytes);
        assert_eq!(dev, c.dev_write_bytes);
        assert!(c.commits > 10 && c.meta_write_bytes > 0 && c.sb_write_bytes > 0, "{c:?}");
        assert_eq!(fs.write_bytes(), (c.file_write_bytes, c.dev_write_bytes));
    }
    for placement in [BtrfsPlacement::Upstream, BtrfsPlacement::PerGroup] {
        let mut c = BtrfsConfig::zoned(0, 24 * ZB, ZB, CAP, 0);
        c.write_rate = 64 * K;
        c.placement = placement;
        let mut fs = BtrfsFs::new(c).unwrap();
        let mut dev = 0u64;
        let mut wps = HashMap::new();
        churn(&mut fs, 3000, &mut |ios| {
            check_zoned_stream(ios, &mut wps);
            dev += ios.iter().filter(|i| i.op == Op::Write).map(|i| i.len as u64).sum::<u64>();
        });
        let c = fs.counters();
        assert_eq!(c.dev_write_bytes, c.data_write_bytes + c.meta_write_bytes + c.reloc_write_bytes + c.sb_write_bytes);
        assert_eq!(dev, c.dev_write_bytes);
        let live: u64 = fs.zone_live_bytes().unwrap().iter().sum();
        assert!(live > 0);
    }
}

#[test]
fn a_full_device_refuses_writes() {
    let mut c = BtrfsConfig::conventional(0, 64 * M);
    c.data_chunk_bytes = 4 * M;
    c.meta_chunk_bytes = 2 * M;
    let mut fs = BtrfsFs::new(c).unwrap();
    create(&mut fs, 1, 0);
    let mut err = None;
    for k in 0..100u64 {
        let mut out = Vec::new();
        if let Err(e) = fs.apply(&FileOp::Write { file: 1, offset: k * M, len: M as u32 }, &mut out) {
            err = Some(e);
            break;
        }
    }
    assert!(matches!(err, Some(FsError::NoSpace { .. })), "{err:?}");

    let mut fs = zoned(16, BtrfsPlacement::Upstream);
    create(&mut fs, 1, 0);
    let mut err = None;
    for k in 0..100u64 {
        let mut out = Vec::new();
        if let Err(e) = fs.apply(&FileOp::Write { file: 1, offset: k * M, len: M as u32 }, &mut out) {
            err = Some(e);
            break;
        }
    }
    assert!(matches!(err, Some(FsError::NoSpace { .. })), "{err:?}");
    assert!(matches!(fs.apply(&FileOp::Write { file: 7, offset: 0, len: 4096 }, &mut Vec::new()), Err(FsError::NoSuchFile(7))));
    assert!(matches!(fs.apply(&FileOp::Write { file: 1, offset: 0, len: 100 }, &mut Vec::new()), Err(FsError::Unaligned { .. })));
}

#[test]
fn metadata_is_written_twice_to_new_places_and_commits_follow_the_write_rate() {
    let mut fs = conv(Discard::None);
    create(&mut fs, 1, 0); // 3 fs-tree items
    write(&mut fs, 1, 0, M); // 1 extent item, file extent + inode: 2 fs items, 256 csums
    // 1 extent leaf + 1 fs leaf + 1 csum leaf (1 KiB of csums) + 4 fixed = 7 nodes of 16 KiB,
    // on both DUP copies (1 MiB and 9 MiB); superblocks at 64 KiB and 64 MiB.
    assert_eq!(fs.meta_nodes_estimate(), 7);
    let out = commit(&mut fs);
    let w: Vec<(u64, u64)> = out.iter().filter(|i| i.op == Op::Write).map(|i| (i.offset, i.len as u64)).collect();
    assert_eq!(w, vec![(M, 112 * K), (9 * M, 112 * K), (64 * K, 4 * K), (64 * M, 4 * K)]);
    let c = fs.counters();
    assert_eq!((c.meta_write_bytes, c.sb_write_bytes), (224 * K, 8 * K));
    assert_eq!(c.dev_write_bytes, M + 224 * K + 8 * K);
    // Next commit: new places (the old nodes are still in use while it writes), then the old
    // ones are freed; the commit after that reuses the lowest.
    write(&mut fs, 1, M, 4 * K);
    let out = commit(&mut fs);
    assert_eq!(out[0].offset, M + 112 * K);
    write(&mut fs, 1, M + 4 * K, 4 * K);
    let out = commit(&mut fs);
    assert_eq!(out[0].offset, M);

    // Rate-mapped commits: 1 MiB/s and 30 s make a commit every 30 MiB of file writes.
    let mut c = BtrfsConfig::conventional(0, 1 << 30);
    c.write_rate = M;
    let mut fs = BtrfsFs::new(c).unwrap();
    create(&mut fs, 1, 0);
    for k in 0..89 {
        write(&mut fs, 1, k * M, M);
    }
    assert_eq!(fs.counters().commits, 2);
    write(&mut fs, 1, 89 * M, M);
    assert_eq!(fs.counters().commits, 3);
}

#[test]
fn sync_discard_trims_a_removed_chunk_whole_and_mkfs_ios_cover_the_device() {
    let mut fs = conv(Discard::Sync);
    create(&mut fs, 1, 0);
    create(&mut fs, 2, 0);
    write(&mut fs, 1, 0, 11 * M); // second chunk at 33 MiB
    write(&mut fs, 2, 0, 8 * M); // in it
    run(&mut fs, FileOp::Delete { file: 2 });
    let out = commit(&mut fs);
    // The unpinned 8 MiB first, then the removed chunk whole.
    assert_eq!(trims(&out), vec![(33 * M, 8 * M), (33 * M, 16 * M)]);
    assert_eq!(fs.counters().chunks_removed, 1);

    let m = fs.mkfs_ios();
    assert_eq!(m.len(), 1);
    assert_eq!((m[0].op, m[0].offset, m[0].len as u64), (Op::Trim, 0, 1 << 30));
    let z = zoned(16, BtrfsPlacement::Upstream).mkfs_ios();
    assert_eq!(resets(&z), (0..16).map(|k| k * ZB).collect::<Vec<_>>());
}

// ---- on simulated devices ----


fn flash(bytes: u64, op: f64) -> Device {
    let eu = 2 * MIB;
    let physical = ((bytes as f64 * (1.0 + op)) as u64).div_ceil(eu) * eu;
    Device::new(DeviceConfig {
        logical_bytes: bytes,
        physical_bytes: physical,
        mapping_unit: 4096,
        erase_unit_bytes: eu,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement: wafsim_core::Placement::Conventional,
        namespaces: vec![NamespaceConfig { name: "fs".into(), size_bytes: bytes, placement_handles: vec![0] }],
        seed: 1,
        slc_cache: None,
    })
    .unwrap()
}

fn zns(zones: u32, zone: u64, cap: u64, max_open: u32) -> ZnsDevice {
    let mut c = ZnsConfig::small(zones, zone, cap);
    c.zones.max_open = max_open;
    c.zones.max_active = max_open;
    ZnsDevice::new(c).unwrap()
}

/// The Btrfs-like model on real simulated devices: every command it sends is accepted (zone
/// write pointers, active zones, trims inside the namespace) and the device counts exactly the
/// bytes the file system reports writing.
#[test]
fn btrfs_on_flash_and_zns_devices_accepts_every_command() {
    for discard in [Discard::None, Discard::Sync, Discard::Async] {
        let mut dev = flash(512 * MIB, 0.07);
        let mut g = groups(DeleteOrder::Random);
        g[2].overwrite = 0.5;
        let files = SyntheticFiles::new(g, 2048 * MIB, 3).unwrap();
        let mut c = BtrfsConfig::conventional(0, 512 * MIB);
        c.write_rate = MIB;
        c.discard = discard;
        let mut src = FsSource::new(files, BtrfsFs::new(c).unwrap());
        drive(&mut src, &mut dev);
        let r = src.figures().unwrap();
        let c = dev.counters();
        assert_eq!(c.host_write_bytes, r.dev_write_bytes);
        let fc = src.file_system().counters();
        eprintln!("btrfs on flash, {discard:?}: fs WAF {:.3}, device WAF {:.3}, trimmed {} MiB, commits {}", r.dev_write_bytes as f64 / r.app_write_bytes as f64, c.media_units() as f64 * 4096.0 / c.host_write_bytes as f64, fc.trim_bytes / MIB, fc.commits);
        assert!(r.dev_write_bytes > r.app_write_bytes, "metadata and superblocks on top");
        assert_eq!(discard == Discard::None, fc.trim_bytes == 0);
    }
    for (placement, active) in [(BtrfsPlacement::Upstream, 8), (BtrfsPlacement::PerGroup, 8), (BtrfsPlacement::PerGroup, 0)] {
        // Live data peaks near half the capacity: Btrfs only relocates zones at least 75 %
        // dead, so a fuller device runs out of space with partly dead zones (as the kernel does).
        let (zones, zone, cap) = (160u32, 8 * MIB, 6 * MIB);
        let mut dev = zns(zones, zone, cap, 8);
        let mut g = groups(DeleteOrder::Random);
        g[2].overwrite = 0.5;
        let six = active == 0;
        if six {
            // Six groups at once on a device limited to 8 active zones (5 for data after the
            // superblock log and metadata): data BGs get finished early.
            g.extend(groups(DeleteOrder::Oldest).into_iter().map(|mut x| {
                x.live_files = 1;
                x.file_bytes = (2 * MIB, 4 * MIB);
                x
            }));
        }
        let files = SyntheticFiles::new(g, 2048 * MIB, 3).unwrap();
        let active = if active == 0 { 8 } else { active };
        let mut c = BtrfsConfig::zoned(0, zones as u64 * zone, zone, cap, active);
        c.write_rate = MIB;
        c.placement = placement;
        let mut src = FsSource::new(files, BtrfsFs::new(c).unwrap());
        drive(&mut src, &mut dev);
        let r = src.figures().unwrap();
        let c = dev.counters();
        assert_eq!(c.host_write_bytes, r.dev_write_bytes);
        let fc = src.file_system().counters();
        eprintln!("btrfs on zns, {placement:?}, {active} active: fs WAF {:.3}, reloc {} MiB, resets {}, reclaimed {}, finishes {}", r.dev_write_bytes as f64 / r.app_write_bytes as f64, fc.reloc_write_bytes / MIB, fc.zone_resets, fc.reclaimed_bgs, fc.zone_finishes);
        assert!(fc.zone_resets > 0);
        assert_eq!(fc.zone_finishes > 0, six, "finishes only when the groups outnumber the active zones");
        let live = r.zone_live_bytes.expect("zoned btrfs reports live bytes per zone");
        let zones_now = dev.report_zones(0, 0, wafsim_core::zone::ReportFilter::All).unwrap();
        for z in &zones_now {
            let written = match z.write_pointer {
                Some(wp) => (wp - z.start) * 4096,
                None => z.capacity * 4096,
            };
            assert!(live[z.zone as usize] <= written, "zone {}: {} live, {written} written", z.zone, live[z.zone as usize]);
        }
    }
}

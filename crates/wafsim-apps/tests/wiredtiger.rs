//! The WiredTiger-like engine against hand-computed cases: a page rewritten at every checkpoint
//! alternates between two blocks (copy-on-write, a freed block reusable after the next
//! checkpoint), eviction writes at the dirty target, the journal rewrites its tail block at each
//! sync and loses its files at checkpoints; and every file operation it makes is one a file
//! system takes (no holes, truncates within the file), with the bytes adding up.

use wafsim_apps::wiredtiger::{WiredTiger, WtConfig};
use wafsim_core::pipeline::{FileOp, KvOp};
use wafsim_host::fs::{ConvFs, ConvFsConfig};

/// Offsets and sizes below are in KiB as the comments write them ("16K" = 16 KiB).
const K: u64 = 1024;

fn no_journal(cfg: WtConfig) -> WtConfig {
    WtConfig { journal: false, ..cfg }
}

fn writes_to(ops: &[FileOp], file: u64) -> Vec<(u64, u32)> {
    ops.iter().filter_map(|o| if let FileOp::Write { file: f, offset, len } = *o { (f == file).then_some((offset, len)) } else { None }).collect()
}

/// One document updated every second, checkpoints every 10 s, one collection leaf (one 4 KiB
/// block). Checkpoint 1 writes the leaf at 4K (after the descriptor), the root at 8K and the
/// alloc list at 12K. Checkpoint 2 cannot reuse 4K yet (it belongs to checkpoint 1): the leaf
/// goes to 16K; deleting checkpoint 1 frees 4K..16K once checkpoint 2 is durable. Checkpoint 3
/// puts the leaf back at 4K (best fit), checkpoint 4 at 16K again: a page rewritten at every
/// checkpoint takes two blocks, and the file settles at 36K.
#[test]
fn a_page_rewritten_every_checkpoint_alternates_between_two_blocks() {
    let cfg = no_journal(WtConfig { ops_per_sec: 1.0, checkpoint_secs: 10.0, ..WtConfig::default() });
    let mut wt = WiredTiger::new(cfg).unwrap();
    let mut out = Vec::new();
    wt.apply(&KvOp::Insert { key: 7, bytes: 100 }, &mut out).unwrap();
    let mut leaf = Vec::new();
    let mut sizes = Vec::new();
    for k in 1..=40 {
        wt.apply(&KvOp::Update { key: 7, bytes: 100 }, &mut out).unwrap();
        if k % 10 == 0 {
            // Request 10k arrives at 10k s: checkpoint k/10 ran just before it.
            leaf.push(wt.leaf_block(7).unwrap().1.unwrap().0);
            sizes.push(wt.file_sizes().0);
        }
    }
    assert_eq!(leaf, vec![4 * K, 16 * K, 4 * K, 16 * K]);
    assert_eq!(sizes, vec![16 * K, 32 * K, 36 * K, 36 * K]);
    assert_eq!(wt.counters().checkpoints, 4);
    // The index changed once (the insert): checkpoint 1 wrote it, the others skipped it.
    let index = writes_to(&out, 2);
    assert_eq!(index.len(), 1 + 3, "descriptor, leaf, root, alloc list: {index:?}");
}

/// A 100 KB cache (dirty target 5 KB) and 1,000-byte documents (936 B of fields + 64): the
/// fifth insert passes the target (5 x 1,000 B in the leaf + 5 x 32 B of index entries), so
/// eviction writes the collection leaf (the least recently dirtied; a tie goes to the
/// collection), 2,500 B compressed into one 4 KiB block at 4K. Each later insert dirties it
/// again past the target: its new block cannot be where it is, so 8K; the old one, never
/// checkpointed, is free at once, so the next goes back to 4K.
#[test]
fn eviction_writes_the_dirtiest_leaf_at_the_target() {
    let cfg = no_journal(WtConfig { cache_bytes: 100_000, dirty_target_pct: 5, ops_per_sec: 1000.0, ..WtConfig::default() });
    let mut wt = WiredTiger::new(cfg).unwrap();
    let mut out = Vec::new();
    for key in 0..4 {
        wt.apply(&KvOp::Insert { key, bytes: 936 }, &mut out).unwrap();
    }
    assert_eq!(wt.counters().evicted_pages, 0);
    assert_eq!(wt.dirty_bytes(), 4 * 1000 + 4 * 32);
    wt.apply(&KvOp::Insert { key: 4, bytes: 936 }, &mut out).unwrap();
    assert_eq!(wt.counters().evicted_pages, 1);
    assert_eq!(wt.dirty_bytes(), 5 * 32, "the index leaf stays dirty");
    for key in 5..7 {
        wt.apply(&KvOp::Insert { key, bytes: 936 }, &mut out).unwrap();
    }
    let leaf: Vec<u64> = writes_to(&out, 1).into_iter().skip(1).map(|w| w.0).collect();
    assert_eq!(leaf, vec![4 * K, 8 * K, 4 * K]);
    assert_eq!(wt.counters().evicted_pages, 3);
}

/// The journal at 1,000 requests/s of 1,000-byte documents: records of 500 B compressed + 32,
/// padded to 640 B; a sync every 100 ms writes whole 4 KiB blocks from the last fully synced
/// one to the end: 100 records (64,000 B) in 16 blocks, then from block 15 (where 64,000 B
/// ended, partly filled) to the end of 128,000 B, block 32: 17 blocks.
#[test]
fn the_journal_rewrites_its_tail_block_at_each_sync() {
    let cfg = WtConfig { ops_per_sec: 1000.0, ..WtConfig::default() };
    let mut wt = WiredTiger::new(cfg).unwrap();
    let mut out = Vec::new();
    for key in 0..=200 {
        wt.apply(&KvOp::Insert { key, bytes: 936 }, &mut out).unwrap();
    }
    let journal = writes_to(&out, 16);
    assert_eq!(journal, vec![(0, 16 * 4096), (15 * 4096, 17 * 4096)]);
    assert_eq!(wt.counters().journal_write_bytes, 33 * 4096);
}

/// Journal files of 100,000 B hold 156 records of 640 B; a full one is synced, closed and a new
/// one begins; a checkpoint removes every file but the one being written.
#[test]
fn journal_files_switch_when_full_and_go_at_checkpoints() {
    let cfg = WtConfig { ops_per_sec: 1000.0, journal_file_bytes: 100_000, checkpoint_secs: 1.0, ..WtConfig::default() };
    let mut wt = WiredTiger::new(cfg).unwrap();
    let mut out = Vec::new();
    for key in 0..=999 {
        wt.apply(&KvOp::Insert { key, bytes: 936 }, &mut out).unwrap();
    }
    let created = out.iter().filter(|o| matches!(o, FileOp::Create { group: 1, .. })).count();
    assert_eq!(created, 7, "1,000 records of 640 B, 156 per file");
    assert_eq!(wt.counters().journal_files_removed, 0, "no checkpoint before 1 s");
    wt.apply(&KvOp::Insert { key: 1000, bytes: 936 }, &mut out).unwrap();
    assert_eq!(wt.counters().journal_files_removed, 6);
}

/// Every file operation is one a conventional file system takes (appends and in-place writes,
/// truncates inside the file, deletes of live files), and the file system counts the bytes the
/// engine says it wrote. A small cache (eviction) and a skewed update mix over many checkpoints.
#[test]
fn a_file_system_takes_every_operation_and_the_bytes_add_up() {
    let cfg = WtConfig { ops_per_sec: 20_000.0, cache_bytes: 4 << 20, checkpoint_secs: 1.0, collection_leaf_raw_bytes: 32 << 10, ..WtConfig::default() };
    let mut wt = WiredTiger::new(cfg).unwrap();
    let mut fs = ConvFs::new(ConvFsConfig::new(0, 1 << 30)).unwrap();
    let mut out = Vec::new();
    let mut io = Vec::new();
    let mut x = 1u64;
    let n = 20_000u64;
    for key in 0..n {
        wt.apply(&KvOp::Insert { key, bytes: 936 }, &mut out).unwrap();
    }
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Four in five updates go to the first tenth of the keys.
        let key = if x % 5 < 4 { x % (n / 10) } else { x % n };
        wt.apply(&KvOp::Update { key, bytes: 100 }, &mut out).unwrap();
        for op in out.drain(..) {
            fs.apply(&op, &mut io).unwrap_or_else(|e| panic!("{op}: {e}"));
        }
    }
    let c = wt.counters();
    assert!(c.checkpoints >= 9 && c.evicted_pages > 0, "{c:?}");
    assert_eq!(fs.counters().file_write_bytes, c.data_write_bytes + c.journal_write_bytes);
    assert!(wt.leaves().0 > 1 && wt.leaves().1 > 1, "{:?}", wt.leaves());
}

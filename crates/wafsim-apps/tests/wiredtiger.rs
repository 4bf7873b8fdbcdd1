//! The WiredTiger-like engine against hand-computed cases: a page rewritten at every checkpoint
//! alternates between two blocks (copy-on-write, a freed block reusable after the next
//! checkpoint), eviction writes at the dirty target, the journal rewrites its tail block at each
//! sync and loses its files at checkpoints; and every file operation it makes is one a file
//! system takes (no holes, truncates within the file), with the bytes adding up.

use wafsim_apps::wiredtiger::{Layout, WiredTiger, WtConfig};
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

/// A transaction's journal record holds every operation of it (`__wt_txn_log_op`): an insert
/// logs the document (457 B) and its `_id` index entry (32 B) with the record's 32 B, 521 B
/// padded to 640 B; an update by `_id` changes no index entry, 489 B padded to 512 B. No
/// compression. 100 inserts (64,000 B, blocks 0..16) synced at 100 ms, then 100 updates
/// (51,200 B more, to 115,200 B) synced at 200 ms from block 15, partly filled, to block 29.
#[test]
fn a_journal_record_carries_the_index_entries_of_its_transaction() {
    let cfg = WtConfig { ops_per_sec: 1000.0, compression_ratio: 1.0, ..WtConfig::default() };
    let mut wt = WiredTiger::new(cfg).unwrap();
    let mut out = Vec::new();
    for key in 0..100 {
        wt.apply(&KvOp::Insert { key, bytes: 393 }, &mut out).unwrap();
    }
    for key in 0..=100 {
        wt.apply(&KvOp::Update { key: key % 100, bytes: 393 }, &mut out).unwrap();
    }
    assert_eq!(writes_to(&out, 16), vec![(0, 16 * 4096), (15 * 4096, 14 * 4096)]);
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

/// The TPC-C layout's table numbers are the request generator's.
#[test]
fn the_tpcc_layout_knows_the_generators_tables() {
    use wafsim_apps::wiredtiger::layout::tpcc_table as t;
    use wafsim_workload::tpcc::Table;
    for (n, table) in [(t::WAREHOUSE, Table::Warehouse), (t::DISTRICT, Table::District), (t::CUSTOMER, Table::Customer), (t::HISTORY, Table::History), (t::NEW_ORDER, Table::NewOrder), (t::ORDER, Table::Order), (t::ORDER_LINE, Table::OrderLine), (t::ITEM, Table::Item), (t::STOCK, Table::Stock)] {
        assert_eq!(Table::of(n << 56), Some(table));
    }
    // An order line (row id = order's << 4 | line) goes into its order's document.
    let order = t::ORDER << 56 | 12345;
    let line = t::ORDER_LINE << 56 | 12345 << 4 | 7;
    let (c, doc, embedded) = Layout::Tpcc.route(line).unwrap();
    assert_eq!((doc, embedded), (order, true));
    assert_eq!(Layout::Tpcc.collections()[c].name, "ORDERS");
    assert_eq!(Layout::Tpcc.route(order), Some((c, order, false)));
    assert!(Layout::Tpcc.collections().iter().all(|c| c.name != "ORDER_LINE"), "denormalized: no ORDER_LINE collection");
    assert_eq!(Layout::Tpcc.route(15 << 56), None);
}

/// MongoDB under py-tpcc: a collection and an `_id` index file per table but ORDER_LINE, the
/// secondary indexes, and the oplog. Every write appends one oplog entry of the fields it sent
/// plus the entry's overhead; an order line grows its order's document; the oplog is cut a
/// stone (a hundredth of the cap) at a time, so it never holds more than the cap for long
/// and its file stays small while far more passes through it; only the oplog is journaled.
#[test]
fn tpcc_on_a_replica_set_appends_the_oplog_and_caps_it() {
    use wafsim_workload::tpcc::{Tpcc, TpccConfig};
    let cap = 4 << 20;
    let cfg = WtConfig { layout: Layout::Tpcc, oplog_bytes: Some(cap), ops_per_sec: 20_000.0, cache_bytes: 8 << 20, ..WtConfig::default() };
    let overhead = (cfg.doc_overhead_bytes, cfg.oplog_entry_overhead as u64);
    let mut wt = WiredTiger::new(cfg).unwrap();
    let files = wt.files();
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(files.len(), 8 + 8 + 10 + 1, "{names:?}");
    assert!(names.contains(&"STOCK.S_W_ID, S_I_ID, S_QUANTITY") && names.contains(&"ORDERS._id") && names.last() == Some(&"local.oplog.rs"), "{names:?}");
    let mut tpcc = Tpcc::new(TpccConfig { warehouses: 1, transactions: Some(20_000), ..TpccConfig::default() }, 3).unwrap();
    let (mut out, mut ops) = (Vec::new(), Vec::new());
    let (mut writes, mut sent, mut order_doc) = (0u64, 0u64, None::<(u64, u32)>);
    let mut oplog_max = 0;
    let mut sizes = Vec::new();
    while wafsim_core::pipeline::KvSource::fill(&mut tpcc, &mut ops, 1024) > 0 {
        for op in ops.drain(..) {
            match op {
                KvOp::Insert { bytes, .. } | KvOp::Update { bytes, .. } => {
                    writes += 1;
                    sent += (bytes + overhead.0) as u64;
                }
                KvOp::Delete { .. } => writes += 1,
                _ => {}
            }
            if let KvOp::Insert { key, bytes } = op {
                if key >> 56 == 6 && order_doc.is_none() {
                    order_doc = Some((key, 0));
                }
                // Its lines: row id = the order's << 4 | line number.
                if let Some((order, doc)) = order_doc.as_mut() {
                    if key == *order || key >> 56 == 7 && (key & ((1 << 56) - 1)) >> 4 == *order & ((1 << 56) - 1) {
                        *doc += bytes + overhead.0;
                    }
                }
            }
            wt.apply(&op, &mut out).unwrap();
            oplog_max = oplog_max.max(wt.oplog_bytes());
        }
        sizes.push(wt.files().last().unwrap().2);
    }
    let c = wt.counters().clone();
    // Deletes send no fields: their entries are the overhead alone.
    assert_eq!(c.oplog_write_bytes, sent + writes * overhead.1, "one entry per write");
    assert!(c.oplog_truncated_bytes > 0 && wt.oplog_bytes() <= cap, "{} of {cap}", wt.oplog_bytes());
    // Truncation runs at the write that passes the cap, so the cap is passed by one entry at most.
    assert!(oplog_max <= cap + 2_000, "{oplog_max}");
    assert!(c.oplog_truncated_bytes + wt.oplog_bytes() == c.oplog_write_bytes);
    // Its file holds the capped entries (compressed to half) and the blocks freed since the
    // last checkpoint, which wait for the next: at most about twice the cap's pages, while
    // far more than that passed through it.
    let late = *sizes.last().unwrap();
    assert!(c.oplog_write_bytes > 50 * cap && late < 3 * cap / 2, "oplog file {late} after {} bytes", c.oplog_write_bytes);
    // Only the oplog is journaled: the journal holds about what the oplog took (compressed).
    assert!(c.journal_write_bytes > 0 && c.journal_write_bytes < c.oplog_write_bytes, "{c:?}");
    // An order's document holds its lines: far larger than the 24-byte ORDER row.
    let (order, doc) = order_doc.unwrap();
    assert!(doc > 5 * (54 + overhead.0), "five lines at least: {doc}");
    assert_eq!(wt.document_bytes(order), Some(doc));
}

/// An update of a field inside an index key rewrites the entry, so the index's file is written
/// at the next checkpoint; an update of other fields leaves the indexes alone. One STOCK
/// document (S_QUANTITY is in an index key) and one CUSTOMER document (no updated index field).
#[test]
fn an_update_dirties_only_the_indexes_over_its_fields() {
    let cfg = no_journal(WtConfig { layout: Layout::Tpcc, ops_per_sec: 1.0, checkpoint_secs: 10.0, ..WtConfig::default() });
    let mut wt = WiredTiger::new(cfg).unwrap();
    let files = wt.files();
    let id = |name: &str| files.iter().find(|f| f.0 == name).unwrap_or_else(|| panic!("{name}")).1;
    let (stock, customer) = (9u64 << 56 | 5, 3u64 << 56 | 5);
    let mut out = Vec::new();
    wt.apply(&KvOp::Insert { key: stock, bytes: 306 }, &mut out).unwrap();
    wt.apply(&KvOp::Insert { key: customer, bytes: 655 }, &mut out).unwrap();
    // Requests 3..=10; checkpoint 1 at 10 s writes everything inserted.
    for _ in 0..8 {
        wt.apply(&KvOp::Read { key: stock }, &mut out).unwrap();
    }
    wt.apply(&KvOp::Update { key: stock, bytes: 20 }, &mut out).unwrap();
    wt.apply(&KvOp::Update { key: customer, bytes: 20 }, &mut out).unwrap();
    let before = out.len();
    for _ in 0..9 {
        wt.apply(&KvOp::Read { key: stock }, &mut out).unwrap();
    }
    assert_eq!(wt.counters().checkpoints, 2);
    let second = &out[before..];
    for (name, written) in [("STOCK", true), ("STOCK.S_W_ID, S_I_ID, S_QUANTITY", true), ("STOCK._id", false), ("STOCK.S_I_ID", false), ("CUSTOMER", true), ("CUSTOMER._id", false), ("CUSTOMER.C_W_ID, C_D_ID, C_ID", false), ("CUSTOMER.C_W_ID, C_D_ID, C_LAST", false)] {
        assert_eq!(!writes_to(second, id(name)).is_empty(), written, "{name}");
    }
}

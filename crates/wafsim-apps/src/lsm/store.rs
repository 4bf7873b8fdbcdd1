//! The store: key index, memtable, log, tables; applies requests and emits file operations.

use std::collections::HashMap;

use wafsim_core::pipeline::{FileId, FileOp, KvOp};

use super::compaction::{level_targets, pick_level, pick_level_v7, size_tiered_pick, universal_output_level, universal_pick, OutputCutter, SortedRun};
use super::jobs::{Jobs, JobsState};
use super::stall::WriteController;
use super::log::Log;
use super::memtable::Memtable;
use super::table::{combine_down, entry_bytes, is_partial, is_tombstone, merge, Cells, Kept, Run, Table, PARTIAL, TOMBSTONE};
use super::{CompactionConfig, FilePick, LsmConfig, LsmError, CAPACITY_GROUP_BIT};

/// Where the newest version of a key is: entry `pos` of the table in slot `table`, or slot
/// `pos` of the memtable when `table == MEM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Loc {
    table: u32,
    pos: u32,
}

const MEM: u32 = u32::MAX;

mod clock;


type Index = crate::keymap::KeyMap<Loc>;

/// What an [`Lsm`] has done so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LsmCounters {
    /// Requests applied.
    pub ops: u64,
    /// Client writes of records (inserts, updates, the write of read-modify-writes).
    pub writes: u64,
    /// Client deletes (each writes a tombstone).
    pub deletes: u64,
    /// Client point reads (reads, gets, the read of read-modify-writes).
    pub reads: u64,
    /// Point reads of keys the store never held or whose tombstone was dropped (no I/O:
    /// the bloom filters answer).
    pub missing_reads: u64,
    /// Point reads answered by the memtable (no I/O).
    pub memtable_reads: u64,
    /// Point reads whose newest version is a partial row: they also read older tables, newest
    /// first, down to a full version or a tombstone.
    pub partial_reads: u64,
    /// Older tables those reads visited (one block each; no I/O for a table a background job
    /// is still writing).
    pub older_table_reads: u64,
    /// Point reads of keys whose newest version is in a table a background job is still
    /// writing: answered as if from memory (no I/O; the real store would read the job's
    /// inputs, still on disk, or its memtable).
    pub in_flight_reads: u64,
    /// Scans.
    pub scans: u64,
    /// Key and value bytes clients sent in writes (a delete sends its key).
    pub client_sent_bytes: u64,
    /// Bytes appended to log files (records and flush padding).
    pub log_bytes: u64,
    /// Of which padding to whole blocks at flushes.
    pub log_pad_bytes: u64,
    /// Memtable flushes.
    pub flushes: u64,
    /// Bytes of the SSTable files flushes wrote.
    pub flush_bytes: u64,
    /// Compactions run (trivial moves not included).
    pub compactions: u64,
    /// Leveled: files moved to the next level without a rewrite.
    pub trivial_moves: u64,
    /// Bytes of the SSTable files compactions wrote.
    pub compaction_write_bytes: u64,
    /// Of which per output level (leveled; size-tiered: per tier), as RocksDB's compaction
    /// statistics list them.
    pub compaction_write_bytes_by_level: Vec<u64>,
    /// Bytes compactions read (their input files, whole).
    pub compaction_read_bytes: u64,
    /// Bytes read for clients (point reads and scans).
    pub client_read_bytes: u64,
    /// Tombstones dropped by compactions.
    pub tombstones_dropped: u64,
    /// Older versions merged away by compactions.
    pub versions_dropped: u64,
    /// Files created (SSTables and log segments).
    pub files_created: u64,
    /// Files deleted.
    pub files_deleted: u64,
    /// Leveled: compactions out of L0 (trivial moves not included); universal: compactions
    /// whose newest run is an L0 file.
    pub l0_compactions: u64,
    /// L0 files those compactions read.
    pub l0_compaction_files: u64,
    /// Universal: compactions picked for size amplification, for the size ratio and for the
    /// number of sorted runs ([`super::compaction::UniversalReason`] order).
    pub universal_picks: [u64; 3],
    /// Write controller: model time, seconds (clients' writes, delays and stops).
    pub clock_seconds: f64,
    /// Write controller: client writes that waited for a stop to clear.
    pub stopped_writes: u64,
    /// Seconds they waited.
    pub stop_seconds: f64,
    /// Write controller: client writes slowed to the delayed rate.
    pub delayed_writes: u64,
    /// Seconds they took.
    pub delay_seconds: f64,
}

impl LsmCounters {
    /// File bytes written: log, flushes and compactions.
    pub fn file_write_bytes(&self) -> u64 {
        self.log_bytes + self.flush_bytes + self.compaction_write_bytes
    }

    /// Application WAF: file bytes written per key and value byte clients sent.
    pub fn app_waf(&self) -> f64 {
        self.file_write_bytes() as f64 / self.client_sent_bytes.max(1) as f64
    }

    /// Compaction write amplification: compaction bytes per flushed byte.
    pub fn compaction_waf(&self) -> f64 {
        self.compaction_write_bytes as f64 / self.flush_bytes.max(1) as f64
    }
}

/// One compaction: input groups (each a list of table slots whose key ranges do not overlap,
/// in key order), where the output goes, and how.
#[derive(Debug, Clone)]
struct Job {
    inputs: Vec<Vec<u32>>,
    out_level: u32,
    drop_tombstones: bool,
    /// Split the output into files of this many bytes (leveled; universal below L0).
    split_bytes: Option<u64>,
    /// The input level of a leveled compaction (for the round-robin cursor); of a universal
    /// one, the level of its newest run.
    from_level: Option<usize>,
}

/// What a write stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A whole record.
    Full,
    /// Some cells of a row (`partial_updates`).
    Partial,
    /// A delete.
    Tombstone,
}

/// An LSM-tree key-value store: requests in, file operations out.
pub struct Lsm {
    cfg: LsmConfig,
    cells: Cells,
    index: Index,
    mem: Memtable,
    /// Memtables flushed so far (the current memtable's number).
    mem_id: u64,
    seq: u64,
    tables: Vec<Option<Table>>,
    free_slots: Vec<u32>,
    /// Leveled: per level the table slots (L0 oldest first, others by key). Size-tiered:
    /// level 0 lists every table, oldest first.
    levels: Vec<Vec<u32>>,
    /// Leveled round-robin: per level the largest key of the last file compacted.
    cursors: Vec<Option<u64>>,
    log: Log,
    next_file: FileId,
    next_group: u32,
    groups_wrapped: bool,
    /// Bytes of the live SSTable files.
    table_bytes: u64,
    counters: LsmCounters,
    block: u64,
    /// Flushes and compactions whose file operations are not all released.
    jobs: Jobs,
    /// Reads' buffer of older versions (see [`Lsm::older_versions`]).
    older: Vec<(u64, u32, u32, u32)>,
    /// The write controller and its clock (`LsmConfig::write_controller`).
    wc: Option<WriteController>,
    clock: clock::Clock,
}

impl Lsm {
    /// An empty store.
    pub fn new(cfg: LsmConfig) -> Result<Lsm, LsmError> {
        cfg.validate()?;
        let block = cfg.block_bytes as u64;
        let nlev = match &cfg.compaction {
            CompactionConfig::Leveled(l) => l.num_levels as usize,
            CompactionConfig::Universal(u) => u.num_levels as usize,
            CompactionConfig::SizeTiered(_) => 1,
        };
        let log = Log::new(cfg.log_chunk_bytes as u64, cfg.log_segment_bytes, cfg.log_switch_on_flush, block, cfg.log_group);
        let next_group = 1;
        let window = cfg.pace_window_memtables * cfg.memtable_bytes as f64;
        let jobs = Jobs::new(cfg.background, cfg.flush_lanes, cfg.compaction_lanes, cfg.pace_base, window);
        let cells = Cells { key_bytes: cfg.key_bytes, full_overhead: cfg.record_overhead_bytes, partial_overhead: cfg.partial_record_overhead_bytes };
        Ok(Lsm {
            cells,
            jobs,
            index: Index::default(),
            mem: Memtable::default(),
            mem_id: 0,
            seq: 0,
            tables: Vec::new(),
            free_slots: Vec::new(),
            levels: vec![Vec::new(); nlev],
            cursors: vec![None; nlev],
            log,
            next_file: 0,
            next_group,
            groups_wrapped: false,
            table_bytes: 0,
            counters: LsmCounters::default(),
            block,
            wc: cfg.write_controller.clone().map(WriteController::new),
            clock: clock::Clock::new(nlev),
            cfg,
            older: Vec::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LsmConfig {
        &self.cfg
    }

    /// Counters so far (log counts included).
    pub fn counters(&self) -> LsmCounters {
        let mut c = self.counters.clone();
        c.log_bytes = self.log.counters.write_bytes;
        c.log_pad_bytes = self.log.counters.pad_bytes;
        c
    }

    /// Bytes of a stored record with `value` bytes (key and record overhead added).
    pub fn record_bytes(&self, value: u32) -> u64 {
        self.cfg.key_bytes as u64 + value as u64 + self.cfg.record_overhead_bytes as u64
    }

    /// Keys the index knows (live records and tombstones not dropped yet).
    pub fn keys(&self) -> u64 {
        self.index.len() as u64
    }

    /// Bytes of the live files: SSTables (outputs of background jobs included, written or
    /// not) and log segments. What `capacity_bytes` is checked against, as at once: files
    /// that background jobs have yet to delete ([`JobsState::held_bytes`]) come on top, and
    /// the file system below refuses what does not fit.
    pub fn live_file_bytes(&self) -> u64 {
        self.table_bytes + self.log.live_bytes()
    }

    /// The background jobs: lanes in use, queues, bytes not released yet.
    pub fn jobs(&self) -> JobsState {
        self.jobs.state()
    }

    /// Write bytes counted but not released yet by background jobs.
    pub fn pending_job_write_bytes(&self) -> u64 {
        self.jobs.pending_write_bytes()
    }

    /// Release every background job's remaining file operations now (the request stream
    /// ended): the file system then sees complete files.
    pub fn drain_jobs(&mut self, out: &mut Vec<FileOp>) {
        self.jobs.drain(out);
    }

    /// Live log segments.
    pub fn log_segments(&self) -> usize {
        self.log.segments()
    }

    /// Bytes written into the memtable since the last flush.
    pub fn memtable_bytes(&self) -> u64 {
        self.mem.bytes()
    }

    /// Tables per level (leveled) or per tier (size-tiered: a table's tier counts the
    /// compactions its oldest data went through).
    pub fn tables_per_level(&self) -> Vec<u32> {
        let mut v = Vec::new();
        for t in self.tables.iter().flatten() {
            let l = t.level as usize;
            if v.len() <= l {
                v.resize(l + 1, 0);
            }
            v[l] += 1;
        }
        v.resize(v.len().max(self.levels.len()), 0);
        v
    }

    /// File bytes per level (leveled) or tier (size-tiered).
    pub fn bytes_per_level(&self) -> Vec<u64> {
        let mut v = Vec::new();
        for t in self.tables.iter().flatten() {
            let l = t.level as usize;
            if v.len() <= l {
                v.resize(l + 1, 0);
            }
            v[l] += t.file_bytes;
        }
        v.resize(v.len().max(self.levels.len()), 0);
        v
    }

    /// The live tables: (file, group, level or tier, entries, file bytes), by file id.
    pub fn tables(&self) -> Vec<TableInfo> {
        let mut v: Vec<TableInfo> = self
            .tables
            .iter()
            .flatten()
            .map(|t| TableInfo { file: t.file, group: t.group, level: t.level, entries: t.len() as u64, tombstones: t.tombstones, partials: t.partials, file_bytes: t.file_bytes, min_key: t.min_key(), max_key: t.max_key() })
            .collect();
        v.sort_by_key(|t| t.file);
        v
    }

    /// Apply one request, appending the file operations it causes to `out` in order. A
    /// refused request may have emitted part of its operations.
    pub fn apply(&mut self, op: &KvOp, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        self.counters.ops += 1;
        match *op {
            KvOp::Insert { key, bytes } => self.write(key, bytes, bytes, Kind::Full, out),
            KvOp::Update { key, bytes } => self.update(key, bytes, out),
            KvOp::Read { key } | KvOp::Get { key, .. } => {
                self.read(key, out);
                Ok(())
            }
            KvOp::Scan { key, records } => {
                self.scan(key, records, out);
                Ok(())
            }
            KvOp::ReadModifyWrite { key, bytes } => {
                self.read(key, out);
                self.update(key, bytes, out)
            }
            KvOp::Delete { key } => self.write(key, 0, 0, Kind::Tombstone, out),
        }
    }

    /// An update of `bytes` value bytes: a partial row of them (`partial_updates`), or a whole
    /// new record of the larger of the old value and `bytes`.
    fn update(&mut self, key: u64, bytes: u32, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        if self.cfg.partial_updates {
            self.write(key, bytes, bytes, Kind::Partial, out)
        } else {
            let value = self.value_of(key).map_or(bytes, |v| v.max(bytes));
            self.write(key, bytes, value, Kind::Full, out)
        }
    }

    /// Flush the memtable now and run the compactions it causes, all to completion (background
    /// jobs included), as at shutdown.
    pub fn flush(&mut self, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        if self.wc.is_some() {
            return self.settle(true, out);
        }
        if !self.mem.is_empty() {
            self.flush_memtable(out)?;
            self.compact(out)?;
        }
        self.jobs.drain(out);
        Ok(())
    }

    /// db_bench's `waitforcompaction`: every flush and compaction due runs to completion, and
    /// the compactions they make due, until none is (`flush_memtable`: the memtable is
    /// flushed first, as the next db_bench's WAL recovery does when it opens the store).
    /// Without the write controller that is the at-once store's cascade.
    pub fn wait_for_compaction(&mut self, flush_memtable: bool, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        if self.wc.is_some() {
            return self.settle(flush_memtable, out);
        }
        if flush_memtable && !self.mem.is_empty() {
            self.flush_memtable(out)?;
        }
        self.compact(out)?;
        self.jobs.drain(out);
        Ok(())
    }

    /// Value bytes of `key` (None: absent or deleted): of its newest version, combined with
    /// the older ones down to a full version or a tombstone when it is a partial row.
    pub fn value_of(&self, key: u64) -> Option<u32> {
        let &loc = self.index.get(&key)?;
        let mut size = self.size_at(loc);
        if is_partial(size) {
            let mut older = Vec::new();
            self.older_versions(key, loc, &mut older);
            size = combine_down(self.cells, std::iter::once(size).chain(older.iter().map(|v| v.1)));
        }
        if is_tombstone(size) {
            return None;
        }
        Some(self.cells.value(size))
    }

    /// Stored size (with flags) of the entry at `loc`.
    #[inline]
    fn size_at(&self, loc: Loc) -> u32 {
        if loc.table == MEM {
            self.mem.slots[loc.pos as usize].1
        } else {
            self.table(loc.table).run.size(loc.pos as usize)
        }
    }

    /// The versions of `key` older than its newest (at `newest`): (sequence number, stored
    /// size, table slot, entry) from every live table holding the key, newest first. Every
    /// table is probed (key range, then a search), as if bloom filters were perfect. `v` is
    /// cleared first (a buffer the caller keeps: reads call this millions of times).
    fn older_versions(&self, key: u64, newest: Loc, v: &mut Vec<(u64, u32, u32, u32)>) {
        v.clear();
        for (slot, t) in self.tables.iter().enumerate() {
            let Some(t) = t else { continue };
            if slot as u32 == newest.table || key < t.min_key() || key > t.max_key() || !t.may_contain(key) {
                continue;
            }
            let i = t.lower_bound(key);
            if t.run.keys.get(i) == Some(&key) {
                let m = t.run.meta[i];
                v.push((m.seq, m.size, slot as u32, i as u32));
            }
        }
        v.sort_unstable_by_key(|v| std::cmp::Reverse(v.0));
    }

    #[inline]
    fn table(&self, slot: u32) -> &Table {
        self.tables[slot as usize].as_ref().expect("live table slot")
    }

    fn full(&self, need: u64) -> LsmError {
        LsmError::Full { need, live: self.live_file_bytes(), capacity: self.cfg.capacity_bytes }
    }

    /// A client write of `value` bytes (`sent` of them from the client): a whole record, a
    /// partial row or a tombstone.
    fn write(&mut self, key: u64, sent: u32, value: u32, kind: Kind, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        let k = self.cfg.key_bytes as u64;
        let overhead = if kind == Kind::Partial { self.cfg.partial_record_overhead_bytes } else { self.cfg.record_overhead_bytes };
        let stored = k + value as u64 + overhead as u64;
        if stored >= PARTIAL as u64 {
            return Err(LsmError::RecordTooLarge { key, bytes: value });
        }
        let logged = k + value as u64 + self.cfg.log_record_overhead_bytes as u64;
        let append = self.log.pending_append(logged);
        if append > 0 && self.live_file_bytes() + append > self.cfg.capacity_bytes {
            return Err(self.full(append));
        }
        if self.wc.is_some() {
            self.before_write(logged, out)?;
        }
        self.log.add(logged, self.mem_id, &mut self.next_file, out);
        if kind == Kind::Tombstone {
            self.counters.deletes += 1;
            self.counters.client_sent_bytes += k;
        } else {
            self.counters.writes += 1;
            self.counters.client_sent_bytes += k + sent as u64;
        }
        self.seq += 1;
        let size = stored as u32
            | match kind {
                Kind::Full => 0,
                Kind::Partial => PARTIAL,
                Kind::Tombstone => TOMBSTONE,
            };
        match self.index.entry(key) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let loc = e.get_mut();
                if loc.table == MEM {
                    // Cells merge in memory: a partial row over the memtable's version.
                    let old = self.mem.slots[loc.pos as usize].1;
                    let size = if kind == Kind::Partial { self.cells.combine(size, old) } else { size };
                    self.mem.overwrite(loc.pos, size, self.seq);
                } else {
                    *loc = Loc { table: MEM, pos: self.mem.push(key, size, self.seq) };
                }
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(Loc { table: MEM, pos: self.mem.push(key, size, self.seq) });
            }
        }
        self.mem.bytes += stored;
        if self.mem.bytes >= self.cfg.memtable_bytes {
            self.flush_memtable(out)?;
            if self.wc.is_some() {
                self.installed(out)?;
                return Ok(());
            }
            self.compact(out)?;
        }
        if self.wc.is_none() {
            self.jobs.after_write(logged, out);
        }
        Ok(())
    }

    /// A point read: one block of the table holding the key's newest version; when that is a
    /// partial row, one block of each older table holding the key too, newest first, down to
    /// the first full version or tombstone.
    fn read(&mut self, key: u64, out: &mut Vec<FileOp>) {
        self.counters.reads += 1;
        let Some(&loc) = self.index.get(&key) else {
            self.counters.missing_reads += 1;
            return;
        };
        let newest = self.size_at(loc);
        if loc.table != MEM {
            if self.jobs.is_incomplete(self.table(loc.table).file) {
                self.counters.in_flight_reads += 1;
            } else {
                self.read_block(loc, out);
            }
        }
        if !is_partial(newest) {
            self.counters.memtable_reads += (loc.table == MEM) as u64;
            return;
        }
        self.counters.partial_reads += 1;
        let mut acc = newest;
        let mut older = std::mem::take(&mut self.older);
        self.older_versions(key, loc, &mut older);
        for &(_, size, table, pos) in &older {
            if !is_partial(acc) {
                break;
            }
            self.counters.older_table_reads += 1;
            if !self.jobs.is_incomplete(self.table(table).file) {
                self.read_block(Loc { table, pos }, out);
            }
            acc = self.cells.combine(acc, size);
        }
        self.older = older;
    }

    /// Read the block holding the first byte of a table entry (when reads are on).
    fn read_block(&mut self, loc: Loc, out: &mut Vec<FileOp>) {
        if !self.cfg.read_ios {
            return;
        }
        let t = self.table(loc.table);
        let off = t.offset(loc.pos as usize) / self.block * self.block;
        out.push(FileOp::Read { file: t.file, offset: off, len: self.block as u32 });
        self.counters.client_read_bytes += self.block;
    }

    /// Sorted runs of tables, each a list of slots with disjoint key ranges in key order.
    fn runs(&self) -> Vec<&[u32]> {
        match &self.cfg.compaction {
            CompactionConfig::SizeTiered(_) => self.levels[0].chunks(1).collect(),
            CompactionConfig::Leveled(_) | CompactionConfig::Universal(_) => {
                let mut v: Vec<&[u32]> = self.levels[0].chunks(1).collect();
                v.extend(self.levels[1..].iter().filter(|l| !l.is_empty()).map(|l| l.as_slice()));
                v
            }
        }
    }

    /// A scan of `records` keys from `key` on: the end key is where `records` distinct keys
    /// of the tables have been passed; each table holding keys in the range is read once over
    /// the range's bytes, rounded out to blocks. Memtable keys cost nothing and are not
    /// counted.
    fn scan(&mut self, key: u64, records: u32, out: &mut Vec<FileOp>) {
        self.counters.scans += 1;
        if records == 0 {
            return;
        }
        let runs = self.runs();
        // Cursor per run: (table index in the run, entry).
        let mut cur: Vec<(usize, usize)> = runs
            .iter()
            .map(|r| {
                let i = r.partition_point(|&s| self.table(s).max_key() < key);
                let pos = r.get(i).map_or(0, |&s| self.table(s).lower_bound(key));
                (i, pos)
            })
            .collect();
        let start = cur.clone();
        let head = |r: &[u32], c: (usize, usize)| -> Option<u64> { r.get(c.0).map(|&s| self.table(s).run.keys[c.1]) };
        let mut end = None;
        let mut n = 0;
        while n < records {
            let Some(min) = runs.iter().zip(&cur).filter_map(|(r, &c)| head(r, c)).min() else { break };
            for (r, c) in runs.iter().zip(cur.iter_mut()) {
                if head(r, *c) == Some(min) {
                    c.1 += 1;
                    if c.1 == self.table(r[c.0]).len() {
                        *c = (c.0 + 1, 0);
                    }
                }
            }
            end = Some(min);
            n += 1;
        }
        let Some(end) = end else { return };
        if !self.cfg.read_ios {
            return;
        }
        let b = self.block;
        let mut reads = Vec::new();
        for (r, &(mut ti, mut pos)) in runs.iter().zip(&start) {
            while let Some(&s) = r.get(ti) {
                let t = self.table(s);
                if t.run.keys.get(pos).is_none_or(|&k| k > end) {
                    break;
                }
                if self.jobs.is_incomplete(t.file) {
                    // Still being written: as if from memory.
                    ti += 1;
                    pos = 0;
                    continue;
                }
                let stop = t.run.keys.partition_point(|&k| k <= end);
                let lo = t.offset(pos) / b * b;
                let hi = t.offset(stop).div_ceil(b) * b;
                reads.push(FileOp::Read { file: t.file, offset: lo, len: (hi - lo) as u32 });
                ti += 1;
                pos = 0;
            }
        }
        for r in reads {
            if let FileOp::Read { len, .. } = r {
                self.counters.client_read_bytes += len as u64;
            }
            out.push(r);
        }
    }

    /// A new group for a job's output, with the capacity bit when `level` (level or tier) is
    /// at or past the staging boundary. Ids count up from 1 (skipping the log's); after 2^31
    /// of them they wrap around and skip ids still used by a live table.
    fn new_group(&mut self, level: u32) -> u32 {
        let cap = self.cfg.staging_levels.is_some_and(|n| level >= n);
        if let Some(g) = self.cfg.table_group {
            return if cap { g | CAPACITY_GROUP_BIT } else { g };
        }
        loop {
            let g = self.next_group;
            self.next_group = if g + 1 >= CAPACITY_GROUP_BIT {
                self.groups_wrapped = true;
                1
            } else {
                g + 1
            };
            if g == self.cfg.log_group {
                continue;
            }
            if self.groups_wrapped && self.tables.iter().flatten().any(|t| t.group & !CAPACITY_GROUP_BIT == g) {
                continue;
            }
            let cap = self.cfg.staging_levels.is_some_and(|n| level >= n);
            return if cap { g | CAPACITY_GROUP_BIT } else { g };
        }
    }

    /// Write `run` as a new table file: create, appends of the write size, close (into a
    /// job's operations).
    fn write_table(&mut self, run: Run, group: u32, level: u32, out: &mut Vec<FileOp>) -> u32 {
        let file = self.next_file;
        self.next_file += 1;
        self.jobs.will_write(file);
        let t = Table::new(run, file, group, level, self.block);
        out.push(FileOp::Create { file, group });
        let w = self.cfg.write_bytes as u64;
        let mut off = 0;
        while off < t.file_bytes {
            let len = w.min(t.file_bytes - off);
            out.push(FileOp::Write { file, offset: off, len: len as u32 });
            off += len;
        }
        out.push(FileOp::Close { file });
        self.counters.files_created += 1;
        self.table_bytes += t.file_bytes;
        match self.free_slots.pop() {
            Some(s) => {
                self.tables[s as usize] = Some(t);
                s
            }
            None => {
                self.tables.push(Some(t));
                self.tables.len() as u32 - 1
            }
        }
    }

    fn flush_memtable(&mut self, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        self.log.sync_for_flush(self.mem_id, &mut self.next_file, out);
        let data: u64 = self.mem.slots.iter().map(|s| entry_bytes(s.1) as u64).sum();
        let need = data.div_ceil(self.block) * self.block;
        if self.live_file_bytes() + need > self.cfg.capacity_bytes {
            return Err(self.full(need));
        }
        let run = self.mem.drain_sorted();
        let group = self.new_group(0);
        let keys = run.keys.clone();
        let mut ops = Vec::with_capacity((need / self.cfg.write_bytes as u64) as usize + 3);
        let slot = self.write_table(run, group, 0, &mut ops);
        for (i, k) in keys.into_iter().enumerate() {
            self.index.insert(k, Loc { table: slot, pos: i as u32 });
        }
        let fb = self.table(slot).file_bytes;
        self.counters.flushes += 1;
        self.counters.flush_bytes += fb;
        self.levels[0].push(slot);
        let freed = self.log.release(self.mem_id);
        self.jobs.add_flush(self.mem_id, ops, freed, out);
        self.mem_id += 1;
        Ok(())
    }

    /// Run compactions until none is due.
    fn compact(&mut self, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        let mut rounds = 0u64;
        while let Some(job) = self.next_job() {
            rounds += 1;
            if rounds > 1_000_000 {
                return Err(LsmError::NoProgress("a million compactions after one flush".into()));
            }
            self.run_job(job, out)?;
        }
        Ok(())
    }

    fn next_job(&mut self) -> Option<Job> {
        match self.cfg.compaction.clone() {
            CompactionConfig::SizeTiered(st) => {
                let slots = &self.levels[0];
                let sizes: Vec<u64> = slots.iter().map(|&s| self.table(s).file_bytes).collect();
                let pick = size_tiered_pick(&sizes, &st)?;
                let mut inputs: Vec<Vec<u32>> = pick.iter().map(|&i| vec![slots[i]]).collect();
                // Oldest first (the merge decides by sequence number; the order only fixes
                // the read order).
                inputs.sort_by_key(|g| self.table(g[0]).file);
                let out_level = inputs.iter().map(|g| self.table(g[0]).level).max().unwrap_or(0) + 1;
                let drop_tombstones = inputs.len() == slots.len();
                Some(Job { inputs, out_level, drop_tombstones, split_bytes: None, from_level: None })
            }
            CompactionConfig::Universal(uc) => {
                // Sorted runs newest first: installed L0 files (levels[0] is oldest first),
                // then each non-empty level.
                let l0: Vec<u32> = self.levels[0].iter().rev().copied().filter(|&s| self.wc.is_none() || !self.jobs.is_incomplete(self.table(s).file)).collect();
                let mut members: Vec<Vec<u32>> = l0.iter().map(|&s| vec![s]).collect();
                let mut runs: Vec<SortedRun> = l0.iter().map(|&s| SortedRun { level: 0, bytes: self.table(s).file_bytes }).collect();
                for (l, files) in self.levels.iter().enumerate().skip(1) {
                    if !files.is_empty() {
                        runs.push(SortedRun { level: l as u32, bytes: files.iter().map(|&s| self.table(s).file_bytes).sum() });
                        members.push(files.clone());
                    }
                }
                let pick = universal_pick(&runs, &uc)?;
                let out_level = universal_output_level(&runs, pick.end, uc.num_levels);
                let drop_tombstones = pick.end == runs.len();
                let split_bytes = (out_level > 0).then_some(uc.target_file_bytes);
                let from_level = Some(runs[pick.start].level as usize);
                self.counters.universal_picks[pick.reason as usize] += 1;
                Some(Job { inputs: members.drain(pick.start..pick.end).collect(), out_level, drop_tombstones, split_bytes, from_level })
            }
            CompactionConfig::Leveled(lc) => {
                let bytes: Vec<u64> = self.levels.iter().map(|l| l.iter().map(|&s| self.table(s).file_bytes).sum()).collect();
                let (from, targets, l0) = if self.wc.is_some() {
                    // Picked when a lane frees, from installed files: L0 files whose flush is
                    // complete, none while an L0 compaction runs.
                    let l0: Vec<u32> = self.levels[0].iter().copied().filter(|&s| !self.jobs.is_incomplete(self.table(s).file)).collect();
                    let mut idle = bytes.clone();
                    idle[0] = l0.iter().map(|&s| self.table(s).file_bytes).sum();
                    let mut all = bytes.clone();
                    all[0] = idle[0] + self.clock.compacting_bytes[0];
                    let targets = level_targets(&all, &lc);
                    let from = pick_level_v7(&idle, l0.len(), all[0], self.clock.compacting_files[0] > 0, &targets, &lc)?;
                    (from, targets, l0)
                } else {
                    let targets = level_targets(&bytes, &lc);
                    (pick_level(&bytes, self.levels[0].len(), &targets, &lc)?, targets, self.levels[0].clone())
                };
                let to = if from == 0 { targets.base_level } else { from + 1 };
                let upper: Vec<u32> = if from == 0 {
                    l0
                } else {
                    vec![self.pick_file(from, lc.pick)]
                };
                let (mut lo, mut hi) = self.key_span(&upper).expect("inputs");
                let mut lower: Vec<u32> = self.overlapping(to, lo, hi);
                let mut upper = upper;
                if from > 0 && lc.expand_inputs && !lower.is_empty() {
                    if let Some(e) = self.expanded_inputs(from, to, &upper, &lower) {
                        upper = e;
                        (lo, hi) = self.key_span(&upper).expect("inputs");
                        lower = self.overlapping(to, lo, hi);
                    }
                }
                let mut inputs: Vec<Vec<u32>> = if from == 0 { upper.iter().map(|&s| vec![s]).collect() } else { vec![upper] };
                if !lower.is_empty() {
                    inputs.push(lower);
                }
                let drop_tombstones = (to + 1..self.levels.len()).all(|l| self.overlapping(l, lo, hi).is_empty());
                Some(Job { inputs, out_level: to as u32, drop_tombstones, split_bytes: Some(lc.target_file_bytes), from_level: Some(from) })
            }
        }
    }

    /// More files of level `from` for a compaction of `upper` into `lower` (level `to`), when
    /// they come without more files of `to` (RocksDB `CompactionPicker::SetupOtherInputs`,
    /// whose byte limit `ignore_max_compaction_bytes_for_input` lifts by default): first every
    /// `from` file overlapping the span of upper and lower, if the `to` files overlapping them
    /// are as many; else the `from` files lying wholly inside that span. None: no more files.
    fn expanded_inputs(&self, from: usize, to: usize, upper: &[u32], lower: &[u32]) -> Option<Vec<u32>> {
        let (lo, hi) = self.key_span(upper.iter().chain(lower))?;
        let touching = self.overlapping(from, lo, hi);
        if touching.len() > upper.len() {
            let (a, b) = self.key_span(&touching)?;
            if self.overlapping(to, a, b).len() == lower.len() {
                return Some(touching);
            }
        }
        let inside: Vec<u32> = touching.into_iter().filter(|&s| self.table(s).min_key() >= lo && self.table(s).max_key() <= hi).collect();
        (inside.len() > upper.len()).then_some(inside)
    }

    /// The smallest and largest key of the tables in `slots` (None: no tables).
    fn key_span<'a>(&self, slots: impl IntoIterator<Item = &'a u32>) -> Option<(u64, u64)> {
        slots.into_iter().map(|&s| (self.table(s).min_key(), self.table(s).max_key())).reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
    }

    /// Slots of level `l` (l >= 1) overlapping [lo, hi], in key order.
    fn overlapping(&self, l: usize, lo: u64, hi: u64) -> Vec<u32> {
        let files = &self.levels[l];
        let first = files.partition_point(|&s| self.table(s).max_key() < lo);
        files[first..].iter().copied().take_while(|&s| self.table(s).min_key() <= hi).collect()
    }

    /// The file of level `l` (>= 1) to compact into the next level.
    fn pick_file(&self, l: usize, pick: FilePick) -> u32 {
        let files = &self.levels[l];
        match pick {
            FilePick::RoundRobin => {
                let i = match self.cursors[l] {
                    Some(c) => files.iter().position(|&s| self.table(s).min_key() > c).unwrap_or(0),
                    None => 0,
                };
                files[i]
            }
            FilePick::MinOverlappingRatio => {
                let mut best = (u128::MAX, files[0]);
                for &s in files {
                    let t = self.table(s);
                    let over: u64 = self.overlapping(l + 1, t.min_key(), t.max_key()).iter().map(|&o| self.table(o).file_bytes).sum();
                    let ratio = over as u128 * 1024 / t.file_bytes.max(1) as u128;
                    if ratio < best.0 {
                        best = (ratio, s);
                    }
                }
                best.1
            }
        }
    }

    fn run_job(&mut self, job: Job, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        let slots: Vec<u32> = job.inputs.iter().flatten().copied().collect();
        if let Some(from) = job.from_level {
            let last = slots.iter().take(job.inputs[0].len()).map(|&s| self.table(s).max_key()).max();
            self.cursors[from] = last;
        }
        // A trivial move: the upper inputs do not overlap each other nor anything in the
        // output level, and stay in the same media class.
        if job.from_level.is_some() && matches!(self.cfg.compaction, CompactionConfig::Leveled(_)) && self.try_trivial_move(&job) {
            return Ok(());
        }
        let in_bytes: u64 = slots.iter().map(|&s| self.table(s).file_bytes).sum();
        if self.live_file_bytes() + in_bytes > self.cfg.capacity_bytes {
            return Err(self.full(in_bytes));
        }
        self.counters.compactions += 1;
        // Bytes and files per input level (the write controller counts them until the end).
        let mut in_levels: Vec<(usize, u64, u32)> = Vec::new();
        for &s in &slots {
            let t = self.table(s);
            match in_levels.iter_mut().find(|e| e.0 == t.level as usize) {
                Some(e) => {
                    e.1 += t.file_bytes;
                    e.2 += 1;
                }
                None => in_levels.push((t.level as usize, t.file_bytes, 1)),
            }
        }
        if job.from_level == Some(0) {
            let n = in_levels.iter().find(|e| e.0 == 0).map_or(0, |e| e.2);
            self.counters.l0_compactions += 1;
            self.counters.l0_compaction_files += n as u64;
        }
        // The job's operations: read every input whole, write the outputs, delete the inputs.
        let mut ops = Vec::new();
        let r = self.cfg.read_chunk_bytes as u64;
        for &s in &slots {
            let (file, size) = (self.table(s).file, self.table(s).file_bytes);
            let mut off = 0;
            while off < size {
                let len = r.min(size - off);
                ops.push(FileOp::Read { file, offset: off, len: len as u32 });
                off += len;
            }
            self.counters.compaction_read_bytes += size;
        }
        // RocksDB 7.8's output cuts need the files of the first level below the output that
        // overlap the compaction (`CompactionPicker::GetGrandparents`).
        let mut cutter = match (&self.cfg.compaction, job.split_bytes) {
            (CompactionConfig::Leveled(lc), Some(t)) if lc.dynamic_file_size => {
                let (lo, hi) = self.key_span(&slots).expect("inputs");
                let below = (job.out_level as usize + 1..self.levels.len()).map(|l| self.overlapping(l, lo, hi)).find(|g| !g.is_empty()).unwrap_or_default();
                let g = below.iter().map(|&s| (self.table(s).min_key(), self.table(s).max_key(), self.table(s).file_bytes)).collect();
                Some(OutputCutter::new(g, t, true))
            }
            _ => None,
        };
        // Take the inputs out of the tree; their slots stay reserved until the end.
        let mut taken: Vec<(u32, Table)> = Vec::with_capacity(slots.len());
        for &s in &slots {
            taken.push((s, self.tables[s as usize].take().expect("live input")));
        }
        for l in self.levels.iter_mut() {
            l.retain(|s| !slots.contains(s));
        }
        let in_entries: u64 = taken.iter().map(|t| t.1.len() as u64).sum();
        let mut pos_of = HashMap::new();
        for (i, (s, _)) in taken.iter().enumerate() {
            pos_of.insert(*s, i);
        }
        let inputs: Vec<Vec<(&Run, u32)>> = job.inputs.iter().map(|g| g.iter().map(|s| (&taken[pos_of[s]].1.run, *s)).collect()).collect();
        let group = self.new_group(job.out_level);
        let mut outputs: Vec<u32> = Vec::new();
        let mut cur = Run::default();
        let mut origin: Vec<Loc> = Vec::new();
        let mut cur_bytes = 0u64;
        let mut kept = 0u64;
        let mut dropped = 0u64;
        let mut dropped_keys: Vec<(u64, Loc)> = Vec::new();
        let cells = self.cells;
        merge(&inputs, job.drop_tombstones, cells, |k: Kept| {
            let from = Loc { table: k.tag, pos: k.pos as u32 };
            if k.dropped {
                dropped += 1;
                dropped_keys.push((k.key, from));
                return;
            }
            kept += 1;
            if let Some(c) = cutter.as_mut() {
                if c.cut_before(k.key, cur_bytes) {
                    outputs.push(self.finish_output(std::mem::take(&mut cur), std::mem::take(&mut origin), group, job.out_level, &mut ops));
                    cur_bytes = 0;
                }
            }
            cur.push(k.key, k.size, k.seq);
            origin.push(from);
            cur_bytes += entry_bytes(k.size) as u64;
            if cutter.is_none() && job.split_bytes.is_some_and(|b| cur_bytes >= b) {
                outputs.push(self.finish_output(std::mem::take(&mut cur), std::mem::take(&mut origin), group, job.out_level, &mut ops));
                cur_bytes = 0;
            }
        });
        if !cur.is_empty() {
            outputs.push(self.finish_output(cur, origin, group, job.out_level, &mut ops));
        }
        drop(inputs);
        for (key, from) in dropped_keys {
            if self.index.get(&key) == Some(&from) {
                self.index.remove(&key);
            }
        }
        self.counters.tombstones_dropped += dropped;
        self.counters.versions_dropped += in_entries - kept - dropped;
        // The inputs go once the outputs are complete.
        let mut input_files = Vec::with_capacity(taken.len());
        for (s, t) in taken {
            ops.push(FileOp::Delete { file: t.file });
            input_files.push(t.file);
            self.counters.files_deleted += 1;
            self.table_bytes -= t.file_bytes;
            self.free_slots.push(s);
        }
        self.place(&outputs, job.out_level);
        let id = self.jobs.add_compaction(ops, input_files, in_bytes, out);
        if self.wc.is_some() {
            self.clock.compacting(id, in_levels);
        }
        Ok(())
    }

    /// Write one compaction output and point the index at the entries that are the newest of
    /// their keys.
    fn finish_output(&mut self, run: Run, origin: Vec<Loc>, group: u32, level: u32, out: &mut Vec<FileOp>) -> u32 {
        let keys = run.keys.clone();
        let slot = self.write_table(run, group, level, out);
        let fb = self.table(slot).file_bytes;
        self.counters.compaction_write_bytes += fb;
        let by = &mut self.counters.compaction_write_bytes_by_level;
        if by.len() <= level as usize {
            by.resize(level as usize + 1, 0);
        }
        by[level as usize] += fb;
        for (i, (k, from)) in keys.into_iter().zip(origin).enumerate() {
            if let Some(loc) = self.index.get_mut(&k) {
                if *loc == from {
                    *loc = Loc { table: slot, pos: i as u32 };
                }
            }
        }
        slot
    }

    /// Put new tables into their level (by key) or the size-tiered list.
    fn place(&mut self, slots: &[u32], level: u32) {
        match self.cfg.compaction {
            CompactionConfig::SizeTiered(_) => self.levels[0].extend_from_slice(slots),
            // A universal output into L0 goes where its inputs were in time: L0 files stay
            // ordered by their newest sequence number (RocksDB's L0 order), oldest first.
            CompactionConfig::Universal(_) if level == 0 => {
                self.levels[0].extend_from_slice(slots);
                let mut l0 = std::mem::take(&mut self.levels[0]);
                l0.sort_by_cached_key(|&s| self.table(s).run.meta.iter().map(|m| m.seq).max().unwrap_or(0));
                self.levels[0] = l0;
            }
            CompactionConfig::Leveled(_) | CompactionConfig::Universal(_) => {
                let l = level as usize;
                for &s in slots {
                    let k = self.table(s).min_key();
                    let i = self.levels[l].partition_point(|&o| self.table(o).min_key() < k);
                    self.levels[l].insert(i, s);
                }
            }
        }
    }

    fn try_trivial_move(&mut self, job: &Job) -> bool {
        let from = job.from_level.expect("leveled");
        let upper_groups = if from == 0 { job.inputs.iter().filter(|g| self.table(g[0]).level == 0).count() } else { 1 };
        let upper: Vec<u32> = job.inputs.iter().take(upper_groups).flatten().copied().collect();
        if job.inputs.len() != upper_groups {
            return false; // something in the output level overlaps
        }
        let mut ranges: Vec<(u64, u64)> = upper.iter().map(|&s| (self.table(s).min_key(), self.table(s).max_key())).collect();
        ranges.sort();
        if ranges.windows(2).any(|w| w[1].0 <= w[0].1) {
            return false;
        }
        let cap = |l: u32| self.cfg.staging_levels.is_some_and(|n| l >= n);
        if upper.iter().any(|&s| cap(self.table(s).level) != cap(job.out_level)) {
            return false;
        }
        for l in self.levels.iter_mut() {
            l.retain(|s| !upper.contains(s));
        }
        for &s in &upper {
            self.tables[s as usize].as_mut().expect("live").level = job.out_level;
        }
        self.place(&upper, job.out_level);
        self.counters.trivial_moves += upper.len() as u64;
        true
    }

    /// Check the bookkeeping (tests): every index entry points at its key, tables are sorted
    /// and listed once, byte counts add up.
    pub fn check_invariants(&self) {
        for (&k, loc) in &self.index {
            if loc.table == MEM {
                assert_eq!(self.mem.slots[loc.pos as usize].0, k, "memtable slot of key {k}");
            } else {
                assert_eq!(self.table(loc.table).run.keys[loc.pos as usize], k, "table entry of key {k}");
            }
        }
        let listed: Vec<u32> = self.levels.iter().flatten().copied().collect();
        let live: Vec<u32> = (0..self.tables.len() as u32).filter(|&s| self.tables[s as usize].is_some()).collect();
        let mut sorted = listed.clone();
        sorted.sort();
        assert_eq!(sorted, live, "every live table listed once");
        assert_eq!(self.tables.iter().flatten().map(|t| t.file_bytes).sum::<u64>(), self.table_bytes);
        for t in self.tables.iter().flatten() {
            assert!(t.run.keys.windows(2).all(|w| w[0] < w[1]), "table keys ascend");
            assert!(self.cfg.partial_updates || t.partials == 0, "partial rows only with partial updates");
        }
        if let CompactionConfig::Leveled(_) | CompactionConfig::Universal(_) = self.cfg.compaction {
            for l in &self.levels[1..] {
                for w in l.windows(2) {
                    assert!(self.table(w[0]).max_key() < self.table(w[1]).min_key(), "level files disjoint and ordered");
                }
            }
        }
        if let CompactionConfig::Universal(_) = self.cfg.compaction {
            // Sorted runs lie in time order: every L0 file (oldest first in the list) newer
            // than the one before, every level older than L0 and than the levels above it.
            let seqs = |slots: &[u32]| {
                let all = slots.iter().flat_map(|&s| self.table(s).run.meta.iter().map(|m| m.seq));
                all.fold((u64::MAX, 0u64), |(lo, hi), q| (lo.min(q), hi.max(q)))
            };
            let mut runs: Vec<(u64, u64)> = self.levels[0].iter().rev().map(|&s| seqs(&[s])).collect();
            runs.extend(self.levels[1..].iter().filter(|l| !l.is_empty()).map(|l| seqs(l)));
            for w in runs.windows(2) {
                assert!(w[0].0 > w[1].1, "universal sorted runs in time order, newest first: {runs:?}");
            }
        }
    }
}

/// One live table, for inspection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableInfo {
    /// Its file.
    pub file: FileId,
    /// Its group (with [`CAPACITY_GROUP_BIT`] when it belongs on the capacity tier).
    pub group: u32,
    /// Its level (leveled) or tier (size-tiered).
    pub level: u32,
    /// Entries (records and tombstones).
    pub entries: u64,
    /// Of which tombstones.
    pub tombstones: u64,
    /// Of which partial rows.
    pub partials: u64,
    /// File size.
    pub file_bytes: u64,
    /// Key range.
    pub min_key: u64,
    /// Key range.
    pub max_key: u64,
}

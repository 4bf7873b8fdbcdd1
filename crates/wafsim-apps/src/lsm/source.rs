//! Key-value requests through an [`Lsm`] as a [`FileSource`]: requests are taken from the
//! request source a batch at a time and applied; the file operations they cause wait in a
//! queue until the caller takes them, so one request may span batches and the stream is the
//! same whatever the batch sizes. A report shared through `Arc<Mutex<..>>` is updated at the
//! end of every fill.

use std::sync::{Arc, Mutex};

use wafsim_workload::files::{FileOp, FileSource};
use wafsim_workload::ycsb::{Ycsb, YcsbConfig, YcsbPhases};
use wafsim_workload::{KvOp, KvSource};

use super::{JobsState, Lsm, LsmConfig, LsmCounters};

/// What an [`LsmFiles`] reports, shared with whoever built it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LsmReport {
    /// The store's counters.
    pub counters: LsmCounters,
    /// Keys the store indexes (records and tombstones not dropped yet).
    pub keys: u64,
    /// Bytes of the live files (SSTables and log segments).
    pub live_file_bytes: u64,
    /// Live log segments.
    pub log_segments: u32,
    /// Bytes written into the memtable since its last flush.
    pub memtable_bytes: u64,
    /// Tables per level (leveled) or tier (size-tiered).
    pub tables_per_level: Vec<u32>,
    /// File bytes per level or tier.
    pub bytes_per_level: Vec<u64>,
    /// The first refused request (the source stops there).
    pub error: Option<String>,
    /// File writes made but not handed out yet (queued here or not yet released by a
    /// background job): the counters run ahead of what the file system has seen by this many
    /// bytes.
    pub pending_write_bytes: u64,
    /// The background jobs (lanes, queues, backlog).
    pub jobs: JobsState,
    /// The request source ran out.
    pub ended: bool,
}

impl LsmReport {
    /// Application WAF so far (see [`LsmCounters::app_waf`]).
    pub fn app_waf(&self) -> f64 {
        self.counters.app_waf()
    }
}

/// Key-value requests through an LSM store, as file operations.
pub struct LsmFiles<K: KvSource> {
    kv: K,
    store: Lsm,
    report: Arc<Mutex<LsmReport>>,
    ops: Vec<KvOp>,
    pos: usize,
    ops_batch: usize,
    pending: Vec<FileOp>,
    taken: usize,
    pending_write_bytes: u64,
    failed: bool,
    ended: bool,
    flush_at_end: bool,
}

fn write_bytes(ops: &[FileOp]) -> u64 {
    ops.iter().map(|o| if let FileOp::Write { len, .. } = o { *len as u64 } else { 0 }).sum()
}

impl<K: KvSource> LsmFiles<K> {
    /// The source and a handle to its report.
    pub fn new(kv: K, store: Lsm) -> (Self, Arc<Mutex<LsmReport>>) {
        let report = Arc::new(Mutex::new(LsmReport::default()));
        let s = LsmFiles {
            kv,
            store,
            report: report.clone(),
            ops: Vec::new(),
            pos: 0,
            ops_batch: 256,
            pending: Vec::new(),
            taken: 0,
            pending_write_bytes: 0,
            failed: false,
            ended: false,
            flush_at_end: false,
        };
        (s, report)
    }

    /// Flush the memtable when the requests run out (as a clean shutdown does; default off).
    /// Background jobs are completed when the requests run out either way.
    pub fn with_flush_at_end(mut self, on: bool) -> Self {
        self.flush_at_end = on;
        self
    }

    /// The store (for inspection).
    pub fn store(&self) -> &Lsm {
        &self.store
    }

    fn publish(&self) {
        let s = &self.store;
        let mut r = self.report.lock().expect("report lock");
        r.counters = s.counters();
        r.keys = s.keys();
        r.live_file_bytes = s.live_file_bytes();
        r.log_segments = s.log_segments() as u32;
        r.memtable_bytes = s.memtable_bytes();
        r.tables_per_level = s.tables_per_level();
        r.bytes_per_level = s.bytes_per_level();
        r.pending_write_bytes = self.pending_write_bytes + s.pending_job_write_bytes();
        r.jobs = s.jobs();
        r.ended = self.ended;
    }
}

impl<K: KvSource> FileSource for LsmFiles<K> {
    fn fill(&mut self, out: &mut Vec<FileOp>, max: usize) -> usize {
        let before = out.len();
        while out.len() - before < max {
            if self.taken < self.pending.len() {
                let n = (max - (out.len() - before)).min(self.pending.len() - self.taken);
                let part = &self.pending[self.taken..self.taken + n];
                self.pending_write_bytes -= write_bytes(part);
                out.extend_from_slice(part);
                self.taken += n;
                continue;
            }
            self.pending.clear();
            self.taken = 0;
            if self.failed || self.ended {
                break;
            }
            if self.pos == self.ops.len() {
                self.ops.clear();
                self.pos = 0;
                if self.kv.fill(&mut self.ops, self.ops_batch) == 0 {
                    self.ended = true;
                    if self.flush_at_end {
                        if let Err(e) = self.store.flush(&mut self.pending) {
                            self.report.lock().expect("report lock").error = Some(format!("final flush: {e}"));
                            self.failed = true;
                        }
                    }
                    // Complete every background job: the file system sees whole files.
                    self.store.drain_jobs(&mut self.pending);
                    self.pending_write_bytes += write_bytes(&self.pending);
                    continue;
                }
            }
            let op = self.ops[self.pos];
            self.pos += 1;
            let r = self.store.apply(&op, &mut self.pending);
            if let Err(e) = r {
                self.report.lock().expect("report lock").error = Some(format!("{op:?}: {e}"));
                self.failed = true;
                // The source stops here: complete the jobs already made.
                self.store.drain_jobs(&mut self.pending);
            }
            self.pending_write_bytes += write_bytes(&self.pending);
        }
        self.publish();
        out.len() - before
    }
}

/// A YCSB workload through an LSM store, as file operations: the recipe of the `wafsim
/// bench` case ("YCSB A through the LSM"). For the bench: `YcsbConfig::workload('a')` with
/// `requestdistribution = Zipfian`, `recordcount` records of 1 KB (10 x 100 B), an
/// `operationcount`, [`YcsbPhases::LoadAndRun`], and `LsmConfig::rocksdb()` (or
/// `cassandra()`) with `capacity_bytes` at least about twice the records' bytes (size-tiered
/// needs up to twice the data during a major compaction); drain with `fill` and count
/// `report.counters.ops`.
pub fn ycsb_through_lsm(ycsb: &YcsbConfig, phases: YcsbPhases, seed: u64, cfg: LsmConfig) -> Result<(LsmFiles<Ycsb>, Arc<Mutex<LsmReport>>), String> {
    let kv = Ycsb::try_new(ycsb, phases, seed)?;
    let store = Lsm::new(cfg).map_err(|e| e.to_string())?;
    Ok(LsmFiles::new(kv, store))
}

//! Key-value requests through an [`Lsm`] as a [`FileSource`] (an [`Expand`] whose engine
//! emits file operations); its counts are read when asked ([`LsmFiles::report`]).

use wafsim_core::pipeline::{Engine, Expand, FileOp, FileSource, KvOp, KvSource, LayerFigures, SourceError};

use super::{JobsState, Lsm, LsmCounters, LsmError};

/// What an [`LsmFiles`] reports when asked.
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

/// The store behind an [`LsmFiles`]: applies requests.
pub struct LsmEngine {
    store: Lsm,
    flush_at_end: bool,
    /// Wait for compaction after the load and at the end.
    wait: bool,
    /// Requests of the load (None: the source does not say; only the end waits).
    load_ops: Option<u64>,
    applied: u64,
}

impl Engine<KvOp> for LsmEngine {
    type Out = FileOp;
    type Error = LsmError;

    fn apply(&mut self, op: &KvOp, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        self.store.apply(op, out)?;
        self.applied += 1;
        if self.wait && self.load_ops == Some(self.applied) {
            self.store.wait_for_compaction(true, out)?;
        }
        Ok(())
    }

    fn is_no_space(e: &LsmError) -> bool {
        matches!(e, LsmError::Full { .. })
    }

    /// The requests ran out: the last flush (when asked for), then every background job
    /// completed, so the file system sees whole files (also when the flush is refused).
    fn ended(&mut self, out: &mut Vec<FileOp>) -> Result<(), SourceError> {
        let flushed = if self.flush_at_end {
            self.store.flush(out)
        } else if self.wait {
            self.store.wait_for_compaction(false, out)
        } else {
            Ok(())
        };
        self.store.drain_jobs(out);
        flushed.map_err(|e| Self::refusal("final flush", e))
    }
}

/// Key-value requests through an LSM store, as file operations.
pub struct LsmFiles<K: KvSource>(Expand<KvOp, K, LsmEngine>, std::cell::Cell<bool>);

impl<K: KvSource> LsmFiles<K> {
    /// Requests from `kv` through `store`, as file operations.
    ///
    /// A YCSB workload through the store, the recipe of the `wafsim bench` case ("YCSB A
    /// through the LSM"): `LsmFiles::new(Ycsb::try_new(&ycsb, phases, seed)?, Lsm::new(cfg)?)`
    /// with wafsim-workload's generator, `ycsb` = `YcsbConfig::workload('a')` with
    /// `requestdistribution = Zipfian`, `recordcount` records of 1 KB (10 x 100 B), an
    /// `operationcount`, `YcsbPhases::LoadAndRun`, and `cfg` = `LsmConfig::rocksdb()` (or
    /// `cassandra()`) with `capacity_bytes` at least about twice the records' bytes
    /// (size-tiered needs up to twice the data during a major compaction); drain with `fill`
    /// and count `report().counters.ops`.
    pub fn new(kv: K, store: Lsm) -> Self {
        LsmFiles(Expand::new(kv, LsmEngine { store, flush_at_end: false, wait: false, load_ops: None, applied: 0 }, 256), std::cell::Cell::new(false))
    }

    /// db_bench's `waitforcompaction` after each of its runs: once the load's last request
    /// (as the source counts its load before the first fill, [`KvSource::load_left`]) the
    /// memtable is flushed (the next db_bench's WAL recovery does that when it opens the
    /// store) and compactions run until none is due, before the run's first request; at the
    /// end the same without the flush (db_bench leaves the last memtable in the WAL). Off by
    /// default: the run follows the load at once, and the end completes the jobs in progress.
    pub fn with_wait_for_compaction(mut self, on: bool) -> Self {
        let load = self.0.source().load_left().filter(|&n| n > 0);
        let e = self.0.engine_mut();
        e.wait = on;
        e.load_ops = load;
        self
    }

    /// Flush the memtable when the requests run out (as a clean shutdown does; default off).
    /// Background jobs are completed when the requests run out either way.
    pub fn with_flush_at_end(mut self, on: bool) -> Self {
        self.0.engine_mut().flush_at_end = on;
        self
    }

    /// The store (for inspection).
    pub fn store(&self) -> &Lsm {
        &self.0.engine().store
    }

    /// The store's counts now.
    pub fn report(&self) -> LsmReport {
        let s = self.store();
        LsmReport {
            counters: s.counters(),
            keys: s.keys(),
            live_file_bytes: s.live_file_bytes(),
            log_segments: s.log_segments() as u32,
            memtable_bytes: s.memtable_bytes(),
            tables_per_level: s.tables_per_level(),
            bytes_per_level: s.bytes_per_level(),
            pending_write_bytes: self.0.pending_write_bytes() + s.pending_job_write_bytes(),
            jobs: s.jobs(),
            ended: self.0.has_ended(),
        }
    }
}

impl<K: KvSource> LsmFiles<K> {
    /// With [`LsmFiles::with_wait_for_compaction`], the load lasts until its last request is
    /// applied and the writes of the wait after it are handed out (as db_bench's
    /// waitforcompaction belongs to the load's run), so a window from the run starts after them.
    fn settling(&self) -> bool {
        let e = self.0.engine();
        let Some(w) = e.load_ops.filter(|_| e.wait) else { return false };
        if self.1.get() {
            return false;
        }
        // Expand hands out every command of a request before it applies the next, so past the
        // load's last request the wait's writes are out.
        let busy = e.applied < w || (e.applied == w && self.0.pending_write_bytes() > 0);
        if !busy {
            self.1.set(true);
        }
        busy
    }
}

impl<K: KvSource> FileSource for LsmFiles<K> {
    fn fill(&mut self, out: &mut Vec<FileOp>, max: usize) -> Result<usize, SourceError> {
        self.0.fill_commands(out, max)
    }

    /// The bytes the clients sent (the file system under the store adds its own), and what the
    /// store wrote by kind since it opened (what RocksDB's statistics count: WAL, flush and
    /// compaction bytes), so a run can be held against the real engine's.
    fn figures(&self) -> Option<LayerFigures> {
        let c = self.store().counters();
        let mut metrics = vec![
            ("store log bytes".to_string(), c.log_bytes as f64),
            ("store flush bytes".to_string(), c.flush_bytes as f64),
            ("store compaction write bytes".to_string(), c.compaction_write_bytes as f64),
            ("store flushes".to_string(), c.flushes as f64),
            ("store compactions".to_string(), c.compactions as f64),
            ("store trivial moves".to_string(), c.trivial_moves as f64),
            ("store L0 compactions".to_string(), c.l0_compactions as f64),
            ("store L0 compaction input files".to_string(), c.l0_compaction_files as f64),
        ];
        for (l, &b) in c.compaction_write_bytes_by_level.iter().enumerate() {
            if b > 0 {
                metrics.push((format!("store compaction write bytes L{l}"), b as f64));
            }
        }
        if matches!(self.store().config().compaction, super::CompactionConfig::Universal(_)) {
            let [amp, ratio, runs] = c.universal_picks;
            metrics.extend([
                ("store universal compactions for size amplification".to_string(), amp as f64),
                ("store universal compactions for size ratio".to_string(), ratio as f64),
                ("store universal compactions for sorted runs".to_string(), runs as f64),
            ]);
        }
        if self.store().config().write_controller.is_some() {
            metrics.extend([
                ("store clock seconds".to_string(), c.clock_seconds),
                ("store stopped writes".to_string(), c.stopped_writes as f64),
                ("store stop seconds".to_string(), c.stop_seconds),
                ("store delayed writes".to_string(), c.delayed_writes as f64),
                ("store delay seconds".to_string(), c.delay_seconds),
            ]);
        }
        Some(LayerFigures { app_write_bytes: c.client_sent_bytes, loading: self.0.source().loading() || self.settling(), metrics, ..LayerFigures::default() })
    }
}

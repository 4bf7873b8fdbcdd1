//! A [`LsKv`] as a block I/O source: requests from a key-value generator in, the store's I/O
//! out, each I/O with its time on the store's clock, until the requests or the run time end.

use super::{LsKv, LsKvCounters, LsKvError};
use wafsim_core::pipeline::{Command, Engine, Expand, IoSource, KvOp, KvSource, LayerFigures, SourceError};
use wafsim_core::Io;

/// What a [`LsKvSource`] reports when asked ([`LsKvSource::report`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LsKvReport {
    /// The store's counters.
    pub counters: LsKvCounters,
    /// Records in the store.
    pub live_records: u64,
    /// Device bytes of those records.
    pub live_bytes: u64,
    /// Free write blocks.
    pub free_blocks: u32,
    /// Data blocks (after the header).
    pub data_blocks: u32,
    /// Blocks in the defrag queue.
    pub defrag_queue: u32,
    /// Device writes made but not handed out yet: the counters run ahead of what the device
    /// has seen by this much.
    pub pending_write_bytes: u64,
}

impl LsKvReport {
    /// Application WAF so far (see [`LsKvCounters::app_waf`]).
    pub fn app_waf(&self) -> f64 {
        self.counters.app_waf()
    }
}

/// One I/O of the store with its time (ns on the store's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedIo {
    /// The I/O.
    pub io: Io,
    /// When the store issued it.
    pub t: u64,
}

impl Command for TimedIo {
    #[inline]
    fn write_bytes(&self) -> u64 {
        self.io.write_bytes()
    }
}

/// The store behind a [`LsKvSource`]: applies requests, stamping each I/O with its time.
pub struct LsKvEngine {
    store: LsKv,
    ios: Vec<Io>,
    times: Vec<u64>,
}

impl Engine<KvOp> for LsKvEngine {
    type Out = TimedIo;
    type Error = LsKvError;

    fn apply(&mut self, op: &KvOp, out: &mut Vec<TimedIo>) -> Result<(), LsKvError> {
        let r = self.store.apply(op, &mut self.ios);
        self.store.take_times(&mut self.times);
        out.extend(self.ios.drain(..).zip(self.times.drain(..)).map(|(io, t)| TimedIo { io, t }));
        r
    }

    fn is_no_space(e: &LsKvError) -> bool {
        matches!(e, LsKvError::Full)
    }
}

/// The first `left` requests of `inner`.
pub struct TakeOps<K> {
    inner: K,
    left: u64,
}

impl<K: KvSource> KvSource for TakeOps<K> {
    fn loading(&self) -> bool {
        self.inner.loading()
    }
    fn load_left(&self) -> Option<u64> {
        self.inner.load_left().map(|l| l.min(self.left))
    }
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize {
        let n = self.inner.fill(out, max.min(self.left.min(usize::MAX as u64) as usize));
        self.left -= n as u64;
        n
    }
}

/// Key-value requests through a [`LsKv`], as block I/O (like `FsSource` for files). The
/// source has a clock ([`IoSource::clocked`]): several stores interleave by time.
pub struct LsKvSource<K: KvSource> {
    inner: Expand<KvOp, TakeOps<K>, LsKvEngine>,
    buf: Vec<TimedIo>,
    fail_when_stuck: bool,
}

impl<K: KvSource> LsKvSource<K> {
    /// Requests from `kv` through `store`, until `kv` runs dry.
    pub fn new(kv: K, store: LsKv) -> Self {
        let kv = TakeOps { inner: kv, left: u64::MAX };
        LsKvSource { inner: Expand::new(kv, LsKvEngine { store, ios: Vec::new(), times: Vec::new() }, 256), buf: Vec::new(), fail_when_stuck: false }
    }

    /// End with an error once the store is stuck refusing every write ([`LsKv::is_stuck`]):
    /// for a run that ends when the store has written enough, which it never would.
    pub fn fail_when_stuck(mut self) -> Self {
        self.fail_when_stuck = true;
        self
    }

    /// Only the requests that arrive before `ns` on the store's clock: a run of that long,
    /// however many requests the generator has.
    pub fn until(mut self, ns: u64) -> Self {
        let store = &self.inner.engine().store;
        // Request k arrives at k / rate: the first one at or after `ns` is not taken.
        let mut k = (ns as f64 * store.config().client_ops_per_sec / 1e9) as u64;
        while k > 0 && store.request_time(k - 1) >= ns {
            k -= 1;
        }
        while store.request_time(k) < ns {
            k += 1;
        }
        self.inner.source_mut().left = k;
        self
    }

    /// The store (for inspection).
    pub fn store(&self) -> &LsKv {
        &self.inner.engine().store
    }

    /// The store's counts now.
    pub fn report(&self) -> LsKvReport {
        let s = self.store();
        LsKvReport {
            counters: s.counters().clone(),
            live_records: s.live_records(),
            live_bytes: s.live_bytes(),
            free_blocks: s.free_blocks(),
            data_blocks: s.data_blocks(),
            defrag_queue: s.defrag_queue_len() as u32,
            pending_write_bytes: self.inner.pending_write_bytes(),
        }
    }

    fn fill_both(&mut self, out: &mut Vec<Io>, mut times: Option<&mut Vec<u64>>, max: usize) -> Result<usize, SourceError> {
        if self.fail_when_stuck && self.store().is_stuck() {
            let s = self.store();
            return Err(SourceError::no_space(
                "client writes",
                format!(
                    "store full: stop-writes or the defrag reserve refuses every write and nothing can free space ({} of live records in {} of write blocks, {} free blocks, no deletes, defrag idle), so the store will never write the amount asked for; give it a larger namespace, a smaller fill, or a runtime instead of an amount",
                    wafsim_core::units::human(s.live_bytes()),
                    wafsim_core::units::human(s.data_blocks() as u64 * s.config().write_block_bytes as u64),
                    s.free_blocks()
                ),
            ));
        }
        self.buf.clear();
        let n = self.inner.fill_commands(&mut self.buf, max)?;
        for c in &self.buf {
            out.push(c.io);
            if let Some(t) = times.as_deref_mut() {
                t.push(c.t);
            }
        }
        Ok(n)
    }
}

impl<K: KvSource> IoSource for LsKvSource<K> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        self.fill_both(out, None, max)
    }

    /// The clients' record bytes over what the store wrote to its namespace.
    fn figures(&self) -> Option<LayerFigures> {
        let c = self.store().counters();
        let tried = (c.writes + c.refused_writes()).max(1) as f64;
        let evals = c.stop_writes_evaluations.max(1) as f64;
        let s = self.store();
        let mut metrics = vec![
                ("writes refused (stop-writes)".into(), c.refused_stop_writes as f64 / tried),
                ("writes refused (defrag reserve)".into(), c.refused_no_block as f64 / tried),
                ("stop-writes share of checks".into(), c.stop_writes_checks as f64 / evals),
                ("defrag busy".into(), c.defrag_utilisation()),
                ("defrag queue at end (blocks)".into(), s.defrag_queue_len() as f64),
                ("free blocks at end".into(), s.free_blocks() as f64 / s.data_blocks().max(1) as f64),
                ("partial flush share of writes".into(), (c.client_partial_flushes + c.defrag_partial_flushes) as f64 * s.config().write_block_bytes as f64 / c.device_write_bytes.max(1) as f64),
                ("simulated hours".into(), c.elapsed_ns as f64 / 3.6e12),
        ];
        // Only a store whose device takes time has a write queue to report.
        if s.config().device_write_bytes_per_sec > 0.0 {
            metrics.push(("writes refused (device overload)".into(), c.refused_overload as f64 / tried));
            metrics.push(("defrag waiting for the write queue".into(), c.defrag_stall_ns as f64 / c.elapsed_ns.max(1) as f64));
            metrics.push(("write queue peak (blocks)".into(), c.write_queue_peak as f64));
        }
        Some(LayerFigures {
            app_write_bytes: c.record_write_bytes,
            dev_write_bytes: c.device_write_bytes,
            pending_write_bytes: self.inner.pending_write_bytes(),
            metrics,
            loading: self.inner.source().loading(),
            ..LayerFigures::default()
        })
    }

    fn clocked(&self) -> bool {
        true
    }

    fn fill_timed(&mut self, out: &mut Vec<Io>, times: &mut Vec<u64>, max: usize) -> Option<Result<usize, SourceError>> {
        Some(self.fill_both(out, Some(times), max))
    }
}

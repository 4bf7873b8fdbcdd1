//! The flash cache as a block I/O source: key-value requests in, the cache's I/O out.

use std::sync::{Arc, Mutex};

use wafsim_core::pipeline::{Engine, Expand, IoSource, KvOp, KvSource};
use wafsim_core::Io;

use super::{FlashCache, FlashCacheCounters, FlashCacheError};

/// What a [`FlashCacheSource`] reports, shared with whoever built it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlashCacheReport {
    /// The cache's counters (both engines').
    pub counters: FlashCacheCounters,
    /// Items in BigHash.
    pub bighash_items: u64,
    /// Items in BlockCache's index.
    pub blockcache_items: u64,
    /// The first refused request (the source stops there; the cache refuses none today).
    pub error: Option<String>,
    /// Device writes made but not handed out yet: the counters run ahead of what the device
    /// has seen by this much.
    pub pending_write_bytes: u64,
}

impl FlashCacheReport {
    /// Application WAF so far (see [`FlashCacheCounters::app_waf`]).
    pub fn app_waf(&self) -> f64 {
        self.counters.app_waf()
    }
    /// Hits per lookup so far.
    pub fn hit_ratio(&self) -> f64 {
        self.counters.hit_ratio()
    }
}

/// The cache behind a [`FlashCacheSource`]: applies requests, keeps the report.
pub struct FlashCacheEngine {
    cache: FlashCache,
    report: Arc<Mutex<FlashCacheReport>>,
}

impl Engine<KvOp> for FlashCacheEngine {
    type Out = Io;
    type Error = FlashCacheError;

    fn apply(&mut self, op: &KvOp, out: &mut Vec<Io>) -> Result<(), FlashCacheError> {
        self.cache.apply(op, out);
        Ok(())
    }

    fn publish(&mut self, pending_write_bytes: u64) {
        let c = self.cache.counters();
        let mut r = self.report.lock().expect("report lock");
        r.counters = c;
        r.bighash_items = self.cache.bighash().items();
        r.blockcache_items = self.cache.blockcache().items();
        r.pending_write_bytes = pending_write_bytes;
    }

    fn refused(&mut self, what: String, _out: &mut Vec<Io>) {
        self.report.lock().expect("report lock").error = Some(what);
    }
}

/// Key-value requests through a [`FlashCache`], as block I/O (like `LsKvSource` for the
/// log-structured store).
pub struct FlashCacheSource<K: KvSource>(Expand<KvOp, K, FlashCacheEngine>);

impl<K: KvSource> FlashCacheSource<K> {
    /// The source and a handle to its report. The CacheBench-over-Navy setup: wafsim-workload's
    /// `CacheGen` through an empty cache, e.g. `FlashCacheSource::new(CacheGen::try_new(&workload,
    /// seed)?, FlashCache::new(cache)?)`; for a population twice the cache's size, `workload` is
    /// `CacheGenConfig::default().with_footprint(2 * namespace_bytes)`.
    pub fn new(kv: K, cache: FlashCache) -> (Self, Arc<Mutex<FlashCacheReport>>) {
        let report = Arc::new(Mutex::new(FlashCacheReport::default()));
        (FlashCacheSource(Expand::new(kv, FlashCacheEngine { cache, report: report.clone() }, 256)), report)
    }

    /// The cache (for inspection).
    pub fn cache(&self) -> &FlashCache {
        &self.0.engine().cache
    }
}

impl<K: KvSource> IoSource for FlashCacheSource<K> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize {
        self.0.fill(out, max)
    }
}

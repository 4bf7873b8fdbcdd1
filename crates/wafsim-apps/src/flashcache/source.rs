//! The flash cache as a block I/O source: key-value requests in, the cache's I/O out.

use wafsim_core::pipeline::{Engine, Expand, IoSource, KvOp, KvSource, LayerFigures, SourceError};
use wafsim_core::Io;

use super::{FlashCache, FlashCacheCounters, FlashCacheError};

/// What a [`FlashCacheSource`] reports when asked ([`FlashCacheSource::report`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlashCacheReport {
    /// The cache's counters (both engines').
    pub counters: FlashCacheCounters,
    /// Items in BigHash.
    pub bighash_items: u64,
    /// Items in BlockCache's index.
    pub blockcache_items: u64,
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

/// The cache behind a [`FlashCacheSource`]: applies requests (it refuses none).
pub struct FlashCacheEngine {
    cache: FlashCache,
}

impl Engine<KvOp> for FlashCacheEngine {
    type Out = Io;
    type Error = FlashCacheError;

    fn apply(&mut self, op: &KvOp, out: &mut Vec<Io>) -> Result<(), FlashCacheError> {
        self.cache.apply(op, out);
        Ok(())
    }
}

/// Key-value requests through a [`FlashCache`], as block I/O (like `LsKvSource` for the
/// log-structured store).
pub struct FlashCacheSource<K: KvSource>(Expand<KvOp, K, FlashCacheEngine>, Vec<(String, f64)>);

impl<K: KvSource> FlashCacheSource<K> {
    /// Requests from `kv` through `cache`. The CacheBench-over-Navy setup: wafsim-workload's
    /// `CacheGen` through an empty cache, e.g. `FlashCacheSource::new(CacheGen::try_new(&workload,
    /// seed)?, FlashCache::new(cache)?)`; for a population twice the cache's size, `workload` is
    /// `CacheGenConfig::default().with_footprint(2 * namespace_bytes)`.
    pub fn new(kv: K, cache: FlashCache) -> Self {
        FlashCacheSource(Expand::new(kv, FlashCacheEngine { cache }, 256), Vec::new())
    }

    /// Add fixed figures to the source's metrics (e.g. how a scaled run's proportions differ
    /// from full scale).
    pub fn with_metrics(mut self, metrics: Vec<(String, f64)>) -> Self {
        self.1 = metrics;
        self
    }

    /// The cache (for inspection).
    pub fn cache(&self) -> &FlashCache {
        &self.0.engine().cache
    }

    /// The cache's counts now.
    pub fn report(&self) -> FlashCacheReport {
        let c = self.cache();
        FlashCacheReport { counters: c.counters(), bighash_items: c.bighash().items(), blockcache_items: c.blockcache().items(), pending_write_bytes: self.0.pending_write_bytes() }
    }
}

impl<K: KvSource> IoSource for FlashCacheSource<K> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        self.0.fill(out, max)
    }

    /// The objects inserted into flash over what the cache wrote to its namespace, with the
    /// cache's hit ratios; warming until every region has been reclaimed once (before that,
    /// evictions, and the drive's view of region lifetimes, are not what they will be).
    fn figures(&self) -> Option<LayerFigures> {
        let c = self.cache().counters();
        let written = c.device_write_bytes();
        let mut metrics = vec![
            ("hit ratio".into(), c.hit_ratio()),
            ("BigHash hit ratio".into(), c.bighash_hit_ratio()),
            ("BlockCache hit ratio".into(), c.blockcache_hit_ratio()),
            ("BigHash share of device writes".into(), c.bighash.write_bytes as f64 / written.max(1) as f64),
        ];
        if self.cache().dram().is_some() {
            let ev = c.dram.evictions.max(1) as f64;
            metrics.push(("DRAM hit ratio".into(), c.dram_hit_ratio()));
            metrics.push(("DRAM evictions admitted to flash".into(), c.admitted as f64 / ev));
            metrics.push(("DRAM evictions rejected by admission".into(), c.admission_rejects as f64 / ev));
            metrics.push(("DRAM evictions already clean on flash".into(), c.clean_evictions as f64 / ev));
        }
        if self.cache().config().reinsertion_hits > 0 {
            let stored = c.blockcache.stored_bytes.max(1) as f64;
            metrics.push(("reinserted share of BlockCache bytes".into(), c.blockcache.reinserted_bytes as f64 / stored));
        }
        metrics.extend(self.1.iter().cloned());
        Some(LayerFigures {
            app_write_bytes: c.inserted_object_bytes,
            dev_write_bytes: written,
            pending_write_bytes: self.0.pending_write_bytes(),
            warming: c.blockcache.regions_reclaimed < self.cache().layout().regions as u64,
            metrics,
            ..LayerFigures::default()
        })
    }
}

//! What a layered source (an application model, a store, a file system between a workload and
//! the device) has counted so far, asked for when the results want its row: the application's
//! bytes beside the bytes the layers sent down, so a result shows each level's own write
//! amplification and the total from application to media.

/// A layered source's counts (see [`crate::pipeline::IoSource::figures`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LayerFigures {
    /// Bytes the application wrote: files' bytes for a file workload, record or object bytes
    /// the clients sent to a store.
    pub app_write_bytes: u64,
    /// A store over a file system (an LSM tree): bytes it wrote to its files; `None` when the
    /// store writes the device directly or there is no store.
    pub store_write_bytes: Option<u64>,
    /// Bytes the lowest layer wrote to the device (data, a log-structured layer's GC copies).
    pub dev_write_bytes: u64,
    /// Device writes made but not handed out yet (the rest of an operation): the counts above
    /// run ahead of what the device has seen by this many bytes.
    pub pending_write_bytes: u64,
    /// Once the workload has ended: live file data per zone, in zone order (a zone-aware file
    /// system); `None` before the end or without zones.
    pub zone_live_bytes: Option<Vec<u64>>,
    /// Figures of the store's own (a cache's hit ratios), by name.
    pub metrics: Vec<(String, f64)>,
    /// The store is still filling (a cache whose log has not wrapped yet): a phase looking for
    /// steady state does not judge rounds before it is done.
    pub warming: bool,
    /// The store's clients are still loading its initial records ([`crate::pipeline::KvSource::loading`]).
    pub loading: bool,
}

impl LayerFigures {
    /// These figures (a file system's) under `above` (a store writing files through it): the
    /// application's bytes become the store's clients', the file system's application bytes
    /// the store's writes (unless `above` says what the store wrote: a page cache between them
    /// sends down less than it took), and the store's own figures join (before the file
    /// system's).
    pub fn under(mut self, above: LayerFigures) -> LayerFigures {
        self.store_write_bytes = Some(above.store_write_bytes.unwrap_or(self.app_write_bytes));
        self.app_write_bytes = above.app_write_bytes;
        let own = std::mem::replace(&mut self.metrics, above.metrics);
        self.metrics.extend(own);
        self.warming = above.warming;
        self.loading = above.loading;
        self
    }

    /// Bytes the store (or, without one, the lowest layer) has written: what an experiment's
    /// `amount` of a store counts.
    pub fn store_bytes(&self) -> u64 {
        self.store_write_bytes.unwrap_or(self.dev_write_bytes)
    }
}

//! Key-value requests through an [`Hse`] engine as a [`FileSource`] (an [`Expand`] whose
//! engine emits file operations), for a file system below it (an mpool, a `MediaClassFs` of
//! two, a conventional or zoned one).

use wafsim_core::pipeline::{Engine, Expand, FileOp, FileSource, KvOp, KvSource, LayerFigures, SourceError};

use super::tree::{Hse, HseCounters};

/// The engine behind an [`HseFiles`].
pub struct HseEngine {
    hse: Hse,
}

impl Engine<KvOp> for HseEngine {
    type Out = FileOp;
    type Error = String;

    fn apply(&mut self, op: &KvOp, out: &mut Vec<FileOp>) -> Result<(), String> {
        self.hse.apply(op, out)
    }
}

/// Key-value requests (MongoDB documents) through an HSE-like engine, as file operations.
pub struct HseFiles<K: KvSource>(Expand<KvOp, K, HseEngine>);

impl<K: KvSource> HseFiles<K> {
    /// Requests from `kv` through `hse`.
    pub fn new(kv: K, hse: Hse) -> Self {
        HseFiles(Expand::new(kv, HseEngine { hse }, 256))
    }

    /// The engine (for inspection).
    pub fn engine(&self) -> &Hse {
        &self.0.engine().hse
    }

    /// Its counts now.
    pub fn counters(&self) -> &HseCounters {
        self.engine().counters()
    }
}

impl<K: KvSource> FileSource for HseFiles<K> {
    fn fill(&mut self, out: &mut Vec<FileOp>, max: usize) -> Result<usize, SourceError> {
        self.0.fill_commands(out, max)
    }

    /// The documents' bytes (the file system under the engine adds its own), and how the
    /// engine's writes split.
    fn figures(&self) -> Option<LayerFigures> {
        let c = self.counters();
        let all = c.engine_write_bytes().max(1) as f64;
        Some(LayerFigures {
            app_write_bytes: c.app_value_bytes,
            metrics: vec![
                ("staging share of engine writes".into(), c.staging_write_bytes as f64 / all),
                ("c1 share of engine writes".into(), c.c1_write_bytes as f64 / all),
                ("kblock share of engine writes".into(), c.kblock_write_bytes as f64 / all),
                ("engine bytes per key+value byte".into(), c.app_waf()),
                ("ingests".into(), c.ingests as f64),
                ("spills".into(), (c.root_spills + c.internal_spills + c.leaf_spills) as f64),
                ("k-compactions".into(), c.k_compactions as f64),
                ("kv-compactions".into(), c.kv_compactions as f64),
                ("engine clock, hours".into(), c.ops as f64 / self.engine().config().ops_per_sec / 3600.0),
            ],
            loading: self.0.source().loading(),
            ..LayerFigures::default()
        })
    }
}

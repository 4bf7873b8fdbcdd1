//! Key-value requests through a [`WiredTiger`] engine as a [`FileSource`] (an [`Expand`] whose
//! engine emits file operations), for a file system below it.

use wafsim_core::pipeline::{Engine, Expand, FileOp, FileSource, KvOp, KvSource, LayerFigures, SourceError};

use super::engine::{WiredTiger, WtCounters};

/// The engine behind a [`WtFiles`].
pub struct WtEngine {
    wt: WiredTiger,
}

impl Engine<KvOp> for WtEngine {
    type Out = FileOp;
    type Error = String;

    fn apply(&mut self, op: &KvOp, out: &mut Vec<FileOp>) -> Result<(), String> {
        self.wt.apply(op, out)
    }
}

/// Key-value requests through a WiredTiger-like engine, as file operations.
pub struct WtFiles<K: KvSource>(Expand<KvOp, K, WtEngine>);

impl<K: KvSource> WtFiles<K> {
    /// Requests from `kv` through `wt`.
    pub fn new(kv: K, wt: WiredTiger) -> Self {
        WtFiles(Expand::new(kv, WtEngine { wt }, 256))
    }

    /// The engine (for inspection).
    pub fn engine(&self) -> &WiredTiger {
        &self.0.engine().wt
    }

    /// Its counts now.
    pub fn counters(&self) -> &WtCounters {
        self.engine().counters()
    }
}

impl<K: KvSource> FileSource for WtFiles<K> {
    fn fill(&mut self, out: &mut Vec<FileOp>, max: usize) -> Result<usize, SourceError> {
        self.0.fill_commands(out, max)
    }

    /// The documents' bytes (the file system under the engine adds its own), and how the
    /// engine's writes split.
    fn figures(&self) -> Option<LayerFigures> {
        let c = self.counters();
        let files = (c.data_write_bytes + c.journal_write_bytes).max(1) as f64;
        let pages = (c.checkpoint_pages + c.evicted_pages).max(1) as f64;
        Some(LayerFigures {
            app_write_bytes: c.doc_write_bytes,
            metrics: vec![
                ("journal share of file writes".into(), c.journal_write_bytes as f64 / files),
                ("pages written by eviction".into(), c.evicted_pages as f64 / pages),
                ("checkpoints".into(), c.checkpoints as f64),
                ("bytes cut off file ends".into(), c.truncated_bytes as f64),
                ("engine clock, hours".into(), self.engine().elapsed_secs() / 3600.0),
            ],
            loading: self.0.source().loading(),
            ..LayerFigures::default()
        })
    }
}

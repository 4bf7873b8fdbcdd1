//! One result row of a sweep: a variant of the base experiment at one point.

/// One result row: a variant of the base experiment at one point. Its serde form is the
/// exchange format between processes ([`rows_to_wire`](super::rows_to_wire)): every field but
/// the axes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// The point's 1-based index.
    pub point: usize,
    /// (axis, value) for every axis of the sweep; None where an explicit point leaves the
    /// axis out. Not sent between processes: the receiver takes them from its own points.
    #[serde(skip)]
    pub axes: Vec<(String, Option<toml::Value>)>,
    /// Name of the variant.
    pub variant: String,
    /// Device WAF of the measured phases: media bytes / host bytes (0 without host writes,
    /// so rankings and the exchange format stay plain numbers; writers use [`Row::defined_waf`]).
    pub waf: f64,
    /// Host bytes written, media bytes written, media bytes erased, GC bytes written.
    pub hbmw: u64,
    /// Media bytes written (see `hbmw`).
    pub mbmw: u64,
    /// Media bytes erased (see `hbmw`).
    pub mbe: u64,
    /// Bytes GC wrote (see `hbmw`).
    pub gc_bytes: u64,
    /// WAF of each namespace (media bytes attributed to it over its host bytes).
    pub ns_waf: Vec<(String, f64)>,
    /// (namespace, host bytes, media bytes attributed to it) of each namespace; only Parquet
    /// files keep them, so rows read back from CSV or JSON have none.
    pub ns_bytes: Vec<(String, u64, u64)>,
    /// Identity of the point's run (base text, overrides, scale), for resuming.
    pub hash: String,
}

impl Row {
    /// The WAF as files and tables show it: `None` when the host wrote nothing (`hbmw` 0), or
    /// when a file read back had no WAF.
    pub fn defined_waf(&self) -> Option<f64> {
        (self.hbmw > 0 && self.waf.is_finite()).then_some(self.waf)
    }

    /// Namespace `ns`'s WAF as files show it: `None` when it is not in the row, or when the
    /// row knows the namespace's host bytes and they are 0.
    pub fn defined_ns_waf(&self, ns: &str) -> Option<f64> {
        let written = self.ns_bytes.iter().find(|(n, _, _)| n == ns).is_none_or(|(_, h, _)| *h > 0);
        self.ns_waf.iter().find(|(n, _)| n == ns).map(|(_, w)| *w).filter(|w| written && w.is_finite())
    }

    /// The row's value of axis `key` as text: strings as they are, other values as TOML
    /// writes them, "" where the point leaves the axis out.
    pub fn axis_text(&self, key: &str) -> String {
        match self.axes.iter().find(|(a, _)| a == key).and_then(|(_, v)| v.as_ref()) {
            Some(toml::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        }
    }
}

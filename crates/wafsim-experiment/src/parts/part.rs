//! What every source of a phase is made of: a part (an I/O source with its label, weight,
//! timing knobs, group and stage), the target it is bound to, and the interleave of a phase's
//! parts for the untimed model.

use crate::schema::{ExperimentSpec, InterleaveKind};
use wafsim_core::blockdev::ZoneGeometry;
use wafsim_core::pipeline::{IoSource, LayerFigures, SourceError};
use wafsim_core::{Device, DeviceConfig, Io};
use wafsim_workload::fio::ZbdZones;
use wafsim_workload::{Interleave, InterleaveMode, RateClock};

/// Default queue depth of synthetic workloads and traces in timed runs.
pub const DEFAULT_IODEPTH: u32 = 32;

/// Name and namespace of one source, in the order of the phase's interleave.
#[derive(Debug, Clone)]
pub struct Label {
    pub name: String,
    pub namespace: String,
}

/// Host-side timing knobs of one source (the timing model uses all; untimed runs use the
/// rates to interleave).
#[derive(Debug, Clone, Copy, Default)]
pub struct PartTiming {
    pub iodepth: u32,
    pub rate_iops: Option<f64>,
    pub rate_bytes: Option<f64>,
    pub runtime_ns: Option<u64>,
    pub ramp_ns: u64,
    /// Mean I/O size, to turn a byte rate into an I/O rate.
    pub mean_io_bytes: f64,
}

impl PartTiming {
    /// I/Os per second the rate limits allow (the smaller of the two), if any.
    pub fn iops_cap(&self) -> Option<f64> {
        let by_bytes = self.rate_bytes.map(|b| b / self.mean_io_bytes.max(1.0));
        match (self.rate_iops, by_bytes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// One source of a phase with its weight (untimed interleaving) and timing knobs.
pub struct Part {
    pub source: Box<dyn IoSource>,
    pub weight: u32,
    pub label: Label,
    pub timing: PartTiming,
    /// Stages of one group run one after another (fio `stonewall` inside a job file); groups
    /// run concurrently.
    pub group: u32,
    pub stage: u32,
    /// A part with layers of its own (a file system, a store) has a row in the results, from
    /// its source's figures: what the row's file-system column says.
    pub row: Option<String>,
}

/// A part's row in the results: which part (its index in the phase), its label and what its
/// file-system column says.
#[derive(Debug, Clone)]
pub struct RowOf {
    pub part: usize,
    pub label: Label,
    pub filesystem: String,
}

impl RowOf {
    /// The rows of `parts`, in part order.
    fn of(parts: &[Part]) -> Vec<RowOf> {
        parts.iter().enumerate().filter_map(|(i, p)| Some(RowOf { part: i, label: p.label.clone(), filesystem: p.row.clone()? })).collect()
    }
}

/// A store's source that stops once the store has written `limit` bytes (an `amount` on a
/// store: [`LayerFigures::store_bytes`]), not when its requests run out.
pub struct Budget {
    pub inner: Box<dyn IoSource>,
    pub limit: u64,
    pub done: bool,
}

impl IoSource for Budget {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        if self.done {
            return Ok(0);
        }
        let n = self.inner.fill(out, max)?;
        self.check_limit();
        Ok(n)
    }
    fn figures(&self) -> Option<LayerFigures> {
        self.inner.figures()
    }
    fn finish(&mut self) -> Result<(), SourceError> {
        self.inner.finish()
    }
    fn clocked(&self) -> bool {
        self.inner.clocked()
    }
    fn fill_timed(&mut self, out: &mut Vec<Io>, times: &mut Vec<u64>, max: usize) -> Option<Result<usize, SourceError>> {
        if self.done {
            return Some(Ok(0));
        }
        let r = self.inner.fill_timed(out, times, max)?;
        self.check_limit();
        Some(r)
    }
}

impl Budget {
    /// Done once the store has written its limit.
    fn check_limit(&mut self) {
        if self.inner.figures().is_some_and(|f| f.store_bytes() >= self.limit) {
            self.done = true;
        }
    }
}

/// `source`, stopping after `limit` store bytes when there is a limit.
pub fn budgeted(source: Box<dyn IoSource>, limit: Option<u64>) -> Box<dyn IoSource> {
    match limit {
        Some(limit) => Box::new(Budget { inner: source, limit, done: false }),
        None => source,
    }
}

/// The sources of one phase on one target, before interleaving.
pub struct Parts {
    pub parts: Vec<Part>,
    /// Non-fatal findings about how the sources were combined.
    pub notes: Vec<String>,
}

/// The interleaved sources of one phase on one target.
pub struct PhaseSources {
    pub source: Interleave,
    pub labels: Vec<Label>,
    /// The parts with rows of their own (file systems, stores), asked for their figures.
    pub rows: Vec<RowOf>,
    pub notes: Vec<String>,
}

impl PhaseSources {
    /// The figures of every row's part now, in row order.
    pub fn figures(&self) -> Vec<LayerFigures> {
        self.rows.iter().map(|r| self.source.source(r.part).figures().unwrap_or_default()).collect()
    }
}

impl Parts {
    /// The parts with rows of their own.
    pub fn rows(&self) -> Vec<RowOf> {
        RowOf::of(&self.parts)
    }
}

impl Parts {
    /// Interleave per I/O (the untimed model). When a source keeps a clock of its own (a
    /// store's clients at a rate) and every other source has a rate, in time order; otherwise
    /// sources are weighted by their I/O rates when every source has one (fio rate/rate_iops,
    /// workload rate_iops), else by `weight`.
    pub fn interleave(mut self, kind: InterleaveKind, seed: u64) -> PhaseSources {
        let mut notes = std::mem::take(&mut self.notes);
        let rates: Vec<Option<f64>> = self.parts.iter().map(|p| p.timing.iops_cap()).collect();
        let clocked = self.parts.iter().any(|p| p.source.clocked());
        let by_time = clocked && self.parts.iter().zip(&rates).all(|(p, r)| p.source.clocked() || r.is_some());
        if clocked && !by_time {
            let without: Vec<&str> = self.parts.iter().zip(&rates).filter(|(p, r)| !p.source.clocked() && r.is_none()).map(|(p, _)| p.label.name.as_str()).collect();
            notes.push(format!(
                "untimed interleave uses weights, not time: the stores' clients have rates but {} do not (give every source a rate)",
                without.join(", ")
            ));
        }
        let (mode, weights) = if by_time {
            (InterleaveMode::Clock, vec![1; self.parts.len()])
        } else {
            let mode = match kind {
                InterleaveKind::RoundRobin => InterleaveMode::RoundRobin,
                InterleaveKind::Random => InterleaveMode::Random { seed },
            };
            (mode, self.weights(&rates, &mut notes))
        };
        let rows = RowOf::of(&self.parts);
        let mut sources: Vec<Box<dyn IoSource>> = Vec::new();
        let mut stages = Vec::new();
        let mut labels = Vec::new();
        for (p, rate) in self.parts.into_iter().zip(rates) {
            // In time order, a source without a clock of its own issues I/O k at k / rate.
            let wrap = by_time && !p.source.clocked();
            sources.push(if wrap { Box::new(RateClock::new(p.source, rate.expect("checked: a rate"))) } else { p.source });
            stages.push((p.group, p.stage));
            labels.push(p.label);
        }
        let names = labels.iter().map(|l| l.name.clone()).collect();
        PhaseSources { source: Interleave::staged(sources, weights, stages, mode).named(names), labels, rows, notes }
    }

    /// Per-part weights of a weighted interleave: in proportion to the rates when every part
    /// has one, else each part's `weight` (with a note when only some parts have rates).
    fn weights(&self, rates: &[Option<f64>], notes: &mut Vec<String>) -> Vec<u32> {
        if !rates.is_empty() && rates.iter().all(Option::is_some) {
            // Integer weights in proportion to the rates, 0.1% resolution.
            let min = rates.iter().flatten().fold(f64::INFINITY, |a, &b| a.min(b)).max(1e-9);
            return rates.iter().map(|r| ((r.expect("all some") / min * 1000.0).round()).clamp(1.0, u32::MAX as f64) as u32).collect();
        }
        let with: Vec<&str> = self.parts.iter().zip(rates).filter(|(_, r)| r.is_some()).map(|(p, _)| p.label.name.as_str()).collect();
        if !with.is_empty() {
            let without: Vec<&str> = self.parts.iter().zip(rates).filter(|(_, r)| r.is_none()).map(|(p, _)| p.label.name.as_str()).collect();
            notes.push(format!(
                "untimed interleave uses weights, not rates: {} have a rate but {} do not (give every source a rate, or turn the timing model on)",
                with.join(", "),
                without.join(", ")
            ));
        }
        self.parts.iter().map(|p| p.weight).collect()
    }
}

/// Where a phase's sources run: the experiment's namespaces (indices as in the experiment's
/// device config) and, for each, the namespace index its I/Os carry on this target.
pub struct Target<'a> {
    /// The experiment's device config (namespaces, placement).
    pub cfg: &'a DeviceConfig,
    /// Usable bytes per namespace.
    pub ns_bytes: Vec<u64>,
    /// Per namespace: the `Io::ns` value on this target, or None if it lives elsewhere.
    pub io_ns: Vec<Option<u32>>,
    /// Per namespace: its zone geometry if it is zoned.
    pub zones: Vec<Option<ZoneGeometry>>,
    /// Per zoned namespace: its zones' state now (write pointers, conditions), which fio's
    /// zonemode=zbd jobs of a phase start from and share.
    pub zbd: Vec<Option<ZbdZones>>,
}

impl<'a> Target<'a> {
    /// Every namespace of one device, as the device numbers them.
    pub fn device(dev: &'a Device) -> Target<'a> {
        let n = dev.namespace_count();
        Target { cfg: dev.config(), ns_bytes: (0..n).map(|i| dev.namespace_bytes(i)).collect(), io_ns: (0..n).map(Some).collect(), zones: vec![None; n as usize], zbd: vec![None; n as usize] }
    }

    /// Zone geometry of experiment namespace `g`, if zoned.
    pub(crate) fn zones_of(&self, g: u32) -> Option<ZoneGeometry> {
        self.zones.get(g as usize).copied().flatten()
    }

    /// Bytes a file system or store can hold on experiment namespace `g` of `bytes`: a zoned
    /// namespace's sequential zones' capacity, not its LBA range.
    pub(crate) fn room(&self, g: u32, bytes: u64) -> u64 {
        self.zones_of(g).map_or(bytes, |z| (z.zones - z.conventional_zones) as u64 * z.zone_capacity)
    }

    /// (experiment index, Io index, bytes) of the namespace named `name`, if on this target.
    pub(crate) fn find(&self, name: &str) -> Option<(u32, u32, u64)> {
        let g = self.cfg.namespaces.iter().position(|n| n.name == name)?;
        Some((g as u32, self.io_ns[g]?, self.ns_bytes[g]))
    }
}

pub(crate) fn seed_for(spec: &ExperimentSpec, phase: usize, kind: u64, index: usize, ns: u32) -> u64 {
    let mut x = spec.seed ^ 0xA076_1D64_78BD_642F;
    for v in [phase as u64, kind, index as u64, ns as u64] {
        x = (x ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
    x
}

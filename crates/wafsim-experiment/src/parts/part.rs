//! What every source of a phase is made of: a part (an I/O source with its label, weight,
//! timing knobs, group and stage), the target it is bound to, and the interleave of a phase's
//! parts for the untimed model.

use crate::schema::{ExperimentSpec, InterleaveKind};
use std::sync::{Arc, Mutex};
use wafsim_core::blockdev::ZoneGeometry;
use wafsim_core::{Device, DeviceConfig};
use wafsim_host::fs::FsReport;
use wafsim_workload::fio::ZbdZones;
use wafsim_core::pipeline::IoSource;
use wafsim_workload::{Interleave, InterleaveMode};

/// Default queue depth of synthetic workloads and traces in timed runs.
pub const DEFAULT_IODEPTH: u32 = 32;

/// Name and namespace of one source, in the order of the phase's interleave.
#[derive(Debug, Clone)]
pub struct Label {
    pub name: String,
    pub namespace: String,
}

/// Errors that sources cannot return through `IoSource::fill` (trace parse errors).
#[derive(Default, Clone)]
pub struct ErrorSlots(pub(crate) Vec<Arc<Mutex<Option<String>>>>);

impl ErrorSlots {
    pub fn first_error(&self) -> Option<String> {
        self.0.iter().find_map(|s| s.lock().expect("error slot").clone())
    }
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
}

/// The sources of one phase on one target, before interleaving.
pub struct Parts {
    pub parts: Vec<Part>,
    pub errors: ErrorSlots,
    /// The file systems of `[[phase.files]]` parts, for their byte counts.
    pub fs: Vec<crate::parts::FsProbe>,
    /// Non-fatal findings about how the sources were combined.
    pub notes: Vec<String>,
}

/// The interleaved sources of one phase on one target.
pub struct PhaseSources {
    pub source: Interleave,
    pub labels: Vec<Label>,
    pub errors: ErrorSlots,
    /// The file systems of `[[phase.files]]` parts.
    pub fs: Vec<crate::parts::FsProbe>,
    pub notes: Vec<String>,
}

impl Parts {
    /// Interleave per I/O (the untimed model). Sources are weighted by their I/O rates when
    /// every source has one (fio rate/rate_iops, workload rate_iops), else by `weight`.
    pub fn interleave(self, kind: InterleaveKind, seed: u64) -> PhaseSources {
        let mut notes = self.notes;
        let rates: Vec<Option<f64>> = self.parts.iter().map(|p| p.timing.iops_cap()).collect();
        let weights: Vec<u32> = if !rates.is_empty() && rates.iter().all(Option::is_some) {
            // Integer weights in proportion to the rates, 0.1% resolution.
            let min = rates.iter().flatten().fold(f64::INFINITY, |a, &b| a.min(b)).max(1e-9);
            rates.iter().map(|r| ((r.expect("all some") / min * 1000.0).round()).clamp(1.0, u32::MAX as f64) as u32).collect()
        } else {
            let with: Vec<&str> = self.parts.iter().zip(&rates).filter(|(_, r)| r.is_some()).map(|(p, _)| p.label.name.as_str()).collect();
            if !with.is_empty() {
                let without: Vec<&str> = self.parts.iter().zip(&rates).filter(|(_, r)| r.is_none()).map(|(p, _)| p.label.name.as_str()).collect();
                notes.push(format!(
                    "untimed interleave uses weights, not rates: {} have a rate but {} do not (give every source a rate, or turn the timing model on)",
                    with.join(", "),
                    without.join(", ")
                ));
            }
            self.parts.iter().map(|p| p.weight).collect()
        };
        let mut sources = Vec::new();
        let mut stages = Vec::new();
        let mut labels = Vec::new();
        for p in self.parts {
            sources.push(p.source);
            stages.push((p.group, p.stage));
            labels.push(p.label);
        }
        let mode = match kind {
            InterleaveKind::RoundRobin => InterleaveMode::RoundRobin,
            InterleaveKind::Random => InterleaveMode::Random { seed },
        };
        PhaseSources { source: Interleave::staged(sources, weights, stages, mode), labels, errors: self.errors, fs: self.fs, notes }
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

/// A file system's report, for the results: which workload, on which namespace.
#[derive(Debug, Clone)]
pub struct FsProbe {
    pub label: Label,
    pub filesystem: String,
    pub report: Arc<Mutex<FsReport>>,
}

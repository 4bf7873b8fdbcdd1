//! An experiment's phases as streams of block I/O with no drive under them: what `wafsim feed`
//! sends to a live drive elsewhere (a `wafsim serve` namespace over NBD).
//!
//! The sources are built as an untimed `wafsim run` builds them (the same parts, seeds and
//! interleave), on namespaces of the sizes the live drive reports. Fed one command at a time to
//! a drive that starts where the run's starts (the same `[history]`), the drive receives the
//! commands the run submits, in the same order, so its counters end where the run's end.
//!
//! What needs the drive's counters stays with `wafsim run`: a `steady_state` phase is fed until
//! its sources end (its amount), not stopped when WAF settles.

use crate::parts::{self, LoadedFio, RowOf, Target};
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::{anyhow, Context, Result};
use wafsim_core::pipeline::LayerFigures;
use wafsim_core::DeviceConfig;
use wafsim_workload::Interleave;

/// Every phase of one variant, ready to be built into streams.
pub struct Streams<'a> {
    spec: &'a ExperimentSpec,
    phases: Vec<PhaseSpec>,
    fio: Vec<Vec<LoadedFio>>,
    cfg: DeviceConfig,
    /// Findings about the experiment as loaded (scaling, fio options), as `wafsim run` warns.
    pub warnings: Vec<String>,
}

/// One phase's interleaved sources.
pub struct PhaseStream {
    /// The phase's name.
    pub name: String,
    /// Whether the experiment measures this phase.
    pub measured: bool,
    /// The interleaved I/O of every source of the phase, in the run's order.
    pub source: Interleave,
    /// Each source's name and namespace, in source order (as `source.stats()`).
    pub labels: Vec<(String, String)>,
    /// Non-fatal findings about how the sources were combined.
    pub notes: Vec<String>,
    rows: Vec<RowOf>,
}

impl PhaseStream {
    /// The stores' and file systems' figures now: (source name, file system, figures).
    pub fn rows(&self) -> Vec<(String, String, LayerFigures)> {
        self.rows.iter().map(|r| (r.label.name.clone(), r.filesystem.clone(), self.source.source(r.part).figures().unwrap_or_default())).collect()
    }
}

impl<'a> Streams<'a> {
    /// The phases of `spec` (scaled as it is), with their fio job files loaded.
    pub fn new(spec: &'a ExperimentSpec) -> Result<Streams<'a>> {
        if spec.phase.is_empty() && spec.workload.is_empty() {
            anyhow::bail!("the experiment has no [[workload]]s and no [[phase]]s: nothing to feed");
        }
        let cfg = spec.device_config()?;
        let phases = spec.phases();
        let mut warnings = spec.notes.clone();
        let fio = parts::load_fio_files(spec, &phases, &mut warnings)?;
        Ok(Streams { spec, phases, fio, cfg, warnings })
    }

    /// The experiment's device configuration: its namespaces, their sizes and handles.
    pub fn config(&self) -> &DeviceConfig {
        &self.cfg
    }

    /// The capacity scale the experiment runs at.
    pub fn scale(&self) -> f64 {
        self.spec.scale
    }

    /// How many phases there are.
    pub fn len(&self) -> usize {
        self.phases.len()
    }

    /// Whether there are no phases (never: [`Streams::new`] refuses such experiments).
    pub fn is_empty(&self) -> bool {
        self.phases.is_empty()
    }

    /// Phase `pi`'s name.
    pub fn phase_name(&self, pi: usize) -> &str {
        &self.phases[pi].name
    }

    /// Whether phase `pi` stops on steady state in a run (a feed gives it its sources' whole
    /// amount instead).
    pub fn stops_when_steady(&self, pi: usize) -> bool {
        self.phases[pi].steady_state.is_some()
    }

    /// Build phase `pi`'s sources on namespaces of `ns_bytes` bytes (the live drive's sizes, in
    /// the experiment's namespace order).
    pub fn build(&self, pi: usize, ns_bytes: &[u64]) -> Result<PhaseStream> {
        let n = self.cfg.namespaces.len();
        if ns_bytes.len() != n {
            return Err(anyhow!("{} namespace size(s) given for the experiment's {n} namespace(s)", ns_bytes.len()));
        }
        let target = Target { cfg: &self.cfg, ns_bytes: ns_bytes.to_vec(), io_ns: (0..n as u32).map(Some).collect(), zones: vec![None; n], zbd: vec![None; n] };
        let p = &self.phases[pi];
        let built = parts::build(self.spec, pi, p, &self.fio[pi], &target).with_context(|| format!("phase {:?}", p.name))?;
        let labels = built.labels.iter().map(|l| (l.name.clone(), l.namespace.clone())).collect();
        Ok(PhaseStream { name: p.name.clone(), measured: p.measure, source: built.source, labels, notes: built.notes, rows: built.rows })
    }
}

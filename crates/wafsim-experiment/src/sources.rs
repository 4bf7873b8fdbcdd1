//! Turning a phase's workload descriptions (synthetic workloads, fio job files, traces) into I/O
//! sources bound to one device's namespaces.

use crate::spec::{ExperimentSpec, FioSpec, PhaseSpec};
use anyhow::{anyhow, bail, Context, Result};
use std::sync::{Arc, Mutex};
use wafsim_core::{Device, DeviceConfig, Io, Pid, Placement};
use wafsim_workload::fio::{parse_job_file, FioJob, JobFile, SizeSpec, SourceParams};
use wafsim_workload::synthetic::{Synthetic, SyntheticSpec};
use wafsim_workload::trace::{OffsetPolicy, TraceInput, TraceMerge};
use wafsim_workload::{Chain, Interleave, IoSource};

/// A parsed fio job file of a phase, with the job options already scaled.
pub struct LoadedFio {
    pub spec: FioSpec,
    pub file: JobFile,
}

/// Name and namespace of one source, in the order of the phase's interleave.
#[derive(Debug, Clone)]
pub struct Label {
    pub name: String,
    pub namespace: String,
}

/// Errors that sources cannot return through `IoSource::fill` (trace parse errors).
#[derive(Default, Clone)]
pub struct ErrorSlots(Vec<Arc<Mutex<Option<String>>>>);

impl ErrorSlots {
    pub fn first_error(&self) -> Option<String> {
        self.0.iter().find_map(|s| s.lock().expect("error slot").clone())
    }
}

/// Host-side timing knobs of one source (used by the timing model only).
#[derive(Debug, Clone, Copy, Default)]
pub struct PartTiming {
    pub iodepth: u32,
    pub rate_iops: Option<f64>,
    pub rate_bytes: Option<f64>,
    pub runtime_ns: Option<u64>,
    pub ramp_ns: u64,
}

/// One source of a phase with its weight (untimed interleaving) and timing knobs.
pub struct Part {
    pub source: Box<dyn IoSource>,
    pub weight: u32,
    pub label: Label,
    pub timing: PartTiming,
}

/// The sources of one phase on one device, before interleaving.
pub struct Parts {
    pub parts: Vec<Part>,
    pub errors: ErrorSlots,
}

/// The interleaved sources of one phase on one device.
pub struct PhaseSources {
    pub source: Interleave,
    pub labels: Vec<Label>,
    pub errors: ErrorSlots,
}

impl Parts {
    /// Interleave per I/O by weight (the untimed model).
    pub fn interleave(self) -> PhaseSources {
        let mut sources = Vec::new();
        let mut weights = Vec::new();
        let mut labels = Vec::new();
        for p in self.parts {
            sources.push(p.source);
            weights.push(p.weight);
            labels.push(p.label);
        }
        PhaseSources { source: Interleave::new(sources, weights), labels, errors: self.errors }
    }
}

/// Default queue depth of synthetic workloads and traces in timed runs.
const DEFAULT_IODEPTH: u32 = 32;

fn fio_timing(job: &FioJob, scale: f64) -> PartTiming {
    use wafsim_workload::fio::RwMode;
    let t = &job.timing;
    // fio caps each direction (read, write, trim) separately; a job's total cap is the sum over
    // the directions it actually issues.
    let dirs = match job.rw {
        RwMode::Read | RwMode::RandRead => [true, false, false],
        RwMode::Write | RwMode::RandWrite => [false, true, false],
        RwMode::Trim | RwMode::RandTrim => [false, false, true],
        RwMode::ReadWrite | RwMode::RandRw => [true, true, false],
        RwMode::TrimWrite | RwMode::RandTrimWrite => [false, true, true],
    };
    let sum = |v: &[Option<u64>; 3]| {
        let s: u64 = v.iter().zip(dirs).filter(|(_, on)| *on).filter_map(|(x, _)| *x).sum();
        (s > 0).then_some(s as f64)
    };
    PartTiming {
        iodepth: t.iodepth.max(1),
        rate_iops: sum(&t.rate_iops),
        rate_bytes: sum(&t.rate),
        runtime_ns: t.runtime_ns.map(|r| (r as f64 * scale).round() as u64),
        ramp_ns: t.ramp_time_ns.map_or(0, |r| (r as f64 * scale).round() as u64),
    }
}

/// Parse every fio job file of every phase once (per variant), scale absolute sizes, and
/// collect the parser's warnings.
pub fn load_fio_files(spec: &ExperimentSpec, phases: &[PhaseSpec], warnings: &mut Vec<String>) -> Result<Vec<Vec<LoadedFio>>> {
    let mut out = Vec::new();
    for p in phases {
        let mut files = Vec::new();
        for f in &p.fio {
            let path = spec.base_dir.join(&f.file);
            let env = |name: &str| f.env.get(name).cloned().or_else(|| std::env::var(name).ok());
            let mut file = parse_job_file(&path, &env).map_err(|e| anyhow!("{e}"))?;
            for w in &file.warnings {
                let s = w.to_string();
                if !warnings.contains(&s) {
                    warnings.push(s);
                }
            }
            for phase in &mut file.phases {
                for job in phase {
                    scale_job(job, spec.scale);
                }
            }
            files.push(LoadedFio { spec: f.clone(), file });
        }
        out.push(files);
    }
    Ok(out)
}

/// Absolute byte sizes and I/O counts of a job shrink with the capacity (see `scale.rs`).
fn scale_job(job: &mut FioJob, s: f64) {
    if s == 1.0 {
        return;
    }
    let sc = |v: &mut Option<SizeSpec>| {
        if let Some(SizeSpec::Bytes(b)) = v {
            *b = ((*b as f64 * s) as u64).max(1);
        }
    };
    sc(&mut job.opts.size);
    sc(&mut job.opts.offset);
    sc(&mut job.opts.offset_increment);
    sc(&mut job.opts.io_size);
    if let Some(n) = &mut job.opts.number_ios {
        *n = ((*n as f64 * s) as u64).max(1);
    }
}

fn ns_index(cfg: &DeviceConfig, name: &str) -> Option<u32> {
    cfg.namespaces.iter().position(|n| n.name == name).map(|i| i as u32)
}

/// Placement ids a namespace offers to fio's `fdp_pli`/`plids` (placement handles, or streams).
fn available_plids(cfg: &DeviceConfig, ns: u32) -> Option<u16> {
    match &cfg.placement {
        Placement::Fdp { .. } => Some(cfg.namespaces[ns as usize].placement_handles.len() as u16),
        Placement::Streams { streams } => Some(*streams as u16),
        Placement::Conventional => None,
    }
}

/// Host bytes the phase will write on this device, where known in advance (for progress).
pub fn planned_bytes(phase: &PhaseSpec, fio: &[LoadedFio], cfg: &DeviceConfig) -> Result<u64> {
    let mut total = 0;
    for w in &phase.workload {
        if let Some(ns) = ns_index(cfg, &w.namespace) {
            total += w.amount_bytes(cfg.namespaces[ns as usize].size_bytes)?;
        }
    }
    for f in fio {
        for name in f.spec.namespace_list() {
            if let Some(ns) = ns_index(cfg, &name) {
                let bytes = cfg.namespaces[ns as usize].size_bytes;
                total += f.file.jobs().filter_map(|j| j.write_bytes_hint(bytes)).sum::<u64>();
            }
        }
    }
    Ok(total)
}

/// A trace merge that parks its error where the runner can find it.
struct CheckedTraces {
    merge: TraceMerge,
    slot: Arc<Mutex<Option<String>>>,
}

impl IoSource for CheckedTraces {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize {
        let n = self.merge.fill(out, max);
        if n == 0 {
            if let Some(e) = self.merge.error() {
                *self.slot.lock().expect("error slot") = Some(e.to_string());
            }
        }
        n
    }
}

fn seed_for(spec: &ExperimentSpec, phase: usize, kind: u64, index: usize, ns: u32) -> u64 {
    let mut x = spec.seed ^ 0xA076_1D64_78BD_642F;
    for v in [phase as u64, kind, index as u64, ns as u64] {
        x = (x ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
    x
}

/// Build the sources of phase `pi` for the namespaces present on `dev`, interleaved.
pub fn build(spec: &ExperimentSpec, pi: usize, phase: &PhaseSpec, fio: &[LoadedFio], dev: &Device) -> Result<PhaseSources> {
    Ok(build_parts(spec, pi, phase, fio, dev, false)?.interleave())
}

/// Build the sources of phase `pi` for the namespaces present on `dev`, one part per workload,
/// fio job (or stonewalled job file) and trace set. `timed`: fio time_based jobs run until
/// their runtime.
pub fn build_parts(spec: &ExperimentSpec, pi: usize, phase: &PhaseSpec, fio: &[LoadedFio], dev: &Device, timed: bool) -> Result<Parts> {
    let cfg = dev.config();
    let mut parts = Vec::new();
    let mut errors = ErrorSlots::default();

    for (wi, w) in phase.workload.iter().enumerate() {
        let Some(ns) = ns_index(cfg, &w.namespace) else { continue };
        let ns_bytes = dev.namespace_bytes(ns);
        let pid = match (w.placement_handle, w.stream) {
            (Some(_), Some(_)) => bail!("workload #{}: give placement_handle or stream, not both", wi + 1),
            (Some(ph), None) => Pid::new(w.reclaim_group, ph),
            (None, Some(s)) => Pid::new(0, s),
            (None, None) => Pid::NONE,
        };
        let s = Synthetic::new(SyntheticSpec {
            ns,
            ns_bytes,
            pattern: w.pattern()?,
            block_size: w.block_size()?,
            amount: w.amount_bytes(ns_bytes)?,
            trim_fraction: w.trim,
            pid,
            seed: seed_for(spec, pi, 0, wi, ns),
        })
        .map_err(|e| anyhow!("workload #{}: {e}", wi + 1))?;
        parts.push(Part {
            source: Box::new(s),
            weight: w.weight,
            label: Label { name: format!("workload{} ({} {})", wi + 1, w.pattern, w.bs), namespace: w.namespace.clone() },
            timing: PartTiming { iodepth: w.iodepth.unwrap_or(DEFAULT_IODEPTH).max(1), rate_iops: w.rate_iops, ..Default::default() },
        });
    }

    for (fi, f) in fio.iter().enumerate() {
        for name in f.spec.namespace_list() {
            let Some(ns) = ns_index(cfg, &name) else { continue };
            let params = |job: &FioJob| SourceParams {
                ns,
                ns_bytes: dev.namespace_bytes(ns),
                seed: seed_for(spec, pi, 1, fi * 4096 + job.job_index as usize, ns),
                available_plids: available_plids(cfg, ns),
                timed,
            };
            let file_name = &f.spec.file;
            if f.file.phases.len() == 1 {
                for job in &f.file.phases[0] {
                    let src = job.source_with(params(job)).map_err(|e| anyhow!("{e}")).with_context(|| format!("fio {file_name} on {name}"))?;
                    let clone = if job.clone_index > 0 { format!(".{}", job.clone_index) } else { String::new() };
                    parts.push(Part {
                        source: src,
                        weight: f.spec.weight,
                        label: Label { name: format!("{}{clone}", job.name), namespace: name.clone() },
                        timing: fio_timing(job, spec.scale),
                    });
                }
            } else {
                // stonewall phases inside the file run one after another: one chained source.
                let mut chain: Vec<Box<dyn IoSource>> = Vec::new();
                for jobs in &f.file.phases {
                    let mut subs = Vec::new();
                    for job in jobs {
                        subs.push(job.source_with(params(job)).map_err(|e| anyhow!("{e}")).with_context(|| format!("fio {file_name} on {name}"))?);
                    }
                    let n = subs.len();
                    chain.push(Box::new(Interleave::new(subs, vec![1; n])));
                }
                let timing = fio_timing(&f.file.phases[0][0], spec.scale);
                parts.push(Part {
                    source: Box::new(Chain::new(chain)),
                    weight: f.spec.weight,
                    label: Label { name: file_name.clone(), namespace: name.clone() },
                    timing,
                });
            }
        }
    }

    let mut inputs = Vec::new();
    let mut trace_names = Vec::new();
    let mut trace_ns = Vec::new();
    for t in &phase.trace {
        let Some(ns) = ns_index(cfg, &t.namespace) else { continue };
        let path = spec.base_dir.join(&t.file);
        let mut input = TraceInput::open(&path, t.trace_format()?, ns, dev.namespace_bytes(ns)).map_err(|e| anyhow!("{e}"))?;
        if let Some(k) = &t.filter {
            input = input.with_filter(k);
        }
        input = input.with_policy(if t.offsets == "error" {
            OffsetPolicy::Error
        } else {
            OffsetPolicy::Wrap { align: cfg.mapping_unit as u64 }
        });
        if let Some(ph) = t.placement_handle {
            input = input.with_write_pid(Pid::new(0, ph));
        }
        inputs.push(input);
        trace_names.push(t.file.clone());
        if !trace_ns.contains(&t.namespace) {
            trace_ns.push(t.namespace.clone());
        }
    }
    if !inputs.is_empty() {
        let slot = Arc::new(Mutex::new(None));
        errors.0.push(slot.clone());
        parts.push(Part {
            source: Box::new(CheckedTraces { merge: TraceMerge::new(inputs), slot }),
            weight: 1,
            label: Label { name: format!("traces ({})", trace_names.join(", ")), namespace: trace_ns.join(", ") },
            timing: PartTiming { iodepth: DEFAULT_IODEPTH, ..Default::default() },
        });
    }
    Ok(Parts { parts, errors })
}

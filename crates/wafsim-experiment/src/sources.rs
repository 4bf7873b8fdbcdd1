//! Turning a phase's workload descriptions (synthetic workloads, fio job files, traces) into I/O
//! sources bound to one device's namespaces.

use wafsim_core::blockdev::ZoneGeometry;
use crate::spec::{ExperimentSpec, FioSpec, PhaseSpec};
use anyhow::{anyhow, bail, Context, Result};
use std::sync::{Arc, Mutex};
use wafsim_core::{Device, DeviceConfig, Io, Pid, Placement};
use wafsim_workload::fio::{parse_job_args, parse_job_file, DevicePlacement, FioJob, JobFile, SizeSpec, SourceParams, ZbdZones, ZoneMode};
use wafsim_workload::synthetic::{Synthetic, SyntheticSpec};
use wafsim_workload::trace::{IologTee, IologWriter, OffsetPolicy, TraceInput, TraceMerge};
use wafsim_core::pipeline::IoSource;
use wafsim_workload::{Interleave, InterleaveMode};

/// A parsed fio job file of a phase, with the job options already scaled.
pub struct LoadedFio {
    pub spec: FioSpec,
    pub file: JobFile,
    /// Per job (by `job_index`): the options scaling changed, as (option, unscaled, scaled).
    pub scaled: std::collections::BTreeMap<u32, Vec<(&'static str, u64, u64)>>,
}

impl LoadedFio {
    /// Text appended to a job's error in a scaled run, so the user sees what scaling changed:
    /// the namespace and the job's sizes, unscaled and scaled.
    pub fn scale_note(&self, job: &FioJob, scale: f64, ns: &str, ns_bytes: u64) -> String {
        if scale == 1.0 {
            return String::new();
        }
        let mut what = vec![format!("namespace {ns} is {ns_bytes} B (about {:.0} B unscaled)", ns_bytes as f64 / scale)];
        if let Some(v) = self.scaled.get(&job.job_index) {
            what.extend(v.iter().map(|(o, a, b)| format!("{o}={a} became {b}")));
        }
        format!(
            " (this run is scaled to {}: {}; run with a larger --scale, --scale 1 or --full-scale to use the real sizes)",
            crate::scale::label(scale),
            what.join(", ")
        )
    }
}

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
    pub fs: Vec<crate::files::FsProbe>,
    /// Non-fatal findings about how the sources were combined.
    pub notes: Vec<String>,
}

/// The interleaved sources of one phase on one target.
pub struct PhaseSources {
    pub source: Interleave,
    pub labels: Vec<Label>,
    pub errors: ErrorSlots,
    /// The file systems of `[[phase.files]]` parts.
    pub fs: Vec<crate::files::FsProbe>,
    pub notes: Vec<String>,
}

/// How the untimed model orders the I/Os of a phase's concurrent sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterleaveKind {
    /// Strict weighted turns.
    RoundRobin,
    /// Each I/O's source drawn at random by weight (Poisson arrivals), seeded.
    Random,
}

impl std::str::FromStr for InterleaveKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "round-robin" => Ok(InterleaveKind::RoundRobin),
            "random" => Ok(InterleaveKind::Random),
            _ => Err(format!("interleave = {s:?}: expected \"round-robin\" or \"random\"")),
        }
    }
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
        mean_io_bytes: {
            let bs = job.block_sizes();
            let used: Vec<f64> = [0usize, 1, 2].iter().filter(|&&d| dirs[d]).map(|&d| bs[d].mean()).collect();
            used.iter().sum::<f64>() / used.len().max(1) as f64
        },
    }
}

/// Parse every fio job file of every phase once (per variant), scale absolute sizes, and
/// collect the parser's warnings.
pub fn load_fio_files(spec: &ExperimentSpec, phases: &[PhaseSpec], warnings: &mut Vec<String>) -> Result<Vec<Vec<LoadedFio>>> {
    let mut out = Vec::new();
    for p in phases {
        let mut files = Vec::new();
        for f in &p.fio {
            let env = |name: &str| f.env.get(name).cloned().or_else(|| std::env::var(name).ok());
            let mut file = match (&f.file, &f.args) {
                (Some(file), None) => parse_job_file(&spec.base_dir.join(file), &env).map_err(|e| anyhow!("{e}"))?,
                (None, Some(args)) => parse_job_args(args, &f.origin(), &env).map_err(|e| anyhow!("{e}"))?,
                _ => bail!("phase {:?}: [[phase.fio]] needs file = \"job.fio\" or args = \"--name=... --rw=...\" (one of them)", p.name),
            };
            for w in &file.warnings {
                let s = w.to_string();
                if !warnings.contains(&s) {
                    warnings.push(s);
                }
            }
            let mut scaled = std::collections::BTreeMap::new();
            for phase in &mut file.phases {
                for job in phase {
                    let (changed, floored) = scale_job(job, spec.scale);
                    for (o, a, b) in floored {
                        let w = format!(
                            "{}:{}: job \"{}\": {o}={a} at {} would be {:.0} B, less than one block: using {b} B (run with a larger --scale, --scale 1 or --full-scale for the job's own size)",
                            job.file,
                            job.line,
                            job.name,
                            crate::scale::label(spec.scale),
                            a as f64 * spec.scale
                        );
                        if !warnings.contains(&w) {
                            warnings.push(w);
                        }
                    }
                    if !changed.is_empty() {
                        scaled.insert(job.job_index, changed);
                    }
                }
            }
            files.push(LoadedFio { spec: f.clone(), file, scaled });
        }
        out.push(files);
    }
    Ok(out)
}

type Changes = Vec<(&'static str, u64, u64)>;

/// Absolute byte sizes and I/O counts of a job shrink with the capacity (see `scale.rs`); a
/// size never shrinks below the job's largest block, an I/O count never below 1. Returns what
/// changed as (option, unscaled, scaled), and which of those stopped at one block.
fn scale_job(job: &mut FioJob, s: f64) -> (Changes, Changes) {
    let mut changed = Vec::new();
    let mut floored = Vec::new();
    if s == 1.0 {
        return (changed, floored);
    }
    let bs = job.block_sizes();
    let floor = bs.iter().map(|b| b.max()).max().unwrap_or(4096).max(1);
    // Scaled offsets stay 4 KiB aligned (an unaligned offset is our artifact, and direct I/O
    // and zoned drives refuse one); sizes scale exactly.
    let mut sc = |name: &'static str, v: &mut Option<SizeSpec>, min: u64, align: u64| {
        if let Some(SizeSpec::Bytes(b)) = v {
            let plain = (*b as f64 * s) as u64 / align * align;
            let new = plain.max(min.min(*b));
            if new != plain {
                floored.push((name, *b, new));
            }
            if new != *b {
                changed.push((name, *b, new));
            }
            *b = new;
        }
    };
    sc("size", &mut job.opts.size, floor, 1);
    sc("offset", &mut job.opts.offset, 0, 4096);
    sc("offset_increment", &mut job.opts.offset_increment, 0, 4096);
    sc("io_size", &mut job.opts.io_size, floor, 1);
    if let Some((lo, hi)) = &mut job.opts.filesize {
        let (a, b) = (((*lo as f64 * s) as u64).max(floor.min(*lo)), ((*hi as f64 * s) as u64).max(floor.min(*hi)));
        if a != *lo {
            changed.push(("filesize", *lo, a));
        }
        if a != (*lo as f64 * s) as u64 {
            floored.push(("filesize", *lo, a));
        }
        (*lo, *hi) = (a, b.max(a));
    }
    // Zone sizes scale with the drive's zones (scale.rs keeps the zone count): whole 4 KiB
    // blocks, as the drive rounds its scaled zones, so a zbd job's zonesize still names them.
    let mut zone = |name: &'static str, v: &mut Option<u64>| {
        if let Some(b) = v {
            let new = ((*b as f64 * s) as u64 / 4096 * 4096).max(4096.min(*b));
            if new != *b {
                changed.push((name, *b, new));
            }
            *b = new;
        }
    };
    zone("zonesize", &mut job.opts.zonesize);
    zone("zonerange", &mut job.opts.zones.range);
    zone("zonecapacity", &mut job.opts.zones.capacity);
    if let Some(SizeSpec::Bytes(b)) = &mut job.opts.zones.skip {
        let mut v = Some(*b);
        zone("zoneskip", &mut v);
        *b = v.unwrap_or(*b);
    }
    if let Some(n) = &mut job.opts.number_ios {
        let new = ((*n as f64 * s) as u64).max(1);
        if new != *n {
            changed.push(("number_ios", *n, new));
        }
        *n = new;
    }
    (changed, floored)
}

/// fio `write_iolog=PATH`: record what the job issues as a fio iolog v3 (relative paths from
/// the current directory, as fio; timestamps are 0, so a replay runs as fast as it can). Where
/// several writers would share the file (variants, namespaces, clones) each gets its own:
/// `PATH.VARIANT.NAMESPACE.JOB[.CLONE]`.
fn tee_iolog(spec: &ExperimentSpec, src: Box<dyn IoSource>, path: &str, job: &FioJob, clone: &str, ns: &str, errors: &mut ErrorSlots) -> Result<Box<dyn IoSource>> {
    let path = if spec.single_writer && job.numjobs == 1 {
        path.to_string()
    } else {
        format!("{path}.{}.{ns}.{}{clone}", spec.variant_name, job.name)
    };
    let target = job.filename.clone().unwrap_or_else(|| format!("/dev/{ns}"));
    let file = std::fs::File::create(&path).with_context(|| format!("{}:{}: write_iolog: cannot create {path}", job.file, job.line))?;
    let writer = IologWriter::new(std::io::BufWriter::new(file), &target).with_context(|| format!("{}:{}: write_iolog {path}", job.file, job.line))?;
    let slot = Arc::new(Mutex::new(None));
    errors.0.push(slot.clone());
    Ok(Box::new(IologTee::new(src, writer).with_error_slot(&format!("write_iolog {path}"), slot)))
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

/// Build the sources of phase `pi` on `target`, interleaved as the experiment says.
pub fn build(spec: &ExperimentSpec, pi: usize, phase: &PhaseSpec, fio: &[LoadedFio], target: &Target) -> Result<PhaseSources> {
    let kind = spec.interleave_of(phase)?;
    Ok(build_parts(spec, pi, phase, fio, target, false)?.interleave(kind, seed_for(spec, pi, 7, 0, 0)))
}

/// Build the sources of phase `pi` for the namespaces present on `target`: one part per
/// workload, fio job (each `numjobs` clone and each job of a stonewalled file its own part) and
/// trace set. `timed`: fio time_based jobs run until their runtime.
pub fn build_parts(spec: &ExperimentSpec, pi: usize, phase: &PhaseSpec, fio: &[LoadedFio], target: &Target, timed: bool) -> Result<Parts> {
    let cfg = target.cfg;
    let mut parts = Vec::new();
    let mut errors = ErrorSlots::default();
    let mut group = 0u32;
    let mut next_group = || {
        group += 1;
        group - 1
    };

    for (wi, w) in phase.workload.iter().enumerate() {
        let Some((g, ns, ns_bytes)) = target.find(&w.namespace) else { continue };
        let pid = match (w.placement_handle, w.stream) {
            (Some(_), Some(_)) => bail!("workload #{}: give placement_handle or stream, not both", wi + 1),
            (Some(ph), None) => Pid::new(w.reclaim_group, ph),
            (None, Some(s)) => Pid::new(0, s),
            (None, None) => Pid::NONE,
        };
        let block_size = w.block_size()?;
        let s = Synthetic::new(SyntheticSpec {
            ns,
            ns_bytes,
            pattern: w.pattern()?,
            block_size,
            amount: w.amount_bytes(ns_bytes)?,
            trim_fraction: w.trim,
            pid,
            seed: seed_for(spec, pi, 0, wi, g),
        })
        .map_err(|e| anyhow!("workload #{}: {e}", wi + 1))?;
        parts.push(Part {
            source: Box::new(s),
            weight: w.weight,
            label: Label { name: format!("workload{} ({} {})", wi + 1, w.pattern, w.bs), namespace: w.namespace.clone() },
            timing: PartTiming {
                iodepth: w.iodepth.unwrap_or(DEFAULT_IODEPTH).max(1),
                rate_iops: w.rate_iops,
                mean_io_bytes: block_size as f64,
                ..Default::default()
            },
            group: next_group(),
            stage: 0,
        });
    }

    for (fi, f) in fio.iter().enumerate() {
        for name in f.spec.namespace_list() {
            let Some((g, ns, ns_bytes)) = target.find(&name) else { continue };
            let params = |job: &FioJob| SourceParams {
                ns,
                ns_bytes,
                seed: seed_for(spec, pi, 1, fi * 4096 + job.job_index as usize, g),
                available_plids: available_plids(cfg, g),
                timed,
                placement: match cfg.placement {
                    Placement::Fdp { .. } => DevicePlacement::Fdp,
                    Placement::Streams { .. } => DevicePlacement::Streams,
                    Placement::Conventional => DevicePlacement::NoPlacement,
                },
                zones: target.zones_of(g),
            };
            let file_name = f.spec.origin();
            // One fio process per namespace: its stonewall phases are stages of one group.
            let grp = next_group();
            for (stage, jobs) in f.file.phases.iter().enumerate() {
                for job in jobs {
                    let zbd = target.zbd.get(g as usize).and_then(|z| z.as_ref());
                    let src = match zbd {
                        Some(z) if job.zone_mode() == ZoneMode::Zbd => job.source_zbd(params(job), z),
                        _ => job.source_with(params(job)),
                    };
                    let src = src
                        .map_err(|e| anyhow!("{e}{}", f.scale_note(job, spec.scale, &name, ns_bytes)))
                        .with_context(|| format!("fio {file_name} on {name}"))?;
                    let clone = if job.clone_index > 0 { format!(".{}", job.clone_index) } else { String::new() };
                    let src = match &job.write_iolog {
                        Some(path) => tee_iolog(spec, src, path, job, &clone, &name, &mut errors)?,
                        None => src,
                    };
                    parts.push(Part {
                        source: src,
                        weight: f.spec.weight,
                        label: Label { name: format!("{}{clone}", job.name), namespace: name.clone() },
                        timing: fio_timing(job, spec.scale),
                        group: grp,
                        stage: stage as u32,
                    });
                }
            }
        }
    }

    let mut inputs = Vec::new();
    let mut trace_names = Vec::new();
    let mut trace_ns = Vec::new();
    for t in &phase.trace {
        let Some((_, ns, ns_bytes)) = target.find(&t.namespace) else { continue };
        let path = spec.base_dir.join(&t.file);
        let mut input = TraceInput::open(&path, t.trace_format()?, ns, ns_bytes).map_err(|e| anyhow!("{e}"))?;
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
        if let Some(split) = &t.placement_split {
            input = input.with_write_split(split.iter().map(|f| (f * ns_bytes as f64) as u64).collect());
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
            timing: PartTiming { iodepth: DEFAULT_IODEPTH, mean_io_bytes: 4096.0, ..Default::default() },
            group: next_group(),
            stage: 0,
        });
    }
    let mut fs = Vec::new();
    crate::files::file_parts(&phase.files, target, |i, g| seed_for(spec, pi, 3, i, g), &mut parts, &mut errors, &mut fs, &mut next_group)?;
    crate::kv::kv_parts(&phase.kv, target, |i, g| seed_for(spec, pi, 4, i, g), &mut parts, &mut errors, &mut fs, next_group)?;
    Ok(Parts { parts, errors, fs, notes: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafsim_workload::synthetic::Pattern;

    fn part(ns: u32, rate_iops: Option<f64>, rate_bytes: Option<f64>) -> Part {
        let s = Synthetic::new(SyntheticSpec {
            ns,
            ns_bytes: 1 << 30,
            pattern: Pattern::Sequential,
            block_size: 4096,
            amount: 1 << 30,
            trim_fraction: 0.0,
            pid: Pid::NONE,
            seed: 1,
        })
        .unwrap();
        Part {
            source: Box::new(s),
            weight: 1,
            label: Label { name: format!("w{ns}"), namespace: format!("ns{ns}") },
            timing: PartTiming { rate_iops, rate_bytes, mean_io_bytes: 4096.0, ..Default::default() },
            group: ns,
            stage: 0,
        }
    }

    fn first_ns(ps: PhaseSources, n: usize) -> Vec<usize> {
        let mut src = ps.source;
        let mut out = Vec::new();
        while out.len() < n {
            let want = n - out.len();
            if src.fill(&mut out, want) == 0 {
                break;
            }
        }
        let mut counts = vec![0; 3];
        for io in &out {
            counts[io.ns as usize] += 1;
        }
        counts
    }

    /// Untimed arrivals follow the sources' rates (an I/O rate, or a byte rate over the mean
    /// block size), in strict turns or as merged Poisson processes.
    #[test]
    fn rates_weight_the_untimed_interleave() {
        let parts = || Parts { parts: vec![part(0, Some(1000.0), None), part(1, None, Some(3000.0 * 4096.0))], errors: ErrorSlots::default(), fs: vec![], notes: vec![] };
        assert_eq!(first_ns(parts().interleave(InterleaveKind::RoundRobin, 1), 400), [100, 300, 0]);
        let random = first_ns(parts().interleave(InterleaveKind::Random, 1), 40_000);
        assert!((9_400..10_600).contains(&random[0]), "{random:?}");
        // Rates on only some sources: weights (equal here) and a note saying why.
        let mixed = Parts { parts: vec![part(0, Some(1000.0), None), part(1, None, None)], errors: ErrorSlots::default(), fs: vec![], notes: vec![] };
        let ps = mixed.interleave(InterleaveKind::RoundRobin, 1);
        assert!(ps.notes[0].contains("w0 have a rate but w1 do not"), "{:?}", ps.notes);
        assert_eq!(first_ns(ps, 400), [200, 200, 0]);
    }
}

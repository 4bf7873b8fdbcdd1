//! `[[phase.fio]]`: fio job files (or fio command lines) as parts, one per job instance on each
//! namespace; their sizes scaled with the run, their `write_iolog` recorded.

use super::part::{seed_for, Label, Part, PartTiming, Target};
use crate::schema::{ExperimentSpec, PhaseSpec, FioSpec};
use anyhow::{anyhow, bail, Context, Result};
use wafsim_core::{DeviceConfig, Placement};
use wafsim_workload::fio::{parse_job_args, parse_job_file, DevicePlacement, FioJob, JobFile, SizeSpec, SourceParams, ZoneMode};
use wafsim_workload::trace::{IologTee, IologWriter};
use wafsim_core::pipeline::IoSource;

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
            crate::plan::scale::label(scale),
            what.join(", ")
        )
    }
}

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
            let env = |name: &str| {
                f.env.get(name).or_else(|| spec.fio_env.get(name)).cloned().or_else(|| std::env::var(name).ok())
            };
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
                            crate::plan::scale::label(spec.scale),
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

/// Absolute byte sizes and I/O counts of a job shrink with the capacity (see `plan/scale.rs`); a
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
    // Zone sizes scale with the drive's zones (plan/scale.rs keeps the zone count): whole 4 KiB
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
fn tee_iolog(spec: &ExperimentSpec, src: Box<dyn IoSource>, path: &str, job: &FioJob, clone: &str, ns: &str) -> Result<Box<dyn IoSource>> {
    let path = if spec.single_writer && job.numjobs == 1 {
        path.to_string()
    } else {
        format!("{path}.{}.{ns}.{}{clone}", spec.variant_name, job.name)
    };
    let target = job.filename.clone().unwrap_or_else(|| format!("/dev/{ns}"));
    let file = std::fs::File::create(&path).with_context(|| format!("{}:{}: write_iolog: cannot create {path}", job.file, job.line))?;
    let writer = IologWriter::new(file, &target).with_context(|| format!("{}:{}: write_iolog {path}", job.file, job.line))?;
    Ok(Box::new(IologTee::new(src, writer).named(&format!("write_iolog {path}"))))
}

/// Placement ids a namespace offers to fio's `fdp_pli`/`plids` (placement handles, or streams).
fn available_plids(cfg: &DeviceConfig, ns: u32) -> Option<u16> {
    match &cfg.placement {
        Placement::Fdp { .. } => Some(cfg.namespaces[ns as usize].placement_handles.len() as u16),
        Placement::Streams { streams } => Some(*streams as u16),
        Placement::Conventional => None,
    }
}

/// The parts of the phase's fio job files on `target`: one per job instance (each `numjobs`
/// clone), on each namespace the file names; the stonewall phases of one file on one namespace
/// are the stages of one group.
#[allow(clippy::too_many_arguments)]
pub(super) fn parts(spec: &ExperimentSpec, pi: usize, fio: &[LoadedFio], target: &Target, timed: bool, parts: &mut Vec<Part>, next_group: &mut impl FnMut() -> u32) -> Result<()> {
    let cfg = target.cfg;
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
                        Some(path) => tee_iolog(spec, src, path, job, &clone, &name)?,
                        None => src,
                    };
                    parts.push(Part {
                        source: src,
                        weight: f.spec.weight,
                        label: Label { name: format!("{}{clone}", job.name), namespace: name.clone() },
                        timing: fio_timing(job, spec.scale),
                        group: grp,
                        stage: stage as u32,
                        row: None,
                    });
                }
            }
        }
    }

    Ok(())
}

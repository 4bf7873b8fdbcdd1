//! From lexed items to jobs: `[global]` inheritance, `numjobs` clones and `stonewall` phases.

use std::ops::Deref;

use super::ini::{Item, Loc};
use super::options::{canonical_option, engine_kind, engine_passes_placement, Applied, DataPlacement, EngineKind, JobOptions, ZoneMode};
use super::size::SizeSpec;
use super::{Diagnostic, FioError};

/// One job instance (a `numjobs` clone counts as its own job).
///
/// All typed options are reachable through `Deref` to [`JobOptions`] (e.g. `job.rw`,
/// `job.filename`, `job.timing.iodepth`).
#[derive(Debug, Clone, PartialEq)]
pub struct FioJob {
    /// `name=` if given, else the section name. Clones keep the name, as fio does.
    pub name: String,
    /// Clone number `0..numjobs` (fio's sub-job number; drives `offset_increment`).
    pub clone_index: u32,
    /// Position of this job among all jobs of the file (clones included); used to derive an
    /// independent random stream per job.
    pub job_index: u32,
    /// The `stonewall` phase the job belongs to (its index in [`JobFile::phases`]).
    pub phase: u32,
    /// Where the job's section starts.
    pub file: String,
    /// Line of the section header in that file.
    pub line: usize,
    /// The typed options.
    pub opts: JobOptions,
}

impl Deref for FioJob {
    type Target = JobOptions;
    fn deref(&self) -> &JobOptions {
        &self.opts
    }
}

/// A parsed job file: jobs grouped into phases (a job with `stonewall` starts a new phase that
/// runs after every job of the previous phases has finished) plus non-fatal diagnostics.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobFile {
    /// Jobs by `stonewall` phase, in file order within each phase.
    pub phases: Vec<Vec<FioJob>>,
    /// Non-fatal findings, such as options fio knows but wafsim does not model.
    pub warnings: Vec<Diagnostic>,
}

impl JobFile {
    /// All jobs in file order.
    pub fn jobs(&self) -> impl Iterator<Item = &FioJob> {
        self.phases.iter().flatten()
    }
}

struct Entry {
    key: String,
    value: Option<String>,
    loc: Loc,
}

fn apply_entry(opts: &mut JobOptions, e: &Entry, warnings: Option<&mut Vec<Diagnostic>>) -> Result<(), FioError> {
    match opts.apply(&e.key, e.value.as_deref()) {
        Ok(Applied::Ok) => {}
        Ok(kind) => {
            if let Some(w) = warnings {
                let message = if kind == Applied::Unknown {
                    format!("unknown option \"{}\" (ignored)", e.key)
                } else {
                    format!("option \"{}\" is not modelled by wafsim (ignored)", e.key)
                };
                w.push(Diagnostic { file: e.loc.file.clone(), line: e.loc.line, message });
            }
        }
        Err(expected) => {
            return Err(FioError::BadValue {
                file: e.loc.file.clone(),
                line: e.loc.line,
                option: e.key.clone(),
                value: e.value.clone().unwrap_or_default(),
                expected,
            })
        }
    }
    Ok(())
}

/// fio reads `kb_base` before the other options; do the same so that its position in the
/// section does not matter.
fn prescan_kb_base(opts: &mut JobOptions, entries: &[&Entry]) -> Result<(), FioError> {
    for e in entries.iter().filter(|e| e.key == "kb_base") {
        apply_entry(opts, e, None)?;
    }
    Ok(())
}

struct PendingJob {
    section: String,
    loc: Loc,
    globals: Vec<usize>,
    entries: Vec<Entry>,
}

/// Where the options that later checks refer to were set (the last setting wins, as in fio).
#[derive(Default)]
struct SetAt {
    at: Vec<(&'static str, Loc)>,
}

impl SetAt {
    const TRACKED: [&'static str; 12] = [
        "ioengine", "size", "offset", "io_size", "offset_increment", "filename", "nrfiles", "fdp", "dataplacement",
        "zonemode", "zonesize", "zoneskip",
    ];

    fn note(&mut self, key: &str, loc: &Loc) {
        if let Some(k) = Self::TRACKED.iter().find(|k| **k == canonical_option(key)) {
            self.at.retain(|(x, _)| x != k);
            self.at.push((k, loc.clone()));
        }
    }
    fn get(&self, key: &str) -> Option<&Loc> {
        self.at.iter().find(|(k, _)| *k == key).map(|(_, l)| l)
    }
}

/// A finished job section: its options and the checks fio makes on the whole job.
struct Finisher<'a> {
    job: &'a PendingJob,
    name: String,
    set_at: SetAt,
}

impl Finisher<'_> {
    /// An error located where `key` was set (else at the section header).
    fn err(&self, key: &str, message: String) -> FioError {
        let loc = self.set_at.get(key).unwrap_or(&self.job.loc);
        FioError::Job { file: loc.file.clone(), line: loc.line, job: self.name.clone(), message }
    }
    fn warn(&self, key: &str, message: String) -> Diagnostic {
        let loc = self.set_at.get(key).unwrap_or(&self.job.loc);
        Diagnostic { file: loc.file.clone(), line: loc.line, message }
    }

    /// fio's `fixup_options` for the zone mode, then `4z` sizes become bytes with `zonesize`
    /// (with `zonemode=zbd` and no `zonesize`, the drive's zone size does it when the job runs).
    fn resolve_zones(&self, o: &mut JobOptions, warnings: &mut Vec<Diagnostic>) -> Result<(), FioError> {
        match o.zones.mode {
            ZoneMode::NotSpecified => o.zones.mode = if o.zonesize.is_some() { ZoneMode::Strided } else { ZoneMode::None },
            ZoneMode::None if o.zonesize.is_some() => {
                return Err(self.err("zonemode", "zonemode=none and zonesize= do not go together (fio: \"--zonemode=none and --zonesize are not compatible\"); drop zonesize= or set zonemode=strided or zbd".into()))
            }
            ZoneMode::Strided if o.zonesize.is_none() => {
                return Err(self.err("zonemode", "zonemode=strided needs zonesize= (fio: \"--zonesize must be specified when using --zonemode=strided\")".into()))
            }
            _ => {}
        }
        if o.zones.mode == ZoneMode::Strided && o.nrfiles > 1 && o.filename.is_none() {
            warnings.push(self.warn("zonesize", format!(
                "zonemode=strided does not apply to a job with nrfiles={} (fio drops it to zonemode=none)",
                o.nrfiles
            )));
        }
        if o.zones.mode == ZoneMode::Zbd && o.zonesize.is_none() {
            // the drive's zone size resolves the `z` sizes when the job runs
            return Ok(());
        }
        let zone = o.zonesize;
        let fields: [(&str, &mut Option<SizeSpec>); 5] = [
            ("size", &mut o.size),
            ("offset", &mut o.offset),
            ("io_size", &mut o.io_size),
            ("offset_increment", &mut o.offset_increment),
            ("zoneskip", &mut o.zones.skip),
        ];
        for (key, field) in fields {
            let Some(SizeSpec::Zones(n)) = *field else { continue };
            let Some(z) = zone else {
                return Err(self.err(key, format!(
                    "{key}={n}z counts zones, but the job sets no zonesize= (fio takes the zone size from zonesize= or, with zonemode=zbd, from a zoned drive; without either it silently reads the value as 0)"
                )));
            };
            *field = Some(SizeSpec::Bytes(n.saturating_mul(z)));
        }
        Ok(())
    }

    /// One target file per job: fio splits `filename=a:b` into several files (a `:` that is
    /// part of a name is written `\:`).
    fn check_filename(&self, o: &mut JobOptions, warnings: &mut Vec<Diagnostic>) -> Result<(), FioError> {
        let Some(f) = &o.filename else { return Ok(()) };
        let names = split_filenames(f);
        if names.len() > 1 {
            return Err(self.err("filename", format!(
                "filename={f} names {} files (fio splits the name at ':'; write \\: for a ':' inside a name), and fio spreads the job over them; wafsim runs a job on one namespace, so give one filename (or nrfiles= without filename= for several files)",
                names.len()
            )));
        }
        if o.nrfiles > 1 {
            warnings.push(self.warn("nrfiles", format!(
                "nrfiles={} is ignored because filename= names the one file the job uses (fio does the same)",
                o.nrfiles
            )));
            o.nrfiles = 1;
        }
        Ok(())
    }

    /// Refuse engines whose I/O does not reach a block device.
    fn check_engine(&self, o: &JobOptions, warnings: &mut Vec<Diagnostic>) -> Result<(), FioError> {
        let Some(e) = &o.timing.ioengine else { return Ok(()) };
        match engine_kind(e) {
            EngineKind::Block => Ok(()),
            // A plugin fio loads by path: fio fails where the file is not there ("engine ... not
            // loadable"), so an absolute path that does not exist here is refused; otherwise
            // wafsim cannot run the plugin's code and says what it assumes (SPDK's plugins,
            // the common case, do block I/O by offset).
            EngineKind::External => {
                let path = e.trim().strip_prefix("external:").unwrap_or(e.trim());
                let path = std::path::Path::new(path);
                if path.is_absolute() && !path.exists() {
                    return Err(self.err("ioengine", format!(
                        "ioengine={e} loads an external engine from {}, which does not exist; fio fails the same way (\"engine {e} not loadable\")",
                        path.display()
                    )));
                }
                warnings.push(self.warn("ioengine", format!(
                    "ioengine={e} is an external engine (a plugin fio loads by path); wafsim cannot run its code and assumes it reads and writes blocks by offset, as SPDK's plugins do"
                )));
                Ok(())
            }
            EngineKind::NotBlock(reason) => {
                Err(self.err("ioengine", format!("ioengine={e} {reason}; wafsim simulates a drive, so it cannot run this job")))
            }
            EngineKind::Unknown => {
                warnings.push(self.warn("ioengine", format!(
                    "ioengine={e} is not an engine wafsim knows; assuming it reads and writes blocks (fio loads it as a plugin or fails with \"engine {e} not loadable\")"
                )));
                Ok(())
            }
        }
    }

    /// fio sends placement directives only through the NVMe passthrough engines.
    fn check_placement(&self, o: &mut JobOptions, warnings: &mut Vec<Diagnostic>) -> Result<(), FioError> {
        let fdp = o.fdp || o.dataplacement == DataPlacement::Fdp;
        let streams = !fdp && o.dataplacement == DataPlacement::Streams;
        let engine = o.timing.ioengine.clone().unwrap_or_else(|| "psync".into());
        let key = if o.fdp { "fdp" } else { "dataplacement" };
        if fdp && !engine_passes_placement(&engine) {
            return Err(self.err(key, format!(
                "{} needs ioengine=io_uring_cmd or xnvme: with ioengine={engine}{} fio cannot read the drive's reclaim unit handles and fails (\"engine ({engine}) lacks fetch ruhs\")",
                if o.fdp { "fdp=1" } else { "dataplacement=fdp" },
                if o.timing.ioengine.is_none() { " (fio's default)" } else { "" },
            )));
        }
        if streams && o.plids.is_none() {
            return Err(self.err("dataplacement", "dataplacement=streams needs the stream ids in plids= (fio: \"stream IDs must be provided for dataplacement=streams\")".into()));
        }
        if streams && !engine_passes_placement(&engine) {
            warnings.push(self.warn("dataplacement", format!(
                "dataplacement=streams has no effect with ioengine={engine}: only io_uring_cmd and xnvme send the stream directive, so the writes carry no stream (as in fio)"
            )));
            o.dataplacement = DataPlacement::None;
        }
        Ok(())
    }
}

/// fio's `filename=` list: names separated by `:`, where `\:` is a literal colon.
fn split_filenames(f: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = f.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                out.last_mut().expect("non-empty").push(':');
            }
            ':' => out.push(String::new()),
            c => out.last_mut().expect("non-empty").push(c),
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Apply `[global]` and the job's own options, then fio's whole-job checks.
fn finish(job: &PendingJob, globals: &[Entry], warnings: &mut Vec<Diagnostic>) -> Result<JobOptions, FioError> {
    let mut opts = JobOptions::default();
    let all: Vec<&Entry> = job.globals.iter().map(|&i| &globals[i]).chain(job.entries.iter()).collect();
    prescan_kb_base(&mut opts, &all)?;
    let mut set_at = SetAt::default();
    for &i in &job.globals {
        apply_entry(&mut opts, &globals[i], None)?;
        set_at.note(&globals[i].key, &globals[i].loc);
    }
    for e in &job.entries {
        apply_entry(&mut opts, e, Some(warnings))?;
        set_at.note(&e.key, &e.loc);
    }
    let f = Finisher { job, name: opts.name.clone().unwrap_or_else(|| job.section.clone()), set_at };
    f.resolve_zones(&mut opts, warnings)?;
    f.check_filename(&mut opts, warnings)?;
    f.check_engine(&opts, warnings)?;
    f.check_placement(&mut opts, warnings)?;
    Ok(opts)
}

/// Why a source has no job (the message of the error, after fio's "No job(s) defined").
pub(crate) struct NoJobs<'a> {
    /// Where to report it.
    pub file: &'a str,
    pub line: usize,
    /// What to do about it.
    pub hint: &'a str,
}

/// Build the job list from lexed items.
pub(crate) fn assemble(items: Vec<Item>, no_jobs: NoJobs) -> Result<JobFile, FioError> {
    let mut warnings = Vec::new();
    let mut globals: Vec<Entry> = Vec::new();
    let mut global_scratch = JobOptions::default();
    let mut in_global = false;
    let mut current: Option<PendingJob> = None;
    let mut done: Vec<(PendingJob, JobOptions)> = Vec::new();

    for item in items {
        match item {
            Item::Section { name, loc } => {
                if let Some(job) = current.take() {
                    let opts = finish(&job, &globals, &mut warnings)?;
                    done.push((job, opts));
                }
                if name == "global" {
                    in_global = true;
                } else {
                    in_global = false;
                    current = Some(PendingJob { section: name, loc, globals: (0..globals.len()).collect(), entries: Vec::new() });
                }
            }
            Item::Opt { key, value, loc } => {
                let e = Entry { key, value, loc };
                if in_global {
                    apply_entry(&mut global_scratch, &e, Some(&mut warnings))?;
                    globals.push(e);
                } else if let Some(job) = current.as_mut() {
                    job.entries.push(e);
                } else {
                    return Err(FioError::Syntax {
                        file: e.loc.file.clone(),
                        line: e.loc.line,
                        message: format!("option \"{}\" outside of any [section]", e.key),
                    });
                }
            }
        }
    }
    if let Some(job) = current.take() {
        let opts = finish(&job, &globals, &mut warnings)?;
        done.push((job, opts));
    }
    if done.is_empty() {
        // fio: "No job(s) defined" (init.c), and it exits with an error.
        return Err(FioError::Syntax {
            file: no_jobs.file.to_string(),
            line: no_jobs.line,
            message: format!("No job(s) defined: {} (fio refuses it too)", no_jobs.hint),
        });
    }

    let mut phases: Vec<Vec<FioJob>> = Vec::new();
    let mut job_index = 0u32;
    for (pending, opts) in done {
        let name = opts.name.clone().unwrap_or_else(|| pending.section.clone());
        for clone in 0..opts.numjobs {
            let mut o = opts.clone();
            if clone > 0 {
                // fio clears stonewall on clones: all clones of a job run together.
                o.stonewall = false;
            }
            if phases.is_empty() || (o.stonewall && !phases.last().is_some_and(Vec::is_empty)) {
                phases.push(Vec::new());
            }
            let phase = phases.len() as u32 - 1;
            phases.last_mut().expect("pushed above").push(FioJob {
                name: name.clone(),
                clone_index: clone,
                job_index,
                phase,
                file: pending.loc.file.clone(),
                line: pending.loc.line,
                opts: o,
            });
            job_index = job_index.wrapping_add(1);
        }
    }
    Ok(JobFile { phases, warnings })
}

#[cfg(test)]
mod tests {
    use super::split_filenames;

    #[test]
    fn filename_lists() {
        assert_eq!(split_filenames("/dev/nvme0n1"), ["/dev/nvme0n1"]);
        assert_eq!(split_filenames("/dev/sda:/dev/sdb"), ["/dev/sda", "/dev/sdb"]);
        assert_eq!(split_filenames(r"/dev/disk/by-path/pci-0000\:01\:00.0"), ["/dev/disk/by-path/pci-0000:01:00.0"]);
    }
}

//! From lexed items to jobs: `[global]` inheritance, `numjobs` clones and `stonewall` phases.

use std::ops::Deref;

use super::ini::{Item, Loc};
use super::options::{Applied, JobOptions};
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
    /// Where the job's section starts.
    pub file: String,
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
    pub phases: Vec<Vec<FioJob>>,
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

/// Build the job list from lexed items.
pub(crate) fn assemble(items: Vec<Item>) -> Result<JobFile, FioError> {
    let mut warnings = Vec::new();
    let mut globals: Vec<Entry> = Vec::new();
    let mut global_scratch = JobOptions::default();
    let mut in_global = false;
    let mut current: Option<PendingJob> = None;
    let mut done: Vec<(PendingJob, JobOptions)> = Vec::new();

    let finish = |job: PendingJob, globals: &[Entry], warnings: &mut Vec<Diagnostic>| -> Result<(PendingJob, JobOptions), FioError> {
        let mut opts = JobOptions::default();
        let all: Vec<&Entry> = job.globals.iter().map(|&i| &globals[i]).chain(job.entries.iter()).collect();
        prescan_kb_base(&mut opts, &all)?;
        for &i in &job.globals {
            apply_entry(&mut opts, &globals[i], None)?;
        }
        for e in &job.entries {
            apply_entry(&mut opts, e, Some(warnings))?;
        }
        Ok((job, opts))
    };

    for item in items {
        match item {
            Item::Section { name, loc } => {
                if let Some(job) = current.take() {
                    done.push(finish(job, &globals, &mut warnings)?);
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
        done.push(finish(job, &globals, &mut warnings)?);
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
            phases.last_mut().expect("pushed above").push(FioJob {
                name: name.clone(),
                clone_index: clone,
                job_index,
                file: pending.loc.file.clone(),
                line: pending.loc.line,
                opts: o,
            });
            job_index = job_index.wrapping_add(1);
        }
    }
    Ok(JobFile { phases, warnings })
}

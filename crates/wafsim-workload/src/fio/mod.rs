//! fio job files, interpreted natively (no fio binary): parse the common subset of fio's job
//! syntax and turn each job into an [`IoSource`](crate::IoSource).
//!
//! * [`ini`]: lexer (sections, `key=value`, flags, comments, `include`, `${ENV}`).
//! * [`cmdline`]: fio's command-line form (`fio --name=x --rw=write ...`) into the same items.
//! * [`expr`]: fio's `$keywords` and parenthesised arithmetic in values.
//! * [`size`]: fio value syntax (sizes with `kb_base`, percentages, zones, ranges, lists, times).
//! * [`options`]: the typed [`JobOptions`] and the option table.
//! * [`job`]: `[global]` inheritance, `numjobs` clones, `stonewall` phases.
//! * [`dist`]: random-map permutation and skewed distributions.
//! * [`generate`]: the I/O generator.
//! * [`zbd`]: `zonemode=zbd`, the zone state behind writes at write pointers.
//!
//! ```
//! use std::path::Path;
//! use wafsim_workload::fio::parse_job_str;
//! let text = "[global]\nbs=128k\n[precondition]\nrw=write\nsize=98%\nloops=2\n";
//! let jf = parse_job_str(text, "pre.fio", Path::new("."), &|_| None).unwrap();
//! let job = &jf.phases[0][0];
//! assert_eq!(job.name, "precondition");
//! let ns = 1u64 << 30;
//! assert_eq!(job.write_bytes_hint(ns), Some(2 * (ns * 98 / 100) / (128 << 10) * (128 << 10)));
//! ```

pub mod cmdline;
pub mod dist;
pub mod expr;
pub mod generate;
pub mod ini;
pub mod job;
pub mod options;
pub mod size;
pub mod zbd;

use std::path::Path;

pub use cmdline::parse_job_args;
pub use generate::{DevicePlacement, FioSource, SourceParams};
pub use job::{FioJob, JobFile};
pub use options::{DataPlacement, Distribution, FileService, JobOptions, PlidSelect, RwMode, RwSequencer, Timing, ZoneMode, ZoneOptions};
pub use size::{BlockSize, SizeSpec};
pub use zbd::ZbdZones;

/// Errors of parsing or instantiating a job file. Every variant names the file and line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FioError {
    /// An option value that does not parse.
    #[error("{file}:{line}: option {option}: value {} is not {expected}", crate::input::quote(.value))]
    BadValue {
        /// Job file (or command-line origin) of the option.
        file: String,
        /// Line of the option in that file.
        line: usize,
        /// The option's name.
        option: String,
        /// The value as given.
        value: String,
        /// What a valid value looks like.
        expected: String,
    },
    /// A line that is not valid job-file syntax (or an include/env problem).
    #[error("{file}:{line}: {message}")]
    Syntax {
        /// The job file (or included file) with the bad line.
        file: String,
        /// Line number, 1-based.
        line: usize,
        /// What is wrong with the line.
        message: String,
    },
    /// The job file itself cannot be read.
    #[error("{path}: {message}")]
    Io {
        /// The path that could not be read.
        path: String,
        /// The operating system's error.
        message: String,
    },
    /// The job cannot be turned into I/O on the given namespace.
    #[error("{file}:{line}: job \"{job}\": {message}")]
    Job {
        /// Job file of the job.
        file: String,
        /// Line of the job's section header.
        line: usize,
        /// The job's name.
        job: String,
        /// Why the job cannot be turned into I/O.
        message: String,
    },
}

/// A non-fatal finding (e.g. an unknown option), with its location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Job file (or command-line origin) the finding is about.
    pub file: String,
    /// Line in that file.
    pub line: usize,
    /// What was found.
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: warning: {}", self.file, self.line, self.message)
    }
}

/// Parse job-file text. `name` is used in diagnostics, `base_dir` resolves relative
/// `include`s, `env` answers `${NAME}` (return `None` for unset).
pub fn parse_job_str(
    text: &str,
    name: &str,
    base_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobFile, FioError> {
    let items = ini::lex(text, name, base_dir, env)?;
    let no_jobs = job::NoJobs {
        file: name,
        line: text.lines().count(),
        hint: "the file has no job section, only [global] options or comments; add a [job] section",
    };
    job::assemble(items, no_jobs)
}

/// Parse a job file from disk (includes resolve relative to its directory).
pub fn parse_job_file(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<JobFile, FioError> {
    let text = crate::input::read_text(path)
        .map_err(|e| FioError::Io { path: path.display().to_string(), message: e.to_string() })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    parse_job_str(&text, &path.display().to_string(), dir, env)
}

/// The process environment, for [`parse_job_file`]'s `env` argument.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

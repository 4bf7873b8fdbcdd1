//! `[[phase]]` and its sources: synthetic workloads, fio jobs, traces; steady-state detection.

use super::*;

/// `[[workload]]`: a synthetic workload on one namespace.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Name of the namespace the workload writes.
    pub namespace: String,
    /// "sequential" or "random".
    pub pattern: PatternKind,
    /// For random: "uniform" (default), "zipf:THETA", "hotcold:R/F".
    #[serde(default, deserialize_with = "parsed_some")]
    pub distribution: Option<Distribution>,
    /// Block size, e.g. "4KiB".
    pub bs: Bytes,
    /// Bytes to write ("100GiB") or multiples of the namespace size ("3x").
    pub amount: Amount,
    /// Fraction of I/Os that are trims, default 0.
    #[serde(default)]
    pub trim: f64,
    /// Relative I/O rate; equal weights mean equal IOPS (default 1).
    #[serde(default = "one")]
    pub weight: u32,
    /// Placement handle index (into the namespace's list) carried by writes; none by default.
    pub placement_handle: Option<u16>,
    /// Reclaim group carried with `placement_handle` (default 0).
    #[serde(default)]
    pub reclaim_group: u16,
    /// Stream id (streams directive) carried by writes.
    pub stream: Option<u16>,
    /// Timed mode: I/Os in flight (default 32).
    pub iodepth: Option<u32>,
    /// Timed mode: cap on I/Os per second.
    pub rate_iops: Option<f64>,
}

/// `[[phase]]`: sources that run concurrently; phases run one after another.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// Phase name, as reported in the results.
    pub name: String,
    /// Whether this phase's counters make the reported results (default true); a
    /// preconditioning phase sets false.
    #[serde(default = "yes")]
    pub measure: bool,
    /// `[[phase.workload]]`: synthetic workloads.
    #[serde(default)]
    pub workload: Vec<WorkloadSpec>,
    /// `[[phase.fio]]`: fio job files or command lines.
    #[serde(default)]
    pub fio: Vec<FioSpec>,
    /// `[[phase.trace]]`: block traces to replay.
    #[serde(default)]
    pub trace: Vec<TraceSpec>,
    /// File workloads through a file system on a namespace.
    #[serde(default)]
    pub files: Vec<FilesSpec>,
    /// Key-value applications on a namespace, driven by a request generator.
    #[serde(default)]
    pub kv: Vec<KvSpec>,
    /// Overrides the experiment's `interleave` for this phase.
    pub interleave: Option<InterleaveKind>,
    /// Run until WAF is steady (see [`SteadyStateSpec`]).
    pub steady_state: Option<SteadyStateSpec>,
    /// Measure only the last this many host bytes written of the phase: bytes ("300GB") or a
    /// multiple of the drives' logical capacity ("0.15x"). The phase runs whole; its counters
    /// and rows are the window's (to 1/32 of it), and the whole phase's WAF is reported
    /// beside. Not with `steady_state`. Bytes scale with the run as amounts do; a duration
    /// ("5h") needs `write_rate` in an untimed phase and is model time in a timed one (one
    /// drive; the window's start falls on the run's counter snapshots, up to 4,096 of them).
    pub measure_last: Option<Window>,
    /// Points of the phase to report WAF at, in host bytes written since the phase started:
    /// bytes ("300GB", scaled with the run), multiples of the drives' logical capacity ("0.5x"),
    /// or durations ("5h", "90min", "30s") at `write_rate`. Each checkpoint reports the WAF from
    /// the phase start and since the previous checkpoint (and media per application byte where
    /// the phase has file systems or stores). In a timed phase (one drive) durations are model
    /// time, and each checkpoint is taken at the first counter snapshot at or past it.
    #[serde(default)]
    pub checkpoints: Vec<Window>,
    /// Host write rate that turns durations of `checkpoints` and `measure_last` into bytes
    /// ("275MB/s"): a stated rate (e.g. a publication's), not a simulated one. Untimed phases
    /// (a timed phase has model time).
    pub write_rate: Option<Rate>,
    /// Where the measured window and the checkpoints start: `"start"` (the default: the phase
    /// start) or `"run"` (the moment the last `[[phase.kv]]` store's clients have loaded its
    /// initial records: a publication that measures a database's run, not its load). The
    /// whole phase's WAF is reported beside. Untimed phases with key-value stores.
    #[serde(default)]
    pub measure_from: MeasureFrom,
    /// End the phase, and report where, when a file system or store runs out of space (the
    /// database outgrew its drive) instead of failing the run: the result says when it filled
    /// ("stopped"), the checkpoints after it read "not reached". Untimed phases. Default false.
    ///
    /// ```toml
    /// stop_when_full = true     # TPC-C's tables grow: how long until the drive is full?
    /// ```
    #[serde(default)]
    pub stop_when_full: bool,
}

choice! {
    /// `measure_from` of a `[[phase]]`: where its measured window starts.
    #[derive(Default)]
    pub enum MeasureFrom, "measure_from {v:?}: expected \"start\" (the phase start) or \"run\" (after the key-value stores' load)" {
        /// The phase start (the default).
        #[default]
        Start = "start",
        /// After every key-value store's clients have loaded its initial records.
        Run = "run",
    }
}

/// `[[phase.fio]]`: a fio job file, or a fio command line, run once per listed namespace (as
/// when every tenant runs the same job on its own disk).
///
/// ```toml
/// [[phase.fio]]
/// file = "measure.fio"
/// namespaces = ["vm1", "vm2"]
/// [[phase.fio]]
/// args = "--name=test --filename=/dev/vdb --rw=randrw --rwmixread=70 --bs=4k --iodepth=256"
/// namespace = "vm3"          # --filename is the namespace
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FioSpec {
    /// Job file, relative to the experiment file.
    pub file: Option<String>,
    /// fio's command-line form instead of a job file: `--name=` starts a job, options before
    /// the first `--name` are global.
    pub args: Option<String>,
    /// Namespaces to run the job file on (each gets its own instance).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Single-namespace shorthand.
    pub namespace: Option<String>,
    /// `${NAME}` values for the job file (checked before the process environment).
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Relative I/O rate of each job against other sources (default 1 = equal IOPS per job).
    #[serde(default = "one")]
    pub weight: u32,
}


/// `steady_state` of a `[[phase]]`: SNIA PTS-style steady-state detection on WAF. The phase
/// runs in rounds of `round` host bytes written; it is steady when, over the last `window`
/// rounds, the per-round WAF stays within `excursion` x its mean (max - min) and the
/// least-squares line through it moves by at most `slope` x the mean across the window. A
/// phase with `steady_state` ends as soon as it is steady (or when its sources run out, or
/// after `max_rounds`) and reports the counters of its last `window` rounds.
///
/// ```toml
/// [[phase]]
/// name = "measure"
/// steady_state = { round = "0.25x", window = 5, excursion = 0.2, slope = 0.1 }
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SteadyStateSpec {
    /// Host bytes per round: bytes ("8GiB") or a multiple of the drive's logical capacity
    /// ("0.25x"; default "0.1x").
    #[serde(default = "default_round")]
    pub round: Amount,
    /// Rounds in the measurement window (default 5, as SNIA PTS).
    #[serde(default = "five")]
    pub window: u32,
    /// Largest (max - min) / mean of the window's per-round WAF (default 0.2, as SNIA PTS).
    #[serde(default = "default_excursion")]
    pub excursion: f64,
    /// Largest change of the fitted line across the window, / mean (default 0.1, as SNIA PTS).
    #[serde(default = "default_slope")]
    pub slope: f64,
    /// Stop after this many rounds even if not steady (default: no limit but the sources').
    pub max_rounds: Option<u32>,
}

impl Default for SteadyStateSpec {
    fn default() -> Self {
        SteadyStateSpec { round: default_round(), window: 5, excursion: default_excursion(), slope: default_slope(), max_rounds: None }
    }
}

fn default_round() -> Amount {
    default_of("0.1x")
}

fn five() -> u32 {
    5
}

fn default_excursion() -> f64 {
    0.2
}

fn default_slope() -> f64 {
    0.1
}

/// `[[phase.trace]]`: a block trace replayed on one namespace.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Trace file, relative to the experiment file.
    pub file: String,
    /// "iolog" (fio write_iolog v2/v3), "blkparse", "msr"; detected from the first line if absent.
    pub format: Option<TraceFileFormat>,
    /// Name of the namespace the trace is replayed on.
    pub namespace: String,
    /// Keep only records of this file / device (`major,minor`) / MSR `host_disk`.
    pub filter: Option<String>,
    /// What to do with offsets beyond the namespace: "wrap" (modulo, aligned to the mapping unit;
    /// the default) or "error".
    #[serde(default)]
    pub offsets: Offsets,
    /// Placement handle carried by the trace's writes.
    pub placement_handle: Option<u16>,
    /// Split the trace's writes by LBA range onto placement handles: fractions of the namespace
    /// (ascending, in (0, 1)) where the next handle starts. `[0.25, 0.5]`: writes starting in
    /// the first quarter carry placement handle 0, in the second quarter handle 1, in the upper
    /// half handle 2 (the namespace lists that many `placement_handles`). Fractions, so the
    /// ranges scale with the namespace; offsets beyond a scaled namespace wrap first.
    pub placement_split: Option<Vec<f64>>,
}


impl SteadyStateSpec {
    pub(crate) fn check(&self) -> Result<()> {
        if self.window < 2 {
            bail!("window = {}: needs at least 2 rounds", self.window);
        }
        if !(self.excursion > 0.0) || !(self.slope > 0.0) {
            bail!("excursion and slope must be > 0 (fractions of the window's mean WAF, e.g. 0.1 and 0.05)");
        }
        if *self.round.value() == AmountOf::Bytes(0) {
            bail!("round {:?}: must be > 0 bytes", self.round.text());
        }
        Ok(())
    }

    /// Host bytes per round on a target of `logical` bytes.
    pub fn round_bytes(&self, logical: u64) -> Result<u64> {
        Ok(self.round.of(logical).max(1))
    }
}

impl FioSpec {
    /// The job file, or "args" for the command-line form (for messages).
    pub fn origin(&self) -> String {
        match (&self.file, &self.args) {
            (Some(f), _) => f.clone(),
            _ => "args".into(),
        }
    }

    /// `namespaces` plus `namespace`.
    pub fn namespace_list(&self) -> Vec<String> {
        let mut v = self.namespaces.clone();
        if let Some(n) = &self.namespace {
            v.push(n.clone());
        }
        v
    }
}

impl TraceSpec {
    /// The trace's format, `None` to detect it from the file.
    pub fn trace_format(&self) -> Option<wafsim_workload::trace::TraceFormat> {
        use wafsim_workload::trace::TraceFormat;
        self.format.map(|f| match f {
            TraceFileFormat::Iolog => TraceFormat::FioIolog,
            TraceFileFormat::Blkparse => TraceFormat::Blkparse,
            TraceFileFormat::Msr => TraceFormat::MsrCsv,
        })
    }
}

impl WorkloadSpec {
    /// The access pattern and, for a random one, its distribution; errors on a distribution
    /// given with a sequential one.
    pub fn pattern(&self) -> Result<Pattern> {
        match self.pattern {
            PatternKind::Sequential => {
                if self.distribution.is_some() {
                    bail!("distribution applies to pattern = \"random\" only");
                }
                Ok(Pattern::Sequential)
            }
            PatternKind::Random => {
                Ok(Pattern::Random(self.distribution.clone().unwrap_or(Distribution::Uniform)))
            }
        }
    }
    /// The block size, bytes; errors unless it is 1 B to 4 GiB.
    pub fn block_size(&self) -> Result<u32> {
        let b = self.bs.get();
        if b == 0 || b > u32::MAX as u64 {
            bail!("bs {}: expected 1 B .. 4 GiB", self.bs);
        }
        Ok(b as u32)
    }
    /// Bytes to issue: "3x" means three times the namespace size.
    pub fn amount_bytes(&self, ns_bytes: u64) -> u64 {
        self.amount.of(ns_bytes)
    }
}

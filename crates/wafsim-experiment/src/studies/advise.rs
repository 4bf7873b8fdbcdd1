//! The placement advisor: which streams should share which reclaim unit handle?
//!
//! Given an experiment on an FDP drive, the advisor treats every placement handle of every
//! namespace as a **stream** (a namespace with one handle, or none listed, is one stream; a
//! namespace listing `placement_handles = [a, b, c]` has three, one per handle index its writers
//! may choose: a workload's or a trace's `placement_handle`, fio's `fdp_pli`/`plids`, a flash
//! cache's engines). An **assignment** maps each stream to one of the first N reclaim unit
//! handles (RUHs) by rewriting the namespaces' `placement_handles` lists, so it works for every
//! kind of writer without knowing how the writer picks its handle.
//!
//! The advisor simulates candidates and keeps the one with the lowest device WAF:
//!
//! - **exhaustive** when the candidates number at most a limit: handles of one RUH type are
//!   interchangeable, so a candidate is a set partition of the streams into at most N groups
//!   (Stirling numbers of the second kind: 4 streams on 2 handles = 8 candidates, 6 on 3 = 122);
//!   with mixed RUH types, handles are interchangeable only within a type, so a partition is
//!   also labelled by the type of each group's handle;
//! - **greedy** otherwise: features of each stream from the one-handle-per-stream run, merging
//!   the two most similar groups until N remain, then local search (move one stream, or swap
//!   two) by simulation until a round finds no improvement or the evaluation budget is spent.
//!
//! Every evaluation goes through [`Advisor::evaluate`], which runs its candidates as one sweep
//! ([`crate::studies::sweep::SweepSpec`], one `[[point]]` per candidate), so a sweep executor that runs
//! points elsewhere serves the advisor unchanged. docs/advisor.md describes the search and its
//! assumptions. This module prints nothing.

use crate::plan::scale::auto_scale_all;
use crate::plan::parse_experiment;
use crate::schema::{merge, ExperimentSpec, RuhTypeSpec, Variant};
use crate::studies::sweep::{SweepOptions, SweepSpec};
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of an advisor run (the flags of `wafsim advise`).
#[derive(Clone)]
pub struct AdviseOptions {
    /// N: reclaim unit handles the streams may use (RUHs 0..N of the drive).
    pub handles: u32,
    /// Over-provisioning values to cross the best assignments with (`device.over_provisioning`);
    /// empty: the experiment's OP only.
    pub ops: Vec<f64>,
    /// Search exhaustively when there are at most this many candidate assignments.
    pub exhaustive_limit: usize,
    /// Greedy search: stop after this many simulations (baselines included).
    pub max_evals: usize,
    /// RUH types to cross the best assignments with (every handle of the drive of that type:
    /// `device.fdp.ruh_type`), e.g. both to ask whether persistently isolated handles pay for
    /// their GC units at this OP; crossed with `ops` when both are given. Empty: the
    /// experiment's types only.
    pub ruh_types: Vec<wafsim_core::RuhType>,
    /// Assignments crossed with every OP of `ops` (the best few; all when the ranking times
    /// the OPs fits in `exhaustive_limit`).
    pub op_top: usize,
    /// The experiment's variant to advise on (needed when it has several, unless exactly one
    /// of them has FDP enabled).
    pub variant: Option<String>,
    /// Worker threads of the sweeps (None: all cores).
    pub jobs: Option<usize>,
    /// Capacity scale (None: the default of `wafsim run`).
    pub scale: Option<f64>,
    /// Force the greedy search even when the candidates would fit the exhaustive limit (for
    /// comparing the two).
    pub force_greedy: bool,
    /// Where the candidates' sweeps run (None: this machine's threads, `jobs` of them); e.g. a
    /// Ray cluster (`wafsim advise --ray`).
    pub executor: Option<std::sync::Arc<crate::studies::sweep::Executor>>,
}

impl std::fmt::Debug for AdviseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdviseOptions")
            .field("handles", &self.handles)
            .field("ops", &self.ops)
            .field("ruh_types", &self.ruh_types)
            .field("exhaustive_limit", &self.exhaustive_limit)
            .field("max_evals", &self.max_evals)
            .field("op_top", &self.op_top)
            .field("variant", &self.variant)
            .field("jobs", &self.jobs)
            .field("scale", &self.scale)
            .field("force_greedy", &self.force_greedy)
            .field("executor", &self.executor.as_ref().map(|_| "remote"))
            .finish()
    }
}

impl Default for AdviseOptions {
    fn default() -> Self {
        AdviseOptions { handles: 2, ops: Vec::new(), ruh_types: Vec::new(), exhaustive_limit: 200, max_evals: 300, op_top: 3, variant: None, jobs: None, scale: None, force_greedy: false, executor: None }
    }
}

/// A stream: one placement handle of one namespace.
#[derive(Debug, Clone, Serialize)]
pub struct Stream {
    /// The namespace's name, or "NAME/K" for handle index K of a namespace with several.
    pub name: String,
    /// Name of the namespace the stream writes.
    pub namespace: String,
    /// Index of the namespace in the experiment's `[[namespace]]` list.
    #[serde(skip)]
    pub ns_index: usize,
    /// Placement handle index within the namespace.
    pub handle_index: usize,
}

/// Where each stream goes: `ruh[i]` is stream i's RUH. Kept canonical (see
/// [`Advisor::canonical`]), so two assignments that differ only by renaming interchangeable
/// handles are equal.
pub type Assignment = Vec<u16>;

/// One simulation to run: an assignment, optionally at another OP, optionally on a drive with
/// more RUHs (the one-handle-per-stream reference when the streams outnumber the drive's RUHs).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// RUH of each stream (`assignment[i]` for stream i).
    pub assignment: Assignment,
    /// Over-provisioning to run at (`device.over_provisioning`); `None`: the experiment's.
    pub op: Option<f64>,
    /// RUHs the drive gets (`device.fdp.ruhs`); `None`: the experiment's.
    pub ruhs: Option<u32>,
    /// The type of every RUH (`device.fdp.ruh_type`); `None`: the experiment's.
    pub ruh_type: Option<wafsim_core::RuhType>,
}

/// What one simulation measured.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    /// Device WAF of the measured phases.
    pub waf: f64,
    /// (namespace, WAF): media bytes attributed to the namespace over its host bytes.
    pub ns_waf: Vec<(String, f64)>,
    /// (namespace, host bytes) of the measured phases.
    pub ns_host_bytes: Vec<(String, u64)>,
}

/// An evaluated assignment.
#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    /// `{a,b}{c}`: the groups, each group's streams sharing one handle (with mixed RUH types
    /// each group is prefixed by its RUH: `0{a,b} 2{c}`).
    pub label: String,
    /// RUH of each stream, canonical.
    pub assignment: Assignment,
    /// Group of each stream, by stream name.
    pub groups: Vec<Vec<String>>,
    /// Device WAF of the measured phases.
    pub waf: f64,
    /// (namespace, WAF) of the measured phases.
    pub ns_waf: Vec<(String, f64)>,
}

/// WAF of an assignment at one OP.
#[derive(Debug, Clone, Serialize)]
pub struct OpPoint {
    /// Over-provisioning ((physical - logical) / logical); `None`: the experiment's (only
    /// RUH types are crossed).
    pub op: Option<f64>,
    /// The type of every RUH ("initially-isolated" or "persistently-isolated"); `None`: the
    /// experiment's (only OPs are crossed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ruh_type: Option<&'static str>,
    /// Device WAF at that OP.
    pub waf: f64,
}

/// An assignment (or baseline) across the OPs of `--op`.
#[derive(Debug, Clone, Serialize)]
pub struct OpRow {
    /// The assignment's label (as in [`Ranked::label`]), prefixed "no placement" or "one per
    /// stream" for the baselines.
    pub label: String,
    /// Its WAF at each OP, in the order of `--op`.
    pub points: Vec<OpPoint>,
}

/// The features the greedy search merges by (see docs/advisor.md).
#[derive(Debug, Clone, Serialize)]
pub struct StreamFeatures {
    /// The stream's name.
    pub stream: String,
    /// Share of the measured host bytes.
    pub write_share: f64,
    /// Logical bytes the stream can hold (its namespace's size, split evenly between the
    /// namespace's handles).
    pub footprint: u64,
    /// Footprint / write share, in bytes of all streams' writes between two writes of the same
    /// LBA: the lifetime of the stream's data.
    pub lifetime: f64,
    /// The stream's namespace WAF when every stream has a handle of its own.
    pub isolated_waf: f64,
}

/// How the advisor searched.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Search {
    /// Every candidate simulated.
    Exhaustive {
        /// Candidate assignments, all simulated.
        candidates: usize,
    },
    /// Greedy merge then local search. `candidates`: how many there are (saturating at
    /// u64::MAX); `start`: the greedy merge's assignment; `rounds` of local search.
    Greedy {
        /// Candidate assignments there are (saturating at u64::MAX).
        candidates: u64,
        /// Label of the greedy merge's assignment, where local search started.
        start: String,
        /// Rounds of local search.
        rounds: usize,
        /// The evaluation budget ran out before a round without improvement.
        budget_exhausted: bool,
    },
}

/// The advisor's answer.
#[derive(Debug, Clone, Serialize)]
pub struct AdviseResult {
    /// Path of the experiment file.
    pub experiment: String,
    /// Name of the variant advised on.
    pub variant: String,
    /// N: reclaim unit handles the streams were assigned to (RUHs 0..N).
    pub handles: u32,
    /// RUHs of the drive (`device.fdp.ruhs`).
    pub drive_ruhs: u32,
    /// The streams, in assignment order.
    pub streams: Vec<Stream>,
    /// Capacity scale the simulations ran at (1 = full scale).
    pub scale: f64,
    /// The experiment's OP (None when it gives raw_capacity).
    pub op: Option<f64>,
    /// How the search went.
    pub search: Search,
    /// Every assignment simulated at the experiment's OP, best first.
    pub ranking: Vec<Ranked>,
    /// All streams on one handle.
    pub no_placement: Ranked,
    /// Each stream on its own handle.
    pub one_per_stream: Ranked,
    /// RUHs the one-handle-per-stream run used when the streams outnumber the drive's RUHs.
    pub one_per_stream_ruhs: Option<u32>,
    /// Per-stream features the greedy search merges by.
    pub features: Vec<StreamFeatures>,
    /// With `--op`: the baselines and the best assignments at every OP.
    pub op_rows: Vec<OpRow>,
    /// Simulations run (cached repeats not counted), and those of them before the OP crossing
    /// (baselines and search).
    pub evaluations: usize,
    /// Simulations of the baselines and the search (see `evaluations`).
    pub search_evaluations: usize,
    /// Wall-clock time of the advisor run, seconds.
    pub seconds: f64,
    /// Remarks on the result (streams that wrote nothing, a reference that needed more RUHs, ...).
    pub notes: Vec<String>,
}

impl AdviseResult {
    /// The best assignment found.
    pub fn best(&self) -> &Ranked {
        &self.ranking[0]
    }
}

/// Progress of an advisor run.
#[derive(Debug, Clone, Copy)]
pub struct AdviseProgress {
    /// "baselines", "exhaustive", "greedy", "op".
    pub stage: &'static str,
    /// Simulations finished so far.
    pub evaluations: usize,
    /// Simulations of the current batch: done, total.
    pub batch_done: usize,
    /// Total simulations of the current batch.
    pub batch_total: usize,
    /// Lowest WAF of an assignment so far.
    pub best_waf: Option<f64>,
}

/// The advisor's state: the experiment, its streams, and every evaluation so far.
pub struct Advisor {
    path: PathBuf,
    /// The experiment with the chosen variant merged in and no `[[variant]]`: the sweeps' base.
    base_text: String,
    spec: ExperimentSpec,
    variant: String,
    streams: Vec<Stream>,
    /// Handle count N and the RUH type class of each of the N handles.
    handles: u32,
    class: Vec<usize>,
    ruh_types: Vec<String>,
    scale: f64,
    jobs: Option<usize>,
    executor: Option<std::sync::Arc<crate::studies::sweep::Executor>>,
    cache: HashMap<String, Evaluation>,
    evaluations: usize,
    best_waf: Option<f64>,
}

/// Relative WAF gain a local move must bring to be taken: smaller differences are within what
/// changing the interleaving of one erase unit does to a run, and chasing them would spend the
/// budget on noise (docs/advisor.md).
pub const MOVE_TOLERANCE: f64 = 1e-3;

impl Advisor {
    /// Load the experiment, pick the variant, find its streams and check that it can be
    /// advised on. Errors name the file.
    pub fn new(path: &Path, opts: &AdviseOptions) -> Result<Advisor> {
        let origin = path.display().to_string();
        let text = wafsim_workload::input::read_text(path).with_context(|| format!("cannot read {origin}"))?;
        let (base_text, variant) = resolve_variant(&text, &origin, opts.variant.as_deref())?;
        let mut vs = parse_experiment(&base_text, &origin)?;
        let spec = vs.pop().expect("one variant").spec;
        let ctx = |m: String| anyhow!("{origin}{}: {m}", if variant == "default" { String::new() } else { format!(" (variant {variant:?})") });
        if spec.device.drive_kind() != crate::schema::DriveKind::Flash {
            return Err(ctx("the advisor needs a flash drive with FDP; this is a zoned drive".into()));
        }
        let Some(fdp) = spec.device.fdp.as_ref().filter(|f| f.enabled) else {
            return Err(ctx("the advisor needs an FDP drive: set [device.fdp] enabled = true (and ruhs) in the experiment or the chosen variant".into()));
        };
        if spec.layout != crate::schema::Layout::Shared {
            return Err(ctx(format!("layout = \"{}\": the advisor places streams on one shared drive (layout = \"shared\")", spec.layout)));
        }
        if spec.host.as_ref().is_some_and(|h| h.layer != crate::schema::HostLayer::None) {
            return Err(ctx("a host layer sits between the namespaces and the drive; the advisor places the namespaces' own writes".into()));
        }
        if opts.handles < 1 {
            return Err(ctx("--handles must be at least 1".into()));
        }
        if opts.handles > fdp.ruhs {
            return Err(ctx(format!("--handles {}: the drive has {} reclaim unit handles (device.fdp.ruhs)", opts.handles, fdp.ruhs)));
        }
        if !opts.ops.is_empty() {
            if spec.device.over_provisioning.is_none() {
                return Err(ctx("--op sets device.over_provisioning, but the drive's size is given by raw_capacity (or a geometry); give over_provisioning instead".into()));
            }
            if let Some(op) = opts.ops.iter().find(|o| !(**o >= 0.0 && o.is_finite())) {
                return Err(ctx(format!("--op {op}: expected values >= 0 ((physical - logical) / logical, e.g. 0.07)")));
            }
        }
        let ruh_types: Vec<String> = match &fdp.ruh_type {
            None => vec![wafsim_core::RuhType::InitiallyIsolated.name().into(); fdp.ruhs as usize],
            Some(RuhTypeSpec::One(t)) => vec![t.clone(); fdp.ruhs as usize],
            Some(RuhTypeSpec::PerRuh(l)) => l.clone(),
        };
        // Handles are interchangeable within a type: number the types in order of first use.
        let mut classes = Vec::new();
        let class = fdp.ruh_types()?[..opts.handles as usize]
            .iter()
            .map(|&t| {
                match classes.iter().position(|&c| c == t) {
                    Some(i) => i,
                    None => {
                        classes.push(t);
                        classes.len() - 1
                    }
                }
            })
            .collect();
        let mut streams = Vec::new();
        for (i, n) in spec.namespace.iter().enumerate() {
            let k = n.placement_handles.len().max(1);
            for h in 0..k {
                let name = if k == 1 { n.name.clone() } else { format!("{}/{h}", n.name) };
                streams.push(Stream { name, namespace: n.name.clone(), ns_index: i, handle_index: h });
            }
        }
        if streams.len() < 2 {
            return Err(ctx(format!(
                "{} stream: the advisor needs at least 2 (namespaces, or placement handles of one namespace listed in its placement_handles)",
                streams.len()
            )));
        }
        let scale = match opts.scale {
            Some(s) => s,
            None => auto_scale_all([&spec])?,
        };
        Ok(Advisor {
            path: path.to_path_buf(),
            base_text,
            spec,
            variant,
            streams,
            handles: opts.handles,
            class,
            ruh_types,
            scale,
            jobs: opts.jobs,
            executor: opts.executor.clone(),
            cache: HashMap::new(),
            evaluations: 0,
            best_waf: None,
        })
    }

    /// The streams, in the order of the experiment's namespaces and their handles.
    pub fn streams(&self) -> &[Stream] {
        &self.streams
    }

    /// Simulations run so far (repeats served from the cache not counted).
    pub fn evaluations(&self) -> usize {
        self.evaluations
    }

    /// Whether the N handles are of more than one RUH type.
    pub fn mixed_types(&self) -> bool {
        self.class.iter().any(|&c| c != 0)
    }

    /// The one evaluation function: the WAF (and per-namespace figures) of every candidate, by
    /// simulation. Candidates not seen before run as one sweep, one `[[point]]` each, in
    /// parallel; repeats come from a cache. Results do not depend on the number of threads.
    pub fn evaluate(&mut self, cands: &[Candidate], stage: &'static str, progress: &(dyn Fn(AdviseProgress) + Sync)) -> Result<Vec<Evaluation>> {
        let overrides: Vec<Vec<(String, toml::Value)>> = cands.iter().map(|c| self.overrides(c)).collect::<Result<_>>()?;
        let keys: Vec<String> = overrides.iter().map(|o| key_of(o)).collect();
        let mut todo: Vec<usize> = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            if !self.cache.contains_key(k) && !todo.iter().any(|&j| keys[j] == *k) {
                todo.push(i);
            }
        }
        if !todo.is_empty() {
            let file = self.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let mut doc = toml::Table::new();
            doc.insert("base".into(), toml::Value::String(file));
            let points: Vec<toml::Value> = todo.iter().map(|&i| toml::Value::Table(overrides[i].iter().cloned().collect())).collect();
            doc.insert("point".into(), toml::Value::Array(points));
            let text = toml::to_string(&doc).context("advisor: the sweep of candidates")?;
            let dir = self.path.parent().unwrap_or(Path::new(""));
            let origin = format!("{} (advisor's candidates)", self.path.display());
            let mut sweep = SweepSpec::parse(&text, dir, &origin)?;
            // The base is the experiment with the chosen variant merged in, so the points
            // override the variant's values instead of colliding with them.
            sweep.base_text = self.base_text.clone();
            let done_before = self.evaluations;
            let best = self.best_waf;
            let opts = SweepOptions { jobs: self.jobs, scale: Some(self.scale), out: None };
            let r = match &self.executor {
                Some(run) => run(&sweep, &opts),
                None => sweep.run(&opts, &|p| progress(AdviseProgress { stage, evaluations: done_before + p.runs_done, batch_done: p.runs_done, batch_total: p.runs_total, best_waf: best })),
            }
            .with_context(|| format!("{}: advisor", self.path.display()))?;
            for row in &r.rows {
                let i = todo[row.point - 1];
                let e = Evaluation {
                    waf: row.waf,
                    ns_waf: row.ns_waf.clone(),
                    ns_host_bytes: row.ns_bytes.iter().map(|(n, h, _)| (n.clone(), *h)).collect(),
                };
                self.cache.insert(keys[i].clone(), e);
            }
            self.evaluations += todo.len();
        }
        let out: Vec<Evaluation> = keys.iter().map(|k| self.cache.get(k).cloned().ok_or_else(|| anyhow!("advisor: no result for candidate {k}"))).collect::<Result<_>>()?;
        for (c, e) in cands.iter().zip(&out) {
            if c.op.is_none() && c.ruhs.is_none() && self.best_waf.is_none_or(|b| e.waf < b) {
                self.best_waf = Some(e.waf);
            }
        }
        Ok(out)
    }

    /// A candidate's overrides of the experiment: every namespace's `placement_handles`, and
    /// the OP and RUH count when the candidate changes them.
    fn overrides(&self, c: &Candidate) -> Result<Vec<(String, toml::Value)>> {
        if c.assignment.len() != self.streams.len() {
            bail!("advisor: an assignment of {} streams for {} streams", c.assignment.len(), self.streams.len());
        }
        let mut out = Vec::new();
        for (i, _) in self.spec.namespace.iter().enumerate() {
            let handles: Vec<toml::Value> = self.streams.iter().zip(&c.assignment).filter(|(s, _)| s.ns_index == i).map(|(_, &r)| toml::Value::Integer(r as i64)).collect();
            out.push((format!("namespace.{i}.placement_handles"), toml::Value::Array(handles)));
        }
        if let Some(r) = c.ruhs {
            out.push(("device.fdp.ruhs".into(), toml::Value::Integer(r as i64)));
            if matches!(self.spec.device.fdp.as_ref().and_then(|f| f.ruh_type.as_ref()), Some(RuhTypeSpec::PerRuh(_))) {
                // A per-RUH type list must grow with the RUHs: the added ones take the last type.
                let mut l = self.ruh_types.clone();
                let last = l.last().cloned().unwrap_or_else(|| wafsim_core::RuhType::InitiallyIsolated.name().into());
                l.resize(r as usize, last);
                out.push(("device.fdp.ruh_type".into(), toml::Value::Array(l.into_iter().map(toml::Value::String).collect())));
            }
        }
        if let Some(op) = c.op {
            out.push(("device.over_provisioning".into(), toml::Value::Float(op)));
        }
        if c.assignment.windows(2).all(|w| w[0] == w[1]) {
            // Every stream through one handle is the drive without placement, whose other
            // handles do not exist to hold reclaim units: as `wafsim run` with FDP off.
            out.push(("device.fdp.idle_handles_hold_units".into(), toml::Value::Boolean(false)));
        }
        if let Some(t) = c.ruh_type {
            out.push(("device.fdp.ruh_type".into(), toml::Value::String(t.name().into())));
        }
        Ok(out)
    }

    /// The canonical form of an assignment onto the N handles: handles of one RUH type are
    /// renamed in the order streams first use them (the lowest handle of the type first), so
    /// interchangeable assignments compare equal.
    pub fn canonical(&self, a: &[u16]) -> Assignment {
        let n = self.handles as usize;
        let mut map: Vec<Option<u16>> = vec![None; n];
        let mut used = vec![false; n];
        a.iter()
            .map(|&h| {
                let h = h as usize;
                if let Some(m) = map[h] {
                    return m;
                }
                let to = (0..n).find(|&x| self.class[x] == self.class[h] && !used[x]).expect("a free handle of the type");
                used[to] = true;
                map[h] = Some(to as u16);
                to as u16
            })
            .collect()
    }

    /// Every canonical assignment of the streams to at most N handles, or None when there are
    /// more than `limit`.
    pub fn enumerate(&self, limit: usize) -> Option<Vec<Assignment>> {
        let mut out = Vec::new();
        let mut cur = Vec::with_capacity(self.streams.len());
        let mut used = vec![false; self.handles as usize];
        if self.enum_rec(&mut cur, &mut used, limit, &mut out) {
            Some(out)
        } else {
            None
        }
    }

    /// How many canonical assignments there are (saturating): with one RUH type, the set
    /// partitions of S streams into at most N groups (the sum of Stirling numbers S(S, k), k <= N).
    pub fn count(&self) -> u64 {
        // Paths through states "handles in use per type": a stream joins a handle in use, or
        // opens the lowest unused handle of a type.
        let types = self.class.iter().max().map_or(0, |m| m + 1);
        let size: Vec<usize> = (0..types).map(|t| self.class.iter().filter(|&&c| c == t).count()).collect();
        let mut memo: HashMap<(usize, Vec<usize>), u64> = HashMap::new();
        fn rec(i: usize, s: usize, used: &mut Vec<usize>, size: &[usize], memo: &mut HashMap<(usize, Vec<usize>), u64>) -> u64 {
            if i == s {
                return 1;
            }
            if let Some(&v) = memo.get(&(i, used.clone())) {
                return v;
            }
            let in_use: usize = used.iter().sum();
            let mut total = (in_use as u64).saturating_mul(rec(i + 1, s, used, size, memo));
            for t in 0..size.len() {
                if used[t] < size[t] {
                    used[t] += 1;
                    total = total.saturating_add(rec(i + 1, s, used, size, memo));
                    used[t] -= 1;
                }
            }
            memo.insert((i, used.clone()), total);
            total
        }
        rec(0, self.streams.len(), &mut vec![0; types], &size, &mut memo)
    }

    /// Stream `cur.len()` takes a handle in use or the lowest unused one of each type (the
    /// canonical rule of [`Advisor::canonical`], so each candidate comes once). False when
    /// the count passes `limit`.
    fn enum_rec(&self, cur: &mut Vec<u16>, used: &mut Vec<bool>, limit: usize, out: &mut Vec<Assignment>) -> bool {
        if cur.len() == self.streams.len() {
            out.push(cur.clone());
            return out.len() <= limit;
        }
        for h in self.choices(used) {
            let fresh = !used[h];
            used[h] = true;
            cur.push(h as u16);
            let ok = self.enum_rec(cur, used, limit, out);
            cur.pop();
            if fresh {
                used[h] = false;
            }
            if !ok {
                return false;
            }
        }
        true
    }

    /// Handles a stream may take: those in use, and the lowest unused one of each type.
    fn choices(&self, used: &[bool]) -> Vec<usize> {
        let n = self.handles as usize;
        let mut v: Vec<usize> = (0..n).filter(|&h| used[h]).collect();
        let mut seen = Vec::new();
        for h in 0..n {
            if !used[h] && !seen.contains(&self.class[h]) {
                seen.push(self.class[h]);
                v.push(h);
            }
        }
        v
    }

    /// `{a,b}{c}` (or `0{a,b} 2{c}` with mixed RUH types).
    pub fn label(&self, a: &[u16]) -> String {
        let groups = self.groups(a);
        if self.mixed_types() {
            groups.iter().map(|(h, g)| format!("{h}{{{}}}", g.join(","))).collect::<Vec<_>>().join(" ")
        } else {
            groups.iter().map(|(_, g)| format!("{{{}}}", g.join(","))).collect()
        }
    }

    /// The groups of an assignment: (RUH, stream names), in order of their first stream.
    fn groups(&self, a: &[u16]) -> Vec<(u16, Vec<String>)> {
        let mut groups: Vec<(u16, Vec<String>)> = Vec::new();
        for (s, &h) in self.streams.iter().zip(a) {
            match groups.iter_mut().find(|(g, _)| *g == h) {
                Some((_, v)) => v.push(s.name.clone()),
                None => groups.push((h, vec![s.name.clone()])),
            }
        }
        groups
    }

    fn ranked(&self, a: &[u16], e: &Evaluation) -> Ranked {
        Ranked { label: self.label(a), assignment: a.to_vec(), groups: self.groups(a).into_iter().map(|(_, g)| g).collect(), waf: e.waf, ns_waf: e.ns_waf.clone() }
    }

    /// Stream features from the one-handle-per-stream run (see [`StreamFeatures`]).
    fn features(&self, e: &Evaluation) -> Result<Vec<StreamFeatures>> {
        let total: u64 = e.ns_host_bytes.iter().map(|(_, h)| h).sum();
        let mut out = Vec::new();
        for s in &self.streams {
            let ns = &self.spec.namespace[s.ns_index];
            let k = self.streams.iter().filter(|t| t.ns_index == s.ns_index).count() as u64;
            let host = e.ns_host_bytes.iter().find(|(n, _)| *n == ns.name).map_or(0, |(_, h)| *h) / k;
            let footprint = ns.size.as_ref().ok_or_else(|| anyhow!("namespace {:?}: size missing", ns.name))?.get() / k;
            let share = if total > 0 { host as f64 / total as f64 } else { 0.0 };
            let w = e.ns_waf.iter().find(|(n, _)| *n == ns.name).map_or(1.0, |(_, w)| *w);
            out.push(StreamFeatures {
                stream: s.name.clone(),
                write_share: share,
                footprint,
                lifetime: if share > 0.0 { footprint as f64 / share } else { f64::INFINITY },
                isolated_waf: if w > 0.0 { w } else { 1.0 },
            });
        }
        Ok(out)
    }

    /// The greedy start: singleton groups merged, the two most alike first, until N remain.
    /// Alike: close in log lifetime and in log isolated WAF (docs/advisor.md).
    pub fn greedy_start(&self, f: &[StreamFeatures]) -> Assignment {
        // Each group: (streams, footprint, write share, share-weighted isolated WAF sum).
        let mut groups: Vec<(Vec<usize>, f64, f64, f64)> = f.iter().enumerate().map(|(i, x)| (vec![i], x.footprint as f64, x.write_share, x.isolated_waf * x.write_share)).collect();
        let coords = |g: &(Vec<usize>, f64, f64, f64)| -> (f64, f64) {
            // A stream that wrote nothing is as cold as can be: a large log lifetime.
            let life = if g.2 > 0.0 { (g.1 / g.2).max(1.0).ln() } else { 80.0 };
            let w = if g.2 > 0.0 { g.3 / g.2 } else { 1.0 };
            (life, w.max(1e-9).ln())
        };
        while groups.len() > self.handles as usize {
            let mut best = (f64::INFINITY, 0, 1);
            for i in 0..groups.len() {
                for j in i + 1..groups.len() {
                    let (a, b) = (coords(&groups[i]), coords(&groups[j]));
                    let d = (a.0 - b.0).abs() + (a.1 - b.1).abs();
                    if d < best.0 {
                        best = (d, i, j);
                    }
                }
            }
            let g = groups.remove(best.2);
            let t = &mut groups[best.1];
            t.0.extend(g.0);
            t.1 += g.1;
            t.2 += g.2;
            t.3 += g.3;
        }
        let mut a = vec![0u16; self.streams.len()];
        for (h, g) in groups.iter().enumerate() {
            for &s in &g.0 {
                a[s] = h as u16;
            }
        }
        self.canonical(&a)
    }

    /// Local search from `start` by simulation: each round evaluates every neighbour (one
    /// stream moved, or two swapped; see [`Advisor::neighbours`]) as one batch and moves to the
    /// best one if it lowers WAF by more than [`MOVE_TOLERANCE`] (relative); it stops after a
    /// round without such a gain or when `budget` simulations (the start's included) are spent.
    pub fn local_search(&mut self, start: &[u16], budget: usize, progress: &(dyn Fn(AdviseProgress) + Sync)) -> Result<LocalSearch> {
        let first = self.evaluations;
        let spent = |adv: &Advisor| adv.evaluations - first;
        let mut cur = self.canonical(start);
        let mut cur_e = self.evaluate(&[Candidate { assignment: cur.clone(), op: None, ruhs: None, ruh_type: None }], "greedy", progress)?.remove(0);
        let mut evaluated = vec![(cur.clone(), cur_e.clone())];
        let (mut rounds, mut exhausted) = (0, false);
        loop {
            let left = budget.saturating_sub(spent(self));
            let mut nb = self.neighbours(&cur);
            // Neighbours simulated before cost nothing; new ones count against the budget.
            nb.retain(|b| !evaluated.iter().any(|(a, _)| a == b));
            if nb.len() > left {
                nb.truncate(left);
                exhausted = true;
            }
            if nb.is_empty() {
                break;
            }
            rounds += 1;
            let cands: Vec<Candidate> = nb.iter().map(|a| Candidate { assignment: a.clone(), op: None, ruhs: None, ruh_type: None }).collect();
            let es = self.evaluate(&cands, "greedy", progress)?;
            evaluated.extend(nb.iter().cloned().zip(es.iter().cloned()));
            // Best improvement over everything seen (ties: the smaller assignment, so the
            // result does not depend on the order of the batch).
            let best = evaluated.iter().min_by(|x, y| x.1.waf.total_cmp(&y.1.waf).then_with(|| x.0.cmp(&y.0))).cloned().expect("evaluated");
            if best.1.waf < cur_e.waf * (1.0 - MOVE_TOLERANCE) {
                (cur, cur_e) = best;
            } else {
                break;
            }
            if exhausted {
                break;
            }
        }
        Ok(LocalSearch { best: cur, best_eval: cur_e, evaluated, rounds, budget_exhausted: exhausted })
    }

    /// Neighbours of an assignment: every stream moved to another handle in use or to an unused
    /// one (the lowest of each type), and every two streams of different handles swapped.
    pub fn neighbours(&self, a: &[u16]) -> Vec<Assignment> {
        let mut used = vec![false; self.handles as usize];
        for &h in a {
            used[h as usize] = true;
        }
        let mut out: Vec<Assignment> = Vec::new();
        let mut push = |b: Vec<u16>| {
            let b = self.canonical(&b);
            if b.as_slice() != a && !out.contains(&b) {
                out.push(b);
            }
        };
        for i in 0..a.len() {
            for h in self.choices(&used) {
                if h as u16 != a[i] {
                    let mut b = a.to_vec();
                    b[i] = h as u16;
                    push(b);
                }
            }
        }
        for i in 0..a.len() {
            for j in i + 1..a.len() {
                if a[i] != a[j] {
                    let mut b = a.to_vec();
                    b.swap(i, j);
                    push(b);
                }
            }
        }
        out
    }
}

/// Add an evaluated assignment to the list (once).
fn remember(ev: &mut Vec<(Assignment, Evaluation)>, a: &Assignment, e: &Evaluation) {
    if !ev.iter().any(|(b, _)| b == a) {
        ev.push((a.clone(), e.clone()));
    }
}

/// What [`Advisor::local_search`] did.
#[derive(Debug, Clone)]
pub struct LocalSearch {
    /// Where it stopped, and its evaluation.
    pub best: Assignment,
    /// The evaluation of `best`.
    pub best_eval: Evaluation,
    /// Every assignment it simulated (the start first).
    pub evaluated: Vec<(Assignment, Evaluation)>,
    /// Rounds of neighbours evaluated.
    pub rounds: usize,
    /// Whether the budget ran out before a round without improvement.
    pub budget_exhausted: bool,
}

fn key_of(o: &[(String, toml::Value)]) -> String {
    o.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";")
}

/// The experiment text with the chosen variant merged in and `[[variant]]` removed, and the
/// variant's name ("default" without variants). Without `--variant`, an experiment with several
/// variants is advised on its one variant with FDP enabled.
fn resolve_variant(text: &str, origin: &str, want: Option<&str>) -> Result<(String, String)> {
    let vs: Vec<Variant> = parse_experiment(text, origin)?;
    let mut raw: toml::Table = toml::from_str(text).map_err(|e| crate::load::not_toml(origin, text, &e))?;
    let names: Vec<&str> = vs.iter().map(|v| v.name.as_str()).collect();
    let name = match want {
        Some(w) => {
            if !names.contains(&w) {
                bail!("{origin}: no variant named {w:?} (variants: {})", names.join(", "));
            }
            w.to_string()
        }
        None if vs.len() == 1 => vs[0].name.clone(),
        None => {
            let fdp: Vec<&Variant> = vs.iter().filter(|v| v.spec.device.fdp.as_ref().is_some_and(|f| f.enabled)).collect();
            match fdp.as_slice() {
                [one] => one.name.clone(),
                [] => bail!("{origin}: the advisor needs an FDP drive, and no variant enables [device.fdp] (variants: {})", names.join(", ")),
                _ => bail!(
                    "{origin}: several variants enable FDP ({}); choose one with --variant",
                    fdp.iter().map(|v| v.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            }
        }
    };
    let Some(toml::Value::Array(variants)) = raw.remove("variant") else {
        return Ok((text.to_string(), name));
    };
    let over = variants.iter().filter_map(|v| v.as_table()).find(|t| t.get("name").and_then(|n| n.as_str()) == Some(name.as_str())).cloned().unwrap_or_default();
    // As parse_experiment does: a variant that names a preset does not inherit the base's.
    if over.get("device").and_then(|d| d.get("preset")).is_some() {
        if let Some(toml::Value::Table(dev)) = raw.get_mut("device") {
            dev.remove("preset");
        }
    }
    let mut over = over;
    over.remove("name");
    merge(&mut raw, &over);
    Ok((toml::to_string(&raw).with_context(|| origin.to_string())?, name))
}

/// Most candidates an exhaustive search may simulate (and hold in memory at once), and most
/// simulations a greedy search may be given.
pub const MAX_CANDIDATES: usize = 100_000;

/// Run the advisor: baselines, the search, the ranking and, with `--op`, the OP crossing.
pub fn advise(path: &Path, opts: &AdviseOptions, progress: &(dyn Fn(AdviseProgress) + Sync)) -> Result<AdviseResult> {
    let start = Instant::now();
    for (flag, v) in [("--exhaustive-limit", opts.exhaustive_limit), ("--max-evals", opts.max_evals), ("--op-top", opts.op_top)] {
        if v > MAX_CANDIDATES {
            bail!("{flag} {v}: expected at most {MAX_CANDIDATES} (each candidate is a simulation of the experiment)");
        }
    }
    if opts.ops.len() > MAX_CANDIDATES {
        bail!("--op: {} values, expected at most {MAX_CANDIDATES}", opts.ops.len());
    }
    let mut adv = Advisor::new(path, opts)?;
    let s = adv.streams.len();
    let n = adv.handles;
    let drive_ruhs = adv.spec.device.fdp.as_ref().map_or(0, |f| f.ruhs);
    let mut notes = Vec::new();
    if adv.mixed_types() {
        notes.push(format!(
            "the {n} handles are of mixed RUH types ({}): handles are interchangeable only within a type, so groups are labelled by their RUH",
            adv.ruh_types[..n as usize].join(", ")
        ));
    }

    // Baselines: every stream on RUH 0, and stream i on RUH i (on a drive with more RUHs when
    // the streams outnumber the drive's).
    let none_a: Assignment = vec![0; s];
    let one_raw: Vec<u16> = (0..s as u16).collect();
    let one_ruhs = if s as u32 > drive_ruhs { Some(s as u32) } else { None };
    if let Some(r) = one_ruhs {
        notes.push(format!("one handle per stream needs {s} RUHs: that reference ran with device.fdp.ruhs = {r} (the drive has {drive_ruhs})"));
    } else if s as u32 > n {
        notes.push(format!("one handle per stream uses RUHs 0..{} of the drive, more than --handles {n}", s - 1));
    }
    let base_cands = vec![Candidate { assignment: none_a.clone(), op: None, ruhs: None, ruh_type: None }, Candidate { assignment: one_raw.clone(), op: None, ruhs: one_ruhs, ruh_type: None }];
    let base = adv.evaluate(&base_cands, "baselines", progress)?;
    let features = adv.features(&base[1])?;
    for (f, st) in features.iter().zip(&adv.streams) {
        if f.write_share == 0.0 {
            notes.push(format!("stream {} wrote nothing in the measured phases: its handle does not matter", st.name));
        }
    }

    // The search.
    let mut evaluated: Vec<(Assignment, Evaluation)> = Vec::new();
    remember(&mut evaluated, &none_a, &base[0]);
    if s as u32 <= n {
        remember(&mut evaluated, &adv.canonical(&one_raw), &base[1]);
    }
    let count = adv.count();
    let all = if opts.force_greedy || count > opts.exhaustive_limit as u64 { None } else { adv.enumerate(opts.exhaustive_limit) };
    let search = match all {
        Some(all) => {
            let cands: Vec<Candidate> = all.iter().map(|a| Candidate { assignment: a.clone(), op: None, ruhs: None, ruh_type: None }).collect();
            let es = adv.evaluate(&cands, "exhaustive", progress)?;
            for (a, e) in all.iter().zip(&es) {
                remember(&mut evaluated, a, e);
            }
            Search::Exhaustive { candidates: all.len() }
        }
        None => {
            if adv.streams.iter().any(|st| adv.streams.iter().filter(|t| t.ns_index == st.ns_index).count() > 1) {
                notes.push("streams of one namespace share its measured figures evenly (the counters are per namespace), so the greedy start cannot tell them apart; local moves can".into());
            }
            let start = adv.greedy_start(&features);
            let start_label = adv.label(&start);
            let budget = opts.max_evals.saturating_sub(adv.evaluations);
            let ls = adv.local_search(&start, budget, progress)?;
            for (a, e) in &ls.evaluated {
                remember(&mut evaluated, a, e);
            }
            let (rounds, exhausted) = (ls.rounds, ls.budget_exhausted);
            Search::Greedy { candidates: count, start: start_label, rounds, budget_exhausted: exhausted }
        }
    };
    let mut ranking: Vec<Ranked> = evaluated.iter().map(|(a, e)| adv.ranked(a, e)).collect();
    ranking.sort_by(|x, y| x.waf.total_cmp(&y.waf).then_with(|| x.label.cmp(&y.label)));
    let no_placement = adv.ranked(&none_a, &base[0]);
    let mut one_per_stream = adv.ranked(&one_raw, &base[1]);
    one_per_stream.label = adv.streams.iter().map(|st| format!("{{{}}}", st.name)).collect();

    let search_evaluations = adv.evaluations;
    // OP and RUH type crossing: the baselines and the best assignments (all of them when that
    // is small), at every OP x type.
    let mut op_rows = Vec::new();
    let ops: Vec<Option<f64>> = if opts.ops.is_empty() { vec![None] } else { opts.ops.iter().map(|&o| Some(o)).collect() };
    let types: Vec<Option<wafsim_core::RuhType>> = if opts.ruh_types.is_empty() { vec![None] } else { opts.ruh_types.iter().map(|&t| Some(t)).collect() };
    let points: Vec<(Option<f64>, Option<wafsim_core::RuhType>)> = ops.iter().flat_map(|&o| types.iter().map(move |&t| (o, t))).collect();
    if !opts.ops.is_empty() || !opts.ruh_types.is_empty() {
        let k = if ranking.len() * points.len() <= opts.exhaustive_limit { ranking.len() } else { opts.op_top.max(1).min(ranking.len()) };
        let mut rows: Vec<(String, Assignment, Option<u32>)> = vec![(format!("no placement {}", no_placement.label), none_a.clone(), None), (format!("one per stream {}", one_per_stream.label), one_raw.clone(), one_ruhs)];
        // The baselines come first; an assignment equal to one of them is not repeated.
        let one_canon = if s as u32 <= n { Some(adv.canonical(&one_raw)) } else { None };
        for r in ranking.iter().filter(|r| r.assignment != none_a && Some(&r.assignment) != one_canon.as_ref()).take(k) {
            rows.push((r.label.clone(), r.assignment.clone(), None));
        }
        let mut cands = Vec::new();
        for (_, a, r) in &rows {
            for &(op, ruh_type) in &points {
                cands.push(Candidate { assignment: a.clone(), op, ruhs: *r, ruh_type });
            }
        }
        let es = adv.evaluate(&cands, "op", progress)?;
        for (i, (label, _, _)) in rows.into_iter().enumerate() {
            let row = points
                .iter()
                .enumerate()
                .map(|(j, &(op, t))| OpPoint { op, ruh_type: t.map(wafsim_core::RuhType::name), waf: es[i * points.len() + j].waf })
                .collect();
            op_rows.push(OpRow { label, points: row });
        }
    }
    Ok(AdviseResult {
        experiment: path.display().to_string(),
        variant: adv.variant.clone(),
        handles: n,
        drive_ruhs,
        streams: adv.streams.clone(),
        scale: adv.scale,
        op: adv.spec.device.over_provisioning,
        search,
        ranking,
        no_placement,
        one_per_stream,
        one_per_stream_ruhs: one_ruhs,
        features,
        op_rows,
        evaluations: adv.evaluations,
        search_evaluations,
        seconds: start.elapsed().as_secs_f64(),
        notes,
    })
}

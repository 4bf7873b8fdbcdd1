//! Parameter sweeps: one base experiment run at many points, each point a set of overrides of
//! the experiment's keys (`device.over_provisioning = 0.14`), locally on all cores.
//!
//! A sweep file:
//!
//! ```toml
//! base = "../random-writes.toml"        # relative to the sweep file
//! mode = "product"                       # or "zip" (axes of equal length, element-wise)
//! [axes]
//! "device.over_provisioning" = [0.07, 0.14, 0.28]
//! "device.gc_policy" = ["greedy", "cost-benefit"]
//! ```
//!
//! or explicit points instead of `[axes]`:
//!
//! ```toml
//! base = "exp.toml"
//! [[point]]
//! "device.over_provisioning" = 0.07
//! [[point]]
//! device.over_provisioning = 0.28       # a dotted TOML key is the same path
//! "namespace.0.size" = "1GiB"           # a number selects an entry of an array of tables
//! ```
//!
//! A point's overrides go into the experiment document as written, before its variants are
//! resolved, so every variant of the base runs at every point (a point x variant grid) and the
//! whole document is checked again as `wafsim run` checks it. A variant that sets a key a point
//! also sets is an error: the variant's value would win and the axis would change nothing.
//!
//! Results are one [`Row`] per (point, variant). With an output file the sweep is resumable:
//! each row carries a hash of the base experiment's text, the point's overrides and the scale,
//! and points whose rows are all in the file already are kept instead of run again. Files the
//! base refers to (fio job files, traces) are not part of the hash.

use crate::results::VariantResult;
use crate::run::{run_variant, RunOptions};
use crate::plan::scale::{auto_scale_all, scale_spec};
use crate::plan::parse_experiment;

mod parquet;
mod row;

pub use parquet::{read_parquet, to_parquet};
pub use row::Row;
use crate::load::overrides::{flatten, lookup, set_path};
use crate::schema::Variant;
use anyhow::{anyhow, bail, Context, Result};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A sweep file: the base experiment and its points.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    /// The base experiment's path (resolved against the sweep file's directory).
    pub base: PathBuf,
    /// The base experiment's text, as read (hashed into every row).
    pub base_text: String,
    /// Axis names (dotted keys), in the order of the output columns.
    pub axes: Vec<String>,
    points: Vec<Point>,
    /// The sweep file's text, directory and name, for [`SweepSpec::bundle`].
    text: String,
    dir: PathBuf,
    origin: String,
}

/// One point of a sweep: overrides of the base experiment's keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// 1-based, as error messages and the `point` column count.
    pub index: usize,
    /// (dotted key, value), in the order of [`SweepSpec::axes`] (a point of explicit `[[point]]`
    /// tables may leave some axes out).
    pub overrides: Vec<(String, toml::Value)>,
}

impl Point {
    /// "device.over_provisioning = 0.07, device.gc_policy = \"greedy\"", for messages.
    pub fn describe(&self) -> String {
        self.overrides.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
    }

    /// The point's value of axis `key` (None when the point leaves it out).
    pub fn value(&self, key: &str) -> Option<&toml::Value> {
        self.overrides.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn axis_values(&self, axes: &[String]) -> Vec<(String, Option<toml::Value>)> {
        axes.iter().map(|a| (a.clone(), self.value(a).cloned())).collect()
    }
}

/// Runs a sweep somewhere other than this machine's threads (a Ray cluster, through the
/// Python package): given the sweep and its options, returns what [`SweepSpec::run`] would.
pub type Executor = dyn Fn(&SweepSpec, &SweepOptions) -> Result<SweepResult> + Send + Sync;

/// Options of a sweep run.
#[derive(Debug, Clone, Default)]
pub struct SweepOptions {
    /// Worker threads (None: all cores).
    pub jobs: Option<usize>,
    /// Capacity scale for every run (None: the default scale of `wafsim run`, the largest any
    /// point's variants need, so all points compare).
    pub scale: Option<f64>,
    /// Results file (`.csv`, `.json` or `.parquet`): rows already in it are kept, new rows are written as
    /// points finish, so an interrupted sweep resumes where it stopped. Rows of other base
    /// experiments, scales or points are dropped from it (counted in
    /// [`SweepResult::dropped_rows`]).
    pub out: Option<PathBuf>,
}

/// Progress of a sweep: (point, variant) runs done out of all to run, and points done.
#[derive(Debug, Clone, Copy)]
pub struct SweepProgress {
    /// (point, variant) runs done.
    pub runs_done: usize,
    /// (point, variant) runs in all.
    pub runs_total: usize,
    /// Points whose runs are all done.
    pub points_done: usize,
    /// Points in all.
    pub points_total: usize,
}


impl Row {
    fn new(p: &Point, axes: &[String], hash: &str, r: &VariantResult) -> Row {
        let f = r.figures();
        Row {
            point: p.index,
            axes: p.axis_values(axes),
            variant: r.name.clone(),
            // A sweep's files hold 0 for a WAF without host writes (their columns are numbers).
            waf: f.waf.unwrap_or(0.0),
            hbmw: f.hbmw,
            mbmw: f.mbmw,
            mbe: f.mbe,
            gc_bytes: f.gc_bytes,
            ns_waf: r.namespaces.iter().zip(&f.namespaces).map(|(n, nf)| (n.name.clone(), nf.waf.unwrap_or(0.0))).collect(),
            ns_bytes: r.namespaces.iter().map(|n| (n.name.clone(), n.host_bytes, n.media_bytes)).collect(),
            hash: hash.to_string(),
        }
    }
}

/// What a sweep run did.
#[derive(Debug, Clone)]
pub struct SweepResult {
    /// All rows, by point then variant (kept rows and new ones).
    pub rows: Vec<Row>,
    /// Points simulated by this run.
    pub executed_points: usize,
    /// Points whose rows were in the output file already.
    pub kept_points: usize,
    /// Rows of the output file dropped: of other base experiments or scales, or of points
    /// that lacked a variant's row.
    pub dropped_rows: usize,
}

impl SweepSpec {
    /// Read a sweep file and its base experiment.
    pub fn load(path: &Path) -> Result<SweepSpec> {
        let text = wafsim_workload::input::read_text(path).with_context(|| format!("cannot read {}", path.display()))?;
        Self::parse(&text, path.parent().unwrap_or(Path::new("")), &path.display().to_string())
    }

    /// Like [`SweepSpec::load`] from a string; `dir` resolves `base`, `origin` names the file
    /// in messages.
    pub fn parse(text: &str, dir: &Path, origin: &str) -> Result<SweepSpec> {
        Self::parse_with_base(text, dir, origin, None)
    }

    /// Like [`SweepSpec::parse`], with the base experiment's text given instead of read from
    /// `base` (a sweep built in memory, as the advisor's, or sent to a remote worker).
    fn parse_with_base(text: &str, dir: &Path, origin: &str, base_text: Option<String>) -> Result<SweepSpec> {
        let mut doc: toml::Table = toml::from_str(text).map_err(|e| crate::load::not_toml(origin, text, &e))?;
        let base = match doc.remove("base") {
            Some(toml::Value::String(s)) => dir.join(s),
            _ => bail!("{origin}: needs base = \"path/to/experiment.toml\""),
        };
        let mode = match doc.remove("mode") {
            None => "product".to_string(),
            Some(toml::Value::String(s)) if s == "product" || s == "zip" => s,
            Some(v) => bail!("{origin}: mode = {v}: expected \"product\" or \"zip\""),
        };
        let axes_t = match doc.remove("axes") {
            None => None,
            Some(toml::Value::Table(t)) => Some(t),
            Some(_) => bail!("{origin}: [axes] must be a table of key = [values]"),
        };
        let explicit = match doc.remove("point") {
            None => None,
            Some(toml::Value::Array(a)) => Some(a),
            Some(_) => bail!("{origin}: points are [[point]] tables"),
        };
        if let Some(k) = doc.keys().next() {
            bail!("{origin}: unknown key {k:?} (expected base, mode, [axes] or [[point]])");
        }
        // Tables come back sorted by key; the file's order of axes (the columns, and which
        // axis varies fastest) is read from the keys' positions in the text.
        let order: Vec<(String, usize)> = match toml::from_str::<AxesOrder>(text) {
            Ok(AxesOrder { axes: Some(m) }) => m.keys().map(|k| (k.get_ref().clone(), k.span().start)).collect(),
            _ => Vec::new(),
        };
        let axes_t = axes_t.map(|t| {
            let mut kv: Vec<(String, toml::Value)> = t.into_iter().collect();
            kv.sort_by_key(|(k, _)| order.iter().find(|(o, _)| o == k).map_or(usize::MAX, |(_, at)| *at));
            kv
        });
        let (axes, points) = match (axes_t, explicit) {
            (Some(_), Some(_)) => bail!("{origin}: give either [axes] or [[point]] tables, not both"),
            (None, None) => bail!("{origin}: no points: give [axes] or [[point]] tables"),
            (Some(t), None) => axis_points(&t, &mode, origin)?,
            (None, Some(list)) => {
                let mut axes: Vec<String> = Vec::new();
                let mut points = Vec::new();
                for (i, p) in list.iter().enumerate() {
                    let toml::Value::Table(t) = p else { bail!("{origin}: [[point]] #{} is not a table", i + 1) };
                    let mut overrides = Vec::new();
                    flatten("", t, &mut overrides);
                    if overrides.is_empty() {
                        bail!("{origin}: [[point]] #{} sets nothing", i + 1);
                    }
                    for (k, _) in &overrides {
                        if !axes.contains(k) {
                            axes.push(k.clone());
                        }
                    }
                    points.push(Point { index: i + 1, overrides });
                }
                (axes, points)
            }
        };
        let base_text = match base_text {
            Some(t) => t,
            None => wafsim_workload::input::read_text(&base).with_context(|| format!("{origin}: cannot read base {}", base.display()))?,
        };
        Ok(SweepSpec { base, base_text, axes, points, text: text.to_string(), dir: dir.to_path_buf(), origin: origin.to_string() })
    }

    /// The sweep as one JSON text (its file, directory, name and the base experiment's text,
    /// which may differ from the file on disk: see [`SweepSpec::base_text`]), for running its
    /// points in another process ([`SweepSpec::from_bundle`]). Files the base experiment names
    /// (fio job files, traces) are not in it: a worker reads them at the same paths.
    pub fn bundle(&self) -> String {
        serde_json::json!({ "sweep": self.text, "dir": self.dir, "origin": self.origin, "base_text": self.base_text }).to_string()
    }

    /// The sweep of [`SweepSpec::bundle`]'s text.
    pub fn from_bundle(bundle: &str) -> Result<SweepSpec> {
        #[derive(serde::Deserialize)]
        struct Bundle {
            sweep: String,
            dir: PathBuf,
            origin: String,
            base_text: String,
        }
        let b: Bundle = serde_json::from_str(bundle).context("not a sweep bundle (the JSON of SweepSpec::bundle)")?;
        Self::parse_with_base(&b.sweep, &b.dir, &b.origin, Some(b.base_text))
    }

    /// The sweep's points, in order.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The variants of the base experiment at point `p` (unscaled). Errors name the point.
    pub fn variants(&self, p: &Point) -> Result<Vec<Variant>> {
        let ctx = || format!("point {} ({})", p.index, p.describe());
        let origin = self.base.display().to_string();
        let mut doc: toml::Table = toml::from_str(&self.base_text).map_err(|e| crate::load::not_toml(&origin, &self.base_text, &e)).with_context(ctx)?;
        for (key, value) in &p.overrides {
            if let Some(toml::Value::Array(vs)) = doc.get("variant") {
                for v in vs {
                    if lookup(v, key).is_some() {
                        let name = v.get("name").map(|n| n.to_string()).unwrap_or_default();
                        bail!("{}: {key}: variant {name} of {origin} sets it too, and the variant's value would win", ctx());
                    }
                }
            }
            set_path(&mut doc, key, value).with_context(|| format!("{}: {key}", ctx()))?;
        }
        // Re-parsed from text, so the point gets every check of `wafsim run` (presets, variants,
        // validation); the text is the merged document, so line numbers refer to it.
        let text = toml::to_string(&doc).with_context(ctx)?;
        let mut vs = parse_experiment(&text, &format!("{origin} with the point's overrides")).with_context(ctx)?;
        let dir = self.base.parent().map(Path::to_path_buf).unwrap_or_default();
        for v in &mut vs {
            v.spec.base_dir = dir.clone();
        }
        Ok(vs)
    }

    /// The identity of point `p`'s run at `scale`: FNV-1a of the base text, the overrides and
    /// the scale (FNV because std's hasher may change between Rust releases, and the hash is
    /// stored in result files).
    pub fn hash(&self, p: &Point, scale: f64) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |b: &[u8]| {
            for &c in b {
                h ^= c as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        };
        eat(self.base_text.as_bytes());
        for (k, v) in &p.overrides {
            eat(format!("\n{k}={v}").as_bytes());
        }
        eat(format!("\nscale={scale:e}").as_bytes());
        format!("{h:016x}")
    }

    /// Run every point (all variants of each) in parallel; see [`SweepOptions`]. Results do not
    /// depend on the number of threads: every run is seeded by its experiment alone.
    pub fn run(&self, opts: &SweepOptions, progress: &(dyn Fn(SweepProgress) + Sync)) -> Result<SweepResult> {
        SweepPlan::new(self.clone(), opts)?.run_local(opts.jobs, progress)
    }

    /// The rows of the point with 1-based `index`, every variant run one after another at
    /// `scale`: what a remote worker computes for one point. The same rows as a local run.
    pub fn point_rows(&self, index: usize, scale: f64) -> Result<Vec<Row>> {
        let p = self.points.iter().find(|p| p.index == index).ok_or_else(|| anyhow!("no point {index} (the sweep has {})", self.points.len()))?;
        let hash = self.hash(p, scale);
        let mut vs = self.variants(p)?;
        scale_variants(p, &mut vs, scale)?;
        vs.iter().map(|v| run_row(p, v, &self.axes, &hash)).collect()
    }
}

/// Scale the variants of point `p` (errors name the point and variant).
fn scale_variants(p: &Point, vs: &mut [Variant], scale: f64) -> Result<()> {
    for v in vs {
        scale_spec(&mut v.spec, scale).with_context(|| format!("point {} ({}): variant {:?}", p.index, p.describe(), v.name))?;
    }
    Ok(())
}

/// Run variant `v` of point `p` (scaled) into its row.
fn run_row(p: &Point, v: &Variant, axes: &[String], hash: &str) -> Result<Row> {
    let r = run_variant(v, RunOptions::default(), &|_| {}).with_context(|| format!("point {} ({}): variant {:?}", p.index, p.describe(), v.name))?;
    Ok(Row::new(p, axes, hash, &r))
}

/// The rows of one run's variants (`wafsim run --parquet`): point 1, no axes, no hash (a
/// single run has nothing to resume).
pub fn run_rows(results: &[VariantResult]) -> Vec<Row> {
    let p = Point { index: 1, overrides: Vec::new() };
    results.iter().map(|r| Row::new(&p, &[], "", r)).collect()
}

/// A sweep ready to run: every point resolved and scaled (so a bad point fails before anything
/// runs), the rows of the output file that are still valid kept. Points are run by the local
/// threads ([`SweepPlan::run_local`]) or elsewhere (a Ray cluster: [`SweepSpec::point_rows`]
/// on a worker) and handed back with [`SweepPlan::record`], which rewrites the output file.
#[derive(Debug)]
pub struct SweepPlan {
    spec: SweepSpec,
    grid: Vec<Vec<Variant>>,
    scale: f64,
    hashes: Vec<String>,
    out: Option<PathBuf>,
    /// Rows of each point once all its variants are done (kept from the file or recorded).
    done: Vec<Option<Vec<Row>>>,
    executed_points: usize,
    kept_points: usize,
    dropped_rows: usize,
}

impl SweepPlan {
    /// Resolve and scale every point; read the rows of `opts.out` (if it exists) and keep the
    /// points whose every variant has a row there; write the file back with the kept rows.
    pub fn new(spec: SweepSpec, opts: &SweepOptions) -> Result<SweepPlan> {
        let mut grid: Vec<Vec<Variant>> = spec.points.iter().map(|p| spec.variants(p)).collect::<Result<_>>()?;
        let scale = match opts.scale {
            Some(s) => s,
            None => auto_scale_all(grid.iter().flatten().map(|v| &v.spec))?,
        };
        for (p, vs) in spec.points.iter().zip(&mut grid) {
            scale_variants(p, vs, scale)?;
        }
        let hashes: Vec<String> = spec.points.iter().map(|p| spec.hash(p, scale)).collect();
        let mut done: Vec<Option<Vec<Row>>> = vec![None; spec.points.len()];
        let mut dropped_rows = 0;
        if let Some(out) = opts.out.as_ref().filter(|o| o.exists()) {
            let old = read_rows(out)?;
            let mut used = 0;
            for (i, (p, vs)) in spec.points.iter().zip(&grid).enumerate() {
                let rows: Vec<Row> = vs
                    .iter()
                    .filter_map(|v| old.iter().find(|r| r.hash == hashes[i] && r.variant == v.name))
                    .map(|r| Row { point: p.index, axes: p.axis_values(&spec.axes), ..r.clone() })
                    .collect();
                if rows.len() == vs.len() {
                    used += rows.len();
                    done[i] = Some(rows);
                }
            }
            dropped_rows = old.len() - used;
        }
        let kept_points = done.iter().filter(|k| k.is_some()).count();
        let plan = SweepPlan { executed_points: spec.points.len() - kept_points, spec, grid, scale, hashes, out: opts.out.clone(), done, kept_points, dropped_rows };
        plan.write()?;
        Ok(plan)
    }

    /// The sweep.
    pub fn spec(&self) -> &SweepSpec {
        &self.spec
    }

    /// The scale every run uses.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// 1-based indices of the points still to run.
    pub fn todo(&self) -> Vec<usize> {
        self.spec.points.iter().zip(&self.done).filter(|(_, d)| d.is_none()).map(|(p, _)| p.index).collect()
    }

    /// Variants run at each point (every point runs all of the base's variants).
    pub fn variants_per_point(&self) -> usize {
        self.grid.first().map_or(0, Vec::len)
    }

    /// Peak memory one run of the point needs, in bytes: the largest of its variants'
    /// [`crate::run::memory_estimate`] (a point's variants run one after another on a worker).
    pub fn memory_estimate(&self, index: usize) -> Result<u64> {
        let i = self.position(index)?;
        self.grid[i].iter().map(|v| crate::run::memory_estimate(&v.spec)).try_fold(0u64, |m, e| Ok(m.max(e?)))
    }

    fn position(&self, index: usize) -> Result<usize> {
        self.spec.points.iter().position(|p| p.index == index).ok_or_else(|| anyhow!("no point {index} (the sweep has {})", self.spec.points.len()))
    }

    /// Take the rows of point `index` (all its variants, from [`SweepSpec::point_rows`]),
    /// checked against the plan (same run identity, every variant once), and rewrite the
    /// output file. Returns the points done so far.
    pub fn record(&mut self, index: usize, rows: Vec<Row>) -> Result<usize> {
        let i = self.position(index)?;
        let p = &self.spec.points[i];
        if self.done[i].is_some() {
            bail!("point {index}: recorded twice");
        }
        let mut ordered = Vec::new();
        for v in &self.grid[i] {
            let r = rows
                .iter()
                .find(|r| r.variant == v.name)
                .ok_or_else(|| anyhow!("point {index}: no row for variant {:?}", v.name))?;
            if r.hash != self.hashes[i] {
                bail!("point {index}: a row of another run (hash {} where {} was expected: another base experiment, scale or point)", r.hash, self.hashes[i]);
            }
            ordered.push(Row { point: p.index, axes: p.axis_values(&self.spec.axes), ..r.clone() });
        }
        if rows.len() != ordered.len() {
            bail!("point {index}: {} rows for {} variants", rows.len(), ordered.len());
        }
        self.done[i] = Some(ordered);
        self.write()?;
        Ok(self.done.iter().filter(|d| d.is_some()).count())
    }

    fn write(&self) -> Result<()> {
        match &self.out {
            Some(out) => write_rows(out, &self.spec.axes, &collect_rows(&self.done)),
            None => Ok(()),
        }
    }

    /// What was run and kept; an error when a point has no rows yet.
    pub fn finish(self) -> Result<SweepResult> {
        if let Some(i) = self.done.iter().position(Option::is_none) {
            bail!("point {} was not run", self.spec.points[i].index);
        }
        Ok(SweepResult { rows: collect_rows(&self.done), executed_points: self.executed_points, kept_points: self.kept_points, dropped_rows: self.dropped_rows })
    }

    /// Run the points still to run on this machine's cores (`jobs` threads, None: all), one
    /// task per (point, variant) so a sweep of few points with many variants fills the cores.
    pub fn run_local(self, jobs: Option<usize>, progress: &(dyn Fn(SweepProgress) + Sync)) -> Result<SweepResult> {
        let todo: Vec<(usize, usize)> = (0..self.grid.len()).filter(|&i| self.done[i].is_none()).flat_map(|i| (0..self.grid[i].len()).map(move |j| (i, j))).collect();
        let pending: Vec<Vec<Option<Row>>> = self.grid.iter().map(|vs| vec![None; vs.len()]).collect();
        let runs_total = todo.len();
        let points_total = self.spec.points.len();
        let kept_points = self.kept_points;
        // (the plan, rows of points under way, runs done)
        let state = Mutex::new((self, pending, 0usize));
        progress(SweepProgress { runs_done: 0, runs_total, points_done: kept_points, points_total });
        let work = |st: &Mutex<(SweepPlan, Vec<Vec<Option<Row>>>, usize)>| -> Result<()> {
            todo.par_iter()
                .map(|&(i, j)| -> Result<()> {
                    let (v, p, hash) = {
                        let g = st.lock().expect("sweep lock");
                        (g.0.grid[i][j].clone(), g.0.spec.points[i].clone(), g.0.hashes[i].clone())
                    };
                    let row = run_row(&p, &v, &[], &hash)?;
                    let mut g = st.lock().expect("sweep lock");
                    let g = &mut *g;
                    g.1[i][j] = Some(row);
                    g.2 += 1;
                    let mut points_done = None;
                    if g.1[i].iter().all(Option::is_some) {
                        let rows: Vec<Row> = g.1[i].iter_mut().map(|r| r.take().expect("row")).collect();
                        points_done = Some(g.0.record(p.index, rows)?);
                    }
                    let points_done = points_done.unwrap_or_else(|| g.0.done.iter().filter(|d| d.is_some()).count());
                    progress(SweepProgress { runs_done: g.2, runs_total, points_done, points_total });
                    Ok(())
                })
                .collect::<Result<Vec<()>>>()
                .map(|_| ())
        };
        match jobs {
            // More threads than runs or cores only cost memory (and `--jobs 100000` stalled
            // starting threads): the pool is capped at both.
            Some(n) => rayon::ThreadPoolBuilder::new().num_threads(worker_threads(n, runs_total)).build().context("cannot start the worker threads")?.install(|| work(&state))?,
            None => work(&state)?,
        }
        state.into_inner().expect("sweep lock").0.finish()
    }
}

/// Worker threads for `--jobs n` and `runs` runs: at most one per run and per core.
pub fn worker_threads(n: usize, runs: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    n.min(runs).min(cores).max(1)
}

/// Most points a sweep may have (each is a run of the base experiment per variant).
pub const MAX_POINTS: usize = 1_000_000;

/// Rows as JSON for sending between processes (a Ray worker to the driver): every field but
/// the axes, which the receiver takes from its own points. Floats round-trip exactly.
pub fn rows_to_wire(rows: &[Row]) -> String {
    serde_json::to_string(rows).expect("json of plain values")
}

/// Rows from [`rows_to_wire`]'s text.
pub fn rows_from_wire(text: &str) -> Result<Vec<Row>> {
    serde_json::from_str(text).context("rows from a worker: not the JSON rows_to_wire writes")
}

fn collect_rows(done: &[Option<Vec<Row>>]) -> Vec<Row> {
    done.iter().flatten().flatten().cloned().collect()
}

/// The top-level keys of `[axes]` with their places in the sweep file.
#[derive(serde::Deserialize)]
struct AxesOrder {
    axes: Option<std::collections::BTreeMap<toml::Spanned<String>, toml::Value>>,
}

/// Points of `[axes]`: the cartesian product (the last axis varying fastest, as nested loops
/// written in the file's order) or, in zip mode, the i-th value of every axis.
fn axis_points(t: &[(String, toml::Value)], mode: &str, origin: &str) -> Result<(Vec<String>, Vec<Point>)> {
    let mut axes = Vec::new();
    for (k, v) in t {
        // A dotted key without quotes parses as nested tables: flatten back to paths.
        let mut flat = Vec::new();
        flatten("", &toml::Table::from_iter([(k.clone(), v.clone())]), &mut flat);
        for (key, v) in flat {
            match v {
                toml::Value::Array(a) if !a.is_empty() => axes.push((key, a)),
                _ => bail!("{origin}: axis {key:?} needs a non-empty list of values"),
            }
        }
    }
    if axes.is_empty() {
        bail!("{origin}: [axes] is empty");
    }
    let names: Vec<String> = axes.iter().map(|(k, _)| k.clone()).collect();
    let mut points = Vec::new();
    if mode == "zip" {
        let n = axes[0].1.len();
        if let Some((k, a)) = axes.iter().find(|(_, a)| a.len() != n) {
            bail!("{origin}: mode = \"zip\" needs axes of equal length: {:?} has {n} values, {k:?} has {}", axes[0].0, a.len());
        }
        for i in 0..n {
            points.push(Point { index: i + 1, overrides: axes.iter().map(|(k, a)| (k.clone(), a[i].clone())).collect() });
        }
    } else {
        // Counted before a point is built: a product of a few long axes may not fit in memory.
        let total = axes.iter().try_fold(1usize, |t, (_, a)| t.checked_mul(a.len())).filter(|&t| t <= MAX_POINTS);
        let Some(total) = total else {
            let count = axes.iter().fold(1u128, |t, (_, a)| t.saturating_mul(a.len() as u128));
            let sizes: Vec<String> = axes.iter().map(|(_, a)| a.len().to_string()).collect();
            bail!("{origin}: [axes] make {count} points ({}), more than the {MAX_POINTS} a sweep may have; use fewer values or mode = \"zip\"", sizes.join(" x "));
        };
        for n in 0..total {
            let mut rest = n;
            let mut overrides = vec![(String::new(), toml::Value::Boolean(false)); axes.len()];
            for (slot, (k, a)) in axes.iter().enumerate().rev() {
                overrides[slot] = (k.clone(), a[rest % a.len()].clone());
                rest /= a.len();
            }
            points.push(Point { index: n + 1, overrides });
        }
    }
    Ok((names, points))
}

const FIXED: [&str; 7] = ["variant", "waf", "hbmw", "mbmw", "mbe", "gc_bytes", "hash"];

/// Column names: point, the axes, the fixed figures, `waf[NS]` for every namespace seen.
fn header(axes: &[String], rows: &[Row]) -> Vec<String> {
    let mut h = vec!["point".to_string()];
    h.extend(axes.iter().cloned());
    h.extend(FIXED[..6].iter().map(|s| s.to_string()));
    for r in rows {
        for (ns, _) in &r.ns_waf {
            let c = format!("waf[{ns}]");
            if !h.contains(&c) {
                h.push(c);
            }
        }
    }
    h.push("hash".into());
    h
}

fn cells(r: &Row, header: &[String]) -> Vec<String> {
    header
        .iter()
        .map(|c| match c.as_str() {
            "point" => r.point.to_string(),
            "variant" => r.variant.clone(),
            // No host writes: the WAF is undefined, an empty cell (null in JSON), not 0.
            "waf" => r.defined_waf().map(|w| format!("{w}")).unwrap_or_default(),
            "hbmw" => r.hbmw.to_string(),
            "mbmw" => r.mbmw.to_string(),
            "mbe" => r.mbe.to_string(),
            "gc_bytes" => r.gc_bytes.to_string(),
            "hash" => r.hash.clone(),
            c => match c.strip_prefix("waf[").and_then(|s| s.strip_suffix(']')) {
                Some(ns) => r.defined_ns_waf(ns).map(|w| format!("{w}")).unwrap_or_default(),
                None => r.axis_text(c),
            },
        })
        .collect()
}

/// Rows as CSV (header row first); fields with commas, quotes or line breaks are quoted.
pub fn to_csv(axes: &[String], rows: &[Row]) -> String {
    let h = header(axes, rows);
    let quote = |s: &str| if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() };
    let line = |v: &[String]| v.iter().map(|s| quote(s)).collect::<Vec<_>>().join(",") + "\n";
    let mut out = line(&h);
    for r in rows {
        out += &line(&cells(r, &h));
    }
    out
}

/// Rows as a JSON array of objects, one key per CSV column; axis values are the TOML values
/// (numbers stay numbers).
pub fn to_json(axes: &[String], rows: &[Row]) -> String {
    let h = header(axes, rows);
    let arr: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let mut o = serde_json::Map::new();
            for (c, v) in h.iter().zip(cells(r, &h)) {
                let axis = r.axes.iter().find(|(a, _)| a == c);
                let j = match (c.as_str(), axis) {
                    // Axis values keep their TOML type (a string "1" stays a string).
                    (_, Some((_, None))) => serde_json::Value::Null,
                    (_, Some((_, Some(toml::Value::String(s))))) => serde_json::Value::String(s.clone()),
                    (_, Some((_, Some(t)))) => serde_json::to_value(t).unwrap_or(serde_json::Value::String(v)),
                    ("variant" | "hash", None) => serde_json::Value::String(v),
                    (_, None) if v.is_empty() => serde_json::Value::Null,
                    (_, None) => serde_json::from_str(&v).unwrap_or(serde_json::Value::String(v)),
                };
                o.insert(c.clone(), j);
            }
            serde_json::Value::Object(o)
        })
        .collect();
    serde_json::to_string_pretty(&arr).expect("json of plain values") + "\n"
}

fn write_rows(path: &Path, axes: &[String], rows: &[Row]) -> Result<()> {
    let text = if is_parquet(path) {
        parquet::to_parquet(axes, rows).with_context(|| format!("cannot write {} as Parquet", path.display()))?
    } else if is_json(path) {
        to_json(axes, rows).into_bytes()
    } else {
        to_csv(axes, rows).into_bytes()
    };
    // Through a temporary file, so an interruption never leaves half a results file.
    // Named after the whole file name: results files of one stem (op.csv, op.parquet) in one
    // directory must not share a temporary file.
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    let tmp = path.with_file_name(name);
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

fn is_parquet(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// Split CSV text into records (RFC 4180 quoting).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut recs = Vec::new();
    let mut rec = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => rec.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                rec.push(std::mem::take(&mut field));
                recs.push(std::mem::take(&mut rec));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !rec.is_empty() {
        rec.push(field);
        recs.push(rec);
    }
    recs
}

/// Rows of a results file written by a sweep (the figures and hash; axes are taken from the
/// current points when kept).
pub fn read_rows(path: &Path) -> Result<Vec<Row>> {
    if is_parquet(path) {
        return parquet::read_parquet(path);
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let recs: Vec<Vec<(String, String)>> = if is_json(path) {
        let v: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("{}: not a sweep's JSON results", path.display()))?;
        let arr = v.as_array().ok_or_else(|| anyhow!("{}: not a JSON array", path.display()))?;
        arr.iter()
            .map(|o| {
                o.as_object()
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().map(str::to_string).unwrap_or_else(|| if v.is_null() { String::new() } else { v.to_string() }))).collect())
                    .unwrap_or_default()
            })
            .collect()
    } else {
        let mut recs = parse_csv(&text).into_iter();
        let h = recs.next().unwrap_or_default();
        recs.map(|r| h.iter().cloned().zip(r).collect()).collect()
    };
    let mut rows = Vec::new();
    for (n, rec) in recs.iter().enumerate() {
        let get = |k: &str| rec.iter().find(|(c, _)| c == k).map(|(_, v)| v.as_str());
        let num = |k: &str| -> Result<u64> { get(k).and_then(|v| v.parse().ok()).ok_or_else(|| anyhow!("{}: row {}: no number in column {k:?}", path.display(), n + 1)) };
        let (Some(hash), Some(variant)) = (get("hash"), get("variant")) else {
            bail!("{}: row {}: not a sweep's results (needs hash and variant columns)", path.display(), n + 1);
        };
        rows.push(Row {
            point: num("point")? as usize,
            axes: Vec::new(),
            variant: variant.to_string(),
            waf: get("waf").and_then(|v| v.parse().ok()).unwrap_or(f64::NAN),
            hbmw: num("hbmw")?,
            mbmw: num("mbmw")?,
            mbe: num("mbe")?,
            gc_bytes: num("gc_bytes")?,
            ns_waf: rec
                .iter()
                .filter_map(|(c, v)| Some((c.strip_prefix("waf[")?.strip_suffix(']')?.to_string(), v.parse().ok()?)))
                .collect(),
            ns_bytes: Vec::new(),
            hash: hash.to_string(),
        });
    }
    Ok(rows)
}

/// Rows as an aligned text table (stdout of `wafsim sweep`).
pub fn table(axes: &[String], rows: &[Row]) -> String {
    let mut h = vec!["point".to_string()];
    h.extend(axes.iter().cloned());
    h.extend(["variant", "WAF", "HBMW", "MBMW", "MBE", "GC bytes"].map(String::from));
    let mut body: Vec<Vec<String>> = Vec::new();
    for r in rows {
        let mut c = vec![r.point.to_string()];
        c.extend(r.axes.iter().map(|(a, _)| r.axis_text(a)));
        c.extend([r.variant.clone(), r.defined_waf().map_or("n/a".into(), |w| format!("{w:.3}")), r.hbmw.to_string(), r.mbmw.to_string(), r.mbe.to_string(), r.gc_bytes.to_string()]);
        body.push(c);
    }
    let w: Vec<usize> = (0..h.len()).map(|i| body.iter().map(|r| r[i].len()).chain([h[i].len()]).max().unwrap_or(0)).collect();
    let fmt = |r: &[String]| r.iter().zip(&w).map(|(s, w)| format!("{s:>w$}")).collect::<Vec<_>>().join("  ").trim_end().to_string() + "\n";
    let mut out = fmt(&h);
    for r in &body {
        out += &fmt(r);
    }
    out
}

//! `wafsim sweep`: run a base experiment at every point of a sweep file (see
//! `wafsim_experiment::studies::sweep` for the format); this file only parses arguments and prints.

use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;
use anyhow::Context;
use std::sync::Arc;
use wafsim_experiment::studies::sweep::{table, Executor, SweepOptions, SweepProgress, SweepResult, SweepSpec};

#[derive(Args)]
pub struct SweepArgs {
    /// Sweep TOML: base = "experiment.toml" (relative to the sweep file) and either [axes]
    /// ("device.over_provisioning" = [0.07, 0.14], combined as mode = "product" or "zip") or
    /// [[point]] tables of overrides.
    sweep: PathBuf,
    /// Write the rows (one per point and variant; in a .parquet file one per point, variant and
    /// namespace) to this .csv, .json or .parquet file. Rows already in
    /// it for the same base experiment, point and scale are kept and their points not run
    /// again, so an interrupted sweep resumes.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    run: SweepRunArgs,
}

/// Where a sweep's runs go and at what scale: the flags `wafsim sweep` and `wafsim advise`
/// share.
#[derive(Args)]
pub struct SweepRunArgs {
    /// Worker threads (default: all cores). Results do not depend on it.
    #[arg(long)]
    jobs: Option<usize>,
    /// Capacity scale, 0 < F <= 1, of every run (default: as `wafsim run`, the largest any
    /// point needs, so points compare).
    #[arg(long, conflicts_with = "full_scale")]
    scale: Option<f64>,
    /// Run at the experiment's real capacities.
    #[arg(long)]
    full_scale: bool,
    /// Run each point as a task on a Ray cluster: "auto" (the cluster `ray start` runs on this
    /// machine), an address ("10.0.0.5:6379", "ray://host:10001"), or "local" (a Ray instance
    /// of its own). Needs Python with the wafsim package and ray (see --python); workers need
    /// the sweep's files at the same paths. Rows are identical to a local run's.
    #[arg(long, value_name = "ADDRESS", conflicts_with = "jobs")]
    ray: Option<String>,
    /// The Python interpreter for --ray (default: $WAFSIM_PYTHON, else python3).
    #[arg(long, value_name = "PATH", requires = "ray")]
    python: Option<PathBuf>,
}

impl SweepRunArgs {
    /// Threads (checked: at least one).
    pub fn jobs(&self) -> Result<Option<usize>> {
        if self.jobs == Some(0) {
            bail!("--jobs 0: expected at least 1");
        }
        Ok(self.jobs)
    }

    /// The scale: --full-scale, --scale, or None for the default.
    pub fn scale(&self) -> Option<f64> {
        if self.full_scale {
            Some(1.0)
        } else {
            self.scale
        }
    }

    /// The Ray executor of --ray (None: local threads).
    pub fn executor(&self) -> Option<Arc<Executor>> {
        self.ray.as_ref().map(|r| ray_executor(r.clone(), python_for_ray(self.python.as_ref())))
    }
}

pub fn run_sweep(a: SweepArgs) -> Result<()> {
    if let Some(out) = &a.out {
        let ext = out.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        if ext != "csv" && ext != "json" && ext != "parquet" {
            bail!("--out {}: expected a .csv, .json or .parquet file", out.display());
        }
    }
    let spec = SweepSpec::load(&a.sweep)?;
    let opts = SweepOptions { jobs: a.run.jobs()?, scale: a.run.scale(), out: a.out.clone() };
    let start = Instant::now();
    // A bar on a terminal (crate::progress), nothing otherwise; on Ray, the Python side
    // prints points done.
    let bar = crate::progress::SweepBar::new();
    let r = match a.run.executor() {
        Some(run) => run(&spec, &opts),
        None => spec.run(&opts, &|p: SweepProgress| bar.update(p)),
    };
    bar.finish();
    let r = r?;
    print!("{}", table(&spec.axes, &r.rows));
    let on = a.run.ray.as_ref().map(|r| format!(" on Ray ({r})")).unwrap_or_default();
    let mut note = format!("sweep{on}: {} points ({} run, {} kept", r.executed_points + r.kept_points, r.executed_points, r.kept_points);
    if let Some(out) = &a.out {
        note += &format!(" from {}", out.display());
    }
    note += &format!("), {} rows in {:.1} s", r.rows.len(), start.elapsed().as_secs_f64());
    if r.dropped_rows > 0 {
        note += &format!("; {} stale rows dropped (other base experiment, scale or point)", r.dropped_rows);
    }
    eprintln!("{note}");
    Ok(())
}

/// The interpreter `--ray` runs: --python, else $WAFSIM_PYTHON, else python3.
fn python_for_ray(python: Option<&PathBuf>) -> PathBuf {
    python.cloned().or_else(|| std::env::var_os("WAFSIM_PYTHON").map(PathBuf::from)).unwrap_or_else(|| PathBuf::from("python3"))
}

/// A sweep executor that runs each point as a task on the Ray cluster at `address`: the
/// sweep goes as a bundle to Python (`python -m wafsim.ray_sweep --bundle`: the same plan and
/// Rust runs, one Ray task per point), which records rows into `--out` as points finish and
/// hands all rows back in a file. Used by `wafsim sweep --ray` and `wafsim advise --ray`.
pub fn ray_executor(address: String, python: PathBuf) -> Arc<Executor> {
    Arc::new(move |spec: &SweepSpec, opts: &SweepOptions| -> Result<SweepResult> {
        let tag = format!("{}-{}", std::process::id(), CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let bundle_file = std::env::temp_dir().join(format!("wafsim-ray-sweep-{tag}.json"));
        let rows_file = std::env::temp_dir().join(format!("wafsim-ray-rows-{tag}.json"));
        std::fs::write(&bundle_file, spec.bundle()).with_context(|| format!("cannot write {}", bundle_file.display()))?;
        let mut cmd = std::process::Command::new(&python);
        cmd.args(["-m", "wafsim.ray_sweep", "--bundle"]).arg(&bundle_file).args(["--address", &address]).arg("--rows-json").arg(&rows_file);
        if let Some(out) = &opts.out {
            cmd.arg("--out").arg(out);
        }
        if let Some(s) = opts.scale {
            cmd.args(["--scale", &s.to_string()]);
        }
        let output = cmd.stderr(std::process::Stdio::inherit()).output();
        let _ = std::fs::remove_file(&bundle_file);
        let output = output.with_context(|| format!("--ray: cannot start {} (set --python or WAFSIM_PYTHON to an interpreter with the wafsim package and ray)", python.display()))?;
        if !output.status.success() {
            let _ = std::fs::remove_file(&rows_file);
            bail!("--ray: the sweep failed in {} (its messages are above; an ImportError means that interpreter lacks the wafsim package or ray: scripts/test builds both into .venv)", python.display());
        }
        let rows = std::fs::read_to_string(&rows_file).with_context(|| format!("--ray: cannot read the rows file {}", rows_file.display()));
        let _ = std::fs::remove_file(&rows_file);
        let mut rows = wafsim_experiment::studies::sweep::rows_from_wire(&rows?)?;
        for r in &mut rows {
            if let Some(p) = spec.points().iter().find(|p| p.index == r.point) {
                r.axes = spec.axes.iter().map(|k| (k.clone(), p.value(k).cloned())).collect();
            }
        }
        let counts = String::from_utf8_lossy(&output.stdout);
        let mut it = counts.split_whitespace().map(|n| n.parse::<usize>().unwrap_or(0));
        let (executed_points, kept_points) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
        Ok(SweepResult { rows, executed_points, kept_points, dropped_rows: 0 })
    })
}

/// Distinct temporary file names for the sweeps of one process (the advisor runs several).
static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

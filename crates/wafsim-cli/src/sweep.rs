//! `wafsim sweep`: run a base experiment at every point of a sweep file (see
//! `wafsim_experiment::sweep` for the format); this file only parses arguments and prints.

use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;
use wafsim_experiment::sweep::{table, SweepOptions, SweepProgress, SweepSpec};

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
}

pub fn run_sweep(a: SweepArgs) -> Result<()> {
    if let Some(out) = &a.out {
        let ext = out.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        if ext != "csv" && ext != "json" && ext != "parquet" {
            bail!("--out {}: expected a .csv, .json or .parquet file", out.display());
        }
    }
    if a.jobs == Some(0) {
        bail!("--jobs 0: expected at least 1");
    }
    let spec = SweepSpec::load(&a.sweep)?;
    let opts = SweepOptions { jobs: a.jobs, scale: if a.full_scale { Some(1.0) } else { a.scale }, out: a.out.clone() };
    let start = Instant::now();
    // A bar on a terminal (crate::progress), nothing otherwise.
    let bar = crate::progress::SweepBar::new();
    let r = spec.run(&opts, &|p: SweepProgress| bar.update(p));
    bar.finish();
    let r = r?;
    print!("{}", table(&spec.axes, &r.rows));
    let mut note = format!("sweep: {} points ({} run, {} kept", r.executed_points + r.kept_points, r.executed_points, r.kept_points);
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

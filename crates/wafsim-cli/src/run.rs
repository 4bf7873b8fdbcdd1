//! `wafsim run`: an experiment's variants side by side, as tables or JSON, with the time series,
//! charts and Parquet rows asked for. The run itself is `wafsim_experiment::run_variants`; this
//! file parses the flags, shows progress and writes the outputs.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;
use wafsim_core::units::parse_bytes;
use wafsim_experiment::RunOptions;

use crate::{load_variants, progress};

/// The flags of `wafsim run`.
#[derive(Args)]
pub struct RunArgs {
    /// Experiment TOML (device + namespaces + workloads or phases + variants).
    experiment: PathBuf,
    /// Print JSON instead of tables (same as --output-format json).
    #[arg(long)]
    json: bool,
    /// "normal" (tables) or "json" (fio-like layout: "jobs" per variant and tenant, plus
    /// "variants" with device counters).
    #[arg(long, default_value = "normal")]
    output_format: String,
    /// Run only the named variant(s); repeatable.
    #[arg(long = "variant")]
    variants: Vec<String>,
    /// Run variants one after another instead of in parallel.
    #[arg(long)]
    serial: bool,
    /// Capacity scale, 0 < F <= 1 (default: the power of ten that brings the drive to at
    /// most 10 GB). Erase units and namespaces scale with it; OP and block sizes do not.
    #[arg(long, conflicts_with = "full_scale")]
    scale: Option<f64>,
    /// Run at the experiment's real capacities.
    #[arg(long)]
    full_scale: bool,
    /// Write WAF and counters sampled along the run to this CSV file.
    #[arg(long)]
    timeseries: Option<PathBuf>,
    /// Host bytes between time-series samples (default: 2% of the logical capacity).
    #[arg(long)]
    sample_every: Option<String>,
    /// Write charts to this directory: WAF over time, host vs media writes, per-tenant WAF,
    /// and where the run has them cumulative WAF per drive, zone maps, traffic per tier,
    /// bandwidth, dm-zoned cache zones and reclaim.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Write one row per (variant, namespace) to this Parquet file: the device's WAF, HBMW,
    /// MBMW, MBE and GC bytes beside the namespace's host and media bytes and WAF (the
    /// columns of `wafsim sweep --out F.parquet`, with point 1 and no axes).
    #[arg(long, value_name = "FILE")]
    parquet: Option<PathBuf>,
    /// Image format of the --plot charts.
    #[arg(long, default_value = "both", value_parser = ["svg", "png", "both"])]
    plot_format: String,
    /// Save every drive's state at the end of the run as a drive image in this directory
    /// (created if needed): VARIANT.img, or VARIANT.dN.img per drive. A later experiment
    /// starts from it with `[history] kind = "image"`, `image = "DIR/VARIANT.img"`, so aging
    /// is paid once. Flash, ZNS and SMR drives.
    #[arg(long, value_name = "DIR")]
    save_images: Option<PathBuf>,
    /// Also run every case of the experiment's `[[unknown]]` tables (facts its source does not
    /// give: drive preparation, rates, ...) and print the spread of the results beside the
    /// central one. Each case is a full run of the variant.
    #[arg(long)]
    spread: bool,
}

/// Run the selected variants (in parallel unless --serial), print each distinct warning once,
/// write the Parquet rows, time series and charts asked for, then print tables or JSON.
pub fn run_experiment(a: RunArgs) -> Result<()> {
    let RunArgs { experiment, json, output_format, variants, serial, scale, full_scale, timeseries, sample_every, plot, plot_format, parquet, save_images, spread } = a;
    let json = json || output_format == "json";
    if output_format != "normal" && output_format != "json" {
        bail!("--output-format {output_format:?}: expected \"normal\" or \"json\"");
    }
    let all = load_variants(&experiment, &variants, scale, full_scale)?;
    let sample_every_bytes = if timeseries.is_some() || plot.is_some() {
        Some(match &sample_every {
            Some(s) => parse_bytes(s).map_err(anyhow::Error::msg)?,
            None => {
                (all[0].spec.device_config()?.logical_bytes / 50).max(1 << 20)
            }
        })
    } else {
        None
    };
    if let Some(d) = &save_images {
        std::fs::create_dir_all(d).with_context(|| format!("--save-images {}: cannot create the directory", d.display()))?;
    }
    let opts = RunOptions { sample_every_bytes, save_images: save_images.as_deref() };
    let bar = progress::Bar::new(all.iter().map(|v| v.name.clone()).collect());
    let report = |name: &str, p| bar.update(name, p);
    let results = if serial {
        all.iter().map(|v| wafsim_experiment::run_variant(v, opts, &|p| report(&v.name, p))).collect()
    } else {
        wafsim_experiment::run_variants(&all, opts, &report)
    };
    bar.finish();
    // Errors found while running (a timing key out of range, a job that cannot run) name the
    // experiment file, as the ones found while loading it do.
    let mut results: Vec<_> = results.into_iter().collect::<Result<_>>().with_context(|| experiment.display().to_string())?;
    let cases = all.iter().map(|v| v.spec.unknown.iter().flat_map(|u| &u.case).filter(|c| c.applies_to(&v.name)).count()).sum::<usize>();
    if spread && cases > 0 {
        let runs = wafsim_experiment::studies::spread::cases(&all)?;
        let bar = progress::Bar::new(runs.iter().map(|c| c.variant.name.clone()).collect());
        wafsim_experiment::studies::spread::run_spread(&runs, &mut results, &|name, p| bar.update(name, p))?;
        bar.finish();
    } else if cases > 0 {
        eprintln!("wafsim: note: the experiment states {cases} case(s) of unknowns; --spread runs them and prints the spread of the results");
    }
    let mut seen = Vec::new();
    for w in results.iter().flat_map(|r| r.warnings.iter()) {
        if !seen.contains(w) {
            // Job-file diagnostics carry "file:line: warning:" already.
            if w.contains(": warning: ") {
                eprintln!("{w}");
            } else {
                eprintln!("wafsim: warning: {w}");
            }
            seen.push(w.clone());
        }
    }
    if let Some(path) = &parquet {
        let rows = wafsim_experiment::studies::sweep::run_rows(&results);
        let bytes = wafsim_experiment::studies::sweep::to_parquet(&[], &rows).with_context(|| format!("cannot write {} as Parquet", path.display()))?;
        std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &timeseries {
        std::fs::write(path, wafsim_report::csv::timeseries(&results)).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(dir) = &plot {
        let formats = wafsim_report::chart::Format::parse_list(&plot_format).map_err(anyhow::Error::msg)?;
        let charts = wafsim_report::plots::charts(&results);
        wafsim_report::chart::write_all(dir, &charts, &formats).with_context(|| format!("cannot write charts to {}", dir.display()))?;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&wafsim_report::json::fio_like(&results))?);
    } else {
        print!("{}", wafsim_report::table::variants(&results));
    }
    Ok(())
}

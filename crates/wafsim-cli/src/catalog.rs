//! `wafsim catalog`: every catalog experiment run at its default scale, written as markdown next
//! to the published figures (docs/experiments.md), with the bandwidth, cache and application
//! charts of the entries that have them.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

/// The flags of `wafsim catalog`.
#[derive(Args)]
pub struct CatalogArgs {
    /// Directory to search for experiment files.
    #[arg(long, default_value = "experiments")]
    dir: PathBuf,
    /// Write the markdown to this file instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Machine description for the run-time column (default: read from /proc/cpuinfo, e.g.
    /// "a 2-core Intel(R) Xeon(R) Processor virtual machine").
    #[arg(long)]
    machine: Option<String>,
    /// Write the charts of entries with a bandwidth log (timed runs with `[timing]
    /// log_interval`) under this directory, one subdirectory per entry, and show them in the
    /// markdown (paths relative to --out's directory). Example: --plots docs/plots
    #[arg(long)]
    plots: Option<PathBuf>,
}

/// Run every catalog entry, write the charts asked for with --plots, then write or print the
/// markdown.
pub fn run_catalog(a: CatalogArgs) -> Result<()> {
    use wafsim_experiment::studies::catalog::{catalog_files, markdown, run_entry};
    let CatalogArgs { dir, out, machine, plots } = a;
    let mut entries = Vec::new();
    for f in catalog_files(&dir)? {
        eprintln!("catalog: {}", f.display());
        entries.push(run_entry(&f).with_context(|| f.display().to_string())?);
    }
    let mut charts = vec![Vec::new(); entries.len()];
    if let Some(plots) = &plots {
        let base = out.as_ref().and_then(|o| o.parent()).unwrap_or(std::path::Path::new("."));
        for (i, e) in entries.iter().enumerate() {
            let apps = e.results.iter().any(|r| !r.filesystems.is_empty() && !r.timeseries.is_empty());
            if e.results.iter().all(|r| r.bandwidth.is_empty()) && !apps {
                continue;
            }
            // Named from the path under experiments/, so that a run over one subdirectory
            // (--dir experiments/x) writes where the whole catalog's run does.
            let stem = e.path.strip_prefix("experiments").or_else(|_| e.path.strip_prefix(&dir)).unwrap_or(&e.path).with_extension("");
            let sub = plots.join(stem.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "-"));
            std::fs::create_dir_all(&sub).with_context(|| format!("cannot create {}", sub.display()))?;
            // Bandwidth, read latency and cache charts over all variants; reclaim per disk of
            // the first.
            let first_reclaim = format!("reclaim_{}", wafsim_report::plots::file_safe(&e.results[0].name));
            for chart in wafsim_report::plots::charts(&e.results) {
                // Application experiments: WAF over time, each variant's application /
                // host / NAND writes, and the zone maps of zoned drives.
                let name = chart.name.as_str();
                let app_chart = apps && (name == "waf_over_time" || name.starts_with("host_vs_media_") || name.starts_with("zone_map_"));
                if name == "bandwidth" || name == "read_latency" || name == "cache_zones" || name == first_reclaim || app_chart {
                    // SVG only: the markdown shows them, and SVG stays small in git.
                    let path = sub.join(chart.file_name(wafsim_report::chart::Format::Svg));
                    std::fs::write(&path, chart.svg()?).with_context(|| format!("cannot write {}", path.display()))?;
                    let rel = pathdiff(&path, base);
                    charts[i].push(rel);
                }
            }
            charts[i].sort_by_key(|c| (!c.ends_with("bandwidth.svg"), !c.ends_with("read_latency.svg"), !c.ends_with("cache_zones.svg"), !c.ends_with("waf_over_time.svg"), c.clone()));
        }
    }
    let command = if plots.is_some() { "wafsim catalog --out docs/experiments.md --plots docs/plots" } else { "wafsim catalog --out docs/experiments.md" };
    let machine = machine.unwrap_or_else(describe_machine);
    let md = markdown(&entries, &charts, command, &machine);
    match out {
        Some(p) => std::fs::write(&p, md).with_context(|| format!("cannot write {}", p.display()))?,
        None => print!("{md}"),
    }
    Ok(())
}

/// "a N-core MODEL machine" from /proc/cpuinfo ("virtual machine" when the CPU reports a
/// hypervisor), for the catalog's run-time column; "this machine" where there is no cpuinfo.
fn describe_machine() -> String {
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else { return "this machine".into() };
    let field = |k: &str| info.lines().find(|l| l.starts_with(k)).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = field("model name").unwrap_or_else(|| "CPU".into());
    let virt = field("flags").is_some_and(|f| f.split_whitespace().any(|x| x == "hypervisor"));
    format!("a {cores}-core {model} {}", if virt { "virtual machine" } else { "machine" })
}

/// `path` relative to `base` when it lies under it (charts next to the markdown), else as is.
fn pathdiff(path: &std::path::Path, base: &std::path::Path) -> String {
    path.strip_prefix(base).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

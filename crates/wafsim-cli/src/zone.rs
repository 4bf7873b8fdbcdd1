//! `wafsim zone`: zone reports of an experiment's zoned namespaces after a run (or after one of
//! its phases), printed as util-linux `blkzone` or nvme-cli print them.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use wafsim_experiment::RunOptions;

use crate::{load_variants, progress};

/// The subcommands of `wafsim zone`.
#[derive(Subcommand)]
pub enum ZoneCmd {
    /// Run an experiment and print the zones of every zoned namespace at the end (or at the
    /// end of a phase), as util-linux `blkzone report` or nvme-cli `nvme zns report-zones`
    /// prints them.
    ///
    /// Example: wafsim zone report experiments/zoned-fio/zns.toml --format nvme --at-phase fill
    Report(ReportArgs),
}

/// The flags of `wafsim zone report`.
#[derive(Args)]
pub struct ReportArgs {
    /// Experiment TOML with a zoned drive (device.kind = "zns").
    experiment: PathBuf,
    /// "blkzone" (util-linux 2.42+, 512-byte sectors), "nvme" (nvme-cli text, LBAs),
    /// "nvme-verbose" (nvme-cli -V) or "nvme-json" (nvme-cli -o json).
    #[arg(long, default_value = "blkzone")]
    format: String,
    /// Run only the named variant(s); repeatable.
    #[arg(long = "variant")]
    variants: Vec<String>,
    /// Capacity scale, 0 < F <= 1 (default as for `wafsim run`).
    #[arg(long, conflicts_with = "full_scale")]
    scale: Option<f64>,
    /// Run at the experiment's real capacities.
    #[arg(long)]
    full_scale: bool,
    /// Stop after this phase and report the zones as it left them (later phases do not
    /// run).
    #[arg(long, value_name = "PHASE")]
    at_phase: Option<String>,
}

/// Run a `wafsim zone` subcommand.
pub fn run_zone(cmd: ZoneCmd) -> Result<()> {
    match cmd {
        ZoneCmd::Report(a) => report(a),
    }
}

/// Run the variants (up to --at-phase) and print every zoned namespace's zones; with several
/// reports, a header before each goes to stderr so stdout stays the tool's exact format.
fn report(a: ReportArgs) -> Result<()> {
    use wafsim_report::zones;
    let ReportArgs { experiment, format, variants, scale, full_scale, at_phase } = a;
    let print: fn(&zones::ZoneReport) -> String = match format.as_str() {
        "blkzone" => zones::blkzone,
        "nvme" => |r| zones::nvme_report_zones(r, false),
        "nvme-verbose" => |r| zones::nvme_report_zones(r, true),
        "nvme-json" => zones::nvme_report_zones_json,
        f => bail!("--format {f:?}: expected blkzone, nvme, nvme-verbose or nvme-json"),
    };
    let mut all = load_variants(&experiment, &variants, scale, full_scale)?;
    if let Some(want) = &at_phase {
        for v in &mut all {
            let phases = v.spec.phases();
            let Some(i) = phases.iter().position(|p| &p.name == want) else {
                let names: Vec<_> = phases.iter().map(|p| p.name.as_str()).collect();
                bail!("--at-phase {want:?}: variant {:?} of {} has no such phase (phases: {})", v.name, experiment.display(), names.join(", "));
            };
            // Phases run in order and a later one cannot change an earlier one's end.
            let mut kept = phases;
            kept.truncate(i + 1);
            v.spec.phase = kept;
        }
    }
    let bar = progress::Bar::new(all.iter().map(|v| v.name.clone()).collect());
    let results = wafsim_experiment::run_variants(&all, RunOptions::default(), &|name: &str, p| bar.update(name, p));
    bar.finish();
    let results: Vec<_> = results.into_iter().collect::<Result<_>>().with_context(|| experiment.display().to_string())?;
    if results.iter().all(|r| r.zone_reports.is_empty()) {
        bail!("{}: no zoned namespace (a zone report needs device.kind = \"zns\" or \"smr\")", experiment.display());
    }
    let several = results.len() > 1 || results.iter().any(|r| r.zone_reports.len() > 1);
    for r in &results {
        for (ns, rep) in &r.zone_reports {
            // Headers go to stderr, so stdout stays exactly the tool's output.
            if several {
                eprintln!("== variant {:?}, namespace {ns:?}", r.name);
            }
            print!("{}", print(rep));
        }
    }
    Ok(())
}

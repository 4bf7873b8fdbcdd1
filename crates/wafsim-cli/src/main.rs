//! The `wafsim` command line: argument parsing and wiring only. Each command is one function,
//! in its own module where it is more than a screen (run, zone, catalog, bench, serve, attach,
//! nvme, sweep, advise); `real_main` only dispatches.

mod advise;
mod attach;
mod bench;
mod bench_attach;
mod bench_nbd;
mod catalog;
mod feed;
mod nvme;
mod progress;
mod run;
mod serve;
mod sweep;
mod zone;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use wafsim_experiment::plan::DriveConfig;

/// wafsim: how much would data placement help my workload? Simulates SSD garbage collection,
/// write amplification and data placement (FDP, streams) for your workloads.
#[derive(Parser)]
#[command(name = "wafsim", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run an experiment: every [[variant]] side by side, a table per variant and namespace.
    ///
    /// Example: wafsim run experiments/quickstart.toml --json
    Run(run::RunArgs),
    /// Run a base experiment at every point of a sweep (axes of experiment keys, as a product,
    /// zipped, or explicit points) on all cores; a row per point and variant, resumable with
    /// --out.
    ///
    /// Example: wafsim sweep experiments/sweeps/op.toml --out op.csv
    Sweep(sweep::SweepArgs),
    /// Placement advisor: the assignment of streams to N reclaim unit handles with the lowest WAF, by simulation.
    Advise(advise::AdviseArgs),
    /// Zoned drives: reports of their zones after a run.
    Zone {
        #[command(subcommand)]
        cmd: zone::ZoneCmd,
    },
    /// Inspect device descriptions.
    Device {
        #[command(subcommand)]
        cmd: DeviceCmd,
    },
    /// Run every experiment of the catalog (experiments/ files with a [published] table) at its
    /// default scale and write the results next to the published figures.
    ///
    /// Example: wafsim catalog --out docs/experiments.md
    Catalog(catalog::CatalogArgs),
    /// Compare the simulator with closed-form WAF (docs/validation.md) and print the markdown;
    /// then check the timing model against the datasheet figures of each device preset.
    ///
    /// Example: wafsim validate --out docs/validation.md
    Validate(ValidateArgs),
    /// Serve a simulated drive's namespaces over NBD for real clients (fio's nbd engine,
    /// nbd-client, qemu), every request through the drive's simulation.
    ///
    /// Example: wafsim serve experiments/live/eight-tenants.toml --variant fdp
    Serve(serve::ServeArgs),
    /// Drive a served drive with an experiment's traffic (its stores, caches, fio jobs and
    /// traces) as a live NBD client, and report the drive's WAF over the feed.
    ///
    /// Example: wafsim feed experiments/kv/four-aerospike.toml --variant shared-fdp --skip-reads
    Feed(feed::FeedArgs),
    /// A simulated drive's namespaces and placement handles as Linux block devices (FUSE +
    /// loop), optionally with file systems on them, for real software; reports the drive's WAF
    /// over the window a command ran. Needs root.
    ///
    /// Example: wafsim attach experiments/real/drive.toml --variant fdp --fs xfs -- fio job.fio
    Attach(attach::AttachArgs),
    /// A simulated drive's log pages as nvme-cli prints them (smart-log, ocp smart-add-log,
    /// fdp configs|usage|stats|events|status), from a running `wafsim serve` or a saved state.
    ///
    /// Example: wafsim nvme fdp stats --server 127.0.0.1:10810
    Nvme(nvme::NvmeArgs),
    /// Write amplification between two captures: wafsim drive states, or real nvme-cli
    /// output (smart-log + ocp smart-add-log, or fdp stats; text or JSON).
    ///
    /// Example: wafsim waf before.txt after.txt
    Waf(nvme::WafArgs),
    /// Steady-state uniform random 4 KiB writes on a large device: simulator speed and memory.
    ///
    /// Example: wafsim bench --json
    Bench(bench::BenchArgs),
}

/// The flags of `wafsim validate`.
#[derive(Args)]
struct ValidateArgs {
    /// Write the markdown to this file instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Larger devices (16,384 erase units) and longer runs.
    #[arg(long)]
    full: bool,
    /// Skip the datasheet check of the timing model (per device preset).
    #[arg(long, conflicts_with = "datasheet_only")]
    no_datasheet: bool,
    /// Run and print only the datasheet check of the timing model.
    #[arg(long)]
    datasheet_only: bool,
}

#[derive(Subcommand)]
enum DeviceCmd {
    /// Print the figures derived from a device: erase units, Np, OP in both conventions,
    /// spare erase units, memory the simulation needs.
    ///
    /// Example: wafsim device show devices/enterprise-tlc-7.68tb.toml
    Show {
        /// A TOML file with a [device] table (a device file or an experiment), or the name of a
        /// built-in preset (see `wafsim device presets`).
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// List the built-in device presets (use one with `[device] preset = "NAME"`).
    Presets,
}

/// Load an experiment, keep the named variants (all if none), and scale each.
fn load_variants(experiment: &Path, variants: &[String], scale: Option<f64>, full_scale: bool) -> Result<Vec<wafsim_experiment::Variant>> {
    let all = wafsim_experiment::load_experiment(experiment)?;
    wafsim_experiment::plan::scale::select_and_scale(all, variants, scale, full_scale, &experiment.display().to_string())
}

fn main() {
    if let Err(e) = real_main() {
        eprintln!("wafsim: error: {e:#}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Run(a) => run::run_experiment(a),
        Cmd::Sweep(a) => sweep::run_sweep(a),
        Cmd::Advise(a) => advise::run_advise(a),
        Cmd::Zone { cmd } => zone::run_zone(cmd),
        Cmd::Device { cmd: DeviceCmd::Show { file, json } } => device_show(&file, json),
        Cmd::Device { cmd: DeviceCmd::Presets } => device_presets(),
        Cmd::Catalog(a) => catalog::run_catalog(a),
        Cmd::Validate(a) => run_validate(a),
        Cmd::Serve(a) => serve::run_serve(a),
        Cmd::Feed(a) => feed::run_feed(a),
        Cmd::Attach(a) => attach::run_attach(a),
        Cmd::Nvme(a) => nvme::run_nvme(a),
        Cmd::Waf(a) => nvme::run_waf(a),
        Cmd::Bench(a) => bench::run_bench(a),
    }
}

/// `wafsim device show`: the figures derived from a device file, an experiment's [device] or a
/// preset; a zoned drive prints its zone figures only.
fn device_show(file: &Path, json: bool) -> Result<()> {
    let (spec, origin) = device_spec(file)?;
    let ns = spec.namespace.first().map_or("ns1", |n| n.name.as_str());
    match spec.device.zoned_config(&spec.namespace).with_context(|| origin.clone())? {
        Some(DriveConfig::Zns(z)) if json => println!("{}", serde_json::to_string_pretty(&wafsim_report::json::zns_device(&z, ns))?),
        Some(DriveConfig::Zns(z)) => print!("{}", wafsim_report::table::zns_device(&z, ns)),
        Some(DriveConfig::Smr(z)) if json => println!("{}", serde_json::to_string_pretty(&wafsim_report::json::smr_device(&z, ns))?),
        Some(DriveConfig::Smr(z)) => print!("{}", wafsim_report::table::smr_device(&z, ns)),
        _ => {}
    }
    if spec.device.is_zoned() {
        return Ok(());
    }
    let cfg = spec.device.to_config(&spec.namespace, spec.seed).with_context(|| origin.clone())?;
    let geo = cfg.geometry()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&wafsim_report::json::device(&cfg, &geo))?);
    } else {
        print!("{}", wafsim_report::table::device(&cfg, &geo));
    }
    Ok(())
}

/// The experiment of a device file, an experiment's [device] or a preset's name, and where it
/// came from (for messages).
pub(crate) fn device_spec(file: &Path) -> Result<(wafsim_experiment::schema::ExperimentSpec, String)> {
    let (text, origin) = if !file.exists() && wafsim_experiment::load::presets::PRESETS.iter().any(|(n, _)| Path::new(n) == file) {
        (format!("[device]\npreset = {:?}\n", file.display().to_string()), format!("preset {}", file.display()))
    } else {
        (wafsim_workload::input::read_text(file).map_err(|e| wafsim_experiment::load::presets::unreadable(file, e))?, file.display().to_string())
    };
    Ok((wafsim_experiment::parse_experiment(&text, &origin)?.remove(0).spec, origin))
}

/// `wafsim device presets`: each built-in preset with the first line of its description.
fn device_presets() -> Result<()> {
    let presets = wafsim_experiment::load::presets::PRESETS;
    let width = presets.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, text) in presets {
        let first = text.lines().next().unwrap_or("").trim_start_matches('#').trim();
        println!("{name:<width$} {first}");
    }
    Ok(())
}

/// `wafsim validate`: the closed-form WAF cases and the timing model's datasheet check, as
/// markdown; fails when a case with a finite expected WAF is off.
fn run_validate(a: ValidateArgs) -> Result<()> {
    use wafsim_experiment::studies::validate::{all_cases, markdown, Scale};
    let ValidateArgs { out, full, no_datasheet, datasheet_only } = a;
    let scale = if full { Scale::FULL } else { Scale::TEST };
    let cmd = match (datasheet_only, full) {
        (true, _) => "wafsim validate --datasheet-only",
        (false, true) => "wafsim validate --full --out docs/validation.md",
        (false, false) => "wafsim validate --out docs/validation.md",
    };
    let cases = if datasheet_only { Vec::new() } else { all_cases(scale, 1, |name| eprintln!("validate: {name}")) };
    let mut md = if datasheet_only { String::new() } else { markdown(&cases, scale, cmd) };
    if !no_datasheet {
        use wafsim_experiment::studies::datasheet;
        let settings = datasheet::Settings::DEFAULT;
        let t0 = std::time::Instant::now();
        let results = datasheet::run_all(&settings, &|line| eprintln!("validate: datasheet {line}"))?;
        eprintln!("validate: datasheet check took {:.1} s (wall clock)", t0.elapsed().as_secs_f64());
        for (preset, fig) in datasheet::outside(&results) {
            eprintln!("validate: datasheet {preset}: {} outside its class range (reported, not a failure)", fig.label());
        }
        if !md.is_empty() {
            md.push('\n');
        }
        md += &datasheet::markdown(&results, &settings, cmd);
    }
    match out {
        Some(p) => std::fs::write(&p, md).with_context(|| format!("cannot write {}", p.display()))?,
        None => print!("{md}"),
    }
    let failed: Vec<_> = cases.iter().filter(|c| !c.passed() && !c.expected.is_infinite()).map(|c| c.name.as_str()).collect();
    if !failed.is_empty() {
        bail!("validation failed: {}", failed.join("; "));
    }
    Ok(())
}
